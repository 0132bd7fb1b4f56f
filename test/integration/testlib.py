"""Shared helpers of pskel's integration tests: where the build is, how to launch MPI programs
under each MPI on this machine, and how to read a test application's call counts."""
import collections
import json
import os
import pathlib
import struct
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


# ---- rank files (docs/trace-format.md §2), read without pskel --------------------------------

TRACE_HEADER_BYTES = 256
BLOCK_HEADER = struct.Struct("<IIII")  # magic, payload_bytes, record_count, crc32c
RECORD_BYTES = 80
DATA_MAGIC, PACKED_MAGIC, END_MAGIC = 0x4B424B50, 0x4B504B50, 0x444E4550


def unpack_records(payload, count):
    """The records of a packed block's payload as a data block holds them: per record a mask
    of its changed words, each changed word's byte count and low bytes of its XOR with the
    same word of the record before, then each aux word's byte count and low bytes of its XOR
    with the aux word 4 before it (or 0)."""
    words, out, at = [0] * (RECORD_BYTES // 8), bytearray(), 0

    def delta():
        nonlocal at
        n = payload[at]
        at += 1 + n
        return int.from_bytes(payload[at - n:at], "little")

    for _ in range(count):
        changed = int.from_bytes(payload[at:at + 2], "little")
        at += 2
        for i in range(len(words)):
            if changed >> i & 1:
                words[i] ^= delta()
        record = b"".join(w.to_bytes(8, "little") for w in words)
        aux = []
        for i in range(int.from_bytes(record[6:8], "little")):
            aux.append(delta() ^ (aux[i - 4] if i >= 4 else 0))
        out += record + b"".join(w.to_bytes(8, "little") for w in aux)
    return bytes(out)


def data_blocks(data):
    """(offset, magic, record count, records as a data block holds them) of each data block of
    a rank file's bytes, up to its end block."""
    at, out = TRACE_HEADER_BYTES, []
    while at + BLOCK_HEADER.size <= len(data):
        magic, size, count, _crc = BLOCK_HEADER.unpack_from(data, at)
        if magic == END_MAGIC:
            break
        payload = data[at + BLOCK_HEADER.size:at + BLOCK_HEADER.size + size]
        out.append((at, magic, count, unpack_records(payload, count) if magic == PACKED_MAGIC
                    else bytes(payload)))
        at += BLOCK_HEADER.size + size
    return out
