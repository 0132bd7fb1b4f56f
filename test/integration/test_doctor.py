#!/usr/bin/env python3
"""`pskel doctor` on a site's configuration laid out in a temporary tree: slurm.conf,
plugstack.conf with an include, pskel.conf, the plugins as built, the epilog, the spool and state
directories, a guard heartbeat, and a stand-in scontrol that reports the Slurm version the plugins
were built for. The correct setup passes (exit 0); each broken line (plugin missing, another Slurm
version, epilog absent, spool world-writable, guard down, JobSubmitPlugins without pskel, no
plugstack line) fails (exit 1) naming the check, what is wrong and its fix; --json says the same."""
import json
import os
import pathlib
import re
import shutil
import socket
import tempfile
import unittest

from testlib import BUILD, PSKEL, run

JOB_SUBMIT = BUILD / "jobsubmit" / "job_submit_pskel.so"
SPANK = BUILD / "spank" / "spank_pskel.so"


def built_slurm_version():
    """SLURM_VERSION_NUMBER of the headers the plugins were built with, as "22.05.8"."""
    text = pathlib.Path("/usr/include/slurm/slurm_version.h").read_text()
    n = int(re.search(r"#define SLURM_VERSION_NUMBER (0x[0-9a-fA-F]+)", text).group(1), 16)
    return f"{n >> 16}.{(n >> 8) & 0xFF:02d}.{n & 0xFF}"


