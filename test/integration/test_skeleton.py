#!/usr/bin/env python3
"""`pskel skeleton` and `pskel predict` on real traces, checked with pskel itself.

For every C test program under MPICH and Open MPI (2 ranks): trace it, build its skeleton with
--scale 1 and with --scale K, run both to completion, trace each skeleton with `pskel run`, and
compare: the skeleton's main loop runs the original's iterations (K = 1) or 1/K of them (K > 1),
and every rank makes the same calls to the same peers with the same sizes (function families,
so that a Send the planner made non-blocking still counts as a send). Fortran programs: their
skeletons build and complete. eager_ring (test/skeleton/eager_ring.c), a ring of blocking sends
that works only with eager buffering, gets a skeleton that completes with rendezvous forced for
every message size. A trace of a job that was killed, and a missing MPI compiler, give one-line
errors (exit 1), never a hang."""
import json
import os
import pathlib
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

from testlib import APPS, BUILD, PSKEL, data_blocks, launcher, mpi_env, run

ITERATIONS = 100
K = 10
EAGER_RING = {f: BUILD / "test" / f"eager_ring.{f}" for f in ("mpich", "openmpi")}
# Rendezvous for every message size (checked by test_the_original_needs_eager_buffering).
RENDEZVOUS = {
    "mpich": {"UCX_RNDV_THRESH": "0"},
    "openmpi": {"OMPI_MCA_btl_vader_eager_limit": "256"},
}

# ---- reading traces ------------------------------------------------------------------------

RECORD = struct.Struct("<HHBBHiiiiiIqqIIqqq")
SENDS = {10: "send", 11: "send", 12: "send", 13: "send", 14: "send", 15: "send", 30: "send"}
RECVS = {16: "recv", 17: "recv", 31: "recv"}
COLLECTIVE_NAMES = {60: "barrier", 61: "bcast", 62: "reduce", 63: "allreduce", 64: "alltoall",
                    65: "alltoallv", 66: "allgather", 67: "allgatherv", 68: "gather",
                    69: "gatherv", 70: "scatter", 71: "scatterv", 72: "reduce_scatter",
                    73: "reduce_scatter_block", 74: "scan", 75: "exscan", 80: "barrier",
                    81: "bcast", 82: "reduce", 83: "allreduce", 84: "alltoall", 85: "allgather"}
ANY_SOURCE_FLAG = 8


def records(path):
    out = []
    for _at, _magic, _count, raw in data_blocks(pathlib.Path(path).read_bytes()):
        at = 0
        while at < len(raw):
            out.append(RECORD.unpack_from(raw, at))
            at += RECORD.size + 8 * out[-1][4]
    return out


def peer(who, rank):
    return "null" if who == -2 else "any" if who == -3 else who - rank


def calls(trace_dir, rank):
    """The set of (family, peer, bytes) a rank's calls make; completions and starts left out."""
    out = set()
    for (fn, _comm, _op, flags, _aux, dest, source, _tag, _rtag, root, _req, count, rcount,
         tsize, rtsize, _bytes, _t0, _t1) in records(pathlib.Path(trace_dir) / f"rank.{rank}.pskt"):
        src = "any" if flags & ANY_SOURCE_FLAG else peer(source, rank)
        if fn in SENDS:
            out.add(("send", peer(dest, rank), count * tsize))
        elif fn in RECVS:
            out.add(("recv", src, rcount * rtsize))
        elif fn == 18:
            out.add(("send", peer(dest, rank), count * tsize))
            out.add(("recv", src, rcount * rtsize))
        elif fn == 19:
            out.add(("send", peer(dest, rank), count * tsize))
            out.add(("recv", src, count * tsize))
        elif fn in (48, 49):
            out.add(("probe", src))
        elif fn in COLLECTIVE_NAMES:
            out.add((COLLECTIVE_NAMES[fn], root, count * tsize, rcount * rtsize))
        elif fn in (100, 101, 102, 104, 105):
            out.add(("comm_make",))
        elif fn == 103:
            out.add(("comm_free",))
    return out


# ---- running pskel -------------------------------------------------------------------------

def pskel(*args, env=None, timeout=600):
    return run([PSKEL, *args], env=env, timeout=timeout)


