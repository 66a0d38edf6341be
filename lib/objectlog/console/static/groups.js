// Consumer groups: the list, and a group's page (members, assignment, committed offsets, lag
// per partition as a chart of the samples taken while the page is open, resetting offsets).
import { api, path } from "./api.js";
import { lineChart } from "./chart.js";
import {
  append, button, confirmed, el, errorMessage, facts, field, formatNumber, formatTime, link,
  message, replace, select, table,
} from "./dom.js";

const SAMPLE_MS = 5000;
const MAX_SAMPLES = 60;
const groupHref = (group) => `/console/groups/${encodeURIComponent(group)}`;

export async function groupsPage(main) {
  const list = el("div", { "aria-live": "polite" });
  append(main, [el("h1", {}, "Consumer groups"), el("div", { class: "actions" }, button("Refresh", () => load())), list]);
  async function load() {
    try {
      const { groups } = await api("GET", "/groups");
      const rows = await Promise.all(groups.map((g) => api("GET", path`/groups/${g}`).catch((error) => ({ group: g, error }))));
      replace(list, rows.length === 0 ? message("No consumer groups yet.") : table("Consumer groups", [
        { label: "Group", cell: (g) => link(groupHref(g.group), g.group) },
        { label: "State", cell: (g) => g.state ?? g.error?.message },
        { label: "Members", cell: (g) => formatNumber(g.members?.length) },
        { label: "Total lag", cell: (g) => formatNumber(g.total_lag) },
      ], rows));
    } catch (error) {
      replace(list, errorMessage(error));
    }
  }
  await load();
  return { refresh: load };
}

export async function groupPage(main, [group]) {
  const details = el("div", { "aria-live": "polite" });
  const chart = el("div");
  const status = el("div", { "aria-live": "polite" });
  const samples = []; // {at, lag: {"topic/partition": lag}}
  let topics = [];
  const resetForm = el("form", { class: "inline-form", "aria-label": "Reset offsets" });
  append(main, [
    el("p", { class: "crumbs" }, link("/console/groups", "Groups"), " / "),
    el("h1", {}, `Group ${group}`),
    el("div", { class: "actions" }, button("Refresh", () => load())),
    details,
    el("h2", {}, "Lag per partition"),
    el("p", {}, `Sampled every ${SAMPLE_MS / 1000} s while this page is open (and at each refresh).`),
    chart,
    el("h2", {}, "Reset offsets"), resetForm, status,
  ]);

  function buildResetForm() {
    const to = select("to", [["earliest", "earliest"], ["latest", "latest"], ["timestamp", "a time (UTC)"], ["current", "shift from current"]], "earliest");
    replace(resetForm,
      el("fieldset", {}, el("legend", {}, "Topics"), topics.map((t) =>
        el("label", { class: "check" }, el("input", { type: "checkbox", name: "topics", value: t, checked: true }), ` ${t}`))),
      field("Reset to", to),
      field("Time (UTC)", el("input", { name: "time", type: "datetime-local", step: 1 }), "with a time"),
      field("Shift by", el("input", { name: "shift_by", type: "number", value: 0 }), "with shift from current"),
      el("button", { type: "submit", disabled: topics.length === 0 }, "Reset offsets…"));
  }

  resetForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = new FormData(resetForm);
    const request = { topics: values.getAll("topics").map(String), to: String(values.get("to")) };
    if (request.to === "timestamp") request.timestamp = Date.parse(`${values.get("time")}Z`);
    if (request.to === "current") request.shift_by = Number(values.get("shift_by"));
    try {
      const preview = await api("POST", path`/groups/${group}/offsets/reset`, { ...request, dry_run: true });
      const lines = preview.offsets.map((o) => `${o.topic}/${o.partition} → ${o.offset}`).join("\n");
      if (!confirmed(`Reset the committed offsets of group ${group}?\n${lines}`)) return;
      const done = await api("POST", path`/groups/${group}/offsets/reset`, request);
      replace(status, message(`Reset ${done.offsets.length} offset(s): ${done.offsets.map((o) => `${o.topic}/${o.partition} → ${o.offset}`).join(", ")}.`));
      await load();
    } catch (error) {
      replace(status, errorMessage(error));
    }
  });

  async function load() {
    try {
      const g = await api("GET", path`/groups/${group}`);
      const newTopics = [...new Set(g.offsets.map((o) => o.topic))].sort();
      if (newTopics.join() !== topics.join()) { topics = newTopics; buildResetForm(); }
      samples.push({ at: Date.now(), lag: Object.fromEntries(g.offsets.map((o) => [`${o.topic}/${o.partition}`, o.lag ?? 0])) });
      if (samples.length > MAX_SAMPLES) samples.shift();
      replace(details,
        facts([["State", g.state], ["Generation", formatNumber(g.generation)], ["Strategy", g.strategy ?? "—"],
          ["Total lag", el("span", { "data-total-lag": String(g.total_lag) }, formatNumber(g.total_lag))]]),
        el("h2", {}, "Members"),
        g.members.length ? table("Members", [
          { label: "Member", cell: (m) => m.member_id },
          { label: "Client", cell: (m) => m.client_id },
          { label: "Topics", cell: (m) => m.topics.join(", ") },
          { label: "Assigned", cell: (m) => m.assigned.map((p) => `${p.topic}/${p.partition}`).join(", ") || "—" },
          { label: "Lease expires", cell: (m) => formatTime(m.lease_expires_ms) },
        ], g.members) : message("No members: the group is empty."),
        el("h2", {}, "Committed offsets"),
        g.offsets.length ? table("Committed offsets and lag", [
          { label: "Topic", cell: (o) => link(`/console/topics/${encodeURIComponent(o.topic)}`, o.topic) },
          { label: "Partition", cell: (o) => String(o.partition) },
          { label: "Committed", cell: (o) => formatNumber(o.committed) },
          { label: "Log start", cell: (o) => formatNumber(o.log_start_offset) },
          { label: "High watermark", cell: (o) => formatNumber(o.high_watermark) },
          { label: "Lag", cell: (o) => formatNumber(o.lag) },
          { label: "Owner", cell: (o) => o.owner ?? "—" },
        ], g.offsets) : message("No committed offsets."));
      drawChart();
    } catch (error) {
      replace(details, errorMessage(error));
    }
  }

  function drawChart() {
    const names = [...new Set(samples.flatMap((s) => Object.keys(s.lag)))].sort();
    if (names.length === 0) { replace(chart, message("No partitions to chart.")); return; }
    const series = names.map((n) => ({ name: n, values: samples.map((s) => s.lag[n] ?? 0) }));
    const label = `Lag per partition over ${samples.length} sample(s); now ${series.map((s) => `${s.name} ${s.values.at(-1)}`).join(", ")}`;
    replace(chart, lineChart(label, series, [formatTime(samples[0].at), formatTime(samples.at(-1).at)]),
      el("details", {}, el("summary", {}, "The chart's numbers as a table"),
        table("Lag samples", [{ label: "Sampled at", cell: (s) => formatTime(s.at) },
          ...names.map((n) => ({ label: n, cell: (s) => formatNumber(s.lag[n]) }))], samples)));
  }

  await load();
  const timer = window.setInterval(load, SAMPLE_MS);
  return { refresh: null, dispose: () => window.clearInterval(timer) };
}
