// Choosing the tracer: DT_NEEDED of real MPI programs, hostile files, batch scripts.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "flavour/flavour.h"
#include "scratch_dir.h"

using namespace pskel::flavour;

namespace {

std::string scratch(const std::string& name, const std::string& bytes, bool exec = false) {
  const std::string path = pskel::testing::scratch_dir("flavour-test") + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  ::chmod(path.c_str(), exec ? 0755 : 0644);
  return path;
}

// The test programs (built beside this test in the main build; a sanitizer build of the unit
// tests alone does not have them, and then these checks are skipped).
bool have_apps() {
  const bool ok = ::access((std::string(PSKEL_TEST_APPS_DIR) + "/ring.openmpi").c_str(), X_OK) == 0;
  if (!ok) MESSAGE("test programs not built in " PSKEL_TEST_APPS_DIR ": skipped");
  return ok;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("RealProgramsAreRecognised") {
  if (!have_apps()) return;
  const std::string apps = PSKEL_TEST_APPS_DIR;
  CHECK(detect_flavour({apps + "/ring.mpich"}, "") == "mpich");
  CHECK(detect_flavour({apps + "/ring.openmpi"}, "") == "openmpi");
  CHECK(detect_flavour({apps + "/ring-f.openmpi"}, "") == "openmpi");
  CHECK(detect_flavour({"/bin/sh"}, "") == "");
  auto needed = elf_needed_libraries(apps + "/ring.mpich");
  REQUIRE(needed.ok());
  CHECK(flavour_of_libraries(needed.value()) == "mpich");
}

TEST_CASE("BareNamesResolveThroughPathAndRelativeOnesThroughCwd") {
  if (!have_apps()) return;
  const std::string apps = PSKEL_TEST_APPS_DIR;
  CHECK(detect_flavour({"ring.mpich"}, "/nonexistent:" + apps) == "mpich");
  CHECK(detect_flavour({"./ring.openmpi"}, "", apps) == "openmpi");
  CHECK(detect_flavour({"-n", "4", "ring.openmpi"}, apps) == "openmpi");
  CHECK(resolve_program("sh", "/nonexistent:/bin") == "/bin/sh");
  CHECK(resolve_program("no-such-program-here", "/bin:/usr/bin") == "");
  CHECK(resolve_program("", "/bin") == "");
}

TEST_CASE("HostileFilesAreRefusedNotCrashedOn") {
  const std::string elf = read_all("/bin/ls");  // any dynamically linked ELF64 program
  REQUIRE(elf_needed_libraries("/bin/ls").ok());
  CHECK_FALSE(elf_needed_libraries("/bin/ls").value().empty());
  REQUIRE(elf.size() > 4096);
  CHECK_FALSE(elf_needed_libraries(scratch("empty", "")).ok());
  CHECK_FALSE(elf_needed_libraries(scratch("text", "#!/bin/sh\necho hi\n")).ok());
  CHECK_FALSE(elf_needed_libraries("/nonexistent").ok());
  CHECK_FALSE(elf_needed_libraries("/tmp").ok());
  // Every truncation of a real program: an error or a (possibly shorter) list, never a crash.
  for (size_t n : {size_t{4}, size_t{63}, size_t{64}, size_t{100}, size_t{1000}, elf.size() / 2}) {
    auto r = elf_needed_libraries(scratch("cut", elf.substr(0, n)));
    if (r.ok()) CHECK(r.value().size() <= 16);
  }
  // Garbage program headers and dynamic entries.
  std::string bad = elf;
  for (size_t i = 64; i < std::min<size_t>(bad.size(), 4096); i += 7) bad[i] = static_cast<char>(0xff);
  auto r = elf_needed_libraries(scratch("garbage", bad));
  if (r.ok()) CHECK(r.value().size() <= 64);
}

TEST_CASE("ScriptWordsFindTheProgramsOfABatchScript") {
  const auto words = script_words(
      "#!/bin/bash\n#SBATCH -n 4 ./not-this\nmodule load x; mpiexec -n 4 ./app arg>out\n"
      "FOO=./bar srun --mpi=pmi2 \"./quoted\" | tee log\n");
  const std::vector<std::string> expected = {"module", "load", "x", "mpiexec", "-n", "4", "./app",
                                             "arg", "out", "FOO", "./bar", "srun", "--mpi",
                                             "pmi2", "./quoted", "tee", "log"};
  CHECK(words == expected);
  CHECK(script_words("a b c d", 2).size() == 2);
  CHECK(script_words("").empty());
}

TEST_CASE("ABatchScriptGetsTheFlavourOfTheProgramItRuns") {
  if (!have_apps()) return;
  const std::string apps = PSKEL_TEST_APPS_DIR;
  const std::string text = "#!/bin/sh\nmpiexec.mpich -n 2 " + apps + "/stencil.mpich -i 3\n";
  CHECK(detect_flavour(script_words(text), "/usr/bin:/bin") == "mpich");
  // Debian's unsuffixed mpiexec is Open MPI's (alternatives): orterun needs libopen-rte.
  CHECK(detect_flavour(script_words("mpiexec.openmpi -n 2 true\n"), "/usr/bin:/bin") == "openmpi");
}
