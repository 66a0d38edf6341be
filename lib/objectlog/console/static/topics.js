// Topics: the sortable list (and creating one), a topic's page (partitions, config, the
// records-per-minute chart, its Iceberg table, altering and deleting it), and producing a
// record from a form. The list is one request (GET /overview/topics), never one per topic; a
// topic's partitions come in its one description and are shown PARTITIONS_PAGE rows a page.
import { api, path, query, textToBase64 } from "./api.js";
import { barChart } from "./chart.js";
import { context } from "./console.js";
import {
  append, button, confirmed, el, errorMessage, facts, field, formatBytes, formatNumber,
  formatTime, link, message, replace, select, table,
} from "./dom.js";

const MAX_LEVEL_PARTITIONS = 32;
const PARTITIONS_PAGE = 100;
const counted = (value, format) => (value === null || value === undefined ? "—" : format(value));
const topicHref = (name, rest = "") => `/console/topics/${encodeURIComponent(name)}${rest}`;

export async function topicsPage(main) {
  const list = el("div", { "aria-live": "polite" });
  const sort = { key: "topic", descending: false };
  let rows = [];
  const status = el("div");
  const form = el("form", { class: "inline-form", "aria-label": "Create a topic" },
    field("Name", el("input", { name: "name", required: true, autocomplete: "off" })),
    field("Partitions", el("input", { name: "partitions", type: "number", min: 1, max: 10000, value: 1 })),
    field("Config", el("textarea", { name: "config", rows: 2, placeholder: "retention.ms=86400000" }), "one key=value a line"),
    el("button", { type: "submit" }, "Create topic"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = new FormData(form);
    const name = String(values.get("name")).trim();
    const partitions = Number(values.get("partitions"));
    if (!confirmed(`Create topic ${name} with ${partitions} partition(s)?`)) return;
    try {
      await api("POST", "/topics", { name, partitions, config: parseConfig(String(values.get("config"))) });
      context.navigate(topicHref(name));
    } catch (error) {
      replace(status, errorMessage(error));
    }
  });
  append(main, [el("h1", {}, "Topics"), el("h2", {}, "Create a topic"), form, status,
    el("h2", {}, "All topics"), el("div", { class: "actions" }, button("Refresh", () => load())), list]);

  function draw() {
    const sorted = [...rows].sort((a, b) => {
      const order = a[sort.key] < b[sort.key] ? -1 : a[sort.key] > b[sort.key] ? 1 : 0;
      return sort.descending ? -order : order;
    });
    const header = (label, key) => {
      const ariaSort = sort.key === key ? (sort.descending ? "descending" : "ascending") : "none";
      const arrow = sort.key === key ? (sort.descending ? " ▼" : " ▲") : "";
      return el("th", { scope: "col", "aria-sort": ariaSort },
        button(`${label}${arrow}`, () => {
          sort.descending = sort.key === key ? !sort.descending : false;
          sort.key = key;
          draw();
        }, { class: "sort" }));
    };
    const head = el("tr", {}, header("Topic", "topic"), header("Partitions", "partitions"),
      header("Records", "records"), header("Bytes", "bytes"));
    const body = sorted.map((row) => el("tr", {},
      el("td", {}, link(topicHref(row.topic), row.topic)), el("td", {}, formatNumber(row.partitions)),
      el("td", {}, counted(row.records, formatNumber)), el("td", {}, counted(row.bytes, formatBytes))));
    const unsummed = rows.some((row) => row.records === null);
    replace(list, rows.length === 0 ? message("No topics yet.") : el("div", { class: "table-wrap" },
      el("table", {}, el("caption", {}, "Topics (select a column heading to sort)"), el("thead", {}, head), el("tbody", {}, body))),
    unsummed ? message("— : not summed here (the list reads at most 2,000 partitions' heads); the topic's page has it.") : null);
  }

  async function load() {
    try {
      rows = (await api("GET", "/overview/topics")).topics;
      draw();
    } catch (error) {
      replace(list, errorMessage(error));
    }
  }
  await load();
  return { refresh: load };
}

