#!/usr/bin/env python3
"""pskel runs its trace-holding commands on transparent huge pages where the kernel gives them
on request (THP mode "madvise"): it starts itself again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1
(core/cli/huge_pages.h). Through `pskel skeleton --cc PROBE`, whose compiler is a script that
reports what it sees, checks what the programs pskel starts see (the caller's environment,
untouched), what pskel itself ran with, that a caller's glibc.malloc.hugetlb is left alone, and
that the process keeps its name. And, through a mallopt() shim preloaded, that the same commands
keep the memory they free (core/cli/huge_pages.h, keep_freed_memory) and light ones do not."""
import os
import pathlib
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

from testlib import PSKEL, mpi_env, run, tracegen

# The "compiler": its own view, its parent's (pskel's) start-up environment as /proc keeps it,
# and its parent's name.
PROBE = """#!/bin/sh
{
  echo "child GLIBC_TUNABLES=${GLIBC_TUNABLES-<unset>} PSKEL_CALLERS_GLIBC_TUNABLES=${PSKEL_CALLERS_GLIBC_TUNABLES-<unset>}"
  tr '\\0' '\\n' < /proc/$PPID/environ | grep -E '^(GLIBC_TUNABLES|PSKEL_CALLERS_)' | sed 's/^/parent /'
  echo "name $(cat /proc/$PPID/comm)"
} > "$PROBE_OUT"
touch "$3"  # the binary pskel expects: cc -O2 -o BINARY SOURCES...
"""


def thp_mode():
    try:
        text = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    found = re.search(r"\[(\w+)\]", text)
    return found.group(1) if found else None


def libc_has_hugetlb_tunable():
    found = re.search(r"(\d+)\.(\d+)", os.confstr("CS_GNU_LIBC_VERSION") or "")  # "glibc 2.36"
    return bool(found) and (int(found.group(1)), int(found.group(2))) >= (2, 35)


class HugePages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        cls.trace = cls.dir / "trace"
        tracegen("halo3d", 4, 50, cls.trace)
        cls.probe_script = cls.dir / "probe.sh"
        cls.probe_script.write_text(PROBE)
        cls.probe_script.chmod(cls.probe_script.stat().st_mode | stat.S_IXUSR)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def probe(self, tunables, command="skeleton"):
        """Runs `pskel skeleton` with GLIBC_TUNABLES as given (None: unset), the probe as its
        compiler; returns the probe's lines: its own, its parent's (sorted), the parent's name."""
        out = self.dir / "probe.out"
        out.unlink(missing_ok=True)
        env = mpi_env({"PROBE_OUT": str(out)})
        env.pop("GLIBC_TUNABLES", None)
        if tunables is not None:
            env["GLIBC_TUNABLES"] = tunables
        r = run([PSKEL, "skeleton", self.trace, "-o", self.dir / "skeleton",
                 "--cc", self.probe_script], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = out.read_text().splitlines()
        child = next(l for l in lines if l.startswith("child "))
        parent = sorted(l[len("parent "):] for l in lines if l.startswith("parent "))
        name = next(l for l in lines if l.startswith("name "))[len("name "):]
        return child, parent, name

    def require_restart(self):
        if thp_mode() != "madvise" or not libc_has_hugetlb_tunable():
            self.skipTest(f"THP mode {thp_mode()}, {os.confstr('CS_GNU_LIBC_VERSION')}: "
                          "pskel has no reason to restart here")

    def test_the_program_started_sees_no_tunable_when_the_caller_set_none(self):
        child, parent, name = self.probe(None)
        self.assertEqual(child, "child GLIBC_TUNABLES=<unset> PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")
        self.assertEqual(name, "pskel")
        self.require_restart()
        self.assertEqual(parent, ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
                                  "PSKEL_CALLERS_GLIBC_TUNABLES=-"])

    def test_the_callers_tunables_are_kept_and_reach_the_program(self):
        mine = "glibc.malloc.tcache_count=4"
        child, parent, name = self.probe(mine)
        self.assertEqual(child, f"child GLIBC_TUNABLES={mine} PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")
        self.assertEqual(name, "pskel")
        self.require_restart()
        # glibc 2.36 cuts GLIBC_TUNABLES in /proc/PID/environ at the first ':' as it parses it:
        # the restart shows in the caller's value kept beside it.
        self.assertIn(f"PSKEL_CALLERS_GLIBC_TUNABLES=={mine}", parent)

    def test_an_empty_tunables_variable_stays_empty_for_the_program(self):
        child, _, _ = self.probe("")
        self.assertEqual(child, "child GLIBC_TUNABLES= PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")

    def test_a_callers_hugetlb_setting_stands(self):
        child, parent, _ = self.probe("glibc.malloc.hugetlb=0")
        self.assertEqual(parent, ["GLIBC_TUNABLES=glibc.malloc.hugetlb=0"])  # not restarted
        self.assertIn("GLIBC_TUNABLES=glibc.malloc.hugetlb=0 ", child)


