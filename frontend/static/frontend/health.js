/* Table health panel: numbers, ECharts charts, recommendations, change history.
   Every string from the API (column names, property values, recommendations) is set with
   textContent or drawn on the canvas: never parsed as markup. */
(function () {
  "use strict";
  const cfgEl = document.getElementById("health-config");
  if (!cfgEl) return;
  const cfg = JSON.parse(cfgEl.textContent);

  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  const format = window.deltaAudit.format;  // format.js: the pages' one size format (IEC)
  const fmtInt = format.int, fmtBytes = format.bytes, fmtTime = format.time;
  const COLORS = { accent: "#2450d6", ok: "#14692e", warning: "#c77c00", critical: "#cf222e", muted: "#5f6873" };
  // What the browser tests (and a curious reader) can ask of the panel once it has drawn.
  const drawn = { drawn: false, hidden: [], checkpoint: null };
  window.__health = drawn;
  function hidePanel(id) {
    const panel = $(id).closest(".health-panel");
    if (panel) panel.classList.add("hidden");
    drawn.hidden.push(id);
  }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) throw new Error(body && body.error ? body.error : "HTTP " + r.status);
        return body;
      });
    });
  }
  const charts = [];
  function chartOn(id) {
    const c = echarts.init($(id), null, { renderer: "canvas" });
    charts.push(c);
    return c;
  }
  window.addEventListener("resize", function () { charts.forEach(function (c) { c.resize(); }); });

  function showError(message) {
    const box = $("health-error");
    box.textContent = message;
    box.classList.remove("hidden");
  }

  function stat(label, value, title) {
    const s = el("div", "stat");
    s.appendChild(el("div", "label", label));
    const v = el("div", "value", value);
    if (title) s.title = title;
    s.appendChild(v);
    return s;
  }

  function renderStats(h) {
    const box = $("health-stats");
    box.textContent = "";
    const small = h.small_files || {};
    const tomb = h.tombstones || {};
    const cp = h.checkpoint || {};
    const dv = h.deletion_vectors || {};
    box.appendChild(stat("Files", fmtInt(h.num_files)));
    box.appendChild(stat("Size", fmtBytes(h.total_bytes)));
    box.appendChild(stat("Rows", fmtInt(h.num_records)));
    box.appendChild(stat("Small files", fmtInt(small.count), "below " + fmtBytes(small.threshold)));
    box.appendChild(stat("Without stats", fmtInt(h.files_without_stats)));
    box.appendChild(stat("Partitions", fmtInt((h.partitions || {}).count)));
    box.appendChild(stat("Partition skew", h.partition_skew === null || h.partition_skew === undefined ? "—" : h.partition_skew + "×"));
    box.appendChild(stat("Vacuumable", fmtBytes(tomb.vacuumable_bytes), "retention " + (tomb.retention || "")));
    box.appendChild(stat("Since checkpoint", fmtInt(cp.commits_since) + " commits"));
    box.appendChild(stat("Log", fmtInt((h.log || {}).json_commits) + " commits · " + fmtBytes((h.log || {}).bytes)));
    box.appendChild(stat("Deletion vectors", fmtInt(dv.files) + " files · " + fmtInt(dv.deleted_rows) + " rows"));
    $("health-version").textContent = "v" + fmtInt(h.version) + " · computed from the log alone";
    renderTimeTravel(box, h.time_travel);
  }

  // The readable range the latest data scan found (null before the first scan).
  function renderTimeTravel(box, tt) {
    if (!tt) {
      box.appendChild(stat("Readable from", "not scanned yet", "the periodic data scan finds the readable range"));
      return;
    }
    if (!tt.judged) {
      box.appendChild(stat("Readable from", "not judged", tt.reason || ""));
      return;
    }
    const earliest = tt.earliest_readable_version;
    box.appendChild(stat("Readable from", earliest === null || earliest === undefined ? "no version" : "v" + fmtInt(earliest)));
    box.appendChild(stat("TIMESTAMP AS OF back to", fmtTime(tt.earliest_readable_timestamp)));
    const ranges = tt.broken_ranges || [];
    const broken = ranges.map(function (r) { return r[0] === r[1] ? "v" + r[0] : "v" + r[0] + "–v" + r[1]; }).join(", ");
    box.appendChild(stat("Broken versions", ranges.length ? broken.slice(0, 60) : "none", broken));
  }

  function renderHistogram(h) {
    const buckets = h.file_size_histogram || [];
    // containLabel: the axis names and rotated labels stay inside the box, whatever their length.
    chartOn("health-histogram").setOption({
      grid: { left: 8, right: 16, top: 30, bottom: 4, containLabel: true },
      tooltip: { trigger: "axis" },
      xAxis: { type: "category", data: buckets.map(function (b) { return "≤ " + fmtBytes(b.le); }), axisLabel: { rotate: 35, fontSize: 10, color: COLORS.muted } },
      yAxis: { type: "value", minInterval: 1, name: "files", nameTextStyle: { color: COLORS.muted, align: "left" }, axisLabel: { color: COLORS.muted } },
      series: [{ type: "bar", name: "files", data: buckets.map(function (b) { return b.count; }), itemStyle: { color: "#5b8def" } }],
    });
  }

  function partitionLabel(values) {
    return Object.keys(values || {}).map(function (k) { return k + "=" + values[k]; }).join(", ") || "(table)";
  }

  function renderPartitions(h) {
    // An unpartitioned table has no partitions to rank: the panel does not apply.
    const top = ((h.partitions || {}).top || []).filter(function (p) {
      return Object.keys(p.values || {}).length > 0;
    }).slice(0, 15).reverse();
    if (!top.length) { hidePanel("health-partitions"); return; }
    chartOn("health-partitions").setOption({
      grid: { left: 8, right: 24, top: 8, bottom: 4, containLabel: true },
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, formatter: function (ps) {
        const p = top[ps[0].dataIndex];
        const div = document.createElement("div");
        div.textContent = partitionLabel(p.values) + ": " + fmtBytes(p.bytes) + " in " + fmtInt(p.num_files) + " files";
        return div.innerHTML;  // escaped text
      } },
      xAxis: Object.assign({ type: "value", axisLabel: { formatter: function (v) { return fmtBytes(v); }, fontSize: 10, color: COLORS.muted, hideOverlap: true } },
        format.bytesAxis(Math.max.apply(null, top.map(function (p) { return p.bytes || 0; })))),
      yAxis: { type: "category", data: top.map(function (p) { return partitionLabel(p.values).slice(0, 24); }), axisLabel: { fontSize: 10, color: COLORS.muted } },
      series: [{ type: "bar", data: top.map(function (p) { return p.bytes; }), itemStyle: { color: "#7bb57b" } }],
    });
  }

  // A half-ring gauge: the value in the middle, the caption under the ring (in the box's
  // free bottom, away from the tick labels, which sit outside the ring's ends only).
  function gauge(id, value, max, caption, detail, color) {
    const top = Math.max(max, 1);
    chartOn(id).setOption({
      series: [{
        type: "gauge", min: 0, max: top, startAngle: 180, endAngle: 0, radius: "118%", center: ["50%", "78%"],
        splitNumber: 4,
        progress: { show: true, width: 12, itemStyle: { color: color } },
        axisLine: { lineStyle: { width: 12, color: [[1, "#e7eaee"]] } },
        axisTick: { show: false }, splitLine: { show: false },
        axisLabel: { fontSize: 10, distance: 16, color: COLORS.muted, formatter: function (v) { return v === 0 || v === top ? fmtInt(v) : ""; } },
        pointer: { show: false }, anchor: { show: false },
        title: { show: false },
        detail: { valueAnimation: false, fontSize: 16, fontWeight: 600, color: color, offsetCenter: [0, "-18%"], formatter: function () { return detail; } },
        data: [{ value: Math.min(value, top), name: caption }],
      }],
    });
    const box = $(id).closest(".health-panel");
    const note = box && box.querySelector(".gauge-caption");
    if (note) note.textContent = caption;
  }

  function renderGauges(h) {
    const tomb = h.tombstones || {};
    const share = tomb.bytes ? Math.round(100 * tomb.vacuumable_bytes / tomb.bytes) : 0;
    gauge("health-tombstones", share, 100, fmtInt(tomb.count) + " tombstones, " + fmtBytes(tomb.bytes),
      share + "% vacuumable", share >= 50 ? COLORS.warning : COLORS.accent);
    const cp = h.checkpoint || {};
    const interval = cp.interval_effective || 10;
    const since = cp.commits_since || 0;
    // Past its interval a checkpoint is due; past twice that, overdue: the scale grows to hold
    // the value (never pegged at its end) and the colour says which.
    const state = since > 2 * interval ? "overdue" : since > interval ? "due" : "ok";
    const color = { ok: COLORS.accent, due: COLORS.warning, overdue: COLORS.critical }[state];
    const caption = (cp.last_checkpoint_stale ? "_last_checkpoint is stale · " : "") + "one every " + fmtInt(interval) + " commits" +
      (state === "ok" ? "" : " · " + state);
    gauge("health-checkpoint", since, Math.max(2 * interval, Math.ceil(since * 1.25)), caption,
      fmtInt(since) + " commits", color);
    drawn.checkpoint = state;
  }

  function renderRecommendations(h) {
    const list = $("health-recs");
    list.textContent = "";
    const recs = h.recommendations || [];
    if (!recs.length) { list.appendChild(el("li", "muted", "Nothing to do: the table looks healthy.")); return; }
    recs.forEach(function (r) {
      const li = el("li");
      li.appendChild(el("span", "action", r.action));
      li.appendChild(document.createTextNode(format.bytesIn(r.why)));
      li.appendChild(el("span", "when", "When: " + format.bytesIn(r.when)));
      list.appendChild(li);
    });
  }

  function renderHistory(points) {
    // "small files" is dashed and drawn over "files": when every file is small the two lines
    // coincide, and both still show.
    chartOn("health-history").setOption({
      grid: { left: 8, right: 8, top: 34, bottom: 4, containLabel: true },
      tooltip: { trigger: "axis" },
      legend: { top: 0, textStyle: { fontSize: 11, color: COLORS.muted } },
      xAxis: { type: "category", data: points.map(function (p) { return "v" + fmtInt(p.version); }), axisLabel: { color: COLORS.muted, hideOverlap: true } },
      yAxis: [
        { type: "value", name: "files", minInterval: 1, nameTextStyle: { color: COLORS.muted, align: "left" }, axisLabel: { color: COLORS.muted } },
        Object.assign({ type: "value", name: "size", splitLine: { show: false }, nameTextStyle: { color: COLORS.muted, align: "right" }, axisLabel: { formatter: function (v) { return fmtBytes(v); }, fontSize: 10, color: COLORS.muted } },
          format.bytesAxis(Math.max.apply(null, points.map(function (p) { return p.total_bytes || 0; }).concat([0])))),
      ],
      series: [
        { name: "files", type: "line", showSymbol: false, z: 2, lineStyle: { width: 3 }, itemStyle: { color: "#2450d6" }, data: points.map(function (p) { return p.num_files; }) },
        { name: "small files", type: "line", showSymbol: false, z: 3, lineStyle: { width: 2, type: "dashed" }, itemStyle: { color: "#e8912d" }, data: points.map(function (p) { return p.small_files; }) },
        { name: "total size", type: "line", yAxisIndex: 1, showSymbol: false, z: 1, itemStyle: { color: "#21a594" },
          tooltip: { valueFormatter: function (v) { return fmtBytes(v); } }, data: points.map(function (p) { return p.total_bytes; }) },
      ],
    });
  }

  function renderChanges(changes) {
    const body = $("changes-rows");
    body.textContent = "";
    if (!changes.length) {
      const tr = el("tr");
      const td = el("td", "muted", "No schema, protocol, property or partitioning change in the stored history.");
      td.colSpan = 5;
      tr.appendChild(td);
      body.appendChild(tr);
      return;
    }
    changes.slice().reverse().forEach(function (c) {
      const tr = el("tr");
      tr.id = "change-" + c.version + "-" + c.kind;
      const v = el("td", "mono");
      const link = el("a", null, "v" + fmtInt(c.version));
      link.href = cfg.commitBase + encodeURIComponent(Number(c.version)) + "/";
      v.appendChild(link);
      tr.appendChild(v);
      tr.appendChild(el("td", "nowrap", fmtTime(c.timestamp)));
      tr.appendChild(el("td", null, c.kind));
      tr.appendChild(el("td", "summary", c.summary));
      const d = el("td", "nowrap");
      if (Number(c.version) > 0) {
        const diff = el("a", null, "diff");
        diff.href = cfg.diffUrl + "?from=" + encodeURIComponent(Number(c.version) - 1) + "&to=" + encodeURIComponent(Number(c.version));
        d.appendChild(diff);
      }
      (c.findings || []).forEach(function (id) {
        const f = el("a", "small-link", " finding #" + id);
        f.href = "/findings/" + encodeURIComponent(Number(id)) + "/";
        d.appendChild(f);
      });
      tr.appendChild(d);
      body.appendChild(tr);
    });
  }

  // The timeline above is what the page is for: let its first window load before the
  // panel's requests compete with it for the server (then load, or after 5 s regardless).
  function afterTimeline(cb) {
    const startedAt = Date.now();
    (function check() {
      const t = window.__timeline;
      const drawn = t && t.rendered && (t.rendered.bars > 0 || t.rendered.buckets > 0);
      if (drawn || !document.getElementById("timeline") || Date.now() - startedAt > 5000) cb();
      else setTimeout(check, 150);
    })();
  }

  afterTimeline(loadPanel);

  function loadPanel() {
  if (cfg.latestVersion === null || !cfg.hasHealth) {
    // Nothing stored yet: the tail stores health with the commits (no request that would 409).
    $("health-recs").textContent = "";
    $("health-recs").appendChild(el("li", "muted", cfg.latestVersion === null
      ? "No version stored yet."
      : "Health is stored as the tail ingests new commits; none stored yet for this table."));
    drawn.drawn = true;
    if (cfg.latestVersion !== null) {
      getJSON(cfg.historyUrl).then(function (body) { renderHistory(body.points || []); })
        .catch(function (err) { showError("Health history unavailable: " + (err.message || err)); });
    }
  } else {
    getJSON(cfg.healthUrl).then(function (h) {
      renderStats(h); renderHistogram(h); renderPartitions(h); renderGauges(h); renderRecommendations(h);
      drawn.drawn = true;
    }).catch(function (err) { showError("Health unavailable: " + (err.message || err)); drawn.drawn = true; });
    getJSON(cfg.historyUrl).then(function (body) { renderHistory(body.points || []); })
      .catch(function (err) { showError("Health history unavailable: " + (err.message || err)); });
  }
  getJSON(cfg.changesUrl).then(function (body) { renderChanges(body.changes || []); })
    .catch(function (err) { showError("Change history unavailable: " + (err.message || err)); });
  }
})();
