// The console's entry: routes each /console/... URL to its page (History API: every page is a
// bookmarkable URL, served the same index.html), and runs the auto-refresh toggle.
import { bearerToken, CALLBACK_PATH, completeSignIn, loadSettings, signIn, signInRequired } from "./auth.js";
import { errorMessage, message, replace } from "./dom.js";
import { groupPage, groupsPage } from "./groups.js";
import { overviewPage } from "./overview.js";
import { recordsPage } from "./records.js";
import { aclsPage, schemasPage, subjectPage, transactionsPage } from "./admin.js";
import { producePage, topicPage, topicsPage } from "./topics.js";

const REFRESH_MS = 5000;
const ROUTES = [
  [/^\/console\/?$/, overviewPage],
  [/^\/console\/topics\/?$/, topicsPage],
  [/^\/console\/topics\/([^/]+)\/records\/?$/, recordsPage],
  [/^\/console\/topics\/([^/]+)\/produce\/?$/, producePage],
  [/^\/console\/topics\/([^/]+)\/?$/, topicPage],
  [/^\/console\/groups\/?$/, groupsPage],
  [/^\/console\/groups\/([^/]+)\/?$/, groupPage],
  [/^\/console\/schemas\/?$/, schemasPage],
  [/^\/console\/schemas\/([^/]+)\/?$/, subjectPage],
  [/^\/console\/transactions\/?$/, transactionsPage],
  [/^\/console\/acls\/?$/, aclsPage],
];

let current = { refresh: null, dispose: null };
let timer = null;

/** What a page gets: where to draw, and how to move to another page. */
export const context = {
  main: null,
  navigate,
  /** Change the URL's query (a page's own state) without adding a history entry. */
  setQuery(params) {
    const url = new URL(window.location.href);
    url.search = new URLSearchParams(
      Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""),
    ).toString();
    window.history.replaceState(null, "", url);
  },
};

function navigate(href) {
  window.history.pushState(null, "", href);
  render();
}

async function render() {
  if (current.dispose) current.dispose();
  current = { refresh: null, dispose: null };
  const main = context.main;
  const pathname = window.location.pathname;
  const route = ROUTES.find(([pattern]) => pattern.test(pathname));
  markNavigation(pathname);
  if (!route) {
    replace(main, errorMessage(new Error(`There is no console page at ${pathname}.`)));
    return;
  }
  const params = route[0].exec(pathname).slice(1).map(decodeURIComponent);
  const query = new URLSearchParams(window.location.search);
  replace(main);
  main.setAttribute("aria-busy", "true"); // until the page has its first data
  try {
    current = (await route[1](main, params, query)) || current;
  } catch (error) {
    main.append(errorMessage(error));
  }
  main.setAttribute("aria-busy", "false");
  const heading = main.querySelector("h1");
  if (heading) document.title = `${heading.textContent} · objectlog console`;
}

function markNavigation(pathname) {
  for (const anchor of document.querySelectorAll("header nav a")) {
    const href = anchor.getAttribute("href");
    const here = href === "/console" ? pathname === "/console" || pathname === "/console/" : pathname.startsWith(href);
    if (here) anchor.setAttribute("aria-current", "page");
    else anchor.removeAttribute("aria-current");
  }
}

function onLinkClick(event) {
  const anchor = event.target.closest("a[href]");
  if (!anchor || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const href = anchor.getAttribute("href");
  if (!href.startsWith("/console")) return;
  event.preventDefault();
  navigate(href);
  context.main.focus();
}

function setAutoRefresh(on) {
  window.localStorage.setItem("objectlog.autoRefresh", on ? "1" : "0");
  if (timer) window.clearInterval(timer);
  timer = on ? window.setInterval(() => current.refresh && current.refresh(), REFRESH_MS) : null;
}

/** Settings first; on AWS, the user signed in (or back from signing in) before any page. */
async function signedIn() {
  await loadSettings();
  const { pathname, search } = window.location;
  if (pathname === CALLBACK_PATH) {
    window.history.replaceState(null, "", await completeSignIn(search));
    return true;
  }
  if (signInRequired() && !bearerToken()) {
    replace(context.main, message("Signing in…"));
    await signIn(pathname + search);
    return false;
  }
  return true;
}

async function start() {
  context.main = document.getElementById("main");
  try {
    if (!(await signedIn())) return;
  } catch (error) {
    replace(context.main, errorMessage(error));
    return;
  }
  document.addEventListener("click", onLinkClick);
  window.addEventListener("popstate", render);
  window.addEventListener("unhandledrejection", (event) => {
    context.main.prepend(errorMessage(event.reason));
    event.preventDefault();
  });
  const toggle = document.getElementById("auto-refresh");
  toggle.checked = window.localStorage.getItem("objectlog.autoRefresh") === "1";
  toggle.addEventListener("change", () => setAutoRefresh(toggle.checked));
  setAutoRefresh(toggle.checked);
  render();
}

start();
