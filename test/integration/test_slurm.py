#!/usr/bin/env python3
"""pskel inside a real Slurm (Debian's 22.05): slurmctld + slurmd + munged started on loopback by
slurmlib.LocalSlurm with spank_pskel.so in the plugstack, job_submit_pskel.so as
JobSubmitPlugins=pskel and `pskel epilog` as EpilogSlurmctld.

What is checked (issue 5, "Must show"):
  - sbatch --predict of a C test program run by `srun --mpi=pmi2`, and by mpiexec inside the
    batch script, leaves a complete trace with one rank file per rank;
  - a job without --predict gets no trace, no LD_PRELOAD, no PSKEL_TRACE_DIR;
  - the node is idle again within a few seconds of every job (the epilog returns at once);
  - with a prediction in the export, job_submit sets TimeLimit and AdminComment; a job with the
    user's own --time is untouched (unset-only); another user's identical job is untouched;
  - a symlinked trace directory is neither read nor written; a corrupt export is ignored with one
    log line and submissions proceed; a worker killed halfway leaves no prediction;
  - end to end: traced job -> worker (compress, skeleton, calibration with sbatch) -> prediction
    -> the resubmitted job gets its TimeLimit from it. This needs `pskel skeleton` and
    `pskel predict` (issue 4); without them the failure is recorded ("skeleton: not available").

Needs root and the Slurm packages (scripts/install-deps); skipped otherwise.
Set PSKEL_KEEP_SLURM=1 to keep the daemons' directory (logs) after the run.
"""
import json
import os
import pathlib
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import slurmlib  # noqa: E402

BUILD = pathlib.Path(os.environ.get("PSKEL_BUILD_DIR", "build")).resolve()
PSKEL = BUILD / "core" / "cli" / "pskel"
APPS = BUILD / "test" / "apps"
SPANK = BUILD / "spank" / "spank_pskel.so"
JOBSUBMIT_DIR = BUILD / "jobsubmit"
TEST_USER = "pskeltest"
WAIT_PIPELINE = 600  # seconds a worker may take for one job (compile + calibration job)


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def export_is_valid(text: str) -> bool:
    """The export's own check (docs/export-format.md): header, end line, counts, checksum."""
    lines = text.split("\n")
    if not text.endswith("\n") or not lines or lines[0] != "pskel-export 3":
        return False
    end = lines[-2].split(" ")
    body = text[: len(text) - len(lines[-2]) - 1]
    return (len(end) == 5 and end[0] == "end" and
            int(end[1]) == sum(1 for l in lines if l.startswith("E ")) and
            int(end[3]) == sum(1 for l in lines if l.startswith("M ")) and
            int(end[4], 16) == crc32c(body.encode()))


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for c in data:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def setUpModule():
    global SLURM, TMP, CONF, SPOOL, STATE
    why = slurmlib.have_slurm()
    if why:
        raise unittest.SkipTest(why)
    for f in (PSKEL, SPANK, JOBSUBMIT_DIR / "job_submit_pskel.so"):
        if not f.exists():
            raise unittest.SkipTest(f"{f} not built")
    TMP = pathlib.Path(tempfile.mkdtemp(prefix="pskel-slurm-test-"))
    os.chmod(TMP, 0o755)
    SPOOL, STATE = TMP / "spool", TMP / "state"
    (TMP / "jobs").mkdir()
    STATE.mkdir(mode=0o755)
    os.chmod(TMP / "jobs", 0o1777)
    CONF = TMP / "pskel.conf"
    write_conf()
    epilog = TMP / "epilog.sh"
    SLURM = slurmlib.LocalSlurm(
        plugin_dirs=[str(JOBSUBMIT_DIR)], job_submit=True, epilog_slurmctld=str(epilog),
        plugstack_lines=[f"required {SPANK} conf={CONF}"], env={"PSKEL_CONF": str(CONF)})
    # slurmctld runs EpilogSlurmctld with a fresh environment: the worker's scontrol and sbatch
    # need this Slurm's configuration.
    epilog.write_text(f"#!/bin/sh\nSLURM_CONF={SLURM.conf} exec {PSKEL} epilog --conf {CONF} "
                      "</dev/null >/dev/null 2>&1\n")
    epilog.chmod(0o755)
    try:
        SLURM.start()
        start_guard()
    except Exception:
        stop_guard()
        SLURM.cleanup()
        raise


