// pskel timeline page: draws the embedded run (script#pskel-data, docs/timeline.md) on one
// canvas. Per rank a row of states over time; per node a second axis with its CPU (bars) and
// memory (line) use, as in seed 003. Calls shorter than a pixel are drawn from precomputed
// levels of detail ("N calls" boxes), so a frame costs about two boxes per pixel per row
// whatever the size of the trace. A large job's page (data.groups) first draws every rank in
// groups of consecutive ranks, a strip per group with the share of each state per time bucket,
// then the calls of the ranks it holds. Each row's counts are exposed as data-* attributes of the
// table below the chart (data-calls, data-boxes, data-box-calls) for tests and scripts.
"use strict";
(function () {
  const COLORS = ["#d9ead3", "#3c78d8", "#e69138", "#cc0000", "#999999"];  // by state index
  const CPU_COLOR = "#6aa84f", MEM_COLOR = "#674ea7";
  const LABEL_WIDTH = 110, AXIS_HEIGHT = 24, USAGE_HEIGHT = 36, GAP = 4;
  const MIN_SPAN_NS = 100;
  const SPECIAL_RANKS = {"-1": "none", "-2": "MPI_PROC_NULL", "-3": "MPI_ANY_SOURCE",
    "-4": "MPI_ROOT", "-5": "unknown"};
  const SPECIAL_TAGS = {"-1": "MPI_ANY_TAG", "-2": "none"};

  const data = JSON.parse(document.getElementById("pskel-data").textContent);
  const canvas = document.getElementById("canvas");
  const ctx = canvas.getContext("2d");
  const tooltip = document.getElementById("tooltip");
  const aggregateBox = document.getElementById("aggregate");

  // ---- decoding: delta-coded columns to absolute times ----
  function cumulative(deltas) {
    const out = new Float64Array(deltas.length);
    let t = 0;
    for (let i = 0; i < deltas.length; ++i) { t += deltas[i]; out[i] = t; }
    return out;
  }
  const lanes = data.lanes.map(function (lane) {
    const start = cumulative(lane.start);
    const state = new Uint8Array(lane.fn.length);
    const stateTime = new Float64Array(data.states.length);
    for (let i = 0; i < lane.fn.length; ++i) {
      state[i] = data.function_state[lane.fn[i]];
      stateTime[state[i]] += lane.dur[i];
    }
    let busy = 0;
    for (let s = 1; s < stateTime.length; ++s) busy += stateTime[s];
    stateTime[0] = Math.max(0, lane.end - lane.begin - busy);
    const calls = {bucket: 0, start: start, dur: lane.dur, count: null, state: state, first: null};
    const levels = lane.levels.map(function (level) {
      const first = new Float64Array(level.count.length);
      let n = 0;
      for (let i = 0; i < level.count.length; ++i) { first[i] = n; n += level.count[i]; }
      return {bucket: level.bucket, start: cumulative(level.start), dur: level.dur,
              count: level.count, state: level.state, first: first};
    });
    return {rank: lane.rank, node: lane.node, begin: lane.begin, end: lane.end, fn: lane.fn,
            peer: lane.peer, tag: lane.tag, bytes: lane.bytes, calls: calls, levels: levels,
            stateTime: stateTime, usage: {t: cumulative(lane.usage.t), cpu: lane.usage.cpu,
            rss: lane.usage.rss}, drawn: {boxes: 0, calls: 0, aggregates: 0}};
  });
  const byRank = new Map(lanes.map(function (lane) { return [lane.rank, lane]; }));
  // Decoded natively where the browser can (Uint8Array.fromBase64: Chromium 140, Firefox 133,
  // Safari 18.2): a 16,384-rank page's 1.75 MB of base64 took 50-100 ms by atob and a loop.
  function fromBase64(text) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(text);
    const bytes = atob(text);
    const out = new Uint8Array(bytes.length);
    for (let i = 0; i < bytes.length; ++i) out[i] = bytes.charCodeAt(i);
    return out;
  }
  // Groups of ranks (a large job): per group, bucket and state the share of the group's time,
  // in 255ths (core/timeline/groups.h).
  const groups = data.groups ? (function (g) {
    return {size: g.size, count: g.count, buckets: g.buckets, bucketNs: g.bucket_ns,
            share: fromBase64(g.share)};
  })(data.groups) : null;
  const nodes = data.nodes.map(function (node) {
    return {host: node.host, ranks: node.ranks, t: cumulative(node.t), cpu: node.cpu,
            mem: node.mem, memTotal: node.mem_total};
  });
  const hasUsage = nodes.some(function (n) { return n.t.length > 0; });

  // ---- rows: the ranks of each node, then the node's CPU/memory axis ----
  const rankHeight = Math.max(6, Math.min(22, Math.floor(560 / Math.max(1, lanes.length))));
  const rows = [];
  let y = AXIS_HEIGHT;
  const groupRows = [];
  if (groups) {
    const h = groups.count <= 64 ? 10 : 6;
    for (let g = 0; g < groups.count; ++g) {
      const first = g * groups.size;
      const row = {kind: "group", index: g, first: first,
                   last: Math.min(data.ranks_total, first + groups.size) - 1, y: y, h: h};
      rows.push(row);
      groupRows.push(row);
      y += h + 1;
    }
    y += 3 * GAP;
  }
  nodes.forEach(function (node, n) {
    node.ranks.forEach(function (r) {
      rows.push({kind: "lane", lane: byRank.get(r), y: y, h: rankHeight});
      y += rankHeight + 1;
    });
    if (hasUsage) {
      rows.push({kind: "usage", node: node, index: n, y: y + 1, h: USAGE_HEIGHT});
      y += USAGE_HEIGHT + 2;
    }
    y += GAP;
  });
  const totalHeight = y;

  // ---- the view ----
  const fullEnd = Math.max(data.end, 1);
  const view = {t0: 0, t1: fullEnd};
  function params() {
    const out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      const i = kv.indexOf("=");
      if (i > 0) out[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    return out;
  }
  const initial = params();
  if (initial.aggregate === "off") aggregateBox.checked = false;
  if (isFinite(+initial.t0) && isFinite(+initial.t1) && +initial.t1 > +initial.t0) {
    view.t0 = +initial.t0; view.t1 = +initial.t1;
  }

  function plotWidth() { return Math.max(10, canvas.clientWidth - LABEL_WIDTH); }
  function xOf(t) { return LABEL_WIDTH + (t - view.t0) / (view.t1 - view.t0) * plotWidth(); }
  function tOf(x) { return view.t0 + (x - LABEL_WIDTH) / plotWidth() * (view.t1 - view.t0); }

  function formatTime(ns) {
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(2) + " µs";
    return Math.round(ns) + " ns";
  }
  function formatBytes(b) {
    if (b >= 1 << 30) return (b / (1 << 30)).toFixed(2) + " GiB";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(2) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }

  // The boxes a lane is drawn with now: its calls, or the coarsest level whose bucket fits in
  // a pixel.
  function boxesOf(lane) {
    if (!aggregateBox.checked) return lane.calls;
    const pixelNs = (view.t1 - view.t0) / plotWidth();
    let chosen = lane.calls;
    for (const level of lane.levels) if (level.bucket <= pixelNs) chosen = level;
    return chosen;
  }
  // The first box that may reach into [t, ...): boxes do not overlap, so ends are in order.
  function firstFrom(boxes, t) {
    let lo = 0, hi = boxes.start.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (boxes.start[mid] + boxes.dur[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // ---- drawing ----
  function niceStep(span, pixels) {
    const raw = span / Math.max(1, pixels / 110);
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  function drawAxis(width) {
    ctx.fillStyle = "#444";
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "top";
    const step = niceStep(view.t1 - view.t0, width - LABEL_WIDTH);
    const first = Math.ceil(view.t0 / step) * step;
    // One unit for all labels, the largest the view spans, with the decimals the step needs.
    const units = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];
    const [unit, name] = units.find(function (u) { return u[0] <= view.t1 - view.t0; }) || units[3];
    const decimals = Math.max(0, Math.ceil(Math.log10(unit / step) - 1e-9));
    ctx.strokeStyle = "#0000001a";
    for (let k = 0, t = first; t <= view.t1; t = first + ++k * step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS_HEIGHT - 6); ctx.lineTo(x, totalHeight); ctx.stroke();
      const label = (t / unit).toFixed(decimals) + " " + name;
      if (x + 2 + ctx.measureText(label).width <= width) ctx.fillText(label, x + 2, 4);
    }
  }

  // A frame's boxes, one path per fill style, filled once each when every lane is in: a
  // software canvas pays for every fillStyle change and every fillRect, and a page of 256 ranks
  // draws hundreds of thousands of boxes. Where boxes overlap (one pixel wide at least), the
  // later style is on top instead of the later box.
  function newBatch() {
    return {state: COLORS.map(function () { return new Path2D(); }), edges: new Path2D(),
            merged: new Path2D()};
  }
  function fillBatch(batch) {
    batch.state.forEach(function (path, s) { ctx.fillStyle = COLORS[s]; ctx.fill(path); });
    ctx.fillStyle = "#ffffff80";  // a light left edge tells neighbours of one colour apart
    ctx.fill(batch.edges);
    ctx.fillStyle = "#000000a0";  // "N calls": marked by a dark top edge
    ctx.fill(batch.merged);
  }

  function drawLane(row, width, batch) {
    const lane = row.lane;
    const y0 = row.y, h = row.h;
    const xb = Math.max(LABEL_WIDTH, xOf(lane.begin)), xe = Math.min(width, xOf(lane.end));
    if (xe > xb) batch.state[0].rect(xb, y0, xe - xb, h);
    const boxes = boxesOf(lane);
    const mergedHeight = Math.max(1, Math.round(h / 6));
    let drawnBoxes = 0, drawnCalls = 0, aggregates = 0;
    const n = boxes.start.length;
    for (let i = firstFrom(boxes, view.t0); i < n && boxes.start[i] <= view.t1; ++i) {
      const s = boxes.start[i], e = s + boxes.dur[i];
      const count = boxes.count ? boxes.count[i] : 1;
      const x0 = Math.max(LABEL_WIDTH, xOf(s));
      const x1 = Math.min(width, Math.max(xOf(e), xOf(s) + 1));
      const w = Math.max(1, x1 - x0);
      batch.state[boxes.state[i]].rect(x0, y0, w, h);
      if (x1 - x0 > 4) batch.edges.rect(x0, y0, 1, h);
      if (count > 1) {
        batch.merged.rect(x0, y0, w, mergedHeight);
        ++aggregates;
      }
      ++drawnBoxes;
      drawnCalls += count;
    }
    lane.drawn = {boxes: drawnBoxes, calls: drawnCalls, aggregates: aggregates};
  }

  function drawUsage(row, width) {
    const node = row.node, y0 = row.y, h = row.h;
    ctx.fillStyle = "#f6f6f6";
    ctx.fillRect(LABEL_WIDTH, y0, width - LABEL_WIDTH, h);
    ctx.fillStyle = CPU_COLOR;
    for (let i = 1; i < node.t.length; ++i) {
      if (node.cpu[i] < 0 || node.t[i] < view.t0 || node.t[i - 1] > view.t1) continue;
      const x0 = Math.max(LABEL_WIDTH, xOf(node.t[i - 1])), x1 = Math.min(width, xOf(node.t[i]));
      const bar = node.cpu[i] / 1000 * h;
      ctx.fillRect(x0, y0 + h - bar, Math.max(1, x1 - x0 - 0.5), bar);
    }
    ctx.strokeStyle = MEM_COLOR;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let started = false;
    for (let i = 0; i < node.t.length; ++i) {
      if (node.mem[i] < 0 || node.memTotal[i] <= 0) continue;
      const x = Math.min(width, Math.max(LABEL_WIDTH, xOf(node.t[i])));
      const yy = y0 + h - node.mem[i] / node.memTotal[i] * h;
      if (started) ctx.lineTo(x, yy); else { ctx.moveTo(x, yy); started = true; }
    }
    ctx.stroke();
    ctx.lineWidth = 1;
  }

  // The group strips: drawn once, a column per bucket (in device pixels, rows as on the chart),
  // into a canvas of their own; a frame scales the buckets in view onto the chart, averaged by
  // the browser where a pixel spans several (a frame drawing the strips pixel by pixel cost
  // 100-250 ms at 128 groups on a slow machine; one drawImage costs about a millisecond). Per
  // bucket the shares are stacked from the bottom (waiting, collective, point-to-point, setup,
  // computing); what is left is time outside the ranks' runs.
  const STACK = [3, 2, 1, 4, 0];
  // Each state's colour as one 32-bit pixel, in the byte order of this machine's ImageData.
  const PIXEL = new Uint32Array(new Uint8Array(COLORS.flatMap(function (c) {
    return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16), 255];
  })).buffer);
  const groupPixels = new Float64Array(5);   // pixels of the strips' canvas in each state
  let strips = null;                         // {canvas, ratio, drawn: [first, last) bucket}
  // One strip, a column per bucket, from the shares at groups.share[from...] up from pixel row
  // `bottom`, `rowH` pixels tall. A function of its own: the engine optimises it early.
  function paintStrip(px, w, from, bottom, rowH) {
    const share = groups.share;
    for (let b = 0, j = from; b < w; ++b, j += 5) {
      let cumulative = 0, painted = 0, i = bottom * w + b;
      for (let k = 0; k < 5; ++k) {
        const s = STACK[k];
        cumulative += share[j + s];
        const upTo = Math.min(rowH, Math.round(cumulative / 255 * rowH));
        for (; painted < upTo; ++painted, i -= w) px[i] = PIXEL[s];
      }
    }
  }
  // What the strips' image holds, for tests and scripts (#chart's data-group-pixels).
  function countPixels(px) {
    groupPixels.fill(0);
    let last = 0, state = -1;
    for (let i = 0; i < px.length; ++i) {
      if (px[i] !== last) { last = px[i]; state = PIXEL.indexOf(last); }
      if (state >= 0) ++groupPixels[state];
    }
  }
  function stripsCanvas(ratio) {
    if (strips && strips.ratio === ratio) return strips;
    const top = groupRows[0].y, bottom = groupRows[groupRows.length - 1];
    const w = groups.buckets, h = Math.round((bottom.y + bottom.h - top) * ratio);
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = h;
    const c = canvas.getContext("2d");
    const image = c.createImageData(w, h);
    const px = new Uint32Array(image.data.buffer);
    for (const row of groupRows) {
      const rowH = Math.round(row.h * ratio);
      paintStrip(px, w, row.index * w * 5, Math.round((row.y - top) * ratio) + rowH - 1, rowH);
    }
    countPixels(px);
    c.putImageData(image, 0, 0);
    strips = {canvas: canvas, ratio: ratio, drawn: [0, 0]};
    return strips;
  }
  function drawGroups(width) {
    if (!groups) return;
    const ratio = window.devicePixelRatio || 1;
    const s = stripsCanvas(ratio);
    const first = Math.max(0, view.t0 / groups.bucketNs);
    const last = Math.min(groups.buckets, view.t1 / groups.bucketNs);
    s.drawn = [Math.floor(first), Math.ceil(last)];
    if (last <= first) return;
    const x0 = xOf(first * groups.bucketNs), x1 = xOf(last * groups.bucketNs);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_WIDTH, 0, width - LABEL_WIDTH, totalHeight);
    ctx.clip();
    // Shrunk, a pixel is the average of its buckets; stretched, a bucket stays one flat box.
    ctx.imageSmoothingEnabled = last - first > (x1 - x0) * ratio;
    ctx.imageSmoothingQuality = "high";
    ctx.drawImage(s.canvas, first, 0, last - first, s.canvas.height,
                  x0, groupRows[0].y, x1 - x0, s.canvas.height / ratio);
    ctx.restore();
  }

  function drawLabels() {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, LABEL_WIDTH - 2, totalHeight);
    ctx.fillStyle = "#222";
    ctx.textBaseline = "middle";
    for (const row of rows) {
      if (row.kind === "group") {
        ctx.font = "9px system-ui, sans-serif";
        if (row.h >= 8 || row.index % 8 === 0) ctx.fillText("ranks " + row.first + "–" + row.last, 4, row.y + row.h / 2);
      } else if (row.kind === "lane") {
        ctx.font = Math.min(12, row.h) + "px system-ui, sans-serif";
        if (row.h >= 8 || row.lane.rank % 10 === 0) ctx.fillText("rank " + row.lane.rank, 4, row.y + row.h / 2);
      } else {
        ctx.font = "11px system-ui, sans-serif";
        ctx.fillText(row.node.host.slice(0, 14), 4, row.y + row.h / 2 - 6);
        ctx.fillStyle = "#666";
        ctx.fillText("CPU / memory", 4, row.y + row.h / 2 + 7);
        ctx.fillStyle = "#222";
      }
    }
  }

  let frameRequested = false;
  let lastDrawMs = 0;
  function draw() {
    frameRequested = false;
    const began = performance.now();
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(totalHeight * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(totalHeight * ratio);
      canvas.style.height = totalHeight + "px";
    }
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, totalHeight);
    const batch = newBatch();
    for (const row of rows) {
      if (row.kind === "lane") drawLane(row, width, batch);
      else if (row.kind === "usage") drawUsage(row, width);
    }
    fillBatch(batch);
    drawGroups(width);
    drawAxis(width);
    drawLabels();
    document.getElementById("range").textContent =
        formatTime(view.t0) + " – " + formatTime(view.t1) + " (" + formatTime(view.t1 - view.t0) + " shown)";
    lastDrawMs = performance.now() - began;
    publishCounts();
  }
  function redraw() {
    if (!frameRequested) { frameRequested = true; requestAnimationFrame(draw); }
  }

  // ---- the table: time per state and what the chart drew, per rank ----
  const tableRows = [];
  function buildTable() {
    const head = document.querySelector("#ranks thead");
    const headRow = document.createElement("tr");
    ["rank", "node", "calls"].concat(data.states.map(function (s) { return s + " %"; }))
        .concat(["boxes drawn"]).forEach(function (label) {
          const th = document.createElement("th"); th.textContent = label; headRow.appendChild(th);
        });
    head.appendChild(headRow);
    const body = document.querySelector("#ranks tbody");
    for (const lane of lanes) {
      const tr = document.createElement("tr");
      tr.className = "lane";
      tr.dataset.rank = lane.rank;
      tr.dataset.node = nodes[lane.node].host;
      tr.dataset.calls = lane.fn.length;
      const span = Math.max(1, lane.end - lane.begin);
      const cells = [lane.rank, nodes[lane.node].host, lane.fn.length];
      for (let s = 0; s < data.states.length; ++s) cells.push((100 * lane.stateTime[s] / span).toFixed(1));
      cells.push("");
      cells.forEach(function (c) { const td = document.createElement("td"); td.textContent = c; tr.appendChild(td); });
      body.appendChild(tr);
      tableRows.push(tr);
    }
  }
  function publishCounts() {
    let boxes = 0, calls = 0;
    lanes.forEach(function (lane, i) {
      const tr = tableRows[i];
      tr.dataset.boxes = lane.drawn.boxes;
      tr.dataset.boxCalls = lane.drawn.calls;
      tr.dataset.aggregates = lane.drawn.aggregates;
      tr.lastChild.textContent = lane.drawn.boxes + (lane.drawn.aggregates ? " (" + lane.drawn.aggregates + " merged)" : "");
      boxes += lane.drawn.boxes; calls += lane.drawn.calls;
    });
    const chart = document.getElementById("chart");
    chart.dataset.rows = lanes.length;
    chart.dataset.groups = groups ? groups.count : 0;
    // The group strips: pixels of their canvas in each state (state order), buckets in view.
    chart.dataset.groupPixels = Array.from(groupPixels).join(",");
    chart.dataset.groupBuckets = strips ? strips.drawn.join("-") : "";
    chart.dataset.calls = data.calls;
    chart.dataset.boxes = boxes;
    chart.dataset.boxCalls = calls;
    chart.dataset.usageRows = hasUsage ? nodes.length : 0;
    chart.dataset.aggregate = aggregateBox.checked ? "on" : "off";
    chart.dataset.t0 = view.t0;
    chart.dataset.t1 = view.t1;
    chart.dataset.drawMs = lastDrawMs.toFixed(1);
    // From the start of the page's load to its first frame: what opening it costs.
    if (!document.body.dataset.readyMs) document.body.dataset.readyMs = performance.now().toFixed(1);
    document.body.dataset.status = "rendered";
  }

  // ---- details on hover and click ----
  function peerText(p) { return p >= 0 ? "rank " + p : SPECIAL_RANKS[p] || String(p); }
  function tagText(t) { return t >= 0 ? String(t) : SPECIAL_TAGS[t] || String(t); }
  function rowAt(py) {
    for (const row of rows) if (py >= row.y && py < row.y + row.h + 1) return row;
    return null;
  }
  function describeLane(lane, t, px) {
    const boxes = boxesOf(lane);
    const tolerance = 2 * (view.t1 - view.t0) / plotWidth();
    let i = firstFrom(boxes, t - tolerance);
    if (i < boxes.start.length && boxes.start[i] <= t + tolerance) {
      const count = boxes.count ? boxes.count[i] : 1;
      const first = boxes.first ? boxes.first[i] : i;
      if (count === 1) {
        const k = first;
        const start = lane.calls.start[k], dur = lane.calls.dur[k];
        return data.functions[lane.fn[k]] + "  (" + data.states[lane.calls.state[k]] + ")\n" +
            "rank      " + lane.rank + "\n" +
            "peer      " + peerText(lane.peer[k]) + "\n" +
            "tag       " + tagText(lane.tag[k]) + "\n" +
            "bytes     " + formatBytes(lane.bytes[k]) + "\n" +
            "duration  " + formatTime(dur) + "\n" +
            "start     " + formatTime(start);
      }
      const byFunction = {}, byState = new Float64Array(data.states.length);
      let bytes = 0;
      for (let k = first; k < first + count; ++k) {
        const name = data.functions[lane.fn[k]];
        byFunction[name] = (byFunction[name] || 0) + 1;
        byState[lane.calls.state[k]] += lane.calls.dur[k];
        bytes += lane.bytes[k];
      }
      const span = boxes.dur[i];
      let text = count + " calls in " + formatTime(span) + " on rank " + lane.rank +
          " (zoom in to see them one by one)\n";
      text += Object.keys(byFunction).sort(function (a, b) { return byFunction[b] - byFunction[a]; })
          .map(function (f) { return "  " + f + " ×" + byFunction[f]; }).join("\n") + "\n";
      for (let s = 1; s < byState.length; ++s)
        if (byState[s] > 0) text += data.states[s] + " " + formatTime(byState[s]) + "  ";
      return text + "\nbytes " + formatBytes(bytes);
    }
    if (t < lane.begin || t > lane.end) return null;
    // Between calls: computing, from the end of the previous call to the next one.
    const calls = lane.calls;
    const next = firstFrom(calls, t);
    const from = next > 0 ? calls.start[next - 1] + calls.dur[next - 1] : lane.begin;
    const to = next < calls.start.length ? calls.start[next] : lane.end;
    return "computing on rank " + lane.rank + " for " + formatTime(to - from) + "\n" +
        "from " + formatTime(from) + " to " + formatTime(to);
  }
  function sampleAt(times, t) {
    let lo = 0, hi = times.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (times[mid] < t) lo = mid + 1; else hi = mid; }
    return lo < times.length ? lo : -1;   // the interval (times[lo-1], times[lo]] holds t
  }
  function describeUsage(node, t) {
    const i = sampleAt(node.t, t);
    if (i < 0) return null;
    let text = "node " + node.host + " at " + formatTime(node.t[i]) + " (" + data.interval_ms + " ms samples)\n";
    text += "CPU busy  " + (node.cpu[i] < 0 ? "n/a" : (node.cpu[i] / 10).toFixed(1) + " %") + "\n";
    text += "memory    " + (node.mem[i] < 0 ? "n/a" : formatBytes(node.mem[i] * 1024) + " of " + formatBytes(node.memTotal[i] * 1024));
    for (const r of node.ranks) {
      const u = byRank.get(r).usage, j = sampleAt(u.t, t);
      if (j < 0) continue;
      text += "\nrank " + r + "  CPU " + (u.cpu[j] < 0 ? "n/a" : (u.cpu[j] / 10).toFixed(1) + " %") +
          "  RSS " + (u.rss[j] < 0 ? "n/a" : formatBytes(u.rss[j] * 1024));
    }
    return text;
  }
  function describeGroup(row, t) {
    const b = Math.floor(t / groups.bucketNs);
    if (b < 0 || b >= groups.buckets) return null;
    let text = "ranks " + row.first + "–" + row.last + " from " + formatTime(b * groups.bucketNs) +
        " to " + formatTime((b + 1) * groups.bucketNs) + "\n";
    for (let s = 0; s < 5; ++s)
      text += data.states[s] + " " + (100 * groups.share[(row.index * groups.buckets + b) * 5 + s] / 255).toFixed(0) + " %  ";
    return text + "\n(the calls of single ranks: pskel timeline --ranks)";
  }
  function describe(px, py) {
    if (px < LABEL_WIDTH) return null;
    const row = rowAt(py);
    if (!row) return null;
    const t = tOf(px);
    if (row.kind === "group") return describeGroup(row, t);
    return row.kind === "lane" ? describeLane(row.lane, t, px) : describeUsage(row.node, t);
  }

  // ---- interaction: drag to pan, wheel or buttons to zoom ----
  function setView(t0, t1) {
    let span = Math.max(MIN_SPAN_NS, t1 - t0);
    const margin = fullEnd * 0.05;
    span = Math.min(span, fullEnd + 2 * margin);
    t0 = Math.min(Math.max(t0, -margin), fullEnd + margin - span);
    view.t0 = t0; view.t1 = t0 + span;
    redraw();
  }
  function zoom(factor, aroundT) {
    setView(aroundT - (aroundT - view.t0) * factor, aroundT + (view.t1 - aroundT) * factor);
  }
  let drag = null;
  canvas.addEventListener("mousedown", function (e) {
    drag = {x: e.offsetX, t0: view.t0, t1: view.t1, moved: false};
    canvas.classList.add("dragging");
  });
  window.addEventListener("mouseup", function (e) {
    if (drag && !drag.moved && e.target === canvas) {
      const text = describe(e.offsetX, e.offsetY);
      if (text) document.getElementById("details-text").textContent = text;
    }
    drag = null;
    canvas.classList.remove("dragging");
  });
  canvas.addEventListener("mousemove", function (e) {
    if (drag) {
      const dx = e.offsetX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      const dt = dx / plotWidth() * (drag.t1 - drag.t0);
      setView(drag.t0 - dt, drag.t1 - dt);
      tooltip.hidden = true;
      return;
    }
    const text = describe(e.offsetX, e.offsetY);
    if (!text) { tooltip.hidden = true; return; }
    tooltip.textContent = text;
    tooltip.hidden = false;
    const left = Math.min(e.offsetX + 14, canvas.clientWidth - tooltip.offsetWidth - 4);
    tooltip.style.left = Math.max(0, left) + "px";
    tooltip.style.top = (e.offsetY + 14) + "px";
  });
  canvas.addEventListener("mouseleave", function () { tooltip.hidden = true; });
  canvas.addEventListener("wheel", function (e) {
    e.preventDefault();
    if (e.offsetX < LABEL_WIDTH) return;
    zoom(e.deltaY > 0 ? 1.25 : 0.8, tOf(e.offsetX));
  }, {passive: false});
  document.getElementById("zoom-in").onclick = function () { zoom(0.5, (view.t0 + view.t1) / 2); };
  document.getElementById("zoom-out").onclick = function () { zoom(2, (view.t0 + view.t1) / 2); };
  document.getElementById("zoom-reset").onclick = function () { setView(0, fullEnd); };
  aggregateBox.onchange = redraw;
  window.addEventListener("resize", redraw);

  // ---- header ----
  const program = data.program ? data.program.split("/").pop() : "MPI program";
  document.title = "pskel timeline: " + program;
  document.getElementById("title").textContent = "pskel timeline: " + program;
  // Ascending ranks as "0–15, 4096".
  function rangesText(ranks) {
    const parts = [];
    for (let i = 0; i < ranks.length;) {
      let j = i;
      while (j + 1 < ranks.length && ranks[j + 1] === ranks[j] + 1) ++j;
      parts.push(j > i ? ranks[i] + "–" + ranks[j] : String(ranks[i]));
      i = j + 1;
    }
    return parts.join(", ");
  }
  const rankText = groups
      ? data.ranks_total + " ranks in " + groups.count + " groups of " + groups.size +
        (lanes.length === 0 ? " (the calls of no rank: --ranks names none of them)"
         : " (the calls of ranks " + rangesText(lanes.map(function (l) { return l.rank; })) +
           " below, on " + nodes.length + " node" + (nodes.length === 1 ? "" : "s") + ")")
      : lanes.length + " ranks on " + nodes.length + " node" + (nodes.length === 1 ? "" : "s");
  document.getElementById("summary").textContent =
      rankText +
      ", " + data.calls + " MPI calls, " + formatTime(fullEnd) + (data.mpi ? ", " + data.mpi : "") +
      (hasUsage ? ", CPU and memory sampled every " + data.interval_ms + " ms" : ", no CPU/memory samples");
  const legend = document.getElementById("legend");
  const legendItems = data.states.map(function (s, i) { return [COLORS[i], s]; });
  legendItems.push(["#00000080", "N calls merged (dark top edge)"]);
  if (hasUsage) legendItems.push([CPU_COLOR, "node CPU busy"], [MEM_COLOR, "node memory used"]);
  for (const [color, label] of legendItems) {
    const span = document.createElement("span");
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = color;
    span.appendChild(swatch);
    span.appendChild(document.createTextNode(label));
    legend.appendChild(span);
  }
  buildTable();
  draw();
})();
