#include "trace/node_index.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "util/file_read.h"

namespace pskel::trace {
namespace {

// A node's ranks' rank files together: far beyond any real node's trace.
constexpr uint64_t kMaxNodeFileBytes = uint64_t{1} << 40;

std::string_view kind_text(SectionKind kind) {
  return kind == SectionKind::trace ? "trace" : "samples";
}

}  // namespace

int64_t node_file_number(std::string_view name) {
  const std::string_view prefix = kNodeFilePrefix, suffix = kNodeFileSuffix;
  if (!name.starts_with(prefix) || !name.ends_with(suffix)) return -1;
  const std::string_view digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 9) return -1;
  int64_t n = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::optional<Error> add_node_file(int fd, uint64_t size, const std::string& path, int ranks,
                                   NodeIndex& index) {
  index.traces.resize(static_cast<size_t>(ranks));
  index.samples.resize(static_cast<size_t>(ranks));
  NodeFileHeader header;
  if (size < sizeof header) return Error{path, "truncated: shorter than the node file header"};
  if (auto r = pread_exact(fd, &header, sizeof header, 0, path); !r) return r.error();
  if (std::memcmp(header.magic, kNodeFileMagic, sizeof header.magic) != 0)
    return Error{path, "not a pskel node file (bad magic)"};
  if (header.version != kNodeFileVersion)
    return Error{path, fmt::format("unsupported node file version {} (this pskel reads {})",
                                   header.version, kNodeFileVersion)};
  if (header.header_bytes != sizeof header)
    return Error{path, "corrupt: the header's size does not match the format"};
  uint64_t at = sizeof header;
  while (at < size) {
    if (++index.sections > 2 * static_cast<uint64_t>(ranks) + kMaxExtraSections)
      return Error{path, fmt::format("corrupt: more sections than a trace of {} ranks holds", ranks)};
    SectionHeader section;
    if (size - at < sizeof section)
      return Error{path, fmt::format("truncated: section header cut short at byte {}", at)};
    if (auto r = pread_exact(fd, &section, sizeof section, at, path); !r) return r.error();
    if (std::memcmp(section.magic, kSectionMagic, sizeof section.magic) != 0 ||
        section.header_crc != section_header_crc(section))
      return Error{path, fmt::format("corrupt: no valid section header at byte {}", at)};
    const uint64_t content = at + sizeof section;
    if (size - content < section.bytes)
      return Error{path, fmt::format("truncated: section at byte {} needs {} bytes, {} remain", at,
                                     section.bytes, size - content)};
    at = content + section.bytes;
    const auto kind = static_cast<SectionKind>(section.kind);
    if (kind != SectionKind::trace && kind != SectionKind::samples) continue;
    if (section.rank < 0 || section.rank >= ranks)
      return Error{path, fmt::format("holds rank {}, but meta.json announces {} ranks",
                                     section.rank, ranks)};
    auto& places = kind == SectionKind::trace ? index.traces : index.samples;
    std::optional<SectionPlace>& place = places[static_cast<size_t>(section.rank)];
    if (place)
      return Error{path, fmt::format("holds rank {}'s {} a second time (also in {})", section.rank,
                                     kind_text(kind), place->path)};
    place = SectionPlace{path, content, section.bytes};
  }
  return std::nullopt;
}

std::string section_name(const SectionPlace& place, int rank, SectionKind kind) {
  return fmt::format("{} (rank {}'s {})", place.path, rank, kind_text(kind));
}

Result<NodeIndex> index_node_files(const std::string& dir, int ranks) {
  NodeIndex index;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return Error{dir, std::strerror(errno)};
  std::vector<int64_t> numbers;
  while (const dirent* e = ::readdir(d)) {
    const int64_t n = node_file_number(e->d_name);
    if (n >= 0) numbers.push_back(n);
    // Each node file holds a rank at least: more than the ranks is not a trace of this run.
    if (numbers.size() > static_cast<size_t>(ranks)) {
      ::closedir(d);
      return Error{dir, fmt::format("more node files than the {} ranks meta.json announces", ranks)};
    }
  }
  ::closedir(d);
  if (numbers.empty()) return index;
  std::sort(numbers.begin(), numbers.end());  // errors in the order a person would look
  for (const int64_t n : numbers) {
    const std::string path = fmt::format("{}/{}{}{}", dir, kNodeFilePrefix, n, kNodeFileSuffix);
    auto opened = open_regular_file(path, kMaxNodeFileBytes);
    if (!opened) return opened.error();
    if (!opened.value()) return Error{path, "vanished while the directory was read"};
    if (auto e = add_node_file(opened.value()->fd.get(), opened.value()->size, path, ranks, index))
      return std::move(*e);
  }
  return index;
}

}  // namespace pskel::trace
