// The Sandman console (docs/CONSOLE.md): an operator's view of the dev
// account that only watches. It reads through the local dev API (the
// contract in internal/webclient's package doc) and hears of every
// transition on the local stack's feed (/console/api/feed, Server-Sent
// Events). It opens no client channel, mints no client token and opens no
// stable link: watching is never activity, never a visible client, never a
// return (a paused session stays paused however long the console is open).
//
// Views (the URL's hash): #/sessions (the table: filters, search by id,
// pages over the API's cursor, sorting — Created by the API's order, newest
// or oldest first, the other columns on screen — live rows),
// #/sessions/<id> (a session: its facts, readiness, usage, checkpoints and
// timeline; session.js, checkpoints.js, with Restore and Fork as confirmed
// operator actions, actions.js), #/pools and #/webhooks (admin.js).
import { read, el, badge, when, pairs, say, LIVE, ENDED } from "./api.js";
import { showSession, sessionEvent } from "./session.js";
import { showPools, showWebhooks } from "./admin.js";

const liveLine = /** @type {HTMLElement} */ (document.getElementById("live"));
const tbody = /** @type {HTMLElement} */ (document.querySelector("#sessions tbody"));
const summary = /** @type {HTMLElement} */ (document.getElementById("summary"));
const filters = /** @type {HTMLFormElement} */ (document.getElementById("filters"));

// --- the sessions table -------------------------------------------------

/**
 * What the table shows. mode is the state select's value: "live-first"
 * (the live sessions, then the ended ones), "live", "ended", "" (any) or
 * one state. A page is one answer of GET /v1/sessions; at is the list and
 * cursor it was read with, back the pages before it, next the one after.
 */
const view = {
  mode: "live-first",
  provider: "",
  template: "",
  /** @type {Record<string,string>} */
  metadata: {},
  limit: 20,
  /** @type {{list: string, cursor: string}} */
  at: { list: "live", cursor: "" },
  /** @type {{list: string, cursor: string}[]} */
  back: [],
  /** @type {{list: string, cursor: string}|null} */
  next: null,
  /** @type {any[]} */
  rows: [],
  /** The API's order (GET /v1/sessions?order=): "desc" newest first, "asc" oldest first. */
  order: "desc",
  /** The column sorted: created_at is the API's order; another sorts the page on screen. */
  sort: { key: "created_at", dir: "descending" },
};

/** The states of list (one of the mode's lists). @param {string} list */
function statesOf(list) {
  if (list === "live") return LIVE.join(",");
  if (list === "ended") return ENDED.join(",");
  return list; // "" or one state
}

/** The first list of the current mode. */
function firstList() {
  return view.mode === "live-first" ? "live" : view.mode;
}

/** GET /console/api/sessions for a list and a cursor. @param {{list: string, cursor: string}} at */
function listPath(at) {
  const q = new URLSearchParams({ limit: String(view.limit) });
  const states = statesOf(at.list);
  if (states) q.set("state", states);
  if (view.provider) q.set("provider", view.provider);
  if (view.template) q.set("template", view.template);
  for (const [k, v] of Object.entries(view.metadata)) q.set(`metadata[${k}]`, v);
  if (view.order === "asc") q.set("order", "asc");
  if (at.cursor) q.set("cursor", at.cursor);
  return `/console/api/sessions?${q}`;
}

/**
 * Reads the page at view.at (following a filtered page the API ended empty
 * on its read budget, at most 20 times) and shows it. In "live first", a
 * first page with no live session goes on to the ended ones at once.
 */
async function loadPage() {
  let page;
  try {
    for (let hops = 0; ; hops++) {
      page = await read(listPath(view.at));
      if (page.sessions.length > 0 || !page.next_cursor || hops === 20) break;
      view.at = { list: view.at.list, cursor: page.next_cursor };
    }
    if (view.mode === "live-first" && view.at.list === "live" && !view.at.cursor && page.sessions.length === 0 && !page.next_cursor) {
      view.at = { list: "ended", cursor: "" };
      page = await read(listPath(view.at));
    }
  } catch (e) {
    say(`cannot list sessions: ${e.message ?? e}`);
    return;
  }
  say("");
  view.rows = page.sessions;
  if (page.next_cursor) view.next = { list: view.at.list, cursor: page.next_cursor };
  else if (view.mode === "live-first" && view.at.list === "live") view.next = { list: "ended", cursor: "" };
  else view.next = null;
  renderTable();
}

