#!/usr/bin/env python3
"""`pskel compress DIR` on real traces: every C test program under MPICH and Open MPI is traced
and merged; the merged trace is as short as it can be, and its loop tree has the program's main loop with the iteration count given on the command line and the
number of calls one iteration makes (from the comment at the top of each program).

As short as it can be: a merged event stands for one function, so the merged trace needs at
least, for every function, the most calls any rank made of it; and at least the busiest rank's
length (seed 000, Table 2). For SPMD programs the two are the same; they differ for
master/worker, where the master sends one message more than each worker and the workers probe
and receive one more. The programs' own call counts (-c) give the bound.
Also: damaged, incomplete or mixed trace directories give one line naming the file, exit 1."""
import json
import pathlib
import shutil
import tempfile
import unittest

from testlib import APPS, PSKEL, info_json, launcher, read_counts, run

ITERATIONS = 12


def per_iteration(name, ranks):
    """(main-loop iterations, merged events per iteration) the program's source implies."""
    return {
        "ring": (ITERATIONS, 11),       # Send Recv, Ssend Recv, Sendrecv_replace, Irecv Barrier
                                        # Rsend Wait, Bsend Recv
        "stencil": (ITERATIONS, 14),    # 4 Irecv, 2 Isend, 2 Issend, 4 Waitany, Waitall, Allreduce
        "cg": (ITERATIONS, 4),          # 2 Sendrecv, 2 Allreduce
        "wavefront": (ITERATIONS, 8 if ranks == 2 else 16),  # 4 blocks x (Recv, Send) x 2 sweeps;
                                        # with 2 ranks each rank does only one side of each
        "transpose": (ITERATIONS // 2, 3),  # Alltoall; Alltoall Alltoallv (odd iterations)
        "subcomm": (ITERATIONS, 3),     # Bcast, Reduce, Allgather
        "persistent": (ITERATIONS, 18), # Startall Start Start Waitall, Iallreduce Wait, Ibcast
                                        # Test Wait, Ireduce Ibarrier Ialltoall Iallgather Testany
                                        # Testsome Testall Waitsome Waitall
        "spmv": (ITERATIONS, 7),        # 2 Irecv, 2 Isend, Waitall, 2 Allreduce
        "multigrid": (ITERATIONS, 61),  # per level down and up: 2 Irecv, 2 Send, Waitall per
                                        # sweep or residual (levels 16/8/4/2); Allreduce
        "fft3d": (ITERATIONS, 2),       # Alltoall, Allreduce
    }.get(name)


def compress_json(trace_dir, *extra):
    r = run([PSKEL, "compress", "--json", *extra, trace_dir])
    if r.returncode != 0:
        raise AssertionError(f"pskel compress failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)


def shortest_merge(per_rank):
    """The fewest events a merge of these ranks' calls can have (see the module's text)."""
    functions = {f for calls in per_rank.values() for f in calls}
    per_function = sum(max(calls.get(f, 0) for calls in per_rank.values()) for f in functions)
    return max(per_function, max(sum(calls.values()) for calls in per_rank.values()))


def trace_app(tmp, name, flavour, ranks, args=("-i", str(ITERATIONS), "-w", "1"), label=""):
    """Traces the program into TMP/<name...>; its call counts go to <that>.counts."""
    trace_dir = pathlib.Path(tmp) / f"{name}.{flavour}.{ranks}{label}"
    r = run([PSKEL, "run", "-o", trace_dir, "--"] + launcher(flavour, ranks) +
            [APPS / f"{name}.{flavour}", *args, "-c", f"{trace_dir}.counts"])
    if r.returncode != 0:
        raise AssertionError(f"pskel run failed: {r.stderr}")
    return trace_dir


class MergedTracesFoldIntoTheProgramsLoops(unittest.TestCase):
    """One test per (program, MPI, ranks) is generated below."""

    def check(self, name, flavour, ranks):
        with tempfile.TemporaryDirectory() as tmp:
            trace_dir = trace_app(tmp, name, flavour, ranks)
            info = info_json(trace_dir)
            counts = read_counts(f"{trace_dir}.counts")
            self.assertEqual([sum(counts[r].values()) for r in range(ranks)],
                             info["events_per_rank"], "the trace holds every call")
            out = compress_json(trace_dir, "--show")
            self.assertEqual(out["ranks"], ranks)
            self.assertEqual(out["merged_events"], shortest_merge(counts),
                             "the merged trace is as short as it can be")
            for key in ("compressed_length", "merge_seconds", "compress_seconds", "tree"):
                self.assertIn(key, out)
            self.assertGreaterEqual(out["merge_groups"], 1)
            self.assertLessEqual(out["merge_groups"], ranks)
            expected = per_iteration(name, ranks)
            if expected is None:   # masterworker: who gets which task depends on timing
                self.assertLess(out["compressed_length"], out["merged_events"])
                return
            iterations, body = expected
            self.assertIsNotNone(out["main_loop"], json.dumps(out["tree"]))
            self.assertEqual((out["main_loop"]["iterations"], out["main_loop"]["body_length"]),
                             (iterations, body), json.dumps(out["tree"]))
            # Folded, the main loop's iterations after the first are gone.
            self.assertLessEqual(out["compressed_length"],
                                 out["merged_events"] - (iterations - 1) * body,
                                 json.dumps(out["tree"]))
            text = run([PSKEL, "compress", "--show", trace_dir])
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn(f")^{iterations}", text.stdout)
            self.assertTrue(text.stdout.startswith("MPI_Init"), text.stdout)


def add_tests():
    names = sorted({p.name.split(".")[0] for p in APPS.glob("*.mpich") if "-f" not in p.name})
    for name in names:
        for flavour, ranks in (("mpich", 2), ("openmpi", 2), ("openmpi", 4)):
            def test(self, name=name, flavour=flavour, ranks=ranks):
                self.check(name, flavour, ranks)
            setattr(MergedTracesFoldIntoTheProgramsLoops, f"test_{name}_{flavour}_{ranks}_ranks", test)
    return names


APP_NAMES = add_tests()

class BadTraceDirectories(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pskel-compress-")
        cls.first = trace_app(cls.tmp, "ring", "openmpi", 2)
        cls.second = trace_app(cls.tmp, "ring", "openmpi", 2, ("-i", "3"), label=".second")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def damaged(self, label, change):
        target = pathlib.Path(self.tmp) / label
        shutil.copytree(self.first, target)
        change(target)
        r = run([PSKEL, "compress", target])
        self.assertEqual(r.returncode, 1, r.stdout)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        return lines[0]

    def test_missing_rank_file(self):
        line = self.damaged("missing", lambda d: (d / "rank.1.pskt").unlink())
        self.assertIn("rank.1.pskt", line)

    def test_rank_file_from_another_run(self):
        line = self.damaged("mixed", lambda d: shutil.copy(self.second / "rank.1.pskt", d))
        self.assertIn("rank.1.pskt", line)

    def test_truncated_rank_file(self):
        def cut(d):
            f = d / "rank.0.pskt"
            f.write_bytes(f.read_bytes()[:-40])
        line = self.damaged("truncated", cut)
        self.assertIn("rank.0.pskt", line)
        self.assertIn("truncated", line)

    def test_usage(self):
        self.assertEqual(run([PSKEL, "compress"]).returncode, 2)
        r = run([PSKEL, "compress", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--symbols", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
