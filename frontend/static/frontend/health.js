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
  function fmtInt(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"); }
  function fmtBytes(n) {
    if (n === null || n === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let v = Number(n), i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (i === 0 ? v : v.toFixed(1)) + " " + units[i];
  }
  function fmtTime(ms) {
    if (ms === null || ms === undefined) return "—";
    return new Date(Number(ms)).toISOString().replace("T", " ").slice(0, 16);
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
    chartOn("health-histogram").setOption({
      grid: { left: 48, right: 12, top: 16, bottom: 48 },
      tooltip: { trigger: "axis" },
      xAxis: { type: "category", data: buckets.map(function (b) { return "≤ " + fmtBytes(b.le); }), axisLabel: { rotate: 35, fontSize: 10 } },
      yAxis: { type: "value", minInterval: 1, name: "files" },
      series: [{ type: "bar", name: "files", data: buckets.map(function (b) { return b.count; }), itemStyle: { color: "#5b8def" } }],
    });
  }

  function partitionLabel(values) {
    return Object.keys(values || {}).map(function (k) { return k + "=" + values[k]; }).join(", ") || "(table)";
  }

  function renderPartitions(h) {
    const top = ((h.partitions || {}).top || []).slice(0, 15).reverse();
    chartOn("health-partitions").setOption({
      grid: { left: 120, right: 16, top: 8, bottom: 24 },
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, formatter: function (ps) {
        const p = top[ps[0].dataIndex];
        const div = document.createElement("div");
        div.textContent = partitionLabel(p.values) + ": " + fmtBytes(p.bytes) + " in " + fmtInt(p.num_files) + " files";
        return div.innerHTML;  // escaped text
      } },
      xAxis: { type: "value", axisLabel: { formatter: function (v) { return fmtBytes(v); }, fontSize: 10 } },
      yAxis: { type: "category", data: top.map(function (p) { return partitionLabel(p.values).slice(0, 24); }), axisLabel: { fontSize: 10 } },
      series: [{ type: "bar", data: top.map(function (p) { return p.bytes; }), itemStyle: { color: "#7bb57b" } }],
    });
    if (!top.length) $("health-partitions").setAttribute("aria-label", "Unpartitioned table");
  }

  function gauge(id, value, max, title, detail) {
    chartOn(id).setOption({
      series: [{
        type: "gauge", min: 0, max: Math.max(max, 1), radius: "92%",
        progress: { show: true, width: 10 }, axisLine: { lineStyle: { width: 10 } },
        axisTick: { show: false }, splitLine: { length: 6 }, axisLabel: { fontSize: 9, distance: 12 },
        pointer: { show: false }, title: { offsetCenter: [0, "62%"], fontSize: 11 },
        detail: { valueAnimation: false, fontSize: 16, offsetCenter: [0, "20%"], formatter: function () { return detail; } },
        data: [{ value: Math.min(value, Math.max(max, 1)), name: title }],
      }],
    });
  }

  function renderGauges(h) {
    const tomb = h.tombstones || {};
    const share = tomb.bytes ? Math.round(100 * tomb.vacuumable_bytes / tomb.bytes) : 0;
    gauge("health-tombstones", share, 100, fmtInt(tomb.count) + " tombstones, " + fmtBytes(tomb.bytes), share + "% vacuumable");
    const cp = h.checkpoint || {};
    const interval = cp.interval_effective || 10;
    gauge("health-checkpoint", cp.commits_since || 0, 2 * interval,
      cp.last_checkpoint_stale ? "_last_checkpoint is stale" : "interval " + interval,
      fmtInt(cp.commits_since) + " commits");
  }

  function renderRecommendations(h) {
    const list = $("health-recs");
    list.textContent = "";
    const recs = h.recommendations || [];
    if (!recs.length) { list.appendChild(el("li", "muted", "Nothing to do: the table looks healthy.")); return; }
    recs.forEach(function (r) {
      const li = el("li");
      li.appendChild(el("span", "action", r.action));
      li.appendChild(document.createTextNode(r.why));
      li.appendChild(el("span", "when", "When: " + r.when));
      list.appendChild(li);
    });
  }

  function renderHistory(points) {
    chartOn("health-history").setOption({
      grid: { left: 56, right: 64, top: 28, bottom: 28 },
      tooltip: { trigger: "axis" },
      legend: { top: 0, textStyle: { fontSize: 11 } },
      xAxis: { type: "category", data: points.map(function (p) { return "v" + p.version; }) },
      yAxis: [
        { type: "value", name: "files", minInterval: 1 },
        { type: "value", name: "bytes", axisLabel: { formatter: function (v) { return fmtBytes(v); }, fontSize: 10 } },
      ],
      series: [
        { name: "files", type: "line", showSymbol: false, data: points.map(function (p) { return p.num_files; }) },
        { name: "small files", type: "line", showSymbol: false, data: points.map(function (p) { return p.small_files; }) },
        { name: "total bytes", type: "line", yAxisIndex: 1, showSymbol: false, data: points.map(function (p) { return p.total_bytes; }) },
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
    if (cfg.latestVersion !== null) {
      getJSON(cfg.historyUrl).then(function (body) { renderHistory(body.points || []); })
        .catch(function (err) { showError("Health history unavailable: " + (err.message || err)); });
    }
  } else {
    getJSON(cfg.healthUrl).then(function (h) {
      renderStats(h); renderHistogram(h); renderPartitions(h); renderGauges(h); renderRecommendations(h);
    }).catch(function (err) { showError("Health unavailable: " + (err.message || err)); });
    getJSON(cfg.historyUrl).then(function (body) { renderHistory(body.points || []); })
      .catch(function (err) { showError("Health history unavailable: " + (err.message || err)); });
  }
  getJSON(cfg.changesUrl).then(function (body) { renderChanges(body.changes || []); })
    .catch(function (err) { showError("Change history unavailable: " + (err.message || err)); });
  }
})();
