// The record browser: one page of one partition at a time (by offset, by time, or newest
// first), keys and values as text, pretty JSON or hex, headers, a filter on the page's text,
// and find by key (the key's partition, then that partition scanned page by page). No request
// asks for more than a page: a partition is never loaded whole. "Decoded (schema registry)"
// asks the server for the page decoded (GET .../decoded): bytes in the Schema Registry's wire
// format shown as JSON with their schema id; others as text, with the server's note.
import { api, base64ToBytes, path, query } from "./api.js";
import { context } from "./console.js";
import {
  append, button, el, errorMessage, field, formatNumber, formatTime, link, message, replace, select,
} from "./dom.js";

const TRUNCATE_BYTES = 1024;
const SCAN_PAGE = 500;
const SCAN_PAGES_PER_CLICK = 20;
const REGISTRY = "registry";
const FORMATS = [["text", "Text"], ["json", "JSON (pretty)"], ["hex", "Hex"], [REGISTRY, "Decoded (schema registry)"]];

export async function recordsPage(main, [name], params) {
  // the partition list needs only the count: no head of a wide topic is read for it
  const topic = await api("GET", path`/topics/${name}` + query({ heads: "false" }));
  const state = {
    partition: Number(params.get("partition") || 0),
    offset: params.get("offset"),
    time: params.get("time"),
    newest: params.get("newest") === "1" || (!params.get("offset") && !params.get("time")),
    size: Math.min(1000, Math.max(1, Number(params.get("size")) || 20)),
    format: params.get("format") || "text",
    filter: params.get("filter") || "",
  };
  const results = el("div", { "aria-live": "polite" });
  const found = el("div", { "aria-live": "polite" });
  let shown = null; // the page on screen: {records, offset, next_offset, log_start_offset, high_watermark}

  const partitionSelect = select("partition", Array.from({ length: topic.partition_count }, (_, p) => [p, `partition ${p}`]), state.partition);
  const offsetInput = el("input", { name: "offset", type: "number", min: 0, value: state.offset ?? "", inputmode: "numeric" });
  const timeInput = el("input", { name: "time", type: "datetime-local", step: 1, value: state.time ?? "" });
  const sizes = [...new Set([20, 50, 100, state.size])].sort((a, b) => a - b); // a URL's own size too
  const sizeSelect = select("size", sizes.map((n) => [n, String(n)]), state.size);
  const formatSelect = select("format", FORMATS, state.format);
  const filterInput = el("input", { name: "filter", type: "search", value: state.filter, autocomplete: "off" });
  const keyInput = el("input", { name: "key", autocomplete: "off" });

  const form = el("form", { class: "inline-form", "aria-label": "Choose records" },
    field("Partition", partitionSelect), field("From offset", offsetInput),
    field("From time (UTC)", timeInput), field("Page size", sizeSelect),
    el("button", { type: "submit" }, "Show"), button("Newest", () => go({ newest: true })));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (timeInput.value && !offsetInput.value) go({ time: timeInput.value });
    else go({ offset: offsetInput.value || "0" });
  });
  formatSelect.addEventListener("change", () => {
    const reload = (state.format === REGISTRY) !== (formatSelect.value === REGISTRY);
    state.format = formatSelect.value;
    saveQuery();
    if (reload) load(); else draw();
  });
  filterInput.addEventListener("input", () => { state.filter = filterInput.value; saveQuery(); draw(); });
  const keyForm = el("form", { class: "inline-form", "aria-label": "Search a partition for a key" },
    field("Find by key", keyInput), el("button", { type: "submit" }, "Find"));
  keyForm.addEventListener("submit", (event) => { event.preventDefault(); findByKey(keyInput.value); });

  append(main, [
    el("p", { class: "crumbs" }, link("/console/topics", "Topics"), " / ",
      link(`/console/topics/${encodeURIComponent(name)}`, name), " / "),
    el("h1", {}, `Records of ${name}`), form,
    el("div", { class: "inline-form" }, field("Show as", formatSelect), field("Filter this page", filterInput)),
    results, keyForm, found,
  ]);

  function go(change) {
    state.partition = Number(partitionSelect.value);
    state.size = Number(sizeSelect.value);
    state.newest = Boolean(change.newest);
    state.offset = change.offset ?? null;
    state.time = change.time ?? null;
    if (state.time) offsetInput.value = "";
    saveQuery();
    load();
  }

  function saveQuery() {
    context.setQuery({
      partition: state.partition, offset: state.offset, time: state.time, newest: state.newest ? 1 : null,
      size: state.size === 20 ? null : state.size, format: state.format === "text" ? null : state.format,
      filter: state.filter,
    });
  }

  async function startOffset() {
    const offsets = await api("GET", path`/topics/${name}/partitions/${state.partition}/offsets` +
      (state.time ? query({ timestamp: Date.parse(`${state.time}Z`) }) : ""));
    if (state.newest) return Math.max(offsets.earliest, offsets.latest - state.size);
    if (state.time) return offsets.offset ?? offsets.latest;
    return Number(state.offset);
  }

  async function load() {
    try {
      const offset = await startOffset();
      const route = state.format === REGISTRY ? "decoded" : "records";
      const page = await api("GET", path`/topics/${name}/partitions/${state.partition}/${route}` +
        query({ offset, max_records: state.size }));
      shown = { ...page, offset };
      draw();
    } catch (error) {
      replace(results, errorMessage(error));
    }
  }

  function draw() {
    if (!shown) return;
    const wanted = state.filter.toLowerCase();
    const records = state.newest ? [...shown.records].reverse() : shown.records;
    const visible = records.filter((r) => !wanted || searchable(r).includes(wanted));
    const older = Math.max(shown.log_start_offset, shown.offset - state.size);
    const summary = `Partition ${state.partition}: offsets ${formatNumber(shown.log_start_offset)} to ` +
      `${formatNumber(shown.high_watermark)} (high watermark); this page from offset ${formatNumber(shown.offset)}, ` +
      `${shown.records.length} record(s)${state.newest ? ", newest first" : ""}` +
      (wanted ? `, ${visible.length} matching the filter` : "");
    replace(results,
      el("p", {}, summary),
      el("div", { class: "actions" },
        button("Older", () => go({ offset: String(older) }), { disabled: shown.offset <= shown.log_start_offset }),
        button("Newer", () => go({ offset: String(shown.next_offset) }), { disabled: shown.next_offset >= shown.high_watermark })),
      visible.length ? recordTable(visible, state.format) : message(shown.records.length ? "No record on this page matches the filter." : "No records from this offset."));
  }

  async function findByKey(key) {
    try {
      const { partition } = await api("GET", path`/topics/${name}/key-partition` + query({ key }));
      const bounds = await api("GET", path`/topics/${name}/partitions/${partition}/offsets`);
      await scan(key, partition, bounds.earliest, []);
    } catch (error) {
      replace(found, errorMessage(error));
    }
  }

  async function scan(key, partition, from, matches) {
    let offset = from;
    let end = offset;
    for (let pages = 0; pages < SCAN_PAGES_PER_CLICK; pages += 1) {
      const page = await api("GET", path`/topics/${name}/partitions/${partition}/records` + query({ offset, max_records: SCAN_PAGE }));
      matches.push(...page.records.filter((r) => r.key !== null && decodeText(base64ToBytes(r.key)) === key));
      end = page.high_watermark;
      if (page.records.length === 0 || page.next_offset >= page.high_watermark) { offset = page.next_offset; break; }
      offset = page.next_offset;
    }
    const done = offset >= end;
    replace(found,
      el("p", {}, `Key "${key}" goes to partition ${partition} (murmur2). Scanned offsets up to ${formatNumber(offset)} of ${formatNumber(end)}: ${matches.length} record(s) with that key.`),
      done ? null : button("Scan further", () => scan(key, partition, offset, matches)),
      matches.length ? recordTable(matches, state.format) : null);
  }

  await load();
  return { refresh: () => (state.newest ? load() : undefined) };
}

