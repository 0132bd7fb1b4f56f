// Fuzz target: a hostile or corrupt SQLite file as the store's read-only commands open and
// read it (`pskel db list`, `db show`, `report`; the export's query too). Anything wrong must
// come back as an Error, never as an exception, a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "fuzz_support.h"
#include "store/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pskel;
  static const std::string dir = fuzz::scratch_subdir("store");
  const std::string path = dir + "/pskel.db";
  // SQLite's side files of the previous input would otherwise be applied to this one.
  for (const char* suffix : {"-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  fuzz::write_file(path, fuzz::as_text({data, size}));

  auto store = store::Store::open(path, store::Access::ReadOnly);
  if (!store) return 0;
  const store::Store& s = store.value();
  if (auto apps = s.list(std::nullopt); apps) {
    for (const store::AppSummary& a : apps.value()) {
      (void)s.find_applications(a.app.key, a.app.uid);
      (void)s.traces(a.app.id);
      (void)s.predictions(a.app.id);
      (void)s.outcomes(a.app.id);
    }
  }
  (void)s.report(std::nullopt);
  (void)s.export_data();
  return 0;
}
