/* Table analysis page: the hotspot heatmap (partition × day). Labels come from the log and are
 * drawn on a canvas or escaped in the tooltip; nothing is parsed as HTML. */
(function () {
  "use strict";
  const source = document.getElementById("heatmap-data");
  const el = document.getElementById("heatmap");
  if (!source || !el) return;
  const data = JSON.parse(source.textContent);
  window.__heatmap = data;

  function esc(value) {
    return String(value).replace(/[&<>"'`]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" }[c];
    });
  }

  el.style.height = Math.max(150, Math.min(90 + data.partitions.length * 30, 720)) + "px";
  const chart = echarts.init(el, null, { renderer: "canvas" });
  chart.setOption({
    animation: false,
    grid: { left: 180, right: 24, top: 10, bottom: 70 },
    tooltip: {
      confine: true, className: "heatmap-tooltip", backgroundColor: "#1d2127", borderWidth: 0,
      textStyle: { color: "#f1f3f5", fontSize: 12 },
      formatter: function (p) {
        const v = p.data;
        return "<b>" + esc(data.partitions[v[1]]) + "</b><br>" + esc(data.days[v[0]]) + ": " + esc(v[2]) + " overlapping pairs";
      },
    },
    xAxis: { type: "category", data: data.days, splitArea: { show: true }, axisLabel: { color: "#5f6873" } },
    yAxis: {
      type: "category", data: data.partitions, splitArea: { show: true },
      axisLabel: { color: "#5f6873", width: 165, overflow: "truncate" },
    },
    visualMap: {
      min: 0, max: Math.max(data.max, 1), calculable: true, orient: "horizontal", left: "center", bottom: 4,
      itemHeight: 160, inRange: { color: ["#eef3fe", "#9db5f5", "#2f5bea", "#17318f"] }, textStyle: { color: "#5f6873" },
    },
    series: [{ type: "heatmap", data: data.cells, label: { show: data.cells.length <= 120, color: "#fff", textBorderColor: "#1d2127", textBorderWidth: 2 },
      emphasis: { itemStyle: { borderColor: "#1d2127", borderWidth: 1 } } }],
  });
  window.addEventListener("resize", function () { chart.resize(); });
})();