/** Shows view.rows, sorted, and the pager. */
function renderTable() {
  const { key } = view.sort;
  const dir = key === "created_at" ? (view.order === "asc" ? "ascending" : "descending") : view.sort.dir;
  const rows = [...view.rows];
  if (key !== "created_at") {
    const sign = dir === "ascending" ? 1 : -1;
    rows.sort((a, b) => sign * String(a[key] ?? "").localeCompare(String(b[key] ?? "")));
  }
  for (const th of document.querySelectorAll("#sessions th[data-key]")) {
    if (th.getAttribute("data-key") === key) th.setAttribute("aria-sort", dir);
    else th.removeAttribute("aria-sort");
  }
  tbody.replaceChildren(...rows.map(row));
  const page = view.back.length + 1;
  const what = view.at.list === "live" ? "live sessions" : view.at.list === "ended" ? "ended sessions" : view.at.list ? `${view.at.list} sessions` : "sessions";
  summary.textContent = rows.length === 0
    ? (view.at.list === "live" && page === 1 ? "No live sessions." : `No ${what} here.`)
    : `${rows.length} ${what}, ${view.order === "asc" ? "oldest" : "newest"} first${view.mode === "live-first" ? " (live sessions first, then the ended ones)" : ""}${key === "created_at" ? "" : `; this page sorted by ${key}`}.`;
  /** @type {HTMLElement} */ (document.getElementById("page-label")).textContent = `Page ${page}`;
  /** @type {HTMLButtonElement} */ (document.getElementById("prev-page")).disabled = view.back.length === 0;
  /** @type {HTMLButtonElement} */ (document.getElementById("first-page")).disabled = view.back.length === 0;
  /** @type {HTMLButtonElement} */ (document.getElementById("next-page")).disabled = !view.next;
}

/** One table row. @param {any} s */
function row(s) {
  const tr = el("tr");
  tr.dataset.id = s.id;
  const cell = (label, content) => {
    const td = el("td", undefined, { "data-label": label });
    td.append(content);
    tr.append(td);
  };
  const link = el("a", s.id, { href: `#/sessions/${s.id}` });
  cell("Session", link);
  cell("State", badge(s.state));
  cell("Provider", s.provider);
  cell("Template", s.template);
  cell("Metadata", el("span", pairs(s.metadata), { class: "meta" }));
  cell("Created", el("time", when(s.created_at), { datetime: s.created_at ?? "" }));
  cell("Updated", el("time", when(s.updated_at), { datetime: s.updated_at ?? "" }));
  return tr;
}

/** Reads the form into the view and shows the first page. */
function applyFilters() {
  const f = new FormData(filters);
  view.mode = String(f.get("state") ?? "");
  view.provider = String(f.get("provider") ?? "").trim();
  view.template = String(f.get("template") ?? "").trim();
  view.limit = Number(f.get("limit") ?? 20);
  view.metadata = {};
  for (const part of String(f.get("metadata") ?? "").split(",")) {
    const [k, ...v] = part.split("=");
    if (k.trim()) view.metadata[k.trim()] = v.join("=").trim();
  }
  view.at = { list: firstList(), cursor: "" };
  view.back = [];
  return loadPage();
}

