// Schemas (subjects, versions, compatibility, a diff between two versions), transactions
// (list, abort) and ACLs (list, add, remove): changes ask for a confirmation first.
import { api, path, query } from "./api.js";
import {
  append, button, confirmed, el, errorMessage, facts, field, formatNumber, formatTime, link,
  message, replace, select, table,
} from "./dom.js";

const REGISTRY = "/schema-registry";

export async function schemasPage(main) {
  const list = el("div", { "aria-live": "polite" });
  append(main, [el("h1", {}, "Schemas"), el("div", { class: "actions" }, button("Refresh", () => load())), list]);
  async function load() {
    try {
      const [subjects, config] = await Promise.all([api("GET", `${REGISTRY}/subjects`), api("GET", `${REGISTRY}/config`)]);
      replace(list, facts([["Global compatibility", config.compatibilityLevel ?? config.compatibility ?? "—"]]),
        subjects.length ? table("Subjects", [
          { label: "Subject", cell: (s) => link(`/console/schemas/${encodeURIComponent(s)}`, s) },
        ], subjects) : message("No subjects registered."));
    } catch (error) {
      replace(list, errorMessage(error));
    }
  }
  await load();
  return { refresh: load };
}

export async function subjectPage(main, [subject]) {
  const info = el("div");
  const diff = el("div", { "aria-live": "polite" });
  append(main, [el("p", { class: "crumbs" }, link("/console/schemas", "Schemas"), " / "), el("h1", {}, `Subject ${subject}`), info]);
  const versions = await api("GET", REGISTRY + path`/subjects/${subject}/versions`);
  const compatibility = await api("GET", REGISTRY + path`/config/${subject}` + query({ defaultToGlobal: true }))
    .catch(() => ({ compatibilityLevel: "(global)" }));
  const options = versions.map((v) => [v, `version ${v}`]);
  const left = select("left", options, versions.at(-2) ?? versions[0]);
  const right = select("right", options, versions.at(-1));
  left.addEventListener("change", () => compare());
  right.addEventListener("change", () => compare());
  append(info, facts([["Versions", versions.join(", ")], ["Compatibility", compatibility.compatibilityLevel ?? "—"]]),
    el("h2", {}, "Compare two versions"), el("div", { class: "inline-form" }, field("From", left), field("To", right)), diff);
  async function compare() {
    try {
      const [a, b] = await Promise.all([left.value, right.value].map((v) =>
        api("GET", `${REGISTRY}/subjects/${encodeURIComponent(subject)}/versions/${v}`)));
      const lines = diffLines(pretty(a.schema).split("\n"), pretty(b.schema).split("\n"));
      replace(diff, facts([["From", `version ${a.version}, id ${a.id}, ${a.schemaType ?? "AVRO"}`], ["To", `version ${b.version}, id ${b.id}, ${b.schemaType ?? "AVRO"}`]]),
        el("pre", { class: "diff", "aria-label": "Differences: lines starting with - are removed, + added" },
          lines.map(([mark, line]) => el("span", { class: `diff-${mark === "+" ? "add" : mark === "-" ? "del" : "same"}` }, `${mark} ${line}`))));
    } catch (error) {
      replace(diff, errorMessage(error));
    }
  }
  await compare();
  return null;
}

function pretty(schema) {
  try {
    return JSON.stringify(JSON.parse(schema), null, 2);
  } catch {
    return schema; // Protobuf: its own text
  }
}

