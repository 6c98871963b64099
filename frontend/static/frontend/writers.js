/* Table page: the Writers panel. Its first table is the writers tab's own (the server's
 * rendering of frontend/_writers_table.html, escaped there); the contention below comes from
 * /api/tables/<id>/writers/.
 *
 * Writer names, operations and appIds come from the log: from the API they reach the page
 * only through textContent.
 */
(function () {
  "use strict";

  const panel = document.getElementById("writers-panel");
  if (!panel) return;
  const status = document.getElementById("writers-status");

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "—" : String(text);
    if (cls) td.className = cls;
    row.appendChild(td);
  }

  function fill(tableId, rows, columns) {
    const table = document.getElementById(tableId);
    const body = table.querySelector("tbody");
    body.textContent = "";
    rows.forEach((r) => {
      const tr = document.createElement("tr");
      columns.forEach(([get, cls]) => cell(tr, get(r), cls));
      body.appendChild(tr);
    });
    table.classList.toggle("hidden", rows.length === 0);
    const head = document.getElementById(tableId + "-head");
    if (head) head.classList.toggle("hidden", rows.length === 0);
  }

  // A writer key ("engine=... user=alice job=7") as people read it: who, else the engine.
  const PART = /(engine|user|job|notebook|app)=(.*?)(?= (?:user|job|notebook|app)=|$)/g;
  function writerName(key) {
    const parts = {};
    for (const m of String(key || "").matchAll(PART)) parts[m[1]] = m[2];
    const who = ["user", "job", "notebook", "app"].filter((k) => k in parts).map((k) => k + " " + parts[k]);
    return who.length ? who.join(", ") : parts.engine || String(key || "unknown writer");
  }
  const SAME = "another run of the same writer";

  function people() {
    return fetch(panel.dataset.people, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status))))
      .then((html) => {
        const doc = new DOMParser().parseFromString(html, "text/html");
        document.getElementById("writers-people").replaceChildren(...doc.body.childNodes);
      });
  }

  const pairs = (obj) => Object.entries(obj || {}).map(([k, v]) => k + ": " + v).join(", ");

  // Loaded when opened: the telemetry needs the table's full audit (cached per version).
  function load() {
  Promise.all([people(), fetch(panel.dataset.api, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status))))])
    .then(([, data]) => {
      const w = data.writers || {};
      fill("writers-contention", w.writers || [], [
        [(r) => writerName(r.writer)],
        [(r) => r.commits, "num"],
        [(r) => pairs(r.read_version_distance)],
        [(r) => r.recorded_retries, "num"],
        [(r) => "v" + r.first_version + "–v" + r.last_version, "mono"],
      ]);
      fill("writer-pairs", w.pairs || [], [
        [(r) => writerName(r.earlier)],
        [(r) => (r.later === r.earlier ? SAME : writerName(r.later))],
        [(r) => r.concurrent_commits, "num"],
        [(r) => r.conflicting_commits, "num"],
      ]);
      fill("txn-anomalies", w.txn_anomalies || [], [
        [(r) => r.app_id, "mono"],
        [(r) => r.kind],
        [(r) => r.txn_version, "num"],
        [(r) => "v" + r.version, "mono"],
        [(r) => "v" + r.previous_version + " (txn " + r.previous_txn_version + ")", "mono"],
      ]);
      status.textContent = (w.writers || []).length + " writer(s) as of v" + data.version;
      panel.dataset.loaded = "1";
    })
    .catch((err) => {
      status.textContent = "Writers could not be loaded: " + err.message;
    });
  }

  panel.addEventListener("toggle", () => {
    if (panel.open && !panel.dataset.requested) {
      panel.dataset.requested = "1";
      load();
    }
  });
})();
