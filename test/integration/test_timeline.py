#!/usr/bin/env python3
"""`pskel timeline`: real traced runs (ring, 2 ranks, MPICH and Open MPI) drawn as an HTML page
that headless Chromium renders (one row per rank; every call drawn once, and one box per call
when merging is off; merged boxes on a large run), the same runs as trace-event JSON (one
complete event per call, CPU/memory counters), the tracer's resource sampling (on by default,
off with PSKEL_SAMPLE_MS=0, not delaying MPI_Finalize), a synthetic job of 2,048 ranks drawn in
groups of ranks with the calls of the ranks asked for, and bad input."""
import base64
import html.parser
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time
import unittest

from testlib import APPS, FLAVOURS, PSKEL, info_json, launcher, mpi_env, run, tracegen

CHROMIUM = shutil.which("chromium")


def trace(out_dir, flavour, app_args, env=None):
    cmd = [PSKEL, "run", "-o", out_dir, "--", *launcher(flavour, 2), APPS / f"ring.{flavour}",
           *app_args]
    r = run(cmd, env=mpi_env(env))
    if r.returncode != 0:
        raise AssertionError(f"pskel run failed ({r.returncode}): {r.stderr}")


def timeline(trace_dir, output, *extra):
    r = run([PSKEL, "timeline", trace_dir, "-o", output, "--json", *extra])
    if r.returncode != 0:
        raise AssertionError(f"pskel timeline failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)


def page_data(page):
    """The JSON object a page embeds (script#pskel-data)."""
    text = pathlib.Path(page).read_text()
    start = text.index(">", text.index('id="pskel-data"')) + 1
    return json.loads(text[start:text.index("</script>", start)])


class DomAttributes(html.parser.HTMLParser):
    """The data-* attributes of #chart and of each row of the per-rank table; the texts of the
    tooltip and of the details panel."""

    def __init__(self):
        super().__init__()
        self.chart = None
        self.lanes = []
        self.status = None
        self.texts = {"tooltip": "", "details-text": "", "summary": ""}
        self.ready_ms = None
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "chart":
            self.chart = a
        if tag == "tr" and a.get("class") == "lane":
            self.lanes.append(a)
        if tag == "body":
            self.status = a.get("data-status")
            self.ready_ms = a.get("data-ready-ms")

        self._in = a.get("id") if a.get("id") in self.texts else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in:
            self.texts[self._in] += data


# Appended to a copy of the page: the mouse over the middle of rank 0's row, then a click.
POINT_AT_RANK_0 = """<script>
(function () {
  const c = document.getElementById("canvas"), r = c.getBoundingClientRect();
  const at = {clientX: r.left + 110 + (c.clientWidth - 110) / 2, clientY: r.top + 24 + 5,
              bubbles: true};
  c.dispatchEvent(new MouseEvent("mousemove", at));
  c.dispatchEvent(new MouseEvent("mousedown", at));
  c.dispatchEvent(new MouseEvent("mouseup", at));
})();
</script>
"""


def render(page, fragment=""):
    """The DOM of `page` after its script ran in headless Chromium."""
    r = subprocess.run(
        ["nice", "-n", "19", CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--window-size=1400,700", "--virtual-time-budget=5000", "--dump-dom",
         pathlib.Path(page).resolve().as_uri() + fragment],
        capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        raise AssertionError(f"chromium failed ({r.returncode}): {r.stderr[-2000:]}")
    dom = DomAttributes()
    dom.feed(r.stdout)
    return dom


def sample_lines(trace_dir, rank):
    """The full sample lines (not the comments, not the "d" lines of run-queue delay alone)."""
    path = pathlib.Path(trace_dir) / f"samples.{rank}"
    return [l for l in path.read_text().splitlines()[1:] if not l.startswith(("#", "d "))]


class SmallRingTimeline(unittest.TestCase):
    """ring -i 12 -w 1 on 2 ranks, once per MPI."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.runs = {}
        for flavour in FLAVOURS:
            d = pathlib.Path(cls.tmp.name) / flavour
            trace(d / "trace", flavour, ["-i", "12", "-w", "1"])
            cls.runs[flavour] = (d, info_json(d / "trace"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_tracer_wrote_cpu_and_memory_samples(self):
        for flavour, (d, info) in self.runs.items():
            with self.subTest(flavour=flavour):
                for rank in range(2):
                    lines = sample_lines(d / "trace", rank)
                    # One at MPI_Init, one at MPI_Finalize at least; 8 numbers each.
                    self.assertGreaterEqual(len(lines), 2)
                    values = [[int(v) for v in l.split()] for l in lines]
                    self.assertTrue(all(len(v) == 8 for v in values))
                    self.assertGreaterEqual(values[-1][7], values[0][7], "run-queue delay grows")
                    self.assertGreater(values[-1][1], 0, "process CPU time")
                    self.assertGreater(values[-1][2], 0, "resident memory")
                    self.assertGreater(values[-1][6], values[-1][5], "node memory used < total")
                    times = [v[0] for v in values]
                    self.assertEqual(times, sorted(times))
                    # The samples lie within the run: t = 0 .. MPI_Finalize (+ a little).
                    self.assertGreaterEqual(times[0], 0)
                    self.assertLess(times[-1], info["wall_seconds"] * 1e9 + 1e9)

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package chromium)")
    def test_page_renders_one_row_per_rank_and_one_box_per_call(self):
        for flavour, (d, info) in self.runs.items():
            with self.subTest(flavour=flavour):
                page = d / "ring.html"
                out = timeline(d / "trace", page)
                self.assertEqual(out["calls"], info["events"])
                self.assertEqual(out["ranks_with_samples"], 2)
                text = page.read_text()
                self.assertNotIn("http://", text.replace("http://www.w3.org", ""))
                self.assertNotIn("https://", text)
                dom = render(page, "#aggregate=off")
                self.assertEqual(dom.status, "rendered")
                self.assertEqual(dom.chart["data-rows"], "2")
                self.assertEqual(len(dom.lanes), 2)
                self.assertEqual(int(dom.chart["data-calls"]), info["events"])
                self.assertEqual(int(dom.chart["data-boxes"]), info["events"])
                self.assertEqual(dom.chart["data-usage-rows"], "1")  # one node, sampled
                for rank, lane in enumerate(dom.lanes):
                    self.assertEqual(lane["data-rank"], str(rank))
                    self.assertEqual(int(lane["data-calls"]), info["events_per_rank"][rank])
                    self.assertEqual(int(lane["data-boxes"]), info["events_per_rank"][rank])
                    self.assertEqual(lane["data-aggregates"], "0")
                # With merging on (the default), every call is still drawn exactly once.
                merged = render(page)
                self.assertEqual(merged.chart["data-aggregate"], "on")
                self.assertEqual(int(merged.chart["data-box-calls"]), info["events"])
                self.assertLessEqual(int(merged.chart["data-boxes"]), info["events"])
                print(f"\n  {flavour}: {info['events']} calls; boxes drawn: "
                      f"{dom.chart['data-boxes']} unmerged, {merged.chart['data-boxes']} merged",
                      end="")

    @unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package chromium)")
    def test_hover_and_click_show_the_details_of_a_call(self):
        d, info = self.runs["mpich"]
        json_path = d / "hover.json"
        timeline(d / "trace", json_path, "--format", "perfetto")
        events = json.loads(json_path.read_text())["traceEvents"]
        send = next(e for e in events if e["ph"] == "X" and e["tid"] == 1 and e["name"] == "MPI_Send")
        start_ns, dur_ns = float(send["ts"]) * 1000, max(float(send["dur"]) * 1000, 100)
        page = d / "hover.html"
        timeline(d / "trace", page)
        text = page.read_text().replace("</body>", POINT_AT_RANK_0 + "</body>")
        page.write_text(text)
        # Zoomed so that the send fills the middle of the chart.
        dom = render(page, f"#aggregate=off&t0={start_ns - dur_ns}&t1={start_ns + 2 * dur_ns}")
        tip = dom.texts["tooltip"]
        self.assertIn("MPI_Send  (point-to-point)", tip)
        self.assertIn("rank      0", tip)
        self.assertRegex(tip, r"peer      rank 1\n")
        self.assertIn("tag       1", tip)
        self.assertIn("bytes     7.8 KiB", tip)  # 1000 doubles
        self.assertIn("duration  ", tip)
        self.assertEqual(dom.texts["details-text"], tip)

    def test_perfetto_json_has_one_complete_event_per_call_and_counters(self):
        for flavour, (d, info) in self.runs.items():
            with self.subTest(flavour=flavour):
                path = d / "ring.json"
                timeline(d / "trace", path, "--format", "perfetto")
                events = json.loads(path.read_text())["traceEvents"]
                complete = [e for e in events if e["ph"] == "X"]
                self.assertEqual(len(complete), info["events"])
                for rank in range(2):
                    mine = [e for e in complete if e["tid"] == rank + 1]
                    self.assertEqual(len(mine), info["events_per_rank"][rank])
                self.assertEqual({e["pid"] for e in complete}, {1})  # one node
                names = {e["args"]["name"] for e in events
                         if e["ph"] == "M" and e["name"] == "thread_name"}
                self.assertEqual(names, {"rank 0", "rank 1"})
                counters = {e["name"] for e in events if e["ph"] == "C"}
                self.assertIn("node memory used MiB", counters)
                self.assertIn("rank 0 RSS MiB", counters)
                self.assertIn("rank 1 CPU %", counters)
                sends = [e for e in complete if e["name"] == "MPI_Send"]
                self.assertTrue(sends)
                self.assertTrue(all(e["args"]["peer"] in (0, 1) for e in sends))
                self.assertTrue(all(e["args"]["bytes"] == 8000 for e in sends))  # 1000 doubles


@unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package chromium)")
class LargeRunIsMerged(unittest.TestCase):
    def test_calls_shorter_than_a_pixel_become_n_call_boxes(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            trace(d / "trace", "mpich", ["-i", "3000", "-w", "0", "-n", "10"])
            info = info_json(d / "trace")
            timeline(d / "trace", d / "big.html")
            dom = render(d / "big.html")
            boxes = int(dom.chart["data-boxes"])
            self.assertEqual(int(dom.chart["data-box-calls"]), info["events"])
            self.assertLess(boxes * 4, info["events"], "whole-run view: merged boxes")
            self.assertTrue(all(int(l["data-aggregates"]) > 0 for l in dom.lanes))
            unmerged = render(d / "big.html", "#aggregate=off")
            self.assertEqual(int(unmerged.chart["data-boxes"]), info["events"])
            print(f"\n  {info['events']} calls: {boxes} boxes merged, "
                  f"{unmerged.chart['data-boxes']} unmerged", end="")


@unittest.skipIf(CHROMIUM is None, "chromium is not installed (Debian package chromium)")
class ManyRanksAreDrawnInGroups(unittest.TestCase):
    """A synthetic 3-D halo of 2,048 ranks (test/bench/tracegen): above --max-lanes the page
    holds a strip per group of ranks and the calls of the ranks asked for only."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = pathlib.Path(cls.tmp.name) / "halo"
        tracegen("halo3d", 2048, 100, cls.trace)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_groups_of_ranks_and_the_calls_of_the_ranks_asked_for(self):
        page = pathlib.Path(self.tmp.name) / "groups.html"
        out = timeline(self.trace, page, "--ranks", "3,1000-1001")
        self.assertEqual((out["groups"], out["group_size"]), (128, 16))
        self.assertEqual(out["ranks_drawn"], [3, 1000, 1001])
        # Every call of 2,048 ranks would be ~8 MB; the strips and three ranks' calls are less.
        self.assertLess(out["bytes_written"], 4_000_000)
        dom = render(page)
        self.assertEqual(dom.status, "rendered")
        self.assertEqual(dom.chart["data-groups"], "128")
        self.assertEqual(dom.chart["data-rows"], "3")
        self.assertEqual([l["data-rank"] for l in dom.lanes], ["3", "1000", "1001"])
        self.assertIn("2048 ranks in 128 groups of 16", dom.texts["summary"])
        self.assertIn("the calls of ranks 3, 1000–1001", dom.texts["summary"])
        self.assertIsNotNone(dom.ready_ms)
        # The strips show the page's shares: the pixels painted in each state are that state's
        # share of all groups' time (each bucket rounded to a row's 6 pixels), all buckets in
        # view.
        data = page_data(page)
        share = base64.b64decode(data["groups"]["share"])
        buckets = data["groups"]["buckets"]
        self.assertEqual(len(share), 128 * buckets * 5)
        self.assertEqual(dom.chart["data-group-buckets"], f"0-{buckets}")
        pixels = [float(p) for p in dom.chart["data-group-pixels"].split(",")]
        for state in range(5):
            expected = sum(share[state::5]) / 255 / (128 * buckets)
            self.assertAlmostEqual(pixels[state] / (128 * buckets * 6), expected, delta=0.02,
                                   msg=f"state {state}: {pixels}")
        self.assertGreater(pixels[0], 0)

    def test_default_ranks_and_a_higher_max_lanes(self):
        page = pathlib.Path(self.tmp.name) / "default.html"
        self.assertEqual(timeline(self.trace, page)["ranks_drawn"], list(range(16)))
        out = timeline(self.trace, page, "--max-lanes", "4096")
        self.assertEqual((out["groups"], len(out["ranks_drawn"])), (0, 2048))
        # Ranks beyond the job draw nothing but the groups.
        out = timeline(self.trace, page, "--ranks", "99999")
        self.assertEqual((out["groups"], out["ranks_drawn"]), (128, []))
        dom = render(page)
        self.assertEqual((dom.status, dom.chart["data-rows"]), ("rendered", "0"))
        self.assertIn("the calls of no rank", dom.texts["summary"])

    def test_a_bad_rank_list_is_a_usage_error(self):
        for bad, needle in (("5-3", "not a list of ranks"), ("1,,2", "not a list of ranks"),
                            ("0-300", "more ranks than --max-lanes (256)"),
                            ("0-16777215", "more ranks than --max-lanes (256)")):
            r = run([PSKEL, "timeline", self.trace, "-o", f"{self.tmp.name}/x.html",
                     "--ranks", bad])
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(needle, r.stderr)


class Sampling(unittest.TestCase):
    def test_off_with_zero_and_the_timeline_still_works(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            trace(d / "trace", "mpich", ["-i", "3", "-w", "1"], {"PSKEL_SAMPLE_MS": "0"})
            self.assertEqual(sorted(p.name for p in (d / "trace").glob("samples.*")), [])
            out = timeline(d / "trace", d / "t.json", "--format", "perfetto")
            self.assertEqual(out["ranks_with_samples"], 0)
            events = json.loads((d / "t.json").read_text())["traceEvents"]
            self.assertEqual([e for e in events if e["ph"] == "C"], [])

    def test_a_sleeping_sampler_does_not_delay_finalize(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            started = time.monotonic()
            # One sample every 10 minutes: the run must not wait for the next one to end.
            trace(d / "trace", "mpich", ["-i", "3", "-w", "1"], {"PSKEL_SAMPLE_MS": "600000"})
            elapsed = time.monotonic() - started
            self.assertLess(elapsed, 60)
            for rank in range(2):
                self.assertEqual(len(sample_lines(d / "trace", rank)), 2)  # start and end
                text = (d / "trace" / f"samples.{rank}").read_text()
                self.assertIn("\n# sampler_cpu_ns ", text)


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.good = pathlib.Path(cls.tmp.name) / "good"
        trace(cls.good, "mpich", ["-i", "2", "-w", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def copy(self, name):
        d = pathlib.Path(self.tmp.name) / name
        shutil.copytree(self.good, d)
        return d

    def fails_with(self, args, needle):
        r = run([PSKEL, "timeline", *map(str, args)])
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("pskel: "), lines[0])
        self.assertIn(needle, lines[0])
        return lines[0]

    def test_missing_directory(self):
        missing = pathlib.Path(self.tmp.name) / "nope"
        self.fails_with([missing, "-o", missing.with_suffix(".html")], f"{missing}: no such trace directory")

    def test_truncated_rank_file(self):
        d = self.copy("truncated")
        rank = d / "rank.1.pskt"
        rank.write_bytes(rank.read_bytes()[:300])
        line = self.fails_with([d, "-o", d / "t.html"], f"{rank}: truncated")
        self.assertFalse((d / "t.html").exists(), line)

    def test_damaged_sample_file(self):
        d = self.copy("damaged-samples")
        samples = d / "samples.0"
        samples.write_text(samples.read_text().replace("\n", "\nx y\n", 2))
        self.fails_with([d, "-o", d / "t.html"], f"{samples}: corrupt: line 2")

    def test_unwritable_output(self):
        self.fails_with([self.good, "-o", "/nonexistent-dir/t.html"], "/nonexistent-dir/t.html: cannot write")

    def test_usage_errors_exit_2_and_help_works(self):
        r = run([PSKEL, "timeline", self.good, "-o", "x", "--format", "svg"])
        self.assertEqual(r.returncode, 2, r.stderr)
        r = run([PSKEL, "timeline", self.good])
        self.assertEqual(r.returncode, 2, r.stderr)
        r = run([PSKEL, "timeline", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--format", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