/** A line diff by longest common subsequence: [["+"|"-"|" ", line]]. */
export function diffLines(a, b) {
  const lengths = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i -= 1) {
    for (let j = b.length - 1; j >= 0; j -= 1) {
      lengths[i][j] = a[i] === b[j] ? lengths[i + 1][j + 1] + 1 : Math.max(lengths[i + 1][j], lengths[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) { out.push([" ", a[i]]); i += 1; j += 1; }
    else if (j < b.length && (i >= a.length || lengths[i][j + 1] >= lengths[i + 1][j])) { out.push(["+", b[j]]); j += 1; }
    else { out.push(["-", a[i]]); i += 1; }
  }
  return out;
}

export async function transactionsPage(main) {
  const list = el("div", { "aria-live": "polite" });
  const status = el("div", { "aria-live": "polite" });
  append(main, [el("h1", {}, "Transactions"), el("div", { class: "actions" }, button("Refresh", () => load())), status, list]);
  async function abort(id) {
    if (!confirmed(`Abort transaction ${id}? Its records will never be read by read_committed consumers.`)) return;
    try {
      await api("POST", path`/transactions/${id}/abort`);
      replace(status, message(`Transaction ${id} aborted.`));
      await load();
    } catch (error) {
      replace(status, errorMessage(error));
    }
  }
  async function load() {
    try {
      const { transactions } = await api("GET", "/transactions");
      replace(list, transactions.length ? table("Transactions", [
        { label: "Transactional id", cell: (t) => t.transactional_id },
        { label: "State", cell: (t) => (t.stuck ? `${t.state} (stuck)` : t.state) },
        { label: "Producer", cell: (t) => `${t.producer_id} epoch ${t.producer_epoch}` },
        { label: "Started", cell: (t) => formatTime(t.started_ms) },
        { label: "Timeout", cell: (t) => `${formatNumber(t.timeout_ms)} ms` },
        { label: "Partitions", cell: (t) => t.partitions.join(", ") || "—" },
        { label: "Action", cell: (t) => (t.started_ms !== null ? button(`Abort ${t.transactional_id}`, () => abort(t.transactional_id)) : "—") },
      ], transactions) : message("No transactions."));
    } catch (error) {
      replace(list, errorMessage(error));
    }
  }
  await load();
  return { refresh: load };
}

const RESOURCE_TYPES = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"];
const OPERATIONS = ["ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"];

export async function aclsPage(main) {
  const list = el("div", { "aria-live": "polite" });
  const status = el("div", { "aria-live": "polite" });
  const pairs = (values) => values.map((v) => [v, v]);
  const form = el("form", { class: "inline-form", "aria-label": "Add an ACL" },
    field("Resource type", select("resource_type", pairs(RESOURCE_TYPES), "TOPIC")),
    field("Resource name", el("input", { name: "resource_name", required: true, autocomplete: "off" })),
    field("Pattern", select("pattern_type", pairs(["LITERAL", "PREFIXED"]), "LITERAL")),
    field("Principal", el("input", { name: "principal", required: true, placeholder: "User:alice", autocomplete: "off" })),
    field("Host", el("input", { name: "host", value: "*", autocomplete: "off" })),
    field("Operation", select("operation", pairs(OPERATIONS), "READ")),
    field("Permission", select("permission", pairs(["ALLOW", "DENY"]), "ALLOW")),
    el("button", { type: "submit" }, "Add ACL"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const acl = Object.fromEntries(new FormData(form).entries());
    if (!confirmed(`Add: ${acl.permission} ${acl.principal} ${acl.operation} on ${acl.resource_type} ${acl.resource_name} (${acl.pattern_type})?`)) return;
    try {
      await api("POST", "/acls", { acls: [acl] });
      replace(status, message("ACL added."));
      await load();
    } catch (error) {
      replace(status, errorMessage(error));
    }
  });
  append(main, [el("h1", {}, "ACLs"), el("h2", {}, "Add an ACL"), form, status,
    el("h2", {}, "All ACLs"), el("div", { class: "actions" }, button("Refresh", () => load())), list]);

  async function remove(row) {
    const binding = {
      resource_type: row.resource_type, resource_name: row.name, pattern_type: row.pattern_type,
      principal: row.principal, host: row.host, operation: row.operation, permission: row.permission,
    };
    if (!confirmed(`Remove: ${row.permission} ${row.principal} ${row.operation} on ${row.resource_type} ${row.name}?`)) return;
    try {
      await api("DELETE", `/acls${query(binding)}`);
      replace(status, message("ACL removed."));
      await load();
    } catch (error) {
      replace(status, errorMessage(error));
    }
  }

  async function load() {
    try {
      const { resources } = await api("GET", "/acls");
      const rows = resources.flatMap((r) => r.acls.map((a) => ({ ...a, resource_type: r.resource_type, name: r.name, pattern_type: r.pattern_type })));
      replace(list, rows.length ? table("ACLs", [
        { label: "Resource", cell: (r) => `${r.resource_type} ${r.name} (${r.pattern_type})` },
        { label: "Principal", cell: (r) => r.principal },
        { label: "Host", cell: (r) => r.host },
        { label: "Operation", cell: (r) => r.operation },
        { label: "Permission", cell: (r) => r.permission },
        { label: "Action", cell: (r) => button("Remove", () => remove(r), { "aria-label": `Remove ${r.permission} ${r.principal} ${r.operation} on ${r.name}` }) },
      ], rows) : message("No ACLs."));
    } catch (error) {
      replace(list, errorMessage(error));
    }
  }
  await load();
  return { refresh: load };
}