GUARD = None


def start_guard():
    """`pskel guard`, as etc/pskel-guard.service runs it: job_submit sets limits only while its
    heartbeat is fresh (GuardRequired=yes)."""
    global GUARD
    try:
        GUARD = slurmlib.start_pskel_guard(SLURM, PSKEL, CONF, STATE / "guard.heartbeat")
    except RuntimeError as e:
        raise AssertionError(f"{e}: {worker_log()[-2000:]}") from e


def stop_guard():
    if GUARD and GUARD.poll() is None:
        GUARD.terminate()
        GUARD.wait(timeout=30)


def tearDownModule():
    stop_guard()
    SLURM.cleanup()
    if not os.environ.get("PSKEL_KEEP_SLURM"):
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print(f"kept {TMP} and {SLURM.tmp}", file=sys.stderr)


def write_conf(**extra):
    keys = {
        "SpoolDir": SPOOL, "StateDir": STATE, "Pskel": PSKEL,
        "TracerMpich": BUILD / "core" / "tracer" / "libpskel-trace-mpich.so",
        "TracerOpenmpi": BUILD / "core" / "tracer" / "libpskel-trace-openmpi.so",
        "CalibrationTimeLimit": 5, "StepTimeout": 300, "TargetSkeletonSeconds": 1,
        "GuardInterval": 2,
        "LauncherMpich": '"srun --mpi=pmi2 -n {ntasks}"',
    }
    keys.update(extra)
    CONF.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))


def job_script(name, body, env=""):
    path = TMP / "jobs" / name
    path.write_text(f"#!/bin/sh\n{env}echo LD_PRELOAD=$LD_PRELOAD\necho PSKEL_TRACE_DIR=$PSKEL_TRACE_DIR\n{body}\n")
    path.chmod(0o755)
    return path


def submit(script, *args, user=None, check=True, script_args=()):
    out = TMP / "jobs" / f"{script.name}.%j.out"
    job_id, r = SLURM.sbatch([f"--output={out}", f"--chdir={TMP / 'jobs'}", *args, script,
                              *script_args], user=user)
    if check and job_id is None:
        raise AssertionError(f"sbatch failed: {r.stderr}\n{SLURM.logs()}")
    return job_id, r


def finish(job_id, completing_within=20):
    """Waits for the job to end; asserts it spent at most `completing_within` seconds
    COMPLETING (i.e. the epilog returned at once and the node was free again: the pipeline it
    queues takes minutes; 1-2 s here on a quiet machine, a busy one slows it several times)."""
    end = time.time() + 300
    completing_since = None
    while time.time() < end:
        fields = SLURM.job(job_id)
        state = fields.get("JobState", "")
        if state == "COMPLETING" and completing_since is None:
            completing_since = time.time()
        if state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", ""):
            if completing_since is not None:
                took = time.time() - completing_since
                if took > completing_within:
                    raise AssertionError(f"job {job_id} was COMPLETING for {took:.1f} s")
            return fields
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {SLURM.job(job_id)}\n{SLURM.logs()}")


def output(script, job_id):
    return (TMP / "jobs" / f"{script.name}.{job_id}.out").read_text()


def trace_steps(job_id):
    """{step name: (meta.json, sorted rank file names)} of a job's trace directory."""
    job_dir = SPOOL / f"job.{job_id}"
    steps = {}
    if job_dir.is_dir() and not job_dir.is_symlink():
        for step in sorted(job_dir.glob("step.*")):
            meta = step / "meta.json"
            if meta.exists():
                steps[step.name] = (json.loads(meta.read_text()),
                                    sorted(p.name for p in step.glob("rank.*.pskt")))
    return steps