function summary(topic) {
  const partitions = topic.partitions || [];
  return {
    topic: topic.topic,
    partitions: topic.partition_count,
    records: partitions.reduce((n, p) => n + p.high_watermark - p.log_start_offset, 0),
    bytes: partitions.reduce((n, p) => n + p.bytes, 0),
  };
}

function parseConfig(text) {
  const config = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf("=");
    if (at < 1) throw new Error(`config line "${line}" is not key=value`);
    config[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return config;
}

export async function topicPage(main, [name]) {
  const details = el("div", { "aria-live": "polite" });
  const activity = el("div");
  const icebergTable = el("div", { "aria-live": "polite" });
  const config = el("div");
  let partitionPage = 0;
  const status = el("div");
  const minutes = select("minutes", [[15, "15 minutes"], [60, "1 hour"], [180, "3 hours"], [1440, "24 hours"]], 60);
  minutes.addEventListener("change", () => loadActivity());
  append(main, [
    el("p", { class: "crumbs" }, link("/console/topics", "Topics"), " / "),
    el("h1", {}, `Topic ${name}`),
    el("div", { class: "actions" },
      link(topicHref(name, "/records"), "Browse records"), link(topicHref(name, "/produce"), "Produce a record"),
      button("Refresh", () => load()), button("Delete topic", () => deleteTopic(), { class: "danger" })),
    status, details,
    el("h2", {}, "Records produced per minute"), field("Window", minutes), activity,
    el("h2", {}, "Iceberg table"), icebergTable,
    config,
  ]);

  async function deleteTopic() {
    if (!confirmed(`Delete topic ${name} and all its records? This cannot be undone.`)) return;
    try {
      await api("DELETE", path`/topics/${name}`);
      context.navigate("/console/topics");
    } catch (error) {
      replace(status, errorMessage(error));
    }
  }

  async function alter(body, question) {
    if (!confirmed(question)) return;
    try {
      await api("PATCH", path`/topics/${name}`, body);
      await load(); // the message once the page shows the new config
      replace(status, message("Config changed."));
    } catch (error) {
      replace(status, errorMessage(error));
    }
  }

  function configSection(config, open) {
    const entries = Object.entries(config).sort();
    const form = el("form", { class: "inline-form", "aria-label": "Set a config" },
      field("Config key", el("input", { name: "key", required: true, autocomplete: "off" })),
      field("Value", el("input", { name: "value", required: true, autocomplete: "off" })),
      el("button", { type: "submit" }, "Set config"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = new FormData(form);
      const key = String(values.get("key")).trim();
      const value = String(values.get("value"));
      alter({ set: { [key]: value } }, `Set ${key}=${value} on topic ${name}?`);
    });
    return [
      el("h2", {}, "Config"),
      form,
      el("details", { open }, el("summary", {}, `All ${entries.length} config keys`),
        table("Config", [
          { label: "Key", cell: ([key]) => key },
          { label: "Value", cell: ([, value]) => value },
          { label: "Action", cell: ([key]) => button("Reset", () => alter({ delete: [key] }, `Reset ${key} on topic ${name} to its default?`), { "aria-label": `Reset ${key}` }) },
        ], entries)),
    ];
  }

  async function load() {
    try {
      const topic = await api("GET", path`/topics/${name}`);
      const totals = summary(topic);
      replace(details,
        facts([["Topic id", topic.topic_id], ["Partitions", formatNumber(topic.partition_count)],
          ["Records held", formatNumber(totals.records)], ["Bytes", formatBytes(totals.bytes)]]),
        el("h2", {}, "Partitions"),
        partitionPager(topic.partitions),
        table(topic.partitions.length > PARTITIONS_PAGE ? `Partitions ${pageStart(topic.partitions)} to ${pageEnd(topic.partitions) - 1}` : "Partitions", [
          { label: "Partition", cell: (p) => link(topicHref(name, `/records${query({ partition: p.partition, newest: 1 })}`), String(p.partition)) },
          { label: "Log start", cell: (p) => formatNumber(p.log_start_offset) },
          { label: "High watermark", cell: (p) => formatNumber(p.high_watermark) },
          { label: "Records", cell: (p) => formatNumber(p.high_watermark - p.log_start_offset) },
          { label: "Segments", cell: (p) => formatNumber(p.segments) },
          { label: "Bytes", cell: (p) => formatBytes(p.bytes) },
        ], topic.partitions.slice(pageStart(topic.partitions), pageEnd(topic.partitions))),
        levels);
      const opened = Boolean(config.querySelector("details[open]")); // kept open across reloads
      replace(config, configSection(topic.config || {}, opened));
      await loadLevels(topic.partitions);
    } catch (error) {
      replace(details, errorMessage(error));
    }
    await Promise.all([loadActivity(), loadTable()]);
  }

  const pageStart = (partitions) => Math.min(partitionPage, Math.max(0, Math.ceil(partitions.length / PARTITIONS_PAGE) - 1)) * PARTITIONS_PAGE;
  const pageEnd = (partitions) => Math.min(partitions.length, pageStart(partitions) + PARTITIONS_PAGE);
  function partitionPager(partitions) {
    if (partitions.length <= PARTITIONS_PAGE) return null;
    const turn = (step) => { partitionPage = pageStart(partitions) / PARTITIONS_PAGE + step; load(); };
    return el("div", { class: "actions" },
      button("Previous partitions", () => turn(-1), { disabled: pageStart(partitions) === 0 }),
      el("span", {}, `partitions ${pageStart(partitions)} to ${pageEnd(partitions) - 1} of ${partitions.length}`),
      button("Next partitions", () => turn(1), { disabled: pageEnd(partitions) >= partitions.length }));
  }

  async function loadTable() {
    try {
      const state = await api("GET", path`/topics/${name}/table`);
      if (state.table === null) {
        replace(icebergTable, message(state.table_enabled
          ? "No table yet: the compactor registers it at its first run (and a table catalog must be configured)."
          : "Not kept as a table (objectlog.table.enabled is false)."));
        return;
      }
      replace(icebergTable, facts([
        ["Table", state.table],
        ["Snapshot", state.snapshot_id === null ? "none yet" : String(state.snapshot_id)],
        ["Snapshot age", state.snapshot_ms === null ? "—" : `${formatNumber(Math.round((Date.now() - state.snapshot_ms) / 1000))} s (${formatTime(state.snapshot_ms)})`],
        ["Offsets behind the log", formatNumber(state.offsets_behind)],
        ["Files", `${formatNumber(state.files)} (${formatNumber(state.missing_files)} not listed yet, ${formatNumber(state.stale_files)} stale)`],
      ]));
    } catch (error) {
      replace(icebergTable, errorMessage(error));
    }
  }

  // the L0/L1 split walks a partition's index: asked for each partition of a small topic only
  const levels = el("div");
  async function loadLevels(partitions) {
    if (partitions.length > MAX_LEVEL_PARTITIONS) {
      replace(levels, message(`The L0/L1 split is shown for topics of up to ${MAX_LEVEL_PARTITIONS} partitions.`));
      return;
    }
    try {
      const rows = await Promise.all(partitions.map((p) => api("GET", path`/topics/${name}/partitions/${p.partition}/details`)));
      replace(levels, table("Storage levels: L0 (flushed, not yet compacted) and L1 (compacted)", [
        { label: "Partition", cell: (d) => String(d.partition) },
        { label: "L0 records", cell: (d) => formatNumber(d.l0.records) },
        { label: "L0 bytes", cell: (d) => formatBytes(d.l0.bytes) },
        { label: "L1 records", cell: (d) => formatNumber(d.l1.records) },
        { label: "L1 bytes", cell: (d) => formatBytes(d.l1.bytes) },
        { label: "Last stable offset", cell: (d) => formatNumber(d.last_stable_offset) },
      ], rows));
    } catch (error) {
      replace(levels, errorMessage(error));
    }
  }

  async function loadActivity() {
    try {
      const data = await api("GET", path`/topics/${name}/activity` + query({ minutes: minutes.value }));
      const points = (data.minutes || []).map((m) => ({ label: formatTime(m.start_ms), value: m.records }));
      const total = points.reduce((n, p) => n + p.value, 0);
      const resolution = data.resolution_seconds;
      replace(activity,
        el("p", {}, `${formatNumber(total)} records in the last ${minutes.value} minutes; one bar per ${resolution} s (the chart's resolution).`),
        barChart(`Records produced per ${resolution} s over the last ${minutes.value} minutes: ${total} in all`, points,
          [points[0]?.label, points.at(-1)?.label]),
        el("details", {}, el("summary", {}, "The chart's numbers as a table"),
          table("Records produced per interval", [
            { label: "Interval start", cell: (p) => p.label },
            { label: "Records", cell: (p) => formatNumber(p.value) },
          ], points)));
    } catch (error) {
      replace(activity, errorMessage(error));
    }
  }

  await load();
  return { refresh: load };
}

export async function producePage(main, [name]) {
  const status = el("div", { "aria-live": "polite" });
  const headers = el("div", { class: "headers" });
  const partition = select("partition", [["", "chosen by the key (or spread when no key)"]], "");
  const form = el("form", { class: "produce", "aria-label": "Produce a record" },
    field("Key", el("input", { name: "key", autocomplete: "off" }), "empty for no key"),
    field("Value", el("textarea", { name: "value", rows: 6 })),
    el("fieldset", {}, el("legend", {}, "Headers"), headers,
      button("Add a header", () => addHeader())),
    field("Partition", partition),
    el("button", { type: "submit" }, "Produce"));
  let headerCount = 0;
  function addHeader() {
    headerCount += 1;
    const row = el("div", { class: "header-row" },
      field(`Header ${headerCount} key`, el("input", { name: "header-key", autocomplete: "off" })),
      field(`Header ${headerCount} value`, el("input", { name: "header-value", autocomplete: "off" })));
    row.append(button("Remove", () => row.remove()));
    headers.append(row);
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = new FormData(form);
    const keys = values.getAll("header-key").map(String);
    const headerValues = values.getAll("header-value").map(String);
    const record = {
      key: values.get("key") ? textToBase64(String(values.get("key"))) : null,
      value: textToBase64(String(values.get("value"))),
      headers: keys.map((key, i) => ({ key, value: textToBase64(headerValues[i]) })).filter((h) => h.key),
    };
    if (values.get("partition") !== "") record.partition = Number(values.get("partition"));
    try {
      const { offsets } = await api("POST", path`/topics/${name}/records`, { records: [record] });
      const landed = offsets[0];
      if (landed.offset === null || landed.offset === undefined) throw new Error(landed.message || landed.error);
      replace(status, el("p", { class: "message info", role: "status" },
        `Produced to partition ${landed.partition} at offset ${landed.offset}. `,
        link(topicHref(name, `/records${query({ partition: landed.partition, offset: landed.offset })}`), "See it in the record browser")));
    } catch (error) {
      replace(status, errorMessage(error));
    }
  });
  append(main, [
    el("p", { class: "crumbs" }, link("/console/topics", "Topics"), " / ", link(topicHref(name), name), " / "),
    el("h1", {}, `Produce to ${name}`), form, status,
  ]);
  try {
    const topic = await api("GET", path`/topics/${name}` + query({ heads: "false" }));
    for (let p = 0; p < topic.partition_count; p += 1) partition.append(el("option", { value: p }, `partition ${p}`));
  } catch (error) {
    replace(status, errorMessage(error));
  }
  return null;
}