def ok(r, what):
    if r.returncode != 0:
        raise AssertionError(f"{what} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return r


def compress_json(trace_dir):
    return json.loads(ok(pskel("compress", "--json", "--show", trace_dir), "pskel compress").stdout)


def trace(out_dir, command):
    ok(pskel("run", "-o", out_dir, "--", *command, timeout=300), f"pskel run {command}")
    return out_dir


def build_skeleton(trace_dir, out, scale, env=None):
    r = ok(pskel("skeleton", trace_dir, "-o", out, "--scale", str(scale), "--json", env=env),
           "pskel skeleton")
    return json.loads(r.stdout)


class SkeletonsOfTheTestPrograms(unittest.TestCase):
    """One test per (program, MPI) is generated below."""

    def check(self, name, flavour):
        with tempfile.TemporaryDirectory(prefix="pskel-skel-") as tmp:
            tmp = pathlib.Path(tmp)
            program = [*launcher(flavour, 2), APPS / f"{name}.{flavour}", "-i", str(ITERATIONS), "-w", "1"]
            original = trace(tmp / "trace", program)
            tree = compress_json(original)
            main = tree["main_loop"]
            self.assertIsNotNone(main, json.dumps(tree["tree"]))
            for scale in (1, K):
                out = tmp / f"skeleton.{scale}"
                desc = build_skeleton(original, out, scale)
                for key in ("scale", "source", "binary", "scaled_loops", "rewritten_groups"):
                    self.assertIn(key, desc)
                self.assertEqual(desc["scale"], scale)
                self.assertTrue(pathlib.Path(desc["binary"]).exists())
                # It completes under pskel predict.
                pred = json.loads(ok(pskel("predict", out, "--json", "--repeat", "1", timeout=300),
                                     "pskel predict").stdout)
                for key in ("skeleton_seconds", "scale", "predicted_seconds"):
                    self.assertIn(key, pred)
                self.assertEqual(pred["errors"], 0)
                # These skeletons run well under 0.5 s: scaled ones say that is too short to
                # measure steadily, unscaled ones have nothing to multiply.
                short = pred["skeleton_elapsed_seconds"] < 0.5 and scale > 1
                self.assertEqual(bool(pred["note"]), short, pred["note"])
                # Traced with pskel itself: the same loop tree, the main loop divided by K.
                again = trace(tmp / f"trace.{scale}", [*launcher(flavour, 2), desc["binary"]])
                skel_tree = compress_json(again)
                self.assertIsNotNone(skel_tree["main_loop"], json.dumps(skel_tree["tree"]))
                got = skel_tree["main_loop"]["iterations"]
                want = max(1, main["iterations"] // scale)
                if desc["rewritten_groups"] or name == "masterworker":
                    # Rewritten calls fold differently; the loop count still shrinks by K.
                    self.assertLessEqual(abs(got - want), max(2, want // 5), (name, got, want))
                elif scale == 1:
                    self.assertEqual(skel_tree["tree"], tree["tree"])
                else:
                    # The merge may peel an iteration off a loop; the skeleton's copy of it
                    # then folds back in.
                    self.assertIn(got, (want, want + 1, want + 2), (name, got, want))
                    self.assertEqual(skel_tree["main_loop"]["body_length"], main["body_length"])
                for rank in range(2):
                    self.assertEqual(calls(again, rank), calls(original, rank),
                                     f"{name} K={scale} rank {rank}")

    def check_fortran(self, name, flavour):
        with tempfile.TemporaryDirectory(prefix="pskel-skel-f-") as tmp:
            tmp = pathlib.Path(tmp)
            original = trace(tmp / "trace", [*launcher(flavour, 2), APPS / f"{name}-f.{flavour}",
                                             "-i", str(ITERATIONS), "-w", "1"])
            build_skeleton(original, tmp / "skeleton", K)
            pred = json.loads(ok(pskel("predict", tmp / "skeleton", "--json", timeout=300),
                                 "pskel predict").stdout)
            self.assertEqual(pred["errors"], 0)


def add_tests():
    names = sorted({p.name.split(".")[0] for p in APPS.glob("*.mpich") if "-f" not in p.name})
    for name in names:
        for flavour in ("mpich", "openmpi"):
            def test(self, name=name, flavour=flavour):
                self.check(name, flavour)
            setattr(SkeletonsOfTheTestPrograms, f"test_{name}_{flavour}", test)
            if (APPS / f"{name}-f.{flavour}").exists():
                def test_f(self, name=name, flavour=flavour):
                    self.check_fortran(name, flavour)
                setattr(SkeletonsOfTheTestPrograms, f"test_{name}_fortran_{flavour}", test_f)
    return names


APP_NAMES = add_tests()


def run_killed_after(command, seconds, env):
    """Runs command in its own process group; True if it had to be killed."""
    p = subprocess.Popen([str(c) for c in command], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        p.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return True


class EagerRing(unittest.TestCase):
    """Blocking sends that only work with eager buffering: the skeleton must not hang."""

    def check(self, flavour):
        with tempfile.TemporaryDirectory(prefix="pskel-eager-") as tmp:
            tmp = pathlib.Path(tmp)
            program = [*launcher(flavour, 2), EAGER_RING[flavour], "-n", "100", "-i", "40", "-w", "1"]
            original = trace(tmp / "trace", program)
            for scale in (1, K):
                desc = build_skeleton(original, tmp / f"skeleton.{scale}", scale)
                self.assertTrue(desc["rewritten_groups"], "the send-then-receive ring is planned")
                source = pathlib.Path(desc["source"]).read_text()
                self.assertNotIn("CHK(MPI_Send(", source)
                env = mpi_env(RENDEZVOUS[flavour])
                start = time.monotonic()
                r = run([*launcher(flavour, 2), desc["binary"]], env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertIn("pskel-skeleton:", r.stdout)
                self.assertLess(time.monotonic() - start, 60)

    def test_mpich(self):
        self.check("mpich")

    def test_openmpi(self):
        self.check("openmpi")

    def test_the_original_needs_eager_buffering(self):
        """The premise: with rendezvous forced, the original itself hangs."""
        for flavour in ("mpich", "openmpi"):
            hung = run_killed_after([*launcher(flavour, 2), EAGER_RING[flavour], "-n", "100", "-i", "5"],
                                    10, mpi_env(RENDEZVOUS[flavour]))
            self.assertTrue(hung, f"{flavour}: eager_ring finished with rendezvous forced")


class MasterAnswersWhoeverReported(unittest.TestCase):
    """masterworker with 3 workers: the master's answers go to whichever worker reported first,
    so the skeleton sends them to the source its own wildcard receive matched
    (pskel_last_source), and completes with every message rendezvous (no eager buffering to
    hide a send to the wrong rank)."""

    def check(self, flavour):
        with tempfile.TemporaryDirectory(prefix="pskel-mw-") as tmp:
            tmp = pathlib.Path(tmp)
            program = [*launcher(flavour, 4), APPS / f"masterworker.{flavour}",
                       "-n", "60", "-i", "20", "-w", "200"]
            original = trace(tmp / "trace", program)
            answered, waited = set(), False
            for r in records(original / "rank.0.pskt"):
                waited = waited or (r[0] in RECVS and r[3] & ANY_SOURCE_FLAG)
                if waited and r[0] in SENDS:
                    answered.add(r[5])
            if len(answered) < 2:
                self.skipTest(f"one worker took every task in the traced run ({answered})")
            master = function_counts(original / "rank.0.pskt")
            for scale in (1, K):
                desc = build_skeleton(original, tmp / f"skeleton.{scale}", scale)
                source = pathlib.Path(desc["source"]).read_text()
                self.assertIn("pskel_last_source", source)
                self.assertNotIn("_dest[", source)  # no table of the traced destinations
                env = mpi_env(RENDEZVOUS[flavour])
                again = trace(tmp / f"trace.{scale}", [*launcher(flavour, 4), desc["binary"]])
                # The master makes the original's calls (all of them: its loop is not scaled by
                # iterations, the workers' loops not being its own), whoever it answers.
                self.assertEqual(function_counts(again / "rank.0.pskt"), master, f"K={scale}")
                r = run([*launcher(flavour, 4), desc["binary"]], env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertIn("errors=0", r.stdout)

    def test_mpich(self):
        self.check("mpich")

    def test_openmpi(self):
        self.check("openmpi")


def function_counts(path):
    """Sends, receives and probes a rank made (a Send the planner deferred is still a send)."""
    counts = {}
    for r in records(path):
        family = SENDS.get(r[0]) or RECVS.get(r[0]) or ("probe" if r[0] == 48 else None)
        if family:
            counts[family] = counts.get(family, 0) + 1
    return counts


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="pskel-skel-bad-"))
        cls.trace = trace(cls.tmp / "trace", [*launcher("mpich", 2), APPS / "cg.mpich", "-i", "20", "-w", "1"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def one_line_error(self, r):
        self.assertEqual(r.returncode, 1, r.stdout)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        return lines[0]

    def test_truncated_rank_file(self):
        cut = self.tmp / "cut"
        shutil.copytree(self.trace, cut)
        f = cut / "rank.1.pskt"
        f.write_bytes(f.read_bytes()[:-48])
        line = self.one_line_error(pskel("skeleton", cut, "-o", self.tmp / "out-cut", timeout=60))
        self.assertIn("rank.1.pskt", line)
        self.assertIn("did not finish", line)

    def test_killed_job(self):
        killed = self.tmp / "killed"
        command = [PSKEL, "run", "-o", killed, "--", *launcher("mpich", 2), EAGER_RING["mpich"],
                   "-i", "100000000", "-w", "10"]
        self.assertTrue(run_killed_after(command, 3, mpi_env()))
        r = pskel("skeleton", killed, "-o", self.tmp / "out-killed", timeout=60)
        line = self.one_line_error(r)
        self.assertTrue("did not finish" in line or "incomplete" in line or "truncated" in line, line)

    def test_missing_compiler(self):
        r = pskel("skeleton", self.trace, "-o", self.tmp / "out-cc", "--cc", "mpicc.nowhere", timeout=60)
        line = self.one_line_error(r)
        self.assertIn("mpicc.nowhere", line)
        env = mpi_env({"PATH": str(self.tmp / "empty-path")})
        line = self.one_line_error(pskel("skeleton", self.trace, "-o", self.tmp / "out-path", env=env,
                                         timeout=60))
        self.assertIn("mpicc.mpich", line)

    def test_compiler_that_writes_no_binary(self):
        """A compiler that exits 0 without writing the binary is an error, and a binary an
        earlier build left in the output directory does not pass for the new one."""
        fake = self.tmp / "fake-cc"
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
        out = self.tmp / "out-fake-cc"
        out.mkdir(exist_ok=True)
        (out / "skeleton").write_text("an earlier build\n")
        line = self.one_line_error(pskel("skeleton", self.trace, "-o", out, "--cc", fake, timeout=60))
        self.assertIn("wrote no", line)
        self.assertIn(str(out / "skeleton"), line)
        self.assertFalse((out / "skeleton").exists())

    def test_usage(self):
        self.assertEqual(pskel("skeleton", self.trace, "-o", self.tmp / "x", "--scale", "0").returncode, 2)
        self.assertEqual(pskel("skeleton", self.trace).returncode, 2)
        self.assertEqual(pskel("predict").returncode, 2)

    def test_predict_without_skeleton(self):
        self.one_line_error(pskel("predict", self.tmp / "nothing-here"))

    def test_predict_kills_a_run_past_its_timeout(self):
        build_skeleton(self.trace, self.tmp / "hangs", 10)
        start = time.monotonic()
        # "tail -f BINARY" never ends: it stands in for a skeleton that hangs
        line = self.one_line_error(pskel("predict", self.tmp / "hangs", "--launcher", "tail -f",
                                         "--timeout", "1", timeout=60))
        self.assertLess(time.monotonic() - start, 30)
        self.assertIn("hangs/skeleton: did not finish within 1 s (killed)", line)

    def test_auto_scale(self):
        desc = build_skeleton(self.trace, self.tmp / "auto", "auto")
        self.assertEqual(desc["scale_mode"], "auto")
        self.assertGreaterEqual(desc["scale"], 1)
        pred = json.loads(ok(pskel("predict", self.tmp / "auto", "--json", "--repeat", "2"),
                             "pskel predict").stdout)
        self.assertEqual(pred["repeat"], 2)
        self.assertEqual(len(pred["runs"]), 2)
        self.assertGreater(pred["predicted_seconds"], 0)
        self.assertEqual(pred["runs"][0]["stream_ratio"], 0)  # no memory part: nothing measured

    def test_predict_repeats_a_short_skeleton(self):
        # Without --repeat, runs until the skeleton's timed parts add up to --min-seconds, at
        # most 10 runs, and at least one however long the first took.
        build_skeleton(self.trace, self.tmp / "k2", 2)
        runs = lambda *o: json.loads(ok(pskel("predict", self.tmp / "k2", "--json", *o),
                                        "pskel predict").stdout)
        once = runs("--min-seconds", "0")
        self.assertEqual(once["repeat"], 1)
        each = once["runs"][0]["skeleton_elapsed_seconds"]
        self.assertLess(each, 0.5)  # the trace is short: else this checks nothing
        wanted = runs("--min-seconds", str(5 * each))
        first = wanted["runs"][0]["skeleton_elapsed_seconds"]
        if first < 5 * each:  # a busy machine can slow one run fivefold; then one is enough
            self.assertGreaterEqual(wanted["repeat"], 2)
        self.assertLessEqual(wanted["repeat"], 10)
        timed = sum(r["skeleton_elapsed_seconds"] for r in wanted["runs"])
        self.assertTrue(timed >= 5 * each or wanted["repeat"] == 10, wanted["runs"])
        # the last run was needed: without it the sum fell short. Summed in run order, as pskel
        # predict sums them (the printed microseconds it reads): (a + b) - b need not be a, and a
        # run of 255 us five times over ties with the threshold to the last bit; so one
        # microsecond of slack, the resolution of the values themselves.
        before_last = sum(r["skeleton_elapsed_seconds"] for r in wanted["runs"][:-1])
        self.assertLess(before_last, 5 * each + 1e-6, wanted["runs"])
        self.assertEqual(runs("--min-seconds", "1000")["repeat"], 10)
        self.assertEqual(pskel("predict", self.tmp / "k2", "--repeat", "2", "--min-seconds", "1").returncode, 2)


class MemoryHeavyProgram(unittest.TestCase):
    """spmv with about 50 MB of data per rank: the trace has each rank's footprint and memory
    calibration, from MPI_Finalize and from memory probes through the run (samples every 10 ms,
    so that its 0.3 s give more than the 10 probes needed), the skeleton prices a byte by the
    run's probes and streams its share of each gap through a working set that large,
    and its prediction of its own traced run is of the right size (within a factor of three: a
    stream of the wrong unit would be orders off; accuracy is the benchmarks' to measure, and
    one short run on a shared machine is not a measurement)."""

    def test_spmv_streams_its_share(self):
        with tempfile.TemporaryDirectory(prefix="pskel-skel-mem-") as tmp:
            tmp = pathlib.Path(tmp)
            original = tmp / "trace"
            ok(pskel("run", "-o", original, "--", *launcher("mpich", 2), APPS / "spmv.mpich",
                     "-n", "52", "-i", "40", "-w", "0",
                     env={**os.environ, "PSKEL_SAMPLE_MS": "10"}, timeout=300), "pskel run spmv")
            meta = json.loads((original / "meta.json").read_text())
            self.assertEqual(len(meta["stream_ns_per_byte"]), 2)
            in_run = meta["stream_ns_per_byte_in_run"]
            self.assertEqual(len(in_run), 2)
            self.assertEqual(meta["stream_kind"], "read")
            desc = build_skeleton(original, tmp / "skeleton", 1)
            memory = desc["memory"]
            self.assertEqual(memory["stream_kind"], "read")
            for rank in range(2):
                self.assertGreater(in_run[rank], 0, meta)
                self.assertEqual(memory["stream_ns_per_byte"][rank], in_run[rank])
                # each probe's pause is in a "p" line, taken out of the gap it fell in
                probes = [line for line in (original / f"samples.{rank}").read_text().splitlines()
                          if line.startswith("p ")]
                self.assertGreaterEqual(len(probes), 10)
                self.assertGreaterEqual(memory["footprint_bytes"][rank], 32 << 20, memory)
                self.assertGreater(memory["share"][rank], 0, memory)
                self.assertEqual(memory["working_set_bytes"][rank], memory["footprint_bytes"][rank])
            source = pathlib.Path(desc["source"]).read_text()
            self.assertIn(".memory = pskel_memory,", source)
            self.assertIn(".stream_kind = PSKEL_STREAM_READ,", source)
            pred = json.loads(ok(pskel("predict", tmp / "skeleton", "--json", "--repeat", "1"),
                                 "pskel predict").stdout)
            self.assertEqual(pred["errors"], 0)
            # the skeleton priced its own streaming against the probe's before its clock
            self.assertTrue(0.5 <= pred["runs"][0]["stream_ratio"] <= 2, pred)
            # making its 50 MB resident is the skeleton's set-up, not start-up to add back
            self.assertGreater(pred["runs"][0]["warmup_seconds"], 0, pred)
            ratio = pred["predicted_elapsed_seconds"] / desc["traced_seconds"]
            self.assertTrue(1 / 3 < ratio < 3, (pred, desc["traced_seconds"]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
