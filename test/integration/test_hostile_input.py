#!/usr/bin/env python3
"""Hostile input through the pskel command, end to end (issue 22): a real traced run (ring, 2
ranks, MPICH) is mutated the way an attacker would, and every command must answer with its
one-line error (exit 1) or a correct result, never an abort, a hang, invalid JSON or code of the
attacker's in a skeleton. The library-level regression tests are in the unit suite."""
import json
import os
import pathlib
import resource
import shutil
import struct
import subprocess
import tempfile
import unittest

from testlib import (APPS, BLOCK_HEADER, DATA_MAGIC, PSKEL, RECORD_BYTES, TRACE_HEADER_BYTES,
                     data_blocks, launcher, mpi_env, run)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def set_first_call_times(path, t_start, t_end):
    """Rewrites the times of the second record of the first data block (the first after
    MPI_Init), that block written back unpacked with its checksum made right again: corruption
    no checksum catches."""
    data = path.read_bytes()
    at, _magic, count, raw = data_blocks(data)[0]
    assert count >= 2, "unexpected first block"
    raw = bytearray(raw)
    aux_words = struct.unpack_from("<H", raw, 6)[0]
    second = RECORD_BYTES + 8 * aux_words
    struct.pack_into("<qq", raw, second + 64, t_start, t_end)
    _magic, size, _count, _crc = BLOCK_HEADER.unpack_from(data, at)
    block = BLOCK_HEADER.pack(DATA_MAGIC, len(raw), count, crc32c(bytes(raw))) + bytes(raw)
    path.write_bytes(data[:at] + block + data[at + BLOCK_HEADER.size + size:])


def pskel(*args, timeout=120, env=None):
    """Runs pskel with byte-string arguments; returns (exit code, stdout bytes, stderr bytes)."""
    r = subprocess.run([os.fsencode(str(PSKEL)), *[a if isinstance(a, bytes) else os.fsencode(str(a))
                                                    for a in args]],
                       capture_output=True, timeout=timeout, env=env or mpi_env())
    return r.returncode, r.stdout, r.stderr


class HostileInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="pskel-hostile-"))
        cls.good = cls.tmp / "good"
        r = run([PSKEL, "run", "-o", cls.good, "--", *launcher("mpich", 2), APPS / "ring.mpich",
                 "-i", "20"])
        if r.returncode != 0:
            raise AssertionError(f"pskel run failed ({r.returncode}): {r.stderr}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def copy(self, name):
        dest = self.tmp / name if isinstance(name, str) else pathlib.Path(os.fsdecode(
            os.path.join(os.fsencode(str(self.tmp)), name)))
        shutil.copytree(self.good, dest)
        return dest

    def assert_one_line_error(self, code, err, *needles):
        self.assertEqual(code, 1, f"expected the bad-input exit code, got {code}: {err!r}")
        text = err.decode("utf-8")   # valid UTF-8, or this raises
        self.assertEqual(text.count("\n"), 1, text)
        self.assertTrue(text.startswith("pskel: "), text)
        for n in needles:
            self.assertIn(n, text)

    def test_meta_json_field_of_the_wrong_type(self):
        d = self.copy("wrong-type")
        meta = json.loads((d / "meta.json").read_text())
        meta["mpi"] = 5
        (d / "meta.json").write_text(json.dumps(meta))
        for args in (["info", d], ["info", "--json", d], ["timeline", d, "-o", self.tmp / "t.html"],
                     ["compress", d], ["simulate", d]):
            with self.subTest(args=args[:2]):
                code, _, err = pskel(*args)
                self.assert_one_line_error(code, err, "meta.json", '"mpi" is not a string')

    def test_invalid_utf8_in_a_trace_directory_name(self):
        d = self.copy(b"step.\xff")
        outs = {"info": pskel("info", "--json", bytes(d)),
                "compress": pskel("compress", "--json", bytes(d)),
                "skeleton": pskel("skeleton", bytes(d), "-o", self.tmp / "sk-utf8", "--json")}
        for command, (code, out, err) in outs.items():
            with self.subTest(command=command):
                self.assertEqual(code, 0, err)
                doc = json.loads(out.decode("utf-8"))
                self.assertIsInstance(doc, dict)
        self.assertIn("step.\ufffd", json.loads(outs["info"][1])["trace_dir"])
        desc = json.loads((self.tmp / "sk-utf8" / "skeleton.json").read_text(encoding="utf-8"))
        self.assertIn("\ufffd", desc["trace_dir"])

    def test_mpi_text_cannot_inject_code_into_the_skeleton(self):
        d = self.copy("inject")
        meta = json.loads((d / "meta.json").read_text())
        meta["mpi"] = "mpich */ int injected_by_trace = 1; /*"
        (d / "meta.json").write_text(json.dumps(meta))
        out = self.tmp / "sk-inject"
        code, _, err = pskel("skeleton", d, "-o", out, "--cc", "mpicc.mpich")
        self.assertEqual(code, 0, err)
        source = (out / "skeleton.c").read_text()
        self.assertNotIn("*/ int injected_by_trace", source)
        self.assertEqual(source.find("*/"), source.find(' */\n#include "pskel_runtime.h"') + 1)
        self.assertTrue((out / "skeleton").exists(), "the escaped source compiles")
        nm = subprocess.run(["nm", out / "skeleton"], capture_output=True, text=True)
        self.assertNotIn("injected_by_trace", nm.stdout)

    def test_corrupt_timestamp_is_refused_not_predicted(self):
        for name, times in (("far", (4_600_000_000_000_000_000, 4_600_000_000_000_000_001)),
                            ("int64-max", (2**63 - 2, 2**63 - 1)),
                            ("backwards", (5_000_000, 4_000_000))):
            d = self.copy("time-" + name)
            set_first_call_times(d / "rank.0.pskt", *times)
            for args in (["simulate", d], ["timeline", d, "-o", self.tmp / f"{name}.html"],
                         ["info", d]):
                with self.subTest(case=name, command=args[0]):
                    code, _, err = pskel(*args, timeout=60)   # a hang fails here
                    self.assert_one_line_error(code, err, "rank.0.pskt", "corrupt")

    def test_sparse_rank_file_is_refused_unread(self):
        d = self.copy("sparse")
        rank = d / "rank.1.pskt"
        header = rank.read_bytes()[:TRACE_HEADER_BYTES]
        rank.unlink()
        with open(rank, "wb") as f:
            f.write(header)
            f.truncate(3 << 30)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        code, _, err = pskel("info", d, timeout=30)
        self.assert_one_line_error(code, err, "rank.1.pskt", "no block starts")
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        self.assertLess(max(before, peak_kb), 200 * 1024, "memory of the read")

    def test_config_error_with_a_huge_control_character_value(self):
        conf = self.tmp / "huge.conf"
        conf.write_bytes(b"Margin=" + b"v" * 900_000 + b"\x1b[2J\x07\n")
        env = mpi_env({"PSKEL_CONF": str(conf)})
        code, _, err = pskel("db", "list", env=env)
        self.assert_one_line_error(code, err, "huge.conf")
        self.assertLess(len(err), 400)
        self.assertNotIn(b"\x1b", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