filters.addEventListener("submit", (ev) => {
  ev.preventDefault();
  applyFilters();
});
document.getElementById("next-page").addEventListener("click", () => {
  if (!view.next) return;
  view.back.push(view.at);
  view.at = view.next;
  loadPage();
});
document.getElementById("prev-page").addEventListener("click", () => {
  const prev = view.back.pop();
  if (!prev) return;
  view.at = prev;
  loadPage();
});
document.getElementById("first-page").addEventListener("click", () => {
  view.back = [];
  view.at = { list: firstList(), cursor: "" };
  loadPage();
});
for (const th of document.querySelectorAll("#sessions th[data-key] button")) {
  th.addEventListener("click", () => {
    const key = /** @type {string} */ (th.parentElement?.getAttribute("data-key"));
    if (key === "created_at") {
      // The API sorts: newest or oldest first over every page, from the first.
      if (view.sort.key === "created_at") view.order = view.order === "desc" ? "asc" : "desc";
      view.sort = { key, dir: "" };
      view.back = [];
      view.at = { list: firstList(), cursor: "" };
      loadPage();
      return;
    }
    const dir = view.sort.key === key && view.sort.dir === "descending" ? "ascending" : "descending";
    view.sort = { key, dir };
    renderTable();
  });
}
document.getElementById("search").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = /** @type {HTMLInputElement} */ (/** @type {HTMLFormElement} */ (ev.currentTarget).elements.namedItem("id"));
  let id = input.value.trim().toLowerCase();
  if (id && !id.startsWith("ses_")) id = "ses_" + id;
  if (!/^ses_[a-z2-7]{26}$/.test(id)) {
    say(`"${input.value.trim()}" is not a session id: ses_ and 26 letters a-z or digits 2-7`);
    return;
  }
  location.hash = `#/sessions/${id}`;
});

// --- live: the feed -----------------------------------------------------

let reloadTimer = 0;

/** Reads the first page again soon (a burst of events reads it once). */
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(loadPage, 500);
}

/**
 * A transition on the feed: a row on screen is read again; a session that
 * may belong on the first page shows it again; the open session page
 * updates itself.
 * @param {{session_id: string, to: string}} ev
 */
async function onTransition(ev) {
  sessionEvent(ev);
  if (current() !== "sessions") return;
  const i = view.rows.findIndex((s) => s.id === ev.session_id);
  if (i >= 0) {
    try {
      view.rows[i] = await read(`/console/api/sessions/${encodeURIComponent(ev.session_id)}`);
    } catch {
      return;
    }
    renderTable();
    tbody.querySelector(`tr[data-id="${ev.session_id}"]`)?.classList.add("changed");
    return;
  }
  const states = statesOf(view.at.list);
  const onFirstPage = view.back.length === 0 && (view.order === "desc" || !view.next);
  if (onFirstPage && (!states || states.split(",").includes(ev.to))) reloadSoon();
}

function listen() {
  const feed = new EventSource("/console/api/feed");
  feed.onopen = () => {
    liveLine.textContent = "live";
    liveLine.dataset.state = "open";
  };
  feed.onerror = () => {
    liveLine.textContent = "reconnecting…";
    liveLine.dataset.state = "closed";
  };
  feed.addEventListener("transition", (e) => onTransition(JSON.parse(/** @type {MessageEvent} */ (e).data)));
  feed.addEventListener("resync", () => route());
}

// --- views --------------------------------------------------------------

/** The view the hash names: "sessions", "session", "pools" or "webhooks". */
function current() {
  const h = location.hash;
  if (h.startsWith("#/sessions/")) return "session";
  if (h === "#/pools") return "pools";
  if (h === "#/webhooks") return "webhooks";
  return "sessions";
}

let loaded = false;

function route() {
  const v = current();
  for (const id of ["sessions", "session", "pools", "webhooks"]) {
    /** @type {HTMLElement} */ (document.getElementById(`view-${id}`)).hidden = id !== v;
  }
  for (const a of document.querySelectorAll("nav a[data-nav]")) {
    const on = a.getAttribute("data-nav") === (v === "session" ? "sessions" : v);
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  say("");
  if (v === "session") return showSession(decodeURIComponent(location.hash.slice("#/sessions/".length)));
  if (v === "pools") return showPools();
  if (v === "webhooks") return showWebhooks();
  if (!loaded) {
    loaded = true;
    return applyFilters();
  }
  return loadPage();
}

window.addEventListener("hashchange", route);
listen();
await route();
