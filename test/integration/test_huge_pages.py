#!/usr/bin/env python3
"""pskel runs on transparent huge pages where the kernel gives them on request (THP mode
"madvise"): it starts itself again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (core/cli/
huge_pages.h). Checks what the programs pskel starts see (the caller's environment, untouched),
what pskel itself ran with, that a caller's glibc.malloc.hugetlb is left alone, and that the
process keeps its name."""
import os
import pathlib
import re
import tempfile
import unittest

from testlib import PSKEL, mpi_env, run

# Printed by the program `pskel run` starts: its own view, then its parent's (pskel's) start-up
# environment, as /proc keeps it, and the parent's name.
PROBE = ('echo "child GLIBC_TUNABLES=${GLIBC_TUNABLES-<unset>}'
         ' PSKEL_CALLERS_GLIBC_TUNABLES=${PSKEL_CALLERS_GLIBC_TUNABLES-<unset>}";'
         ' tr "\\0" "\\n" < /proc/$PPID/environ | grep -E "^(GLIBC_TUNABLES|PSKEL_CALLERS_)" |'
         ' sed "s/^/parent /";'
         ' echo "name $(cat /proc/$PPID/comm)"')


def thp_mode():
    try:
        text = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    found = re.search(r"\[(\w+)\]", text)
    return found.group(1) if found else None


def libc_has_hugetlb_tunable():
    version = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.36"
    found = re.search(r"(\d+)\.(\d+)", version)
    return bool(found) and (int(found.group(1)), int(found.group(2))) >= (2, 35)


class HugePages(unittest.TestCase):
    def probe(self, tunables):
        """Runs PROBE under `pskel run` with GLIBC_TUNABLES as given (None: unset)."""
        env = mpi_env()
        env.pop("GLIBC_TUNABLES", None)
        if tunables is not None:
            env["GLIBC_TUNABLES"] = tunables
        with tempfile.TemporaryDirectory() as tmp:
            r = run([PSKEL, "run", "--mpi", "mpich", "-o", pathlib.Path(tmp) / "t", "--",
                     "sh", "-c", PROBE], env=env)
        # No MPI program ran, so no trace: pskel says so, after the probe ran.
        self.assertIn("no trace was written", r.stderr)
        lines = r.stdout.splitlines()
        child = next(l for l in lines if l.startswith("child "))
        parent = sorted(l[len("parent "):] for l in lines if l.startswith("parent "))
        name = next(l for l in lines if l.startswith("name "))[len("name "):]
        return child, parent, name

    def restarts(self):
        return thp_mode() == "madvise" and libc_has_hugetlb_tunable()

    def test_the_program_started_sees_no_tunable_when_the_caller_set_none(self):
        child, parent, name = self.probe(None)
        self.assertEqual(child, "child GLIBC_TUNABLES=<unset> PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")
        self.assertEqual(name, "pskel")
        if not self.restarts():
            self.skipTest(f"THP mode {thp_mode()}: pskel has no reason to restart here")
        self.assertEqual(parent, ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1",
                                  "PSKEL_CALLERS_GLIBC_TUNABLES=-"])

    def test_the_callers_tunables_are_kept_and_reach_the_program(self):
        mine = "glibc.malloc.tcache_count=4"
        child, parent, name = self.probe(mine)
        self.assertEqual(child, f"child GLIBC_TUNABLES={mine} PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")
        self.assertEqual(name, "pskel")
        if not self.restarts():
            self.skipTest(f"THP mode {thp_mode()}: pskel has no reason to restart here")
        # glibc 2.36 cuts its copy of GLIBC_TUNABLES in /proc/PID/environ at the first ':' as it
        # parses it: the restart shows in the caller's value kept beside it.
        self.assertIn(f"PSKEL_CALLERS_GLIBC_TUNABLES=={mine}", parent)

    def test_an_empty_tunables_variable_stays_empty_for_the_program(self):
        child, _, _ = self.probe("")
        self.assertEqual(child, "child GLIBC_TUNABLES= PSKEL_CALLERS_GLIBC_TUNABLES=<unset>")

    def test_a_callers_hugetlb_setting_stands(self):
        child, parent, _ = self.probe("glibc.malloc.hugetlb=0")
        self.assertEqual(parent, ["GLIBC_TUNABLES=glibc.malloc.hugetlb=0"])  # not restarted
        self.assertIn("GLIBC_TUNABLES=glibc.malloc.hugetlb=0 ", child)


if __name__ == "__main__":
    unittest.main()
