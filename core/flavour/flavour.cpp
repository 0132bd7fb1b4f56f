#include "flavour/flavour.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace pskel::flavour {
namespace {

// Bounds for hostile files: a real program has a few dozen program headers and DT_ entries.
constexpr uint16_t kMaxProgramHeaders = 256;
constexpr uint64_t kMaxDynamicBytes = 64 * 1024;
constexpr size_t kMaxLibraryName = 4096;

bool is_executable_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool read_exact(int fd, uint64_t offset, void* out, size_t n) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

Result<Elf64File> open_elf64(const std::string& path) {
  Elf64File file;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (file.fd.get() < 0) return Error{path, std::string("cannot open: ") + std::strerror(errno)};
  struct stat st;
  if (::fstat(file.fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Error{path, "not a regular file"};
  file.size = static_cast<uint64_t>(st.st_size);
  Elf64_Ehdr& eh = file.header;
  if (!read_exact(file.fd.get(), 0, &eh, sizeof eh) ||
      std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return Error{path, "not an ELF64 file"};
  return file;
}

Result<std::vector<std::string>> elf_needed_libraries(const std::string& path) {
  auto file = open_elf64(path);
  if (!file) return file.error();
  const int fd = file.value().fd.get();
  const Elf64_Ehdr& eh = file.value().header;
  if (eh.e_phentsize < sizeof(Elf64_Phdr) || eh.e_phnum > kMaxProgramHeaders)
    return Error{path, "bad ELF program header table"};

  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr dynamic{};
  bool has_dynamic = false;
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_exact(fd, eh.e_phoff + uint64_t{i} * eh.e_phentsize, &ph, sizeof ph)) break;
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) {
      dynamic = ph;
      has_dynamic = true;
    }
  }
  std::vector<std::string> needed;
  if (!has_dynamic) return needed;  // a static program needs nothing

  std::vector<uint64_t> name_offsets;
  uint64_t strtab_vaddr = 0;
  const uint64_t dyn_bytes = std::min<uint64_t>(dynamic.p_filesz, kMaxDynamicBytes);
  for (uint64_t at = 0; at + sizeof(Elf64_Dyn) <= dyn_bytes; at += sizeof(Elf64_Dyn)) {
    Elf64_Dyn dyn;
    if (!read_exact(fd, dynamic.p_offset + at, &dyn, sizeof dyn) || dyn.d_tag == DT_NULL)
      break;
    if (dyn.d_tag == DT_NEEDED) name_offsets.push_back(dyn.d_un.d_val);
    if (dyn.d_tag == DT_STRTAB) strtab_vaddr = dyn.d_un.d_ptr;
  }
  uint64_t strtab = 0;  // file offset of the string table: map its address through PT_LOAD
  bool strtab_found = false;
  for (const Elf64_Phdr& ph : loads)
    if (strtab_vaddr >= ph.p_vaddr && strtab_vaddr - ph.p_vaddr < ph.p_filesz) {
      strtab = strtab_vaddr - ph.p_vaddr + ph.p_offset;
      strtab_found = true;
    }
  if (!strtab_found) return needed;
  const uint64_t size = file.value().size;
  for (uint64_t off : name_offsets) {
    if (off >= size || strtab >= size - off) continue;
    char buf[256];
    std::string name;
    for (uint64_t at = strtab + off; name.size() < kMaxLibraryName; at += sizeof buf) {
      const ssize_t got = ::pread(fd, buf, sizeof buf, static_cast<off_t>(at));
      if (got <= 0) break;
      const size_t len = strnlen(buf, static_cast<size_t>(got));
      name.append(buf, len);
      if (len < static_cast<size_t>(got)) break;
    }
    needed.push_back(std::move(name));
  }
  return needed;
}

std::string flavour_of_libraries(const std::vector<std::string>& needed) {
  for (const std::string& lib : needed) {
    if (lib.starts_with("libmpich")) return kMpich;
    if (lib.starts_with("libmpi.so.40") || lib.starts_with("libmpi_mpifh") ||
        lib.starts_with("libopen-rte") || lib.starts_with("libmpi_usempi"))
      return kOpenMpi;
  }
  return "";
}

std::string resolve_program(const std::string& name, std::string_view path_env,
                            const std::string& cwd) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    const std::string path = name[0] == '/' || cwd.empty() ? name : cwd + "/" + name;
    return is_executable_file(path) ? path : "";
  }
  while (true) {
    const size_t colon = path_env.find(':');
    const std::string_view dir = path_env.substr(0, colon);
    std::string candidate = dir.empty() ? (cwd.empty() ? "." : cwd) : std::string(dir);
    candidate += "/" + name;
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return "";
    path_env.remove_prefix(colon + 1);
  }
}

std::string detect_flavour(const std::vector<std::string>& words, std::string_view path_env,
                           const std::string& cwd) {
  for (const std::string& word : words) {
    if (word.empty() || word[0] == '-') continue;
    const std::string path = resolve_program(word, path_env, cwd);
    if (path.empty()) continue;
    auto needed = elf_needed_libraries(path);
    if (!needed) continue;
    if (std::string flavour = flavour_of_libraries(needed.value()); !flavour.empty())
      return flavour;
  }
  return "";
}

std::vector<std::string> script_words(std::string_view text, size_t max_words) {
  std::vector<std::string> words;
  std::string word;
  bool comment = false;
  auto flush = [&] {
    if (!word.empty() && words.size() < max_words) words.push_back(word);
    word.clear();
  };
  for (const char c : text) {
    if (words.size() >= max_words) break;
    if (comment) {
      comment = c != '\n';
      continue;
    }
    if (c == '#' && word.empty()) {
      comment = true;
      continue;
    }
    if (std::strchr(" \t\r\n;&|<>()`'\"=", c) != nullptr || c == '\0') {
      flush();
      continue;
    }
    word += c;
  }
  flush();
  return words;
}

}  // namespace pskel::flavour
