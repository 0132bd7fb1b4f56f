#!/usr/bin/env python3
"""`pskel compress --symbols FILE`: the loop compression alone on an integer string. Checks the
JSON keys and tree, the text forms, symbols kept as given, and the exit codes: 1 with a
one-line message naming the file and line for bad input, 2 for usage errors."""
import json
import pathlib
import tempfile
import unittest

from testlib import PSKEL, run


def compress(*args):
    return run([PSKEL, "compress", *args])


class CompressSymbols(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def symbols(self, values, name="in.txt"):
        path = self.dir / name
        path.write_text("".join(f"{v}\n" for v in values))
        return path

    def json_of(self, *args):
        r = compress(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_json_has_the_contract_keys_and_the_folded_tree(self):
        out = self.json_of("--symbols", self.symbols([1, 2, 3] * 3 + [1]), "--json")
        for key in ("input_length", "compressed_length", "compress_seconds", "tree"):
            self.assertIn(key, out)
        self.assertEqual(out["input_length"], 10)
        self.assertEqual(out["compressed_length"], 4)  # (1 2 3)^3 1: the seed's ABCABCABCA
        self.assertEqual(out["tree"], [{"iterations": 3, "body": [1, 2, 3]}, 1])
        self.assertGreaterEqual(out["compress_seconds"], 0)
        self.assertNotIn("text", out)

    def test_nested_loops_come_out_nested_with_the_callers_symbols(self):
        big = 4000000000
        body = [7, big] * 3 + [9]
        out = self.json_of("--symbols", self.symbols(body * 5), "--json", "--show")
        self.assertEqual(out["tree"],
                         [{"iterations": 5, "body": [{"iterations": 3, "body": [7, big]}, 9]}])
        self.assertEqual(out["compressed_length"], 3)
        self.assertEqual(out["text"], f"( ( 7 {big} )^3 9 )^5")

    def test_human_summary_and_show(self):
        path = self.symbols([5, 6] * 10 + [8])
        r = compress("--symbols", path, "--show")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("input       21 symbols", r.stdout)
        self.assertIn("compressed  3", r.stdout)
        self.assertEqual(r.stdout.strip().splitlines()[-1], "( 5 6 )^10 8")

    def test_blank_lines_are_ignored_and_an_empty_file_is_an_empty_tree(self):
        path = self.dir / "blank.txt"
        path.write_text("\n  3\r\n\n3\n\t3 \n")
        out = self.json_of("--symbols", path, "--json")
        self.assertEqual(out["tree"], [{"iterations": 3, "body": [3]}])
        empty = self.dir / "empty.txt"
        empty.write_text("")
        out = self.json_of("--symbols", empty, "--json")
        self.assertEqual((out["input_length"], out["compressed_length"], out["tree"]), (0, 0, []))

    def test_a_bad_line_is_exit_1_with_file_and_line_number(self):
        path = self.dir / "bad.txt"
        path.write_text("1\n2\n\nx7\n3\n")
        r = compress("--symbols", path, "--json")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertEqual(r.stderr.strip(), f"pskel: {path}: line 4: 'x7' is not a non-negative integer")
        path.write_text("1\n-2\n")
        r = compress("--symbols", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 2: '-2' is not a non-negative integer", r.stderr)
        path.write_text("4294967296\n")
        r = compress("--symbols", path)
        self.assertEqual(r.returncode, 1)
        self.assertIn("line 1: '4294967296' is out of range", r.stderr)

    def test_a_missing_file_is_exit_1(self):
        missing = self.dir / "missing.txt"
        r = compress("--symbols", missing)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), f"pskel: {missing}: cannot read: No such file or directory")
        self.assertNotIn("Traceback", r.stderr)

    def test_usage_errors_are_exit_2(self):
        path = self.symbols([1, 2])
        for args in ([], ["--json"], [str(self.dir), "--symbols", str(path)], ["--symbols"],
                     ["--symbols", str(path), "--no-such-option"]):
            with self.subTest(args=args):
                r = compress(*args)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertEqual(r.stdout, "")
                self.assertTrue(r.stderr.strip(), "a usage error says what is wrong")

    def test_help_describes_both_forms(self):
        r = compress("--help")
        self.assertEqual(r.returncode, 0)
        for word in ("DIR", "--symbols", "--json", "--show", "compressed_length", "tree"):
            self.assertIn(word, r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
