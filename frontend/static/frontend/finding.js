/* Finding page: the anomaly's dependency cycle, drawn with Apache ECharts.
 *
 * Commits are nodes (labelled vN), dependency edges are arrows labelled with their type
 * (ww / wr / rw). The data is the server-checked cycle (integers and a closed set of types);
 * the "why" texts come from the log and stay in the escaped table under the graph.
 */
(function () {
  "use strict";

  const dataEl = document.getElementById("cycle-data");
  const chartEl = document.getElementById("cycle-graph");
  if (!dataEl || !chartEl || typeof echarts === "undefined") return;
  const edges = JSON.parse(dataEl.textContent);
  const COLORS = { rw: "#cf222e", ww: "#5b8def", wr: "#21a594" };

  const versions = Array.from(new Set(edges.flatMap((e) => [e.from, e.to]))).sort((a, b) => a - b);
  // Commits on a circle in version order, so a two-commit cycle reads left to right.
  const nodes = versions.map((v, i) => {
    const angle = Math.PI + (2 * Math.PI * i) / versions.length;
    return { name: "v" + v, x: 200 + 150 * Math.cos(angle), y: 120 + 80 * Math.sin(angle), symbolSize: 46 };
  });
  const links = edges.map((e) => ({
    source: "v" + e.from,
    target: "v" + e.to,
    value: e.type,
    label: { show: true, formatter: e.type, fontWeight: "bold", color: COLORS[e.type] },
    lineStyle: { color: COLORS[e.type], width: 2, curveness: 0.25, type: e.type === "rw" ? "dashed" : "solid" },
  }));

  const chart = echarts.init(chartEl, null, { renderer: "canvas" });
  chart.setOption({
    animation: false,
    series: [{
      type: "graph",
      layout: "none",
      roam: false,
      data: nodes,
      links: links,
      edgeSymbol: ["none", "arrow"],
      edgeSymbolSize: 10,
      label: { show: true, fontFamily: "monospace" },
      itemStyle: { color: "#f3f5f8", borderColor: "#445", borderWidth: 1.5 },
    }],
  });
  window.addEventListener("resize", () => chart.resize());
  chartEl.dataset.edges = String(links.length);
})();
