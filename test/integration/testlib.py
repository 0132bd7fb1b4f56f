"""Shared helpers of pskel's integration tests: where the build is, how to launch MPI programs
under each MPI on this machine, and how to read a test application's call counts."""
import collections
import json
import os
import pathlib
import subprocess

BUILD = pathlib.Path(os.environ.get("PSKEL_BUILD_DIR", "build")).resolve()
PSKEL = BUILD / "core" / "cli" / "pskel"
APPS = BUILD / "test" / "apps"
FLAVOURS = ("mpich", "openmpi")


def tracer(flavour):
    return BUILD / "core" / "tracer" / f"libpskel-trace-{flavour}.so"


def mpi_env(extra=None):
    """The environment MPI programs run in here: root, 2 cores, more ranks than cores."""
    env = dict(os.environ)
    env.update({
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",  # no CMA in containers
    })
    env.pop("LD_PRELOAD", None)
    env.pop("PSKEL_TRACE_DIR", None)
    env.update(extra or {})
    return env


def launcher(flavour, ranks):
    return [f"mpiexec.{flavour}", "-n", str(ranks)]


def run(cmd, env=None, timeout=300, cwd=None):
    return subprocess.run([str(c) for c in cmd], env=env or mpi_env(), capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def tracegen(pattern, ranks, events, out):
    """A synthetic trace of `ranks` ranks and `events` calls each in `out`
    (test/bench/tracegen)."""
    r = run([BUILD / "test" / "bench" / "tracegen", "--pattern", pattern, "--ranks", str(ranks),
             "--events", str(events), "-o", out])
    if r.returncode != 0:
        raise AssertionError(f"tracegen failed: {r.stderr}")


def app_binaries():
    """(name, lang, flavour, path) of every built test application."""
    out = []
    for path in sorted(APPS.glob("*.*")):
        stem, _, flavour = path.name.rpartition(".")
        if flavour not in FLAVOURS or not os.access(path, os.X_OK):
            continue
        lang = "fortran" if stem.endswith("-f") else "c"
        out.append((stem.removesuffix("-f"), lang, flavour, path))
    return out


def read_counts(directory):
    """Per-rank {function: calls} from the counts.<rank> files an app writes with -c."""
    per_rank = {}
    for f in pathlib.Path(directory).glob("counts.*"):
        calls = {}
        for line in f.read_text().splitlines():
            name, count = line.split()
            calls[name] = int(count)
        per_rank[int(f.suffix[1:])] = calls
    return per_rank


def summed(per_rank):
    total = collections.Counter()
    for calls in per_rank.values():
        total.update(calls)
    return dict(total)


def info_json(trace_dir):
    r = run([PSKEL, "info", "--json", trace_dir])
    if r.returncode != 0:
        raise AssertionError(f"pskel info failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)
