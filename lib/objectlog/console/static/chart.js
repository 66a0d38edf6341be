// Charts as SVG, built with createElementNS (no library): each has role=img and a summary as
// its label; the pages put a table of the same numbers beside it for screen readers.
import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 200;
const PAD = { left: 48, right: 8, top: 10, bottom: 24 };
const PALETTE = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4"];

function svg(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function frame(label) {
  const root = svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", "aria-label": label, class: "chart",
  });
  root.append(svg("title", {}, label));
  return root;
}

function axis(root, max, xLabels) {
  const bottom = HEIGHT - PAD.bottom;
  root.append(svg("line", { x1: PAD.left, y1: bottom, x2: WIDTH - PAD.right, y2: bottom, class: "axis" }));
  root.append(svg("text", { x: PAD.left - 4, y: PAD.top + 8, "text-anchor": "end", class: "tick" }, String(max)));
  root.append(svg("text", { x: PAD.left - 4, y: bottom, "text-anchor": "end", class: "tick" }, "0"));
  const [first, last] = xLabels;
  if (first) root.append(svg("text", { x: PAD.left, y: HEIGHT - 6, class: "tick" }, first));
  if (last) root.append(svg("text", { x: WIDTH - PAD.right, y: HEIGHT - 6, "text-anchor": "end", class: "tick" }, last));
}

/** Bars: points [{label, value}], drawn left to right. */
export function barChart(label, points, xLabels = []) {
  const root = frame(label);
  const max = Math.max(1, ...points.map((p) => p.value));
  axis(root, max, xLabels);
  const span = (WIDTH - PAD.left - PAD.right) / Math.max(1, points.length);
  const height = HEIGHT - PAD.top - PAD.bottom;
  points.forEach((point, i) => {
    const h = (point.value / max) * height;
    const bar = svg("rect", {
      x: PAD.left + i * span + span * 0.1, y: HEIGHT - PAD.bottom - h,
      width: Math.max(1, span * 0.8), height: h, class: "bar",
    });
    bar.append(svg("title", {}, `${point.label}: ${point.value}`));
    root.append(bar);
  });
  return el("figure", { class: "chart-figure" }, root);
}

/** Lines: series [{name, values: [numbers]}], all sampled at the same xs. */
export function lineChart(label, series, xLabels = []) {
  const root = frame(label);
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  axis(root, max, xLabels);
  const count = Math.max(2, ...series.map((s) => s.values.length));
  const x = (i) => PAD.left + (i / (count - 1)) * (WIDTH - PAD.left - PAD.right);
  const y = (v) => HEIGHT - PAD.bottom - (v / max) * (HEIGHT - PAD.top - PAD.bottom);
  const legend = el("ul", { class: "legend" });
  series.forEach((s, n) => {
    const color = PALETTE[n % PALETTE.length];
    const points = s.values.map((v, i) => `${x(i)},${y(v)}`).join(" ");
    root.append(svg("polyline", { points, fill: "none", stroke: color, "stroke-width": 2 }));
    s.values.forEach((v, i) => root.append(svg("circle", { cx: x(i), cy: y(v), r: 3, fill: color })));
    const swatch = el("span", { class: "swatch", "data-color": String(n % PALETTE.length), "aria-hidden": "true" });
    legend.append(el("li", {}, swatch, `${s.name}: ${s.values.at(-1) ?? "—"}`));
  });
  return el("figure", { class: "chart-figure" }, root, legend);
}