# Logs each mallopt() call ("param value result") to $MALLOPT_LOG, then makes it.
MALLOPT_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int mallopt(int param, int value) {
  int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "mallopt");
  int result = real ? real(param, value) : -1;
  const char* path = getenv("MALLOPT_LOG");
  FILE* log = path ? fopen(path, "a") : NULL;
  if (log) {
    fprintf(log, "%d %d %d\n", param, value, result);
    fclose(log);
  }
  return result;
}
"""
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3   # <malloc.h>


@unittest.skipIf(shutil.which("cc") is None, "no C compiler for the mallopt() shim")
class FreedMemoryStaysWithTheProcess(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = pathlib.Path(cls.tmp.name)
        (cls.dir / "shim.c").write_text(MALLOPT_SHIM)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", cls.dir / "shim.so", cls.dir / "shim.c",
                        "-ldl"], check=True)
        cls.trace = cls.dir / "trace"
        tracegen("transpose", 4, 20, cls.trace)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def mallopt_calls(self, *args):
        log = self.dir / "mallopt.log"
        log.unlink(missing_ok=True)
        r = run([PSKEL, *args], env=mpi_env({"LD_PRELOAD": str(self.dir / "shim.so"),
                                             "MALLOPT_LOG": str(log)}))
        self.assertEqual(r.returncode, 0, r.stderr)
        return log.read_text().splitlines() if log.exists() else []

    def test_a_trace_holding_command_keeps_what_it_frees(self):
        calls = self.mallopt_calls("info", self.trace)
        self.assertIn(f"{M_MMAP_THRESHOLD} {32 << 20} 1", calls)   # 1: glibc took the value
        self.assertIn(f"{M_TRIM_THRESHOLD} {2**31 - 1} 1", calls)

    def test_a_light_command_leaves_malloc_alone(self):
        self.assertEqual(self.mallopt_calls("db", "--help"), [])


class NoRestartForLightCommands(unittest.TestCase):
    def test_pskel_run_is_not_restarted(self):
        """`pskel run` holds no trace: the job it launches has pskel's plain start as parent."""
        with tempfile.TemporaryDirectory() as tmp:
            env = mpi_env()
            env.pop("GLIBC_TUNABLES", None)
            r = run([PSKEL, "run", "--mpi", "mpich", "-o", pathlib.Path(tmp) / "t", "--",
                     "sh", "-c", "tr '\\0' '\\n' < /proc/$PPID/environ"], env=env)
        self.assertIn("no trace was written", r.stderr)  # no MPI program ran
        self.assertNotIn("PSKEL_CALLERS_GLIBC_TUNABLES", r.stdout)
        self.assertNotIn("GLIBC_TUNABLES", r.stdout)


if __name__ == "__main__":
    unittest.main()
