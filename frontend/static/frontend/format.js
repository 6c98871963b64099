/* The dashboard's number formats, shared by every page's scripts (window.deltaAudit.format).
   Sizes are IEC (KiB, MiB, GiB): the same steps and digits as the `filesize` template filter
   (frontend/templatetags/frontend_tags.py), so a size reads the same in a chart and a table. */
(function () {
  "use strict";
  const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

  function bytes(n) {
    if (n === null || n === undefined || n === "") return "—";
    let v = Number(n);
    if (!Number.isFinite(v)) return "—";
    let i = 0;
    while (Math.abs(v) >= 1024 && i < UNITS.length - 1) { v /= 1024; i += 1; }
    return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + UNITS[i];
  }

  // A size axis's ticks: 1, 2 or 5 times a power of ten of one IEC unit, so ticks read
  // "2.0 KiB, 4.0 KiB" rather than ECharts' decimal "1000 B, 2.0 KiB". Returns {interval, max}.
  function bytesAxis(maxValue, ticks) {
    const top = Number(maxValue);
    if (!(top > 0)) return { min: 0 };
    let unit = 1;
    while (top / unit >= 1024 && unit < Math.pow(1024, UNITS.length - 1)) unit *= 1024;
    const raw = top / unit / (ticks || 4);
    const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1024];
    const step = (steps.find(function (m) { return m >= raw; }) || 1024) * unit;
    return { min: 0, interval: step, max: Math.ceil(top / step) * step };
  }

  function int(n) {
    return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US");
  }

  // "35411 bytes" in a sentence from the API (health recommendations) -> "34.6 KiB".
  function bytesIn(text) {
    return String(text).replace(/\b(\d+) bytes\b/g, function (_, digits) { return bytes(digits); });
  }

  function time(ms) {
    if (ms === null || ms === undefined) return "—";
    return new Date(Number(ms)).toISOString().replace("T", " ").slice(0, 16);
  }

  window.deltaAudit = window.deltaAudit || {};
  window.deltaAudit.format = { bytes: bytes, bytesAxis: bytesAxis, int: int, bytesIn: bytesIn, time: time };
})();
