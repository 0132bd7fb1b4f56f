"""A throw-away one-node Slurm for pskel's integration tests.

LocalSlurm writes a test slurm.conf into a temporary directory (loopback, free non-default
ports, proctrack/linuxproc, task/none, no accounting), generates a munge key, and starts munged,
slurmctld and slurmd as root in the foreground (-D / -F) as background processes whose logs go to
the same directory. It waits until the node is idle, and stop() ends exactly the processes it
started. No systemd, nothing outside the temporary directory is touched.

Client commands run with SLURM_CONF pointing at the test configuration (see LocalSlurm.env()).
"""
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NODE = "pskelnode"
PARTITION = "pskel"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have_slurm():
    """Why a real Slurm cannot run here, or "" if it can."""
    if os.geteuid() != 0:
        return "needs root"
    for prog in ("slurmctld", "slurmd", "munged", "mungekey", "sbatch", "scontrol"):
        if not shutil.which(prog) and not os.path.exists(f"/usr/sbin/{prog}"):
            return f"{prog} is not installed (scripts/install-deps)"
    return ""


class LocalSlurm:
    """REQUIRES: root. plugin_dirs are prepended to Slurm's own plugin directory."""

    def __init__(self, plugin_dirs=(), plugstack_lines=(), job_submit=False, epilog_slurmctld=None,
                 extra_conf=(), max_time="30", env=None):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="pskel-slurm-"))
        self.ctld_log = self.tmp / "log" / "slurmctld.log"
        os.chmod(self.tmp, 0o755)
        self.procs = []
        self.plugin_dirs = list(plugin_dirs)
        self.plugstack_lines = list(plugstack_lines)
        self.job_submit = job_submit
        self.epilog_slurmctld = epilog_slurmctld
        self.extra_conf = list(extra_conf)
        self.max_time = max_time
        self.extra_env = dict(env or {})
        self.conf = self.tmp / "slurm.conf"
        self.munge_socket = self.tmp / "munge" / "munge.socket"

    # --- configuration -----------------------------------------------------------------------

    def _cpus(self):
        out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True).stdout
        m = re.search(r"CPUs=(\d+)", out)
        return int(m.group(1)) if m else os.cpu_count() or 1

    def write_config(self):
        for d in ("state", "spool", "log", "munge"):
            (self.tmp / d).mkdir(exist_ok=True)
        os.chmod(self.tmp / "munge", 0o711)  # the socket must be reachable by job users
        plugin_dir = ":".join(self.plugin_dirs + ["/usr/lib/x86_64-linux-gnu/slurm-wlm"])
        plugstack = self.tmp / "plugstack.conf"
        plugstack.write_text("".join(line + "\n" for line in self.plugstack_lines))
        cpus = self._cpus()
        lines = [
            "ClusterName=pskeltest",
            f"SlurmctldHost={socket.gethostname()}(127.0.0.1)",
            f"SlurmctldPort={free_port()}",
            f"SlurmdPort={free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.tmp / 'state'}",
            f"SlurmdSpoolDir={self.tmp / 'spool'}",
            f"SlurmctldPidFile={self.tmp / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.tmp / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.ctld_log}",
            f"SlurmdLogFile={self.tmp / 'log' / 'slurmd.log'}",
            "SlurmctldDebug=debug",
            "SlurmdDebug=debug",
            f"PluginDir={plugin_dir}",
            f"PlugStackConfig={plugstack}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdTimeout=30",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=600",
            "MessageTimeout=20",
            "EpilogMsgTime=100",
            f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
            f"CPUs={cpus} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime={self.max_time} "
            "State=UP OverSubscribe=FORCE:4",
        ]
        if self.job_submit:
            lines.append("JobSubmitPlugins=pskel")
        if self.epilog_slurmctld:
            lines.append(f"EpilogSlurmctld={self.epilog_slurmctld}")
        lines += self.extra_conf
        self.conf.write_text("\n".join(lines) + "\n")

    def env(self, extra=None):
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        for k in list(env):
            if k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and k != "SLURM_CONF":
                env.pop(k)
        env.pop("LD_PRELOAD", None)
        env.pop("PSKEL_TRACE_DIR", None)
        env.update(self.extra_env)
        env.update(extra or {})
        return env

    # --- processes ---------------------------------------------------------------------------

    def _spawn(self, name, cmd, env=None):
        log = open(self.tmp / "log" / f"{name}.out", "wb")
        p = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env or self.env(),
                             start_new_session=True)
        log.close()
        self.procs.append((name, p))
        return p

    def start(self):
        self.write_config()
        key = self.tmp / "munge" / "munge.key"
        subprocess.run(["mungekey", "-c", "-k", key], check=True, capture_output=True)
        os.chmod(key, 0o600)
        self._spawn("munged", ["munged", "-F", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={self.tmp / 'munge' / 'pid'}",
                               f"--log-file={self.tmp / 'log' / 'munged.log'}",
                               f"--seed-file={self.tmp / 'munge' / 'seed'}"])
        self._wait(lambda: self.munge_socket.exists(), 15, "munged socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self._wait(lambda: self.scontrol("ping").returncode == 0 and
                   "UP" in self.scontrol("ping").stdout, 30, "slurmctld ping")
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", self.conf])
        self.wait_idle(60)
        return self

    def _wait(self, cond, timeout, what):
        end = time.time() + timeout
        while time.time() < end:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited with {p.returncode} while waiting for "
                                       f"{what}:\n{self.logs()}")
            if cond():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")

    def node_state(self):
        r = self.run(["sinfo", "-h", "-n", NODE, "-o", "%T"])
        return r.stdout.strip()

    def wait_idle(self, timeout=60):
        self._wait(lambda: self.node_state() == "idle", timeout, "node idle")

    def ctld_log_size(self):
        """Where slurmctld's log ends now: the `since` of ctld_log_after and wait_for_ctld_log."""
        path = self.ctld_log
        return path.stat().st_size if path.exists() else 0

    def ctld_log_after(self, since):
        """What slurmctld logged after byte `since`."""
        with open(self.ctld_log, "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")

    def wait_for_ctld_log(self, since, pattern, timeout=60):
        """Waits until the regex `pattern` is logged after byte `since`. What the plugin's loader
        thread does (it looks every 2 s) is known from its log lines, not from a sleep: on a busy
        machine 2 s and a margin are not always enough."""
        self._wait(lambda: re.search(pattern, self.ctld_log_after(since)), timeout,
                   f"slurmctld to log {pattern!r}")

    def logs(self, tail=60):
        out = []
        for f in sorted((self.tmp / "log").glob("*")):
            lines = f.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"==> {f.name} <==\n" + "\n".join(lines))
        return "\n".join(out)

    def stop(self):
        if any(p.poll() is None for name, p in self.procs if name == "slurmctld"):
            # Jobs first, so that no slurmstepd outlives the cluster.
            jobs = self.run(["squeue", "-h", "-o", "%i"]).stdout.split()
            if jobs:
                self.run(["scancel"] + jobs)
                end = time.time() + 30
                while time.time() < end and self.run(["squeue", "-h", "-o", "%i"]).stdout.strip():
                    time.sleep(0.5)
        for name, p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name, p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []
        self._kill_strays()

    def _kill_strays(self):
        """Processes that still carry this cluster's SLURM_CONF (slurmstepd daemonises)."""
        marker = f"SLURM_CONF={self.conf}".encode()
        for proc in pathlib.Path("/proc").iterdir():
            if not proc.name.isdigit() or int(proc.name) == os.getpid():
                continue
            try:
                if marker in (proc / "environ").read_bytes().split(b"\0"):
                    os.kill(int(proc.name), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def cleanup(self):
        self.stop()
        if not os.environ.get("PSKEL_KEEP_SLURM"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- client commands ---------------------------------------------------------------------

    def run(self, cmd, env=None, timeout=120, user=None, input=None):
        return subprocess.run([str(c) for c in cmd], env=self.env(env), capture_output=True,
                              text=True, timeout=timeout, user=user, input=input)

    def scontrol(self, *args):
        return self.run(["scontrol"] + list(args))

    def sbatch(self, args, env=None, user=None, input=None):
        """Submits; returns (job id or None, completed process)."""
        r = self.run(["sbatch", "--parsable"] + [str(a) for a in args], env=env, user=user,
                     input=input)
        m = re.match(r"(\d+)", r.stdout.strip())
        return (int(m.group(1)) if m and r.returncode == 0 else None), r

    def job(self, job_id):
        """scontrol show job as a dict (one-liner parsed on Key=Value)."""
        r = self.scontrol("show", "job", "-o", str(job_id))
        fields = {}
        for m in re.finditer(r"(\w[\w:/]*)=(.*?)(?= \w[\w:/]*=|$)", r.stdout.strip()):
            fields[m.group(1)] = m.group(2)
        return fields

    def wait_job(self, job_id, timeout=120):
        """Waits until the job has finished; returns its final fields."""
        end = time.time() + timeout
        while time.time() < end:
            f = self.job(job_id)
            if f.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                     "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"):
                return f
            time.sleep(0.3)
        raise RuntimeError(f"job {job_id} did not finish: {self.job(job_id)}\n{self.logs()}")


def start_pskel_guard(slurm, pskel, conf, heartbeat):
    """`pskel guard` beside `slurm`, as etc/pskel-guard.service runs it on a controller. Returns
    its process once it has looked at the jobs (its `heartbeat` file is there) and
    job_submit_pskel.so's loader thread, which looks every 2 s, has seen that: from then on the
    plugin sets limits (GuardRequired=yes)."""
    heartbeat = pathlib.Path(heartbeat)
    heartbeat.unlink(missing_ok=True)
    guard = subprocess.Popen([str(pskel), "guard", "--conf", str(conf)], env=slurm.env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.time() + 30
    while not heartbeat.exists() and time.time() < end:
        time.sleep(0.2)
    if not heartbeat.exists():
        guard.kill()
        guard.wait()
        raise RuntimeError(f"pskel guard wrote no heartbeat ({heartbeat}) within 30 s")
    time.sleep(4.5)  # the loader's next look (every 2 s), with room for a busy controller
    return guard
