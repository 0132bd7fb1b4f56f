#!/usr/bin/env python3
"""`pskel report` on a store filled as the worker and the guard fill it (three applications, one
with a job killed at a pskel limit): the numbers of --json, the order (worst first), the text
table, and the --html page: self-contained (no script, nothing fetched), one point per job in
each plot, and drawn: headless Chromium takes a screenshot in which the points' colours cover
real pixels (not an empty page). An empty store gives a page that says so."""
import json
import pathlib
import re
import shutil
import sqlite3
import struct
import subprocess
import tempfile
import unittest
import zlib

from testlib import PSKEL, run

CHROMIUM = shutil.which("chromium")
LONG, SHORT = (0x1F, 0x77, 0xB4), (0xD6, 0x27, 0x28)  # report.cpp's colours of the points

# (application, [(predicted s, actual s, state, recorded)]): errors of app "steady" within 2 %,
# "drifting" 10-20 % long, "short" below its run times with one TIMEOUT.
T0 = 1_790_000_000
APPS = {
    "steady": [(102, 100, "COMPLETED", T0), (198, 200, "COMPLETED", T0 + 3600),
               (301, 300, "COMPLETED", T0 + 7200)],
    "drifting": [(110, 100, "COMPLETED", T0 + 600), (120, 100, "COMPLETED", T0 + 4200),
                 (115, 100, "COMPLETED", T0 + 8000), (112, 100, "COMPLETED", T0 + 9000)],
    "short": [(90, 100, "COMPLETED", T0 + 1000), (80, 100, "TIMEOUT", T0 + 5000)],
}


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width = 8, b"", 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, height, rows


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = pathlib.Path(cls.tmp.name)
        cls.state = root / "state"
        cls.state.mkdir(mode=0o755)
        cls.conf = root / "pskel.conf"
        cls.conf.write_text(f"StateDir={cls.state}\nScontrol=/bin/false\n")
        cls.empty_conf = root / "empty.conf"
        (root / "empty").mkdir()
        cls.empty_conf.write_text(f"StateDir={root / 'empty'}\nScontrol=/bin/false\n")
        for conf, state in ((cls.conf, cls.state), (cls.empty_conf, root / "empty")):
            r = run([PSKEL, "db", "export", "--conf", conf])  # creates the store's schema
            assert (state / "pskel.db").exists(), r.stderr
        with sqlite3.connect(cls.state / "pskel.db") as db:
            job = 1000
            for key, outcomes in APPS.items():
                db.execute("INSERT INTO applications(uid, user, key, created) VALUES(0,'root',?,0)",
                           (key,))
                app = db.execute("SELECT id FROM applications WHERE key=?", (key,)).fetchone()[0]
                db.execute("INSERT INTO predictions(app_id, uid, ntasks, partition, skeleton_seconds,"
                           " scale, predicted_seconds, created) VALUES(?,0,4,'debug',10,10,100,0)",
                           (app,))
                pred = db.execute("SELECT last_insert_rowid()").fetchone()[0]
                for predicted, actual, state, recorded in outcomes:
                    job += 1
                    db.execute("INSERT INTO outcomes(job_id, uid, prediction_id, app_id,"
                               " predicted_seconds, limit_minutes, actual_seconds, state, recorded)"
                               " VALUES(?,0,?,?,?,?,?,?,?)",
                               (job, pred, app, predicted, int(predicted * 1.2 / 60) + 2, actual,
                                state, recorded))
                    if state == "TIMEOUT":  # the guard extended it, and it still ran out
                        db.execute("INSERT INTO extensions(job_id, prediction_id, app_id, from_minutes,"
                                   " to_minutes, ceiling_minutes, elapsed_seconds, at)"
                                   " VALUES(?,?,?,2,3,60,100,?)", (job, pred, app, recorded))
        cls.page = root / "report.html"
        r = run([PSKEL, "report", "--conf", cls.conf, "--html", "-o", cls.page])
        assert r.returncode == 0, r.stderr
        cls.html_stdout = r.stdout
        cls.json = json.loads(run([PSKEL, "report", "--conf", cls.conf, "--json"]).stdout)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_json_numbers(self):
        overall = self.json["overall"]
        self.assertEqual(overall["limited"], 9)
        self.assertEqual(overall["jobs"], 9)
        errors = [(p - a) / a * 100 for outcomes in APPS.values() for p, a, _, _ in outcomes]
        self.assertAlmostEqual(overall["mean_signed_error_pct"], sum(errors) / len(errors), places=6)
        self.assertAlmostEqual(overall["max_abs_error_pct"], 20.0, places=6)
        apps = {a["application"]: a for a in self.json["applications"]}
        self.assertAlmostEqual(apps["drifting"]["mean_signed_error_pct"], 14.25, places=6)
        self.assertAlmostEqual(apps["short"]["mean_signed_error_pct"], -15.0, places=6)
        self.assertEqual(len(apps["steady"]["outcomes"]), 3)
        self.assertAlmostEqual(apps["steady"]["outcomes"][0]["signed_error_pct"], 2.0, places=6)

    def test_worst_first(self):
        order = [a["application"] for a in self.json["applications"]]
        self.assertEqual(order, ["short", "drifting", "steady"], "killed first, then mean |error|")
        self.assertEqual(self.json["applications"][0]["killed"], 1)

    def test_text_table(self):
        r = run([PSKEL, "report", "--conf", self.conf])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("guard: NOT running", r.stdout)
        rows = [l for l in r.stdout.splitlines() if l.startswith("root")]
        self.assertEqual([l.split()[1] for l in rows], ["short", "drifting", "steady"])
        self.assertIn("+14.2", rows[1])

    def test_page_is_self_contained(self):
        html = self.page.read_text()
        self.assertNotIn("<script", html)
        self.assertEqual(re.findall(r"(?:src|href)=\"(?!#)[^\"]*\"", html), [])
        self.assertEqual(set(re.findall(r"https?://[^\"]+", html)), {"http://www.w3.org/2000/svg"})
        # One point per job in each plot: overall (scatter + errors) and per application.
        self.assertEqual(html.count("<circle class=\"point\""), 2 * 9 + 2 * 9)
        self.assertEqual(html.count("<svg"), 2 + 2 * 3)
        self.assertIn("written to", self.html_stdout)
        # Worst first on the page too.
        self.assertLess(html.index(">root: short<"), html.index(">root: drifting<"))

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package chromium)")
    def test_screenshot_shows_the_plots_with_data(self):
        shot = pathlib.Path(self.tmp.name) / "shot.png"
        r = subprocess.run(
            ["nice", "-n", "19", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--hide-scrollbars", "--window-size=1100,1400", f"--screenshot={shot}",
             self.page.resolve().as_uri()],
            capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        width, height, rows = png_pixels(shot)
        self.assertEqual((width, height), (1100, 1400))

        def near(p, colour):
            return all(abs(a - b) <= 40 for a, b in zip(p, colour))

        long_px = sum(near(p, LONG) for row in rows for p in row)
        short_px = sum(near(p, SHORT) for row in rows for p in row)
        white = sum(p == (255, 255, 255) for row in rows for p in row)
        # A point is a disc of radius 4 (~50 px): at least half of the first page's points show.
        self.assertGreater(long_px, 6 * 25, "the long predictions' points are drawn")
        self.assertGreater(short_px, 3 * 25, "the short predictions' points are drawn")
        self.assertLess(white, 0.97 * width * height, "the page is not empty")
        print(f"report screenshot: {long_px} + {short_px} px of points, "
              f"{100 * white / (width * height):.1f} % white")

    def test_empty_store(self):
        page = pathlib.Path(self.tmp.name) / "empty.html"
        r = run([PSKEL, "report", "--conf", self.empty_conf, "--html", "-o", page])
        self.assertEqual(r.returncode, 0, r.stderr)
        html = page.read_text()
        self.assertIn("No job has had its limit set by pskel yet", html)
        self.assertNotIn("<svg", html)
        j = json.loads(run([PSKEL, "report", "--conf", self.empty_conf, "--json"]).stdout)
        self.assertEqual(j["overall"]["limited"], 0)
        self.assertIsNone(j["overall"]["mean_signed_error_pct"])

    def test_usage_errors(self):
        r = run([PSKEL, "report", "--conf", self.conf, "--html"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("--html needs -o FILE", r.stderr)
        r = run([PSKEL, "report", "--conf", self.conf, "--html", "-o", "/nonexistent/dir/x.html"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
