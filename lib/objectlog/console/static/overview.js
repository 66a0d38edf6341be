// The overview page: the figures GET /overview gives (topics, partitions, records, groups,
// total lag, ...), each as it comes, so a field the API adds shows without a console change.
import { api } from "./api.js";
import { append, button, el, errorMessage, formatBytes, formatNumber, link, replace, table } from "./dom.js";

export async function overviewPage(main) {
  const data = el("div", { "aria-live": "polite" });
  append(main, [
    el("h1", {}, "Overview"),
    el("div", { class: "actions" }, button("Refresh", () => load())),
    data,
  ]);
  async function load() {
    try {
      const overview = await api("GET", "/overview");
      replace(data, describe(overview || {}), el("p", {}, "See ", link("/console/topics", "the topics"),
        " and ", link("/console/groups", "the consumer groups"), "."));
    } catch (error) {
      replace(data, errorMessage(error), el("p", {}, "See ", link("/console/topics", "the topics"),
        " and ", link("/console/groups", "the groups"), "."));
    }
  }
  await load();
  return { refresh: load };
}

/** Scalars as cards; lists of objects as tables; nested objects as their own section. */
function describe(overview) {
  const scalars = Object.entries(overview).filter(([, v]) => v === null || typeof v !== "object");
  const nested = Object.entries(overview).filter(([, v]) => v !== null && typeof v === "object");
  return [
    el("ul", { class: "cards" }, scalars.map(([name, value]) =>
      el("li", { class: "card" }, el("span", { class: "card-label" }, label(name)),
        el("span", { class: "card-value" }, cardValue(name, value))))),
    nested.map(([name, value]) => section(name, value)),
  ];
}

/** A card's value: bytes, durations (a name ending in _ms: as seconds), yes/no, or a number. */
function cardValue(name, value) {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (name === "bytes") return formatBytes(value);
  if (name.endsWith("_ms") && typeof value === "number") return `${formatNumber(Math.round(value / 100) / 10)} s`;
  return formatNumber(value);
}

function section(name, value) {
  if (Array.isArray(value)) {
    const objects = value.filter((v) => v && typeof v === "object");
    if (objects.length === value.length && objects.length > 0) {
      const keys = [...new Set(objects.flatMap((o) => Object.keys(o)))];
      const columns = keys.map((key) => ({ label: label(key), cell: (row) => cellOf(key, row[key]) }));
      return el("section", {}, el("h2", {}, label(name)), table(label(name), columns, objects));
    }
    return el("section", {}, el("h2", {}, label(name)), el("p", {}, value.map(String).join(", ") || "none"));
  }
  return el("section", {}, el("h2", {}, label(name)), describe(value));
}

function cellOf(key, value) {
  if (key === "topic" && typeof value === "string") return link(`/console/topics/${encodeURIComponent(value)}`, value);
  if (key === "group" && typeof value === "string") return link(`/console/groups/${encodeURIComponent(value)}`, value);
  if (value !== null && typeof value === "object") return JSON.stringify(value);
  return formatNumber(value);
}

function label(name) {
  const text = name.replace(/_ms$/, "").replaceAll("_", " ").replace(/\bl0\b/, "L0");
  return text.charAt(0).toUpperCase() + text.slice(1);
}
