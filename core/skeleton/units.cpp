// The files a skeleton is compiled from; see skeleton.h.
#include "skeleton/skeleton.h"

namespace pskel::skeleton {

std::vector<std::string> compile_units() {
  std::vector<std::string> units = {"skeleton.c"};
  for (const RuntimeFile& f : runtime_files()) {
    const std::string name(f.name);
    if (name.size() > 2 && name.substr(name.size() - 2) == ".c") units.push_back(name);
  }
  return units;
}

}  // namespace pskel::skeleton
