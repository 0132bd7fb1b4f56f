// pskel doctor's readers: slurm.conf and plugstack.conf as Slurm reads them (records skipped,
// includes followed, case-insensitive keys, errors with file:line), and a plugin's version read
// from its ELF file without loading it.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "doctor/elf_symbol.h"
#include "doctor/slurm_files.h"
#include "scratch_dir.h"

using namespace pskel;
using namespace pskel::doctor;

namespace {

std::string write(const std::string& name, const std::string& text) {
  const std::string path = pskel::testing::scratch_dir("doctor") + "/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("slurm.conf: settings by any case, the last counts, records and comments skipped") {
  SlurmConf conf;
  std::vector<std::string> includes;
  auto r = parse_slurm_conf(
      "# a comment\n"
      "ClusterName=test  SlurmUser=slurm # trailing\n"
      "SLURMCTLDHOST=ctl1(10.0.0.1)\n"
      "SlurmctldHost=ctl2\n"
      "NodeName=n[1-4] CPUs=8 PluginDir=/not/a/setting\n"
      "PartitionName=debug Nodes=ALL Default=YES\n"
      "PluginDir=/usr/lib/slurm\n"
      "include extra.conf\n"
      "JobSubmitPlugins=\"lua,pskel\"\n",
      "slurm.conf", conf, &includes);
  REQUIRE_MESSAGE(r.ok(), r.error().line());
  CHECK(conf.get("slurmuser") == "slurm");
  CHECK(conf.get("PluginDir") == "/usr/lib/slurm");
  CHECK(conf.get("JobSubmitPlugins") == "lua,pskel");
  CHECK(conf.get("CPUs", "none") == "none");
  CHECK(conf.get("Default", "none") == "none");
  CHECK(conf.get("SlurmctldHost") == "ctl2");
  CHECK(conf.all("slurmctldhost") == std::vector<std::string>{"ctl1(10.0.0.1)", "ctl2"});
  CHECK(includes == std::vector<std::string>{"extra.conf"});
}

TEST_CASE("slurm.conf: a broken line is an error naming file and line") {
  SlurmConf conf;
  auto r =
      parse_slurm_conf("ClusterName=a\nJobSubmitPlugins\n", "/etc/slurm/slurm.conf", conf, nullptr);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().file == "/etc/slurm/slurm.conf:2");
}

TEST_CASE("slurm.conf: includes are read relative to its directory, a loop is an error") {
  write("main.conf", "ClusterName=a\nInclude part.conf\nSlurmUser=root\n");
  write("part.conf", "SlurmUser=slurm\nPluginDir=/p\n");
  auto conf = load_slurm_conf(pskel::testing::scratch_dir("doctor") + "/main.conf");
  REQUIRE_MESSAGE(conf.ok(), conf.error().line());
  CHECK(conf.value().get("PluginDir") == "/p");
  CHECK(conf.value().get("ClusterName") == "a");

  write("loop.conf", "Include loop.conf\n");
  auto loop = load_slurm_conf(pskel::testing::scratch_dir("doctor") + "/loop.conf");
  REQUIRE_FALSE(loop.ok());
  CHECK(loop.error().what.find("nested too deep") != std::string::npos);

  auto missing = load_slurm_conf(pskel::testing::scratch_dir("doctor") + "/none.conf");
  REQUIRE_FALSE(missing.ok());
}

TEST_CASE("plugstack.conf: plugin lines with their arguments, includes by glob") {
  const std::string dir = pskel::testing::scratch_dir("doctor");
  write("plugstack.conf",
        "# site plugins\nrequired /usr/lib/x.so a=1\ninclude " + dir + "/stack.d/*.conf\n");
  ::mkdir((dir + "/stack.d").c_str(), 0755);
  write("stack.d/pskel.conf", "optional spank_pskel.so conf=/etc/slurm/pskel.conf spool_dir=/s\n");
  write("stack.d/other.txt", "this is not included\n");
  auto lines = load_plugstack(dir + "/plugstack.conf");
  REQUIRE_MESSAGE(lines.ok(), lines.error().line());
  REQUIRE(lines.value().size() == 2);
  CHECK(lines.value()[0].required);
  CHECK(lines.value()[0].plugin == "/usr/lib/x.so");
  CHECK(lines.value()[0].origin == dir + "/plugstack.conf:2");
  CHECK_FALSE(lines.value()[1].required);
  CHECK(lines.value()[1].plugin == "spank_pskel.so");
  CHECK(lines.value()[1].args ==
        std::vector<std::string>{"conf=/etc/slurm/pskel.conf", "spool_dir=/s"});

  std::vector<std::string> includes;
  auto bad = parse_plugstack("require /x.so\n", "p.conf", &includes);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().file == "p.conf:1");
  CHECK_FALSE(parse_plugstack("optional\n", "p.conf", &includes).ok());
}

TEST_CASE("a plugin's version is read from its ELF file") {
  auto version = read_u32_symbol(PSKEL_ELF_FIXTURE, "plugin_version");
  REQUIRE_MESSAGE(version.ok(), version.error().line());
  CHECK(version.value() == 0x160508);
  CHECK(slurm_version_text(version.value()) == "22.05.8");
  CHECK(slurm_version_number(22, 5, 8) == 0x160508);

  auto bss = read_u32_symbol(PSKEL_ELF_FIXTURE, "not_in_the_file");
  REQUIRE_FALSE(bss.ok());
  CHECK(bss.error().what.find("not a 4-byte value stored in the file") != std::string::npos);
  auto absent = read_u32_symbol(PSKEL_ELF_FIXTURE, "no_such_symbol");
  REQUIRE_FALSE(absent.ok());
  CHECK(absent.error().what.find("no symbol no_such_symbol") != std::string::npos);
  auto wrong_size = read_u32_symbol(PSKEL_ELF_FIXTURE, "plugin_name");
  CHECK_FALSE(wrong_size.ok());
}

TEST_CASE("a file that is not an ELF64 object is an error, never a crash") {
  CHECK_FALSE(read_u32_symbol(write("text.so", "not an ELF file at all"), "plugin_version").ok());
  CHECK_FALSE(read_u32_symbol(write("short.so",
                                    "\x7f"
                                    "ELF"),
                              "plugin_version")
                  .ok());
  CHECK_FALSE(read_u32_symbol(pskel::testing::scratch_dir("doctor") + "/none.so", "x").ok());
  // A real header cut short: section headers past the end of the file.
  std::ifstream in(PSKEL_ELF_FIXTURE, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), 64);
  CHECK_FALSE(read_u32_symbol(write("cut.so", head), "plugin_version").ok());
}