def pskel(*args):
    r = subprocess.run([str(PSKEL), *args, "--conf", str(CONF)], capture_output=True, text=True,
                       timeout=120, env=SLURM.env())
    if r.returncode != 0:
        raise AssertionError(f"pskel {' '.join(args)}: {r.stderr}")
    return json.loads(r.stdout) if "--json" in args else r.stdout


def trace_row(job_id, timeout=WAIT_PIPELINE, final=True):
    """The store's trace row of a job, waiting until the worker finished with it."""
    end = time.time() + timeout
    row = None
    while time.time() < end:
        if (STATE / "pskel.db").exists():
            with sqlite3.connect(STATE / "pskel.db", timeout=30) as db:
                row = db.execute("SELECT state, step, message, app_id, trace_dir, runtime_seconds "
                                 "FROM traces WHERE job_id=?", (job_id,)).fetchone()
            if row and (not final or row[0] in ("done", "failed")):
                return row
        time.sleep(1)
    raise AssertionError(f"worker did not finish job {job_id} (row {row}):\n{worker_log()}")


def worker_log():
    log = STATE / "worker.log"
    return log.read_text() if log.exists() else "(no worker log)"


def put_prediction(uid, user, key, ntasks, partition, seconds):
    """A prediction as the worker stores it, then the export rewritten by `pskel db export`."""
    pskel("db", "export")  # creates the store's schema if needed (db list only reads)
    with sqlite3.connect(STATE / "pskel.db", timeout=30) as db:
        db.execute("INSERT OR IGNORE INTO applications(uid, user, key, created) VALUES(?,?,?,0)",
                   (uid, user, key))
        app = db.execute("SELECT id FROM applications WHERE uid=? AND key=?", (uid, key)).fetchone()[0]
        db.execute("DELETE FROM predictions WHERE app_id=? AND ntasks=? AND partition=?",
                   (app, ntasks, partition))
        db.execute("INSERT INTO predictions(app_id, uid, ntasks, partition, skeleton_seconds, scale,"
                   " predicted_seconds, created) VALUES(?,?,?,?,?,?,?,0)",
                   (app, uid, ntasks, partition, seconds / 10, 10, seconds))
        pid = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    since = SLURM.ctld_log_size()
    pskel("db", "export")
    # The plugin's loader thread looks at the export every 2 s and says when it loaded it.
    SLURM.wait_for_ctld_log(since, r"export: loaded \d+ predictions")
    return pid


def ensure_test_user():
    if subprocess.run(["id", TEST_USER], capture_output=True).returncode != 0:
        r = subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", TEST_USER],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise unittest.SkipTest(f"useradd: {r.stderr}")
    return int(subprocess.run(["id", "-u", TEST_USER], capture_output=True, text=True).stdout)