function searchable(record) {
  const parts = [record.key, record.value].map((v) => decodeText(base64ToBytes(v)) ?? "");
  return parts.join("\n").toLowerCase();
}

function decodeText(bytes) {
  return bytes === null ? null : new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

function recordTable(records, format) {
  const head = el("tr", {}, ["Offset", "Timestamp", "Key", "Value", "Headers"].map((h) => el("th", { scope: "col" }, h)));
  const rows = records.map((r) => el("tr", { "data-offset": r.offset },
    el("td", {}, formatNumber(r.offset)), el("td", {}, formatTime(r.timestamp)),
    el("td", { class: "data" }, shownField(r.key, r.key_decoded, format)),
    el("td", { class: "data" }, shownField(r.value, r.value_decoded, format)),
    el("td", { class: "data" }, r.headers.length ? el("ul", { class: "headers-list" }, r.headers.map((h) =>
      el("li", {}, el("span", { class: "header-key" }, h.key), ": ", shownBytes(base64ToBytes(h.value), "text")))) : "—")));
  return el("div", { class: "table-wrap" },
    el("table", { class: "records" }, el("caption", {}, "Records"), el("thead", {}, head), el("tbody", {}, rows)));
}

/** A key or value: decoded through the registry when the page was asked so (the server's
 * answer, or its note beside the bytes as text), else shownBytes. */
function shownField(base64, decoded, format) {
  if (format !== REGISTRY || decoded === undefined) return shownBytes(base64ToBytes(base64), format === REGISTRY ? "text" : format);
  if (decoded === null) return el("span", { class: "null" }, "null");
  if (decoded.note) {
    return el("div", {}, shownBytes(base64ToBytes(base64), "text"),
      el("p", { class: "note" }, `Not decoded: ${decoded.note}`));
  }
  return el("div", {}, el("pre", {}, JSON.stringify(decoded.decoded, null, 2)),
    el("p", { class: "note" }, `schema id ${decoded.schema_id}`));
}

/** Bytes as text, pretty JSON or hex: always a text node. Over 1 KiB, the first KiB and a
 * button that shows all of it. */
function shownBytes(bytes, format) {
  if (bytes === null) return el("span", { class: "null" }, "null");
  const whole = render(bytes, format);
  if (bytes.length <= TRUNCATE_BYTES) return el("pre", {}, whole);
  const pre = el("pre", {}, render(bytes.subarray(0, TRUNCATE_BYTES), format === "json" ? "text" : format) + " …");
  const more = button(`Show all ${formatNumber(bytes.length)} bytes`, () => {
    replace(pre, whole);
    more.remove();
  });
  return el("div", {}, pre, more);
}

function render(bytes, format) {
  if (format === "hex") {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
  }
  const text = decodeText(bytes);
  if (format === "json") {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      return text;
    }
  }
  return text;
}
