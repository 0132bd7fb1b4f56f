#include "mpi_flavour.h"

#include <elf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace pskel::cli {
namespace {

std::string resolve_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

template <class T>
bool read_at(const std::string& bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

Result<std::vector<std::string>> elf_needed_libraries(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "cannot open"};
  // Program headers and the dynamic section sit near the start; 64 MiB bounds a hostile file.
  std::string bytes;
  bytes.resize(64 << 20);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  Elf64_Ehdr eh;
  if (!read_at(bytes, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return Error{path, "not an ELF64 file"};
  Elf64_Dyn dyn;
  std::vector<uint64_t> needed_offsets;
  uint64_t strtab_vaddr = 0;
  std::vector<Elf64_Phdr> loads;
  Elf64_Phdr dynamic{};
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_at(bytes, eh.e_phoff + uint64_t{i} * eh.e_phentsize, &ph)) break;
    if (ph.p_type == PT_LOAD) loads.push_back(ph);
    if (ph.p_type == PT_DYNAMIC) dynamic = ph;
  }
  for (uint64_t at = dynamic.p_offset; read_at(bytes, at, &dyn) && dyn.d_tag != DT_NULL;
       at += sizeof dyn) {
    if (dyn.d_tag == DT_NEEDED) needed_offsets.push_back(dyn.d_un.d_val);
    if (dyn.d_tag == DT_STRTAB) strtab_vaddr = dyn.d_un.d_ptr;
    if (at - dynamic.p_offset >= dynamic.p_filesz) break;
  }
  uint64_t strtab = 0;  // file offset of the string table: map its address through PT_LOAD
  for (const Elf64_Phdr& ph : loads)
    if (strtab_vaddr >= ph.p_vaddr && strtab_vaddr < ph.p_vaddr + ph.p_filesz)
      strtab = strtab_vaddr - ph.p_vaddr + ph.p_offset;
  std::vector<std::string> needed;
  for (uint64_t off : needed_offsets) {
    if (strtab == 0 || strtab + off >= bytes.size()) continue;
    const char* s = bytes.data() + strtab + off;
    needed.emplace_back(s, strnlen(s, bytes.size() - strtab - off));
  }
  return needed;
}

std::string flavour_of_libraries(const std::vector<std::string>& needed) {
  for (const std::string& lib : needed) {
    if (lib.starts_with("libmpich")) return "mpich";
    if (lib.starts_with("libmpi.so.40") || lib.starts_with("libmpi_mpifh") ||
        lib.starts_with("libopen-rte") || lib.starts_with("libmpi_usempi"))
      return "openmpi";
  }
  return "";
}

std::string detect_flavour(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    if (arg.empty() || arg[0] == '-') continue;
    const std::string path = resolve_in_path(arg);
    if (path.empty()) continue;
    auto needed = elf_needed_libraries(path);
    if (!needed) continue;
    if (std::string flavour = flavour_of_libraries(needed.value()); !flavour.empty())
      return flavour;
  }
  return "";
}

}  // namespace pskel::cli
