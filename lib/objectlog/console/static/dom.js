// Building the page. Everything the API returns (record keys, values and headers above all:
// attacker-controlled) enters the page as text nodes or as values of the attributes allowed
// below; nothing here parses HTML, and the page's CSP forbids inline script besides.

const SAFE_ATTRIBUTES = new Set([
  "class", "id", "for", "type", "name", "value", "role", "scope", "title", "min", "max",
  "step", "placeholder", "required", "checked", "disabled", "tabindex", "colspan", "hidden",
  "rows", "autocomplete", "inputmode", "datetime", "selected", "open", "lang", "spellcheck",
  "maxlength", "size",
]);

function safeAttribute(name) {
  return SAFE_ATTRIBUTES.has(name) || name.startsWith("aria-") || name.startsWith("data-");
}

/** An element: el("a", {href: "/console/topics", class: "x"}, "text", child, [more]).
 * Attributes outside the allowed list are refused; href must be one of the console's own
 * paths; on: {click: fn} adds listeners. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, handler] of Object.entries(value)) node.addEventListener(event, handler);
    } else if (name === "href") {
      node.setAttribute("href", consoleHref(value));
    } else if (safeAttribute(name)) {
      node.setAttribute(name, value === true ? "" : String(value));
    } else {
      throw new Error(`attribute ${name} is not allowed`);
    }
  }
  append(node, children);
  return node;
}

function consoleHref(value) {
  const href = String(value);
  if (!href.startsWith("/console") && !href.startsWith("#")) {
    throw new Error(`link ${href} is not a console page`);
  }
  return href;
}

/** Append children: strings and numbers as text nodes, nodes as they are, arrays flattened. */
export function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function replace(node, ...children) {
  return append(clear(node), children);
}

/** A link to a console page (routed in the page, without a reload). */
export function link(href, ...children) {
  return el("a", { href }, ...children);
}

/** A message: info, or an error (role=alert, read out by screen readers). */
export function message(text, kind = "info") {
  return el("p", { class: `message ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function errorMessage(error) {
  return message(error && error.message ? error.message : String(error), "error");
}

export function button(label, onClick, props = {}) {
  return el("button", { type: "button", ...props, on: { click: onClick } }, label);
}

let fieldCount = 0;

/** A labelled form control: field("Key", el("input", {name: "key"})). */
export function field(label, control, hint) {
  fieldCount += 1;
  const id = control.id || `field-${fieldCount}`;
  control.setAttribute("id", id);
  return el("div", { class: "field" }, el("label", { for: id }, label), control,
    hint ? el("small", {}, hint) : null);
}

export function select(name, options, selected) {
  return el("select", { name },
    options.map(([value, label]) => el("option", { value, selected: String(value) === String(selected) }, label)));
}

/** A table in a scrolling wrapper (narrow windows): columns [{label, cell: row => node}]. */
export function table(caption, columns, rows, props = {}) {
  const head = el("tr", {}, columns.map((c) => el("th", { scope: "col" }, c.label)));
  const body = rows.map((row) => el("tr", {}, columns.map((c) => el("td", {}, c.cell(row)))));
  return el("div", { class: "table-wrap" },
    el("table", props, el("caption", {}, caption), el("thead", {}, head), el("tbody", {}, body)));
}

/** A definition list of name → value pairs. */
export function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.map(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
}

export function formatNumber(value) {
  return typeof value === "number" ? value.toLocaleString("en-US") : String(value ?? "—");
}

export function formatTime(ms) {
  return ms === null || ms === undefined ? "—" : new Date(ms).toISOString().replace(".000Z", "Z");
}

export function formatBytes(bytes) {
  if (typeof bytes !== "number") return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
}

/** Ask before a change; window.confirm is modal, keyboard-usable and read by screen readers. */
export function confirmed(question) {
  return window.confirm(question);
}
