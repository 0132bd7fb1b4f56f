#include "elf_symbol.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "flavour/flavour.h"

namespace pskel::doctor {
namespace {

using flavour::read_exact;

constexpr uint16_t kMaxSections = 4096;
constexpr uint64_t kMaxSymbols = 1 << 20;

bool read_section_header(int fd, const Elf64_Ehdr& eh, uint64_t index, Elf64_Shdr* out) {
  return index < eh.e_shnum &&
         read_exact(fd, eh.e_shoff + index * eh.e_shentsize, out, sizeof *out);
}

// Whether the NUL-terminated string at `offset` of the string table `strtab` is `name`.
bool name_is(int fd, const Elf64_Shdr& strtab, uint32_t offset, const std::string& name) {
  if (offset >= strtab.sh_size || strtab.sh_size - offset < name.size() + 1) return false;
  char buf[256];
  if (name.size() + 1 > sizeof buf) return false;
  return read_exact(fd, strtab.sh_offset + offset, buf, name.size() + 1) &&
         std::memcmp(buf, name.c_str(), name.size() + 1) == 0;
}

}  // namespace

std::string slurm_version_text(uint32_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "%u.%02u.%u", v >> 16, (v >> 8) & 0xFF, v & 0xFF);
  return text;
}

Result<uint32_t> read_u32_symbol(const std::string& path, const std::string& name) {
  auto file = flavour::open_elf64(path);
  if (!file) return file.error();
  const UniqueFd& fd = file.value().fd;
  const Elf64_Ehdr& eh = file.value().header;
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB) return Error{path, "not a little-endian ELF64 file"};
  if (eh.e_shentsize < sizeof(Elf64_Shdr) || eh.e_shnum > kMaxSections)
    return Error{path, "bad ELF section header table"};
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr symtab, strtab;
    if (!read_section_header(fd.get(), eh, i, &symtab) || symtab.sh_type != SHT_DYNSYM) continue;
    if (!read_section_header(fd.get(), eh, symtab.sh_link, &strtab) || strtab.sh_type != SHT_STRTAB)
      return Error{path, "bad dynamic symbol table"};
    const uint64_t count = std::min<uint64_t>(symtab.sh_size / sizeof(Elf64_Sym), kMaxSymbols);
    for (uint64_t s = 0; s < count; ++s) {
      Elf64_Sym sym;
      if (!read_exact(fd.get(), symtab.sh_offset + s * sizeof sym, &sym, sizeof sym)) break;
      if (sym.st_shndx == SHN_UNDEF || !name_is(fd.get(), strtab, sym.st_name, name)) continue;
      Elf64_Shdr section;
      if (sym.st_size != sizeof(uint32_t) ||
          !read_section_header(fd.get(), eh, sym.st_shndx, &section) ||
          section.sh_type == SHT_NOBITS || section.sh_size < sizeof(uint32_t) ||
          sym.st_value < section.sh_addr ||
          sym.st_value - section.sh_addr > section.sh_size - sizeof(uint32_t))
        return Error{path, name + ": not a 4-byte value stored in the file"};
      uint32_t value;
      if (!read_exact(fd.get(), section.sh_offset + (sym.st_value - section.sh_addr), &value,
                      sizeof value))
        return Error{path, name + ": cannot read its value"};
      return value;
    }
  }
  return Error{path, "no symbol " + name + " (not a Slurm plugin?)"};
}

}  // namespace pskel::doctor
