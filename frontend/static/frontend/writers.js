/* Table page: the Writers panel, from /api/tables/<id>/writers/.
 *
 * Writer names, operations and appIds come from the log: they reach the page only through
 * textContent.
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

  const pairs = (obj) => Object.entries(obj || {}).map(([k, v]) => k + ": " + v).join(", ");

  // Loaded when opened: the telemetry needs the table's full audit (cached per version).
  function load() {
  fetch(panel.dataset.api, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((r) => (r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status))))
    .then((data) => {
      const w = data.writers || {};
      fill("writers-table", w.writers || [], [
        [(r) => r.writer, "mono"],
        [(r) => r.commits, "num"],
        [(r) => pairs(r.operations)],
        [(r) => pairs(r.read_version_distance)],
        [(r) => r.recorded_retries, "num"],
        [(r) => "v" + r.first_version + "–v" + r.last_version, "mono"],
      ]);
      fill("writer-pairs", w.pairs || [], [
        [(r) => r.earlier, "mono"],
        [(r) => r.later, "mono"],
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