class Tracing(unittest.TestCase):
    """spank_pskel.so: who gets the tracer, where traces go."""

    def check_trace(self, job_id, ranks):
        steps = trace_steps(job_id)
        complete = {k: v for k, v in steps.items() if v[0].get("complete")}
        self.assertTrue(complete, f"no complete trace for job {job_id}: {steps}\n{SLURM.logs()}")
        for name, (meta, files) in complete.items():
            self.assertEqual(meta["ranks"], ranks, name)
            self.assertEqual(files, [f"rank.{r}.pskt" for r in range(ranks)], name)
            self.assertEqual(meta["job_id"], str(job_id))
        job_dir = SPOOL / f"job.{job_id}"
        self.assertEqual(job_dir.stat().st_mode & 0o777, 0o700)
        return complete

    def test_srun_pmi2_rank_files(self):
        script = job_script("srun.sh", f"srun --mpi=pmi2 {APPS / 'ring.mpich'} -i 5")
        job_id, _ = submit(script, "--predict=ring-srun", "--ntasks=2")
        fields = finish(job_id)
        self.assertEqual(fields["ExitCode"], "0:0", output(script, job_id))
        self.assertIn("ring: ranks=2", output(script, job_id))
        self.assertIn("step.0", self.check_trace(job_id, 2))

    def test_mpiexec_in_batch_script_rank_files(self):
        script = job_script("mpiexec.sh", f"mpiexec.mpich -n 2 {APPS / 'ring.mpich'} -i 5")
        job_id, _ = submit(script, "--predict", "--ntasks=2")
        fields = finish(job_id)
        out = output(script, job_id)
        self.assertEqual(fields["ExitCode"], "0:0", out)
        # The batch step's environment carries the tracer: mpiexec's ranks inherit it.
        self.assertRegex(out, r"LD_PRELOAD=\S*libpskel-trace-mpich\.so")
        self.assertIn(f"PSKEL_TRACE_DIR={SPOOL}/job.{job_id}/step.batch", out)
        self.check_trace(job_id, 2)

    def test_openmpi_program_gets_the_openmpi_tracer(self):
        script = job_script(
            "openmpi.sh", f"mpiexec.openmpi -n 2 {APPS / 'ring.openmpi'} -i 5",
            env="export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1\n")
        job_id, _ = submit(script, "--predict=ring-ompi", "--ntasks=2")
        fields = finish(job_id)
        out = output(script, job_id)
        self.assertEqual(fields["ExitCode"], "0:0", out)
        self.assertRegex(out, r"LD_PRELOAD=\S*libpskel-trace-openmpi\.so")
        self.check_trace(job_id, 2)

    def test_job_without_predict_is_not_traced(self):
        script = job_script("plain.sh", f"srun --mpi=pmi2 {APPS / 'ring.mpich'} -i 3\n"
                                        "srun sh -c 'echo STEP_PRELOAD=$LD_PRELOAD'")
        job_id, _ = submit(script, "--ntasks=2")
        fields = finish(job_id)
        out = output(script, job_id)
        self.assertEqual(fields["ExitCode"], "0:0", out)
        self.assertIn("LD_PRELOAD=\n", out)
        self.assertIn("PSKEL_TRACE_DIR=\n", out)
        self.assertNotIn("libpskel", out)
        self.assertFalse((SPOOL / f"job.{job_id}").exists())

    def test_srun_predict_outside_batch(self):
        r = SLURM.run(["srun", "--predict=ring-direct", "--mpi=pmi2", "-n", "2",
                       str(APPS / "ring.mpich"), "-i", "3"], timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        job_id = int(SLURM.run(["squeue", "-h", "-t", "all", "-o", "%i", "-n", "ring.mpich"])
                     .stdout.split()[-1])
        finish(job_id)
        self.check_trace(job_id, 2)

    def test_symlinked_job_directory_is_refused(self):
        victim = TMP / "victim-spank"
        victim.mkdir()
        (victim / "keep").write_text("x")
        script = job_script("victim.sh", f"srun --mpi=pmi2 {APPS / 'ring.mpich'} -i 3")
        job_id, _ = submit(script, "--predict", "--ntasks=2", "--hold")
        SPOOL.mkdir(exist_ok=True)
        os.symlink(victim, SPOOL / f"job.{job_id}")
        SLURM.scontrol("release", str(job_id))
        fields = finish(job_id)
        self.assertEqual(fields["ExitCode"], "0:0", output(script, job_id))
        self.assertIn("ring: ranks=2", output(script, job_id))  # the job ran normally, untraced
        self.assertEqual(sorted(p.name for p in victim.iterdir()), ["keep"])
        row = trace_row(job_id)
        self.assertEqual(row[0], "failed")
        self.assertIn("symbolic link", row[2])
        self.assertEqual(sorted(p.name for p in victim.iterdir()), ["keep"])


    def test_symlinked_step_directory_is_never_read(self):
        victim = TMP / "victim-worker"
        victim.mkdir()
        (victim / "meta.json").write_text('{"complete": true, "ranks": 1, "mpi": "mpich"}')
        (victim / "rank.0.pskt").write_text("not a trace")
        before = sorted((p.name, p.stat().st_mtime_ns) for p in victim.iterdir())
        # The job replaces its own trace with a symlink once it has been written.
        script = job_script("swap.sh", f"srun --mpi=pmi2 {APPS / 'ring.mpich'} -i 3\n"
                                       "d=$(dirname $PSKEL_TRACE_DIR)\n"
                                       f"rm -rf $d/step.0 && ln -s {victim} $d/step.0")
        job_id, _ = submit(script, "--predict=swapped", "--ntasks=2")
        self.assertEqual(finish(job_id)["ExitCode"], "0:0", output(script, job_id))
        row = trace_row(job_id)
        self.assertEqual((row[0], row[1]), ("failed", "trace"), row)
        self.assertIn("symbolic link", row[2])
        self.assertEqual(sorted((p.name, p.stat().st_mtime_ns) for p in victim.iterdir()), before)


class TimeLimits(unittest.TestCase):
    """job_submit_pskel.so with predictions in the export."""

    def test_no_limits_while_the_guard_is_down(self):
        """GuardRequired=yes: a limit nobody would extend is not set. GuardInterval=2, so the
        heartbeat is stale after 3 x 2 + 10 s."""
        script = job_script("unguarded.sh", "sleep 1")
        put_prediction(0, "root", "script:" + fnv1a64(script.read_bytes()), 1, slurmlib.PARTITION, 125.0)
        before = SLURM.ctld_log_size()
        stop_guard()
        try:
            # Stale after 16 s, seen by the loader within 2 s more: it says so once.
            SLURM.wait_for_ctld_log(before, r"pskel: guard: NOT running .*no time limits are set")
            job_id, r = submit(script, "--ntasks=1")
            self.assertNotIn("pskel", r.stderr)
            self.assertEqual(finish(job_id)["TimeLimit"], "00:30:00")  # the partition's default
            log = SLURM.ctld_log_after(before)
            self.assertEqual(len(re.findall(r"pskel: guard: NOT running .*no time limits are set", log)),
                             1, log[-3000:])
            self.assertIn("guard: NOT running", pskel("report"))
        finally:
            start_guard()
        job_id, r = submit(script, "--ntasks=1")
        self.assertIn("pskel: time limit set to 4 min", r.stderr)
        finish(job_id)
        SLURM.wait_for_ctld_log(before, r"pskel: guard: running")  # it said so

    def test_limit_from_prediction_and_untouched_jobs(self):
        script = job_script("limited.sh", "sleep 1")
        key = "script:" + fnv1a64(script.read_bytes())
        pid = put_prediction(0, "root", key, 1, slurmlib.PARTITION, 125.0)
        # ceil((125 x 1.2 + 60) / 60) = 4 minutes
        job_id, r = submit(script, "--ntasks=1")
        self.assertIn("pskel: time limit set to 4 min", r.stderr)
        fields = finish(job_id)
        self.assertEqual(fields["TimeLimit"], "00:04:00")
        comment = SLURM.scontrol("show", "job", str(job_id)).stdout
        self.assertRegex(comment, rf"AdminComment=pskel: time limit 4 min from prediction #{pid}")

        own, r = submit(script, "--ntasks=1", "--time=7")
        self.assertNotIn("pskel", r.stderr)
        fields = finish(own)
        self.assertEqual(fields["TimeLimit"], "00:07:00")
        self.assertNotIn("AdminComment=pskel", SLURM.scontrol("show", "job", str(own)).stdout)

        other, _ = submit(job_script("other.sh", "sleep 2"), "--ntasks=1")
        self.assertEqual(finish(other)["TimeLimit"], "00:30:00")  # the partition's default

        # The outcome of the job pskel limited reaches the store and the report.
        end = time.time() + 120
        while time.time() < end:
            shown = pskel("db", "show", key, "--json")
            if shown and shown[0]["outcomes"]:
                break
            time.sleep(1)
        outcome = shown[0]["outcomes"][0]
        self.assertEqual(outcome["job_id"], job_id)
        self.assertEqual(outcome["limit_minutes"], 4)
        self.assertGreaterEqual(outcome["actual_seconds"], 0)
        report = pskel("report", "--json")
        self.assertTrue(any(r["application"] == key and r["limited"] >= 1
                            for r in report["applications"]), report)

    def test_another_users_identical_job_is_untouched(self):
        uid = ensure_test_user()
        script = job_script("shared.sh", "sleep 1")
        key = "script:" + fnv1a64(script.read_bytes())
        put_prediction(0, "root", key, 1, slurmlib.PARTITION, 125.0)
        job_id, r = submit(script, "--ntasks=1", user=TEST_USER)
        fields = finish(job_id)
        self.assertEqual(fields["UserId"], f"{TEST_USER}({uid})")
        self.assertEqual(fields["TimeLimit"], "00:30:00")
        self.assertNotIn("pskel", r.stderr)

    def test_corrupt_export_is_ignored_with_one_log_line(self):
        script = job_script("corrupt.sh", "true")
        key = "script:" + fnv1a64(script.read_bytes())
        put_prediction(0, "root", key, 1, slurmlib.PARTITION, 10.0)
        export = STATE / "predictions.export"
        good = export.read_text()
        try:
            since = SLURM.ctld_log_size()
            export.write_text(good[: len(good) // 2])  # truncated
            SLURM.wait_for_ctld_log(since, r"pskel: export: .*truncated.*ignored")
            ids = [submit(script, "--ntasks=1")[0] for _ in range(3)]
            for job_id in ids:
                fields = finish(job_id)
                self.assertEqual(fields["JobState"], "COMPLETED")
                self.assertEqual(fields["TimeLimit"], "00:02:00")  # the cached prediction
            log = SLURM.ctld_log_after(0)
            self.assertEqual(len(re.findall(r"pskel: export: .*truncated.*ignored", log)), 1, log)
        finally:
            pskel("db", "export")


class Worker(unittest.TestCase):
    """The epilog's worker: safety and the end-to-end prediction path."""

    def test_worker_killed_halfway_leaves_no_prediction(self):
        slow = TMP / "pskel-slow"
        slow.write_text(f"#!/bin/sh\n[ \"$1\" = skeleton ] && [ \"$2\" != --help ] && sleep 120\n"
                        f"exec {PSKEL} \"$@\"\n")
        slow.chmod(0o755)
        write_conf(Pskel=slow)
        try:
            script = job_script("killed.sh", f"srun --mpi=pmi2 {APPS / 'ring.mpich'} -i 3")
            job_id, _ = submit(script, "--predict=killed", "--ntasks=2")
            finish(job_id)
            end = time.time() + 120
            pid = None
            while time.time() < end and pid is None:
                m = re.search(rf"pskel\[(\d+)\]: job {job_id}: skeleton", worker_log())
                if not m:
                    m = re.search(rf"pskel\[(\d+)\]: job {job_id}: compress: ok", worker_log())
                pid = int(m.group(1)) if m else None
                time.sleep(0.5)
            self.assertIsNotNone(pid, worker_log())
            # The row says when the worker is in the skeleton step (where pskel-slow sleeps 120 s).
            end = time.time() + 120
            while time.time() < end and trace_row(job_id, final=False)[1] != "skeleton":
                time.sleep(0.2)
            os.kill(pid, signal.SIGKILL)
            row = trace_row(job_id, final=False)
            self.assertEqual(row[0], "running")
            self.assertEqual(row[1], "skeleton")
            with sqlite3.connect(STATE / "pskel.db", timeout=30) as db:
                n = db.execute("SELECT COUNT(*) FROM predictions p JOIN applications a ON "
                               "a.id=p.app_id WHERE a.key='killed'").fetchone()[0]
            self.assertEqual(n, 0)
            export = STATE / "predictions.export"
            if export.exists():
                self.assertTrue(export_is_valid(export.read_text()))
                self.assertNotIn(" killed\n", export.read_text())
            self.assertTrue((STATE / "queue" / f"{job_id}.job").exists(), "ticket kept for a retry")
        finally:
            write_conf()

    def check_end_to_end(self, name, body):
        script = job_script(f"{name}.sh", body)
        job_id, _ = submit(script, f"--predict={name}", "--ntasks=2")
        fields = finish(job_id)
        self.assertEqual(fields["ExitCode"], "0:0", output(script, job_id))
        state, step, message, _, trace_dir, runtime = trace_row(job_id)
        self.assertEqual((state, message), ("done", ""),
                         f"pipeline failed at {step}: {message}\n{worker_log()}")
        self.assertGreaterEqual(runtime, 0)
        shown = pskel("db", "show", name, "--json")[0]
        predictions = shown["predictions"]
        self.assertEqual(len(predictions), 1)
        self.assertEqual((predictions[0]["ntasks"], predictions[0]["partition"]),
                         (2, slurmlib.PARTITION))
        predicted = predictions[0]["predicted_seconds"]
        self.assertGreater(predicted, 0)
        self.assertEqual(shown["script_key"], "script:" + fnv1a64(script.read_bytes()))
        time.sleep(5)  # the plugin's loader thread looks at the export every 2 s
        # The same script again, without --predict and without --time.
        again, r = submit(script, "--ntasks=2")
        expected = -(-(predicted * 1.2 + 60) // 60)
        self.assertIn(f"pskel: time limit set to {int(expected)} min", r.stderr)
        fields = finish(again)
        self.assertEqual(fields["TimeLimit"], f"00:{int(expected):02d}:00")

    def test_model_limit_for_a_new_input(self):
        """Issue 18: one application traced at 2 tasks with four inputs (the script's argument:
        stencil's iterations); a fifth input, never traced, gets its limit from the run-time
        model fitted to them, the traced input itself still from its skeleton."""
        script = job_script("model.sh", f"srun --mpi=pmi2 {APPS / 'stencil.mpich'} -w 1000 -i $1")
        for iterations in (200, 400, 600, 800):
            job_id, _ = submit(script, "--predict=modelapp", "--ntasks=2",
                               script_args=[str(iterations)])
            finish(job_id)
            state, step, message, *_ = trace_row(job_id)
            self.assertEqual((state, message), ("done", ""), f"{step}: {message}\n{worker_log()}")
        self.assertRegex(worker_log(), r"model: fitted to 4 runs")
        with sqlite3.connect(STATE / "pskel.db", timeout=30) as db:
            runs = db.execute("SELECT COUNT(*) FROM model_runs r JOIN applications a ON "
                              "a.id=r.app_id WHERE a.key='modelapp'").fetchone()[0]
        self.assertEqual(runs, 4)
        export = (STATE / "predictions.export").read_text()
        self.assertTrue(export_is_valid(export))
        self.assertIn(" modelapp ", "".join(l for l in export.splitlines(True) if l.startswith("M ")))
        time.sleep(5)  # the plugin's loader thread looks every 2 s
        # A new input, 2.5 times the largest traced one, the same script without --predict.
        again, r = submit(script, "--ntasks=2", script_args=["2000"])
        self.assertIn("min from the model prediction for script:", r.stderr)
        predicted = float(re.search(r"model prediction for \S+ \(([0-9.]+) s\)", r.stderr).group(1))
        fields = finish(again)
        self.assertEqual(fields["ExitCode"], "0:0", output(script, again))
        comment = SLURM.scontrol("show", "job", str(again)).stdout
        self.assertRegex(comment, r"AdminComment=pskel: time limit \d+ min from prediction #-\d+")
        self.assertIn("by its model", comment)
        # stencil -w 1000 takes ~1.1 ms an iteration here: 2000 of them about 2.3 s; the model
        # answers with the high end of its interval.
        self.assertGreater(predicted, 1.0)
        self.assertLess(predicted, 10.0)
        # The traced input keeps its skeleton's prediction.
        same, r = submit(script, "--ntasks=2", script_args=["800"])
        self.assertIn("min from the skeleton prediction", r.stderr)
        finish(same)

    def test_end_to_end_srun(self):
        self.check_end_to_end("e2e-srun", f"srun --mpi=pmi2 {APPS / 'stencil.mpich'} -i 200")

    def test_end_to_end_mpiexec(self):
        self.check_end_to_end("e2e-mpiexec", f"mpiexec.mpich -n 2 {APPS / 'stencil.mpich'} -i 200")


if __name__ == "__main__":
    unittest.main(verbosity=2)