class Site:
    """A correct site in `root`; each test breaks one thing."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.etc = self.root / "etc"
        self.plugins = self.root / "plugins"
        self.spool = self.root / "spool"
        self.state = self.root / "state"
        for d in (self.etc / "plugstack.conf.d", self.plugins, self.spool, self.state,
                  self.root / "bin"):
            d.mkdir(parents=True)
        for d in (self.root, self.spool, self.state):
            d.chmod(0o755)
        shutil.copy(JOB_SUBMIT, self.plugins)
        shutil.copy(SPANK, self.plugins)
        self.epilog = self.root / "bin" / "pskel-epilog"
        self.epilog.write_text("#!/bin/sh\nexec pskel epilog\n")
        self.epilog.chmod(0o755)
        self.set_scontrol_version(built_slurm_version())
        self.slurm_lines = {
            "SlurmctldHost": socket.gethostname().split(".")[0],
            "SlurmUser": "root",
            "PluginDir": str(self.plugins),
            "PlugStackConfig": str(self.etc / "plugstack.conf"),
            "JobSubmitPlugins": "lua,pskel",
            "EpilogSlurmctld": str(self.epilog),
        }
        (self.etc / "plugstack.conf").write_text(
            f"# other plugins would be here\ninclude {self.etc}/plugstack.conf.d/*.conf\n")
        (self.etc / "plugstack.conf.d" / "pskel.conf").write_text(
            f"optional {self.plugins}/spank_pskel.so conf={self.etc}/pskel.conf\n")
        (self.etc / "pskel.conf").write_text(
            f"SpoolDir={self.spool}\nStateDir={self.state}\n"
            f"TracerMpich={BUILD}/core/tracer/libpskel-trace-mpich.so\n"
            f"TracerOpenmpi={BUILD}/core/tracer/libpskel-trace-openmpi.so\n"
            f"Scontrol={self.root}/bin/scontrol\n")
        (self.state / "guard.heartbeat").write_text("pskel-guard pid=1 interval=30\n")
        self.write_slurm_conf()

    def set_scontrol_version(self, version):
        scontrol = self.root / "bin" / "scontrol"
        scontrol.write_text(f'#!/bin/sh\n[ "$1" = --version ] && [ -n "$SLURM_CONF" ] && '
                            f'echo "slurm-wlm {version}"\n')
        scontrol.chmod(0o755)

    def write_slurm_conf(self):
        lines = [f"{k}={v}" for k, v in self.slurm_lines.items()]
        lines.append("NodeName=node[1-2] CPUs=2 State=UNKNOWN")
        lines.append("PartitionName=debug Nodes=ALL Default=YES")
        (self.etc / "slurm.conf").write_text("\n".join(lines) + "\n")

    def doctor(self, *args):
        env = dict(os.environ, SLURM_CONF=str(self.etc / "slurm.conf"))
        env.pop("PSKEL_CONF", None)
        return run([PSKEL, "doctor", *args], env=env)


@unittest.skipUnless(JOB_SUBMIT.exists() and SPANK.exists(), "the Slurm plugins were not built")
class DoctorTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.site = Site(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def lines_of(self, check, r):
        """The output lines of one check (its line and its fix line)."""
        lines = r.stdout.splitlines()
        for i, line in enumerate(lines):
            words = line.split()
            if len(words) > 1 and line[6:].startswith(check + " "):
                fix = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("fix:") else ""
                return line, fix
        self.fail(f"no line for {check!r} in:\n{r.stdout}")

    def assert_fails(self, check, what, fix):
        r = self.site.doctor()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        line, fix_line = self.lines_of(check, r)
        self.assertTrue(line.startswith("FAIL"), line)
        self.assertIn(what, line)
        self.assertIn(fix, fix_line)
        self.assertRegex(r.stdout.splitlines()[-1], r"^doctor: [1-9][0-9]* of [0-9]+ checks failed$")
        return r

    def test_a_correct_site_passes(self):
        r = self.site.doctor()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for check in ("slurm.conf", "plugstack", "pskel.conf", "Slurm version", "SPANK plugin",
                      "SpoolDir", "job_submit plugin", "JobSubmitPlugins", "EpilogSlurmctld",
                      "StateDir", "queue", "guard", "MPI: MPICH", "MPI: Open MPI"):
            line, _ = self.lines_of(check, r)
            self.assertTrue(line.startswith("ok"), line)
        version = built_slurm_version()
        self.assertIn(f"built for Slurm {version}", self.lines_of("job_submit plugin", r)[0])
        self.assertIn(f"built for Slurm {version}", self.lines_of("SPANK plugin", r)[0])
        self.assertTrue(self.lines_of("store", r)[0].startswith("skip"))  # no traced job yet
        self.assertNotIn("FAIL", r.stdout)
        j = self.site.doctor("--json")
        self.assertEqual(j.returncode, 0, j.stderr)
        out = json.loads(j.stdout)
        self.assertTrue(out["ok"])
        self.assertEqual({c["status"] for c in out["checks"]}, {"ok", "skip"})
        self.assertEqual(len(out["checks"]), len(r.stdout.splitlines()) - 1)

    def test_plugin_missing(self):
        (self.site.plugins / "job_submit_pskel.so").unlink()
        self.assert_fails("job_submit plugin", "job_submit_pskel.so is not in PluginDir",
                          "install the slurm-pskel-plugins package")

    def test_another_slurm_version(self):
        self.site.set_scontrol_version("22.05.99")
        r = self.assert_fails("job_submit plugin",
                              f"built for Slurm {built_slurm_version()}, this node runs 22.05.99",
                              "rebuild pskel against Slurm 22.05.99")
        self.assertTrue(self.lines_of("SPANK plugin", r)[0].startswith("FAIL"))

    def test_epilog_absent(self):
        del self.site.slurm_lines["EpilogSlurmctld"]
        self.site.write_slurm_conf()
        self.assert_fails("EpilogSlurmctld", "not set in", "EpilogSlurmctld=")

    def test_epilog_on_every_node(self):
        self.site.slurm_lines["Epilog"] = str(self.site.epilog)
        self.site.write_slurm_conf()
        self.assert_fails("EpilogSlurmctld", "runs pskel's epilog on every node",
                          "move it to EpilogSlurmctld=")

    def test_spool_world_writable(self):
        self.site.spool.chmod(0o777)
        self.assert_fails("SpoolDir", "mode 0777", f"chmod go-w {self.site.spool}")

    def test_guard_down(self):
        (self.site.state / "guard.heartbeat").unlink()
        self.assert_fails("guard", "NOT running", "systemctl enable --now pskel-guard")
        # An old heartbeat is a guard that stopped.
        beat = self.site.state / "guard.heartbeat"
        beat.write_text("pskel-guard pid=1 interval=30\n")
        os.utime(beat, (1, 1))
        self.assert_fails("guard", "NOT running", "systemctl enable --now pskel-guard")

    def test_job_submit_plugins_without_pskel(self):
        self.site.slurm_lines["JobSubmitPlugins"] = "lua"
        self.site.write_slurm_conf()
        self.assert_fails("JobSubmitPlugins", "pskel is not in JobSubmitPlugins (lua)",
                          "JobSubmitPlugins=pskel")

    def test_no_plugstack_line(self):
        (self.site.etc / "plugstack.conf.d" / "pskel.conf").unlink()
        self.assert_fails("plugstack", "no line for spank_pskel.so", "optional ")

    def test_queue_of_another_slurm_user(self):
        self.site.slurm_lines["SlurmUser"] = "nobody"
        self.site.write_slurm_conf()
        self.assert_fails("queue", "is missing", f"install -d -o nobody -m 0700 {self.site.state}/queue")

    def test_json_names_the_failure_and_its_fix(self):
        self.site.spool.chmod(0o777)
        r = self.site.doctor("--json")
        self.assertEqual(r.returncode, 1, r.stderr)
        out = json.loads(r.stdout)
        self.assertFalse(out["ok"])
        failed = [c for c in out["checks"] if c["status"] == "fail"]
        self.assertEqual([c["name"] for c in failed], ["SpoolDir"])
        self.assertIn("chmod go-w", failed[0]["fix"])

    def test_not_the_controller_skips_the_controller_checks(self):
        self.site.slurm_lines["SlurmctldHost"] = "some-other-host(10.0.0.1)"
        (self.site.state / "guard.heartbeat").unlink()  # no guard here: not a failure
        self.site.write_slurm_conf()
        r = self.site.doctor()
        self.assertEqual(r.returncode, 0, r.stdout)
        for check in ("job_submit plugin", "guard", "store", "EpilogSlurmctld"):
            self.assertTrue(self.lines_of(check, r)[0].startswith("skip"), check)

    def test_unreadable_slurm_conf_is_one_failure(self):
        r = run([PSKEL, "doctor", "--slurm-conf", f"{self.tmp.name}/missing.conf"])
        self.assertEqual(r.returncode, 1)
        line, fix = self.lines_of("slurm.conf", r)
        self.assertIn("missing.conf: missing", line)
        self.assertIn("SLURM_CONF", fix)

    def test_help(self):
        r = run([PSKEL, "doctor", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--slurm-conf", r.stdout)


if __name__ == "__main__":
    unittest.main()
