/* Table page: the commit timeline, drawn with Apache ECharts.
 *
 * Only the visible window of versions is fetched from /api/tables/<id>/timeline/: the server
 * answers with rows (one per commit) when the window is small enough, else with buckets. Each
 * commit is a bar from the version it read to the version it committed; bars that overlap are
 * laid out in separate lanes, so concurrent commits stack visibly. Findings are pins on their
 * commits. Strings in the data (operation names) come from the log: they only reach the page
 * through textContent or the escaping tooltip formatter below.
 */
(function () {
  "use strict";

  const cfg = JSON.parse(document.getElementById("timeline-config").textContent);
  const chartEl = document.getElementById("timeline");
  const infoEl = document.getElementById("timeline-info");
  const errorEl = document.getElementById("timeline-error");
  const legendEl = document.getElementById("legend");
  const liveText = document.getElementById("live-text");

  const PALETTE = ["#5b8def", "#9c6ade", "#21a594", "#e8912d", "#e26d8f", "#7b8ea3",
    "#79b35a", "#c9a227", "#45a8d6", "#b07cc6", "#d9644a", "#3d7a6e"];
  const KNOWN_OPS = ["WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE", "CREATE TABLE",
    "STREAMING UPDATE", "CREATE OR REPLACE TABLE", "RESTORE", "VACUUM START", "VACUUM END"];
  const SEVERITY_COLOR = { critical: "#cf222e", warning: "#d98a00", info: "#6b7785" };
  const SEVERITY_RANK = { info: 0, warning: 1, critical: 2 };
  const MAX_LANES = 14;
  // Past ROWS_UP_TO versions in view, commits drawn one by one merge into a solid bar: the
  // server answers buckets instead (counts, the worst finding's colour); zooming in, or a
  // version range typed in the toolbar, brings the commits back.
  const INITIAL_SPAN = 200;
  const MAX_POINTS = 400;

  const state = {
    axis: "version",
    first: Number(cfg.firstVersion) || 0,
    latest: cfg.latestVersion === null ? null : Number(cfg.latestVersion),
    loaded: null, // {from, to, mode}
    data: null,
    seq: 0,
    opColors: new Map(),
    rendered: { bars: 0, buckets: 0, findings: 0, lanes: 0 },
    strokes: [],
    laneOf: new Map(),
  };
  window.__timeline = state; // for the browser tests and for curious users

  KNOWN_OPS.forEach(function (op, i) { state.opColors.set(op, PALETTE[i % PALETTE.length]); });

  function colorOf(op) {
    const name = String(op);
    if (!state.opColors.has(name)) {
      state.opColors.set(name, PALETTE[state.opColors.size % PALETTE.length]);
    }
    return state.opColors.get(name);
  }

  function esc(value) {
    return String(value).replace(/[&<>"'`]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" }[c];
    });
  }

  function fmtInt(n) { return Number(n).toLocaleString("en-US"); }

  // Kinds and operations in words (audit/core/wording/names.py, via the page's names-data).
  const namesEl = document.getElementById("names-data");
  const NAMES = namesEl ? JSON.parse(namesEl.textContent) : { kinds: {}, operations: {} };
  function kindName(kind) { return NAMES.kinds[kind] || String(kind).replace(/_/g, " "); }
  function opName(op) { return NAMES.operations[op] || String(op); }

  // A version's label on the axis: none for the padding beyond the history (no "v-1").
  function versionLabel(v) {
    const r = Math.round(v);
    if (Math.abs(v - r) > 1e-6 || r < state.first || (state.latest !== null && r > state.latest)) return "";
    return "v" + fmtInt(r);
  }

  function fmtTime(ms) {
    if (ms === null || ms === undefined) return "unknown time";
    return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  const chart = echarts.init(chartEl, null, { renderer: "canvas" });
  window.addEventListener("resize", function () { chart.resize(); });

  // ------------------------------------------------------------------ layout

  function layoutRows(data) {
    const ops = data.operations || [];
    const col = {};
    (data.columns || []).forEach(function (name, i) { col[name] = i; });
    const timeMode = state.axis === "time";
    const tsByVersion = new Map();
    data.rows.forEach(function (r) { tsByVersion.set(r[col.version], r[col.timestamp]); });
    let minTs = null;
    data.rows.forEach(function (r) {
      const ts = r[col.timestamp];
      if (ts !== null && (minTs === null || ts < minTs)) minTs = ts;
    });
    const items = [];
    data.rows.forEach(function (r) {
      const v = r[col.version];
      const rv = r[col.read_version];
      const ts = r[col.timestamp];
      const known = rv !== null && rv !== undefined && rv < v;
      let start, end;
      if (timeMode) {
        if (ts === null || ts === undefined) return;
        end = ts;
        const readTs = known ? (tsByVersion.has(rv) ? tsByVersion.get(rv) : minTs) : null;
        start = readTs === null || readTs === undefined ? ts : Math.min(readTs, ts);
      } else {
        end = v;
        start = known ? rv : v;
      }
      items.push({
        v: v, rv: known ? rv : null, ts: ts, start: start, end: end,
        dot: !known || start === end,
        op: ops[r[col.op]] !== undefined ? ops[r[col.op]] : "?",
        blind: r[col.blind_append], concurrent: r[col.concurrent_count] || 0,
      });
    });
    // Greedy interval partitioning: the sequential stream stays in lane 0, a commit that read
    // an older version goes to the first lane free since that version.
    items.sort(function (a, b) { return (a.start - b.start) || ((a.end - a.start) - (b.end - b.start)) || (a.v - b.v); });
    const laneEnds = [];
    const laneOf = new Map();
    items.forEach(function (it) {
      const s = it.dot ? it.end - 1e-9 : it.start;
      let lane = laneEnds.findIndex(function (e) { return e <= s; });
      if (lane === -1) {
        if (laneEnds.length < MAX_LANES) { lane = laneEnds.length; laneEnds.push(it.end); }
        else lane = MAX_LANES - 1;
      }
      laneEnds[lane] = Math.max(laneEnds[lane] || it.end, it.end);
      it.lane = lane;
      laneOf.set(it.v, lane);
    });
    return { items: items, lanes: Math.max(laneEnds.length, 1), laneOf: laneOf };
  }

  function worstSeverityByVersion(findings) {
    const worst = new Map();
    (findings || []).forEach(function (f) {
      [f.version].concat(f.related_versions || []).forEach(function (v) {
        const prev = worst.get(v);
        if (!prev || SEVERITY_RANK[f.severity] > SEVERITY_RANK[prev]) worst.set(v, f.severity);
      });
    });
    return worst;
  }

  // ------------------------------------------------------------------ rendering

  function renderBar(params, api) {
    const start = api.value(0), end = api.value(1), lane = api.value(2), dot = api.value(5);
    const p0 = api.coord([start, lane]);
    const p1 = api.coord([end, lane]);
    const h = Math.max(Math.min(api.size([0, 1])[1] * 0.64, 22), 4);
    const style = api.style();
    const stroke = state.strokes[params.dataIndex];
    if (stroke) { style.stroke = stroke; style.lineWidth = 2; }
    if (dot) {
      return { type: "circle", shape: { cx: p1[0], cy: p1[1], r: Math.max(Math.min(h / 2, 6), 2.5) }, style: style };
    }
    let width = p1[0] - p0[0];
    if (width > 4) width -= 1; // a hairline gap keeps back-to-back commits apart
    const rect = echarts.graphic.clipRectByRect(
      { x: p1[0] - Math.max(width, 2), y: p0[1] - h / 2, width: Math.max(width, 2), height: h },
      { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
    return rect && { type: "rect", shape: rect, style: style };
  }

  // A bucket is a column over its version range, as tall as the most commits that overlapped
  // inside it (0 = sequential commits only: a thin strip on the baseline).
  function renderBucket(params, api) {
    const p0 = api.coord([api.value(0), 0]);
    const p1 = api.coord([api.value(1) + 1, Math.max(api.value(3), 0.12)]);
    const rect = echarts.graphic.clipRectByRect(
      { x: p0[0], y: p1[1], width: Math.max(p1[0] - p0[0] - 0.5, 1), height: p0[1] - p1[1] },
      { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
    return rect && { type: "rect", shape: rect, style: api.style() };
  }

  function tooltip(params) {
    const d = params.data && params.data.meta;
    if (!d) return "";
    if (d.kind === "commit") {
      const lines = ["<b>v" + esc(d.v) + "</b> · " + esc(opName(d.op))];
      lines.push(d.rv === null ? "read version unknown" : "read v" + esc(d.rv) + " · " + esc(d.concurrent) + " concurrent");
      lines.push(esc(fmtTime(d.ts)));
      if (d.blind) lines.push("blind append");
      if (d.severity) lines.push("<span class=\"tt-" + esc(d.severity) + "\">involved in a " + esc(d.severity) + " finding</span>");
      lines.push("<span class=\"tt-hint\">click to open the commit</span>");
      return lines.join("<br>");
    }
    if (d.kind === "bucket") {
      return "<b>v" + esc(fmtInt(d.from)) + " – v" + esc(fmtInt(d.to)) + "</b><br>" +
        esc(fmtInt(d.commits)) + " commits · up to " + esc(d.maxConcurrent) + " concurrent<br>" +
        esc(d.findings) + " findings" + (d.worst ? " (worst: " + esc(d.worst) + ")" : "") + "<br><span class=\"tt-hint\">click to zoom in</span>";
    }
    if (d.kind === "change") {
      return "<b>" + esc(d.c.kind) + " change</b> at v" + esc(d.c.version) + "<br>" + esc(String(d.c.summary).slice(0, 300)) +
        "<br><span class=\"tt-hint\">click to open the commit</span>";
    }
    if (d.kind === "finding") {
      return "<b>" + esc(kindName(d.f.kind)) + "</b> · " + esc(d.f.severity) + (d.f.confirmed ? " · confirmed" : "") +
        "<br>at v" + esc(d.f.version) + "<br><span class=\"tt-hint\">click to open the finding</span>";
    }
    return "";
  }

  function xAxisOption() {
    if (state.axis === "time") {
      return { type: "time", scale: true, axisLine: { onZero: false }, axisLabel: { hideOverlap: true, color: "#5f6873" },
        splitLine: { show: true, lineStyle: { color: "#eef0f3" } } };
    }
    const latest = state.latest === null ? state.first : state.latest;
    return {
      type: "value", min: state.first - 1, max: latest + 1, scale: true, axisLine: { onZero: false },
      minInterval: 1,
      axisLabel: { formatter: versionLabel, hideOverlap: true, color: "#5f6873" },
      splitLine: { show: true, lineStyle: { color: "#eef0f3" } },
    };
  }

  function baseOption() {
    return {
      animation: false,
      grid: { left: 56, right: 24, top: 24, bottom: 70 },
      tooltip: { trigger: "item", confine: true, formatter: tooltip, className: "timeline-tooltip",
        backgroundColor: "#1d2127", borderWidth: 0, textStyle: { color: "#f1f3f5", fontSize: 12 } },
      xAxis: xAxisOption(),
      yAxis: { type: "value", inverse: true, show: false },
      dataZoom: [
        { type: "inside", xAxisIndex: 0, filterMode: "none", minValueSpan: 4, zoomOnMouseWheel: true, moveOnMouseMove: true },
        { type: "slider", xAxisIndex: 0, filterMode: "none", height: 20, bottom: 16, brushSelect: false,
          borderColor: "#e2e5e9", fillerColor: "rgba(47,91,234,0.12)", handleStyle: { color: "#2f5bea" },
          labelFormatter: function (v) { return state.axis === "time" ? fmtTime(v).slice(0, 16) : "v" + fmtInt(Math.round(v)); } },
      ],
      series: [],
    };
  }

  function layoutLanes(data) {
    state.layout = layoutRows(data);
    return state.layout.lanes;
  }

  // Schema / protocol / property changes: a dashed line where each happened.
  function changeSeries(changes, xOf) {
    const marks = [];
    (changes || []).forEach(function (c) {
      const x = xOf(c.version);
      if (x === null || x === undefined) return;
      marks.push({ xAxis: x, name: c.kind + " v" + c.version, meta: { kind: "change", c: c } });
    });
    return {
      name: "changes", type: "line", data: [],
      markLine: {
        symbol: ["none", "none"], animation: false,
        lineStyle: { color: "#8e44ad", type: "dashed", width: 1.5 },
        label: { formatter: function (p) { return p.name; }, color: "#8e44ad", fontSize: 10, position: "insideEndTop" },
        data: marks,
      },
    };
  }

  function renderRows(data) {
    const layout = state.layout || layoutRows(data);
    const involved = worstSeverityByVersion(data.findings);
    const bars = layout.items.map(function (it) {
      const sev = involved.get(it.v) || null;
      return {
        value: [it.start, it.end, it.lane, it.v, 0, it.dot ? 1 : 0],
        itemStyle: { color: colorOf(it.op), opacity: it.blind ? 0.75 : 1 },
        meta: { kind: "commit", v: it.v, rv: it.rv, op: it.op, ts: it.ts, blind: it.blind, concurrent: it.concurrent, severity: sev },
      };
    });
    const tsOf = new Map(layout.items.map(function (it) { return [it.v, it.end]; }));
    const pins = (data.findings || []).filter(function (f) { return tsOf.has(f.version); }).map(function (f) {
      return {
        value: [tsOf.get(f.version), layout.laneOf.get(f.version) || 0],
        itemStyle: { color: SEVERITY_COLOR[f.severity] || SEVERITY_COLOR.info, borderColor: "#fff", borderWidth: 1 },
        meta: { kind: "finding", f: f },
      };
    });
    state.strokes = bars.map(function (b) { return b.meta.severity ? SEVERITY_COLOR[b.meta.severity] : null; });
    state.rendered = { bars: bars.length, buckets: 0, findings: pins.length, lanes: layout.lanes };
    state.laneOf = layout.laneOf;
    const option = {
      yAxis: { type: "value", inverse: true, show: false, min: -0.9, max: Math.max(layout.lanes, 4) - 0.4 },
      series: [
        { name: "commits", type: "custom", renderItem: renderBar, data: bars, encode: { x: [0, 1], y: 2 }, clip: true },
        { name: "findings", type: "scatter", data: pins, symbol: "pin", symbolSize: 26, symbolOffset: [0, -14], z: 10, clip: true },
        changeSeries(data.changes, function (v) { return tsOf.has(v) ? tsOf.get(v) : null; }),
      ],
    };
    if (state.axis === "time") {
      const times = layout.items.map(function (it) { return it.start; }).concat(layout.items.map(function (it) { return it.end; }));
      option.xAxis = Object.assign(xAxisOption(), times.length ? { min: Math.min.apply(null, times), max: Math.max.apply(null, times) } : {});
    }
    chart.setOption(option, { replaceMerge: ["series"] });
    renderLegend(layout.items.map(function (it) { return it.op; }));
    const skipped = data.rows.length - layout.items.length;
    infoEl.textContent = fmtInt(data.rows.length) + " commits loaded, v" + fmtInt(data.from_version) + "–v" + fmtInt(data.to_version) +
      " · " + layout.lanes + (layout.lanes === 1 ? " lane" : " lanes") +
      (skipped > 0 ? " · " + fmtInt(skipped) + " without a timestamp" : "");
  }

  function renderBuckets(data) {
    const findingsByBucket = new Map();
    const pins = [];
    (data.findings || []).forEach(function (f) {
      const bucket = data.buckets.find(function (b) { return b[0] <= f.version && f.version <= b[1]; });
      if (!bucket) return;
      const key = bucket[0];
      const prev = findingsByBucket.get(key);
      if (prev && SEVERITY_RANK[prev.meta.f.severity] >= SEVERITY_RANK[f.severity]) return;
      const pin = { value: [(bucket[0] + bucket[1] + 1) / 2, Math.max(bucket[3], 0.12)], itemStyle: { color: SEVERITY_COLOR[f.severity] || SEVERITY_COLOR.info, borderColor: "#fff", borderWidth: 1 }, meta: { kind: "finding", f: f } };
      findingsByBucket.set(key, pin);
    });
    findingsByBucket.forEach(function (pin) { pins.push(pin); });
    // A bucket with findings takes its worst finding's colour (the one pinned on it).
    const bars = data.buckets.map(function (b) {
      const pin = findingsByBucket.get(b[0]);
      const worst = pin ? pin.meta.f.severity : b[4] > 0 ? "info" : null;
      return {
        value: [b[0], b[1], b[2], b[3], b[4]],
        itemStyle: { color: worst ? SEVERITY_COLOR[worst] || SEVERITY_COLOR.info : b[3] > 0 ? "#5b8def" : "#aebbd0" },
        meta: { kind: "bucket", from: b[0], to: b[1], commits: b[2], maxConcurrent: b[3], findings: b[4], worst: worst },
      };
    });
    const maxConcurrent = data.buckets.reduce(function (m, b) { return Math.max(m, b[3]); }, 1);
    state.rendered = { bars: 0, buckets: bars.length, findings: pins.length, lanes: 0 };
    chart.setOption({
      yAxis: { type: "value", inverse: false, show: true, min: 0, max: Math.ceil(maxConcurrent * 1.3), name: "max. concurrent", minInterval: 1, nameTextStyle: { color: "#8a929c", align: "left" }, axisLabel: { color: "#8a929c" }, splitLine: { lineStyle: { color: "#f0f2f4" } } },
      series: [
        { name: "buckets", type: "custom", renderItem: renderBucket, data: bars, encode: { x: [0, 1], y: 3 }, clip: true },
        { name: "findings", type: "scatter", data: pins, symbol: "pin", symbolSize: 24, symbolOffset: [0, -12], z: 10, clip: true },
        changeSeries(data.changes, function (v) { return v; }),
      ],
    }, { replaceMerge: ["series"] });
    legendEl.textContent = "";
    const note = document.createElement("span");
    note.className = "muted";
    note.textContent = "Zoomed out (more than " + fmtInt(MAX_POINTS) + " versions): each column is a range of versions, as tall as the most commits that ran concurrently in it, coloured by its worst finding (red critical, amber warning, grey info). Zoom in, click a column or type a version range to see its commits.";
    legendEl.appendChild(note);
    infoEl.textContent = fmtInt(data.buckets.length) + " buckets over v" + fmtInt(data.from_version) + "–v" + fmtInt(data.to_version);
  }

  function renderLegend(ops) {
    const seen = [];
    ops.forEach(function (op) { if (seen.indexOf(op) === -1) seen.push(op); });
    legendEl.textContent = "";
    seen.slice(0, 16).forEach(function (op) {
      const item = document.createElement("span");
      item.className = "legend-item";
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.backgroundColor = colorOf(op);
      const label = document.createElement("span");
      label.textContent = opName(op);
      if (opName(op).toLowerCase() !== String(op).toLowerCase()) {
        const ident = document.createElement("code");
        ident.className = "ident";
        ident.textContent = op;
        label.appendChild(ident);
      }
      item.appendChild(swatch);
      item.appendChild(label);
      legendEl.appendChild(item);
    });
    const pin = document.createElement("span");
    pin.className = "legend-item legend-note";
    pin.textContent = "▼ pins mark findings · outlined bars are involved in one · dots: read version unknown";
    legendEl.appendChild(pin);
  }

  // The chart is as tall as its lanes need (dense when the history is mostly sequential).
  function fitHeight(px) {
    const height = Math.round(px) + "px";
    if (chartEl.style.height !== height) {
      chartEl.style.height = height;
      chart.resize();
    }
  }

  function render() {
    const data = state.data;
    if (!data) return;
    fitHeight(data.mode === "buckets" ? 360 : Math.min(Math.max(150 + layoutLanes(data) * 40, 250), 460));
    if (data.mode === "buckets") renderBuckets(data);
    else renderRows(data);
  }

  // ------------------------------------------------------------------ data

  function showError(message) {
    errorEl.textContent = message;
    errorEl.classList.remove("hidden");
  }

  function load(from, to) {
    const seq = ++state.seq;
    state.pending = { from: from, to: to };
    const url = cfg.timelineUrl + "?from_version=" + encodeURIComponent(from) + "&to_version=" +
      encodeURIComponent(to) + "&max_points=" + MAX_POINTS;
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("the timeline request failed (HTTP " + r.status + ")");
        return r.json();
      })
      .then(function (data) {
        if (seq !== state.seq) return;
        state.pending = null;
        errorEl.classList.add("hidden");
        state.data = data;
        state.loaded = { from: data.from_version, to: data.to_version, mode: data.mode };
        if (data.latest_version !== null && data.latest_version !== undefined) state.latest = data.latest_version;
        if (data.first_version !== null && data.first_version !== undefined) state.first = data.first_version;
        render();
      })
      .catch(function (err) { if (seq === state.seq) { state.pending = null; showError(String(err.message || err)); } });
  }

  function visibleWindow() {
    const dz = chart.getOption().dataZoom[0];
    const lo = state.first - 1, hi = (state.latest === null ? state.first : state.latest) + 1;
    const start = dz.startValue !== undefined ? dz.startValue : lo + (hi - lo) * (dz.start || 0) / 100;
    const end = dz.endValue !== undefined ? dz.endValue : lo + (hi - lo) * (dz.end === undefined ? 100 : dz.end) / 100;
    return { from: Math.max(Math.floor(start), state.first), to: Math.min(Math.ceil(end), hi - 1) };
  }

  function refreshWindow(force) {
    if (state.axis !== "version" || state.latest === null) return;
    const w = visibleWindow();
    const span = w.to - w.from + 1;
    const l = state.loaded;
    if (!force && l && l.mode === "rows" && w.from >= l.from && w.to <= l.to) return;
    const p = state.pending;
    if (!force && p && w.from >= p.from && w.to <= p.to && p.to - p.from < MAX_POINTS) return;
    // Fetch a margin around the view so short pans need no request, but stay in rows mode
    // whenever the view itself fits.
    const pad = Math.max(0, Math.min(Math.floor(span / 2), Math.floor((MAX_POINTS - span) / 2) - 1));
    load(Math.max(w.from - pad, state.first), Math.min(w.to + pad, state.latest));
  }

  let zoomTimer = null;
  chart.on("datazoom", function () {
    clearTimeout(zoomTimer);
    zoomTimer = setTimeout(function () { refreshWindow(false); }, 180);
  });

  function zoomTo(from, to) {
    chart.dispatchAction({ type: "dataZoom", startValue: from, endValue: to });
  }

  chart.on("click", function (params) {
    const d = params.data && params.data.meta;
    if (!d) return;
    if (d.kind === "commit") window.location.assign(cfg.commitBase + encodeURIComponent(Number(d.v)) + "/");
    else if (d.kind === "change") window.location.assign(cfg.commitBase + encodeURIComponent(Number(d.c.version)) + "/");
    else if (d.kind === "finding") window.location.assign(cfg.findingBase + encodeURIComponent(Number(d.f.id)) + "/");
    else if (d.kind === "bucket" && state.axis === "version") zoomTo(d.from - 1, d.to + 1);
  });

  // ------------------------------------------------------------------ controls

  function setAxis(axis) {
    if (axis === state.axis) return;
    state.axis = axis;
    document.querySelectorAll("[data-axis]").forEach(function (b) { b.classList.toggle("active", b.dataset.axis === axis); });
    const keep = state.axis === "time" ? null : state.loaded;
    chart.setOption({ xAxis: xAxisOption() });
    if (axis === "time") {
      // The wall-clock view shows the loaded window of commits; zooming stays on the client.
      chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 });
      if (state.data && state.data.mode === "buckets") {
        showError("Zoom in to at most " + fmtInt(MAX_POINTS) + " commits to see them on a wall-clock axis.");
      }
      render();
    } else {
      errorEl.classList.add("hidden");
      render();
      if (keep) zoomTo(keep.from - 1, keep.to + 1);
      refreshWindow(true);
    }
  }

  document.querySelectorAll("[data-axis]").forEach(function (b) {
    b.addEventListener("click", function () { setAxis(b.dataset.axis); });
  });
  document.getElementById("zoom-latest").addEventListener("click", function () {
    setAxis("version");
    if (state.latest !== null) zoomTo(Math.max(state.first - 1, state.latest - INITIAL_SPAN), state.latest + 1);
  });
  document.getElementById("zoom-all").addEventListener("click", function () {
    setAxis("version");
    chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 });
  });
  // A version range typed in: the commits of that range (buckets past MAX_POINTS versions).
  const rangeForm = document.getElementById("zoom-range");
  if (rangeForm) rangeForm.addEventListener("submit", function (event) {
    event.preventDefault();
    if (state.latest === null) return;
    const raw = [rangeForm.elements.from.value, rangeForm.elements.to.value].map(function (v) { return v.trim(); });
    let lo = raw[0] === "" ? state.first : Math.floor(Number(raw[0]));
    let hi = raw[1] === "" ? state.latest : Math.floor(Number(raw[1]));
    if (!Number.isFinite(lo) || !Number.isFinite(hi)) return;
    lo = Math.max(state.first, Math.min(lo, state.latest));
    hi = Math.max(lo, Math.min(hi, state.latest));
    setAxis("version");
    zoomTo(lo - 1, hi + 1);
    refreshWindow(true);
  });

  // ------------------------------------------------------------------ live refresh

  function setText(id, text) {
    const el = document.getElementById(id);
    if (el) el.textContent = text;
  }

  function poll() {
    if (document.visibilityState !== "visible") return;
    fetch(cfg.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) return;
        setText("stat-version", s.last_seen_version === null ? "—" : fmtInt(s.last_seen_version));
        setText("stat-lag", s.lag === null ? "—" : s.lag ? fmtInt(s.lag) + " behind" : "0 in sync");
        setText("stat-critical", String(s.attention.critical));
        setText("stat-warning", String(s.attention.warning));
        setText("stat-info", String(s.attention.info));
        setText("table-status", s.status);
        if (s.backfill) setText("stat-backfill", s.backfill.text);
        liveText.textContent = "live · " + new Date().toLocaleTimeString();
        const newest = s.last_seen_version;
        if (newest === null || newest === undefined) return;
        if (state.latest === null) { state.latest = newest; start(); return; }
        if (newest <= state.latest) return;
        const w = state.axis === "version" ? visibleWindow() : null;
        const followEdge = w && w.to >= state.latest;
        state.latest = newest;
        if (state.axis !== "version") return;
        chart.setOption({ xAxis: xAxisOption() });
        if (followEdge) zoomTo(w.from - 1 + (newest - w.to), newest + 1);
        refreshWindow(true);
      })
      .catch(function () { liveText.textContent = "offline"; });
  }

  function start() {
    chart.setOption(baseOption(), { notMerge: true });
    if (state.latest === null) {
      infoEl.textContent = "No commits stored yet: the history is being ingested.";
      return;
    }
    const from = Math.max(state.first, state.latest - INITIAL_SPAN + 1);
    zoomTo(from - 1, state.latest + 1);
    load(from, state.latest);
  }

  start();
  setInterval(poll, Math.max(Number(cfg.refreshSeconds) || 10, 2) * 1000);
  document.addEventListener("visibilitychange", poll);
})();
