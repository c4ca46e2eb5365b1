// A session's checkpoints on its page in the console (GET
// /v1/sessions/{id}/checkpoints: newest first, paged with the API's
// cursor): each one's state, kind, what it keeps, size, label, trigger,
// when it was taken and when it expires. Reading them is watching. Restore
// and Fork on a ready checkpoint are the operator's actions (actions.js),
// each confirmed first.
import { read, el, badge, when, say } from "./api.js";
import { act, clearResult } from "./actions.js";

const root = /** @type {HTMLElement} */ (document.getElementById("view-session"));
const tbody = /** @type {HTMLElement} */ (root.querySelector(".checkpoints tbody"));
const older = /** @type {HTMLButtonElement} */ (root.querySelector(".older-checkpoints"));
const summary = /** @type {HTMLElement} */ (root.querySelector(".checkpoints-summary"));

/** What is shown: the session, its checkpoints read so far, the next page's cursor. */
const shown = { id: "", /** @type {any} */ session: null, /** @type {any[]} */ list: [], cursor: /** @type {string|null} */ (null) };

/** The page size asked of the API. */
const PAGE = 20;

/**
 * Shows session s's checkpoints: reads their first page again (a new
 * session, or the same one after a transition).
 * @param {any} s the session, as GET /v1/sessions/{id} answers it
 */
export async function showCheckpoints(s) {
  if (shown.id !== s.id) clearCheckpoints(s.id);
  shown.id = s.id;
  shown.session = s;
  await page(s.id, "");
}

/**
 * Empties the checkpoints shown, for session id's page.
 * @param {string} id
 */
export function clearCheckpoints(id) {
  shown.id = id;
  shown.session = null;
  shown.list = [];
  shown.cursor = null;
  tbody.replaceChildren();
  summary.textContent = "";
  older.hidden = true;
  clearResult();
}

/**
 * Reads a page of checkpoints: the first (cursor "", replacing what is
 * shown) or the next.
 * @param {string} id
 * @param {string} cursor
 */
async function page(id, cursor) {
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (cursor) q.set("cursor", cursor);
  let got;
  try {
    got = await read(`/console/api/sessions/${encodeURIComponent(id)}/checkpoints?${q}`);
  } catch (e) {
    if (e.status !== 404) say(`cannot read the checkpoints of ${id}: ${e.message ?? e}`);
    return;
  }
  if (id !== shown.id) return;
  shown.list = cursor ? [...shown.list, ...got.checkpoints] : got.checkpoints;
  if (!cursor || shown.cursor !== null) shown.cursor = got.next_cursor;
  tbody.replaceChildren(...shown.list.map(row));
  older.hidden = !shown.cursor;
  const ready = shown.list.filter((c) => c.state === "ready").length;
  summary.textContent = shown.list.length === 0
    ? "No checkpoints: take one with sandman checkpoints create, the API or an SDK (docs/CHECKPOINTS.md)."
    : `${shown.list.length} checkpoint${shown.list.length === 1 ? "" : "s"}${shown.cursor ? " so far" : ""}, newest first; ${ready} ready to restore or fork.`;
}

/** The whole bytes of a size, as "37.0 MB". @param {number} n */
function size(n) {
  if (!n) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Why a restore of c cannot be offered now, or "". @param {any} c */
function noRestore(c) {
  if (c.state !== "ready") return `only a ready checkpoint can be restored (this one is ${c.state})`;
  const st = shown.session?.state;
  if (st !== "running" && st !== "paused") return `only a running or paused session can be restored (this one is ${st})`;
  return "";
}

/** One checkpoint's row. @param {any} c */
function row(c) {
  const tr = el("tr");
  tr.dataset.id = c.id;
  const cell = (label, content) => {
    const td = el("td", undefined, { "data-label": label });
    td.append(content);
    tr.append(td);
    return td;
  };
  cell("Checkpoint", el("code", c.id));
  const state = cell("State", badge(c.state));
  if (c.reason) state.append(" ", el("span", c.reason, { class: "reason" }));
  cell("Label", c.label || "–");
  cell("Kind", c.kind);
  cell("Keeps", c.keeps);
  cell("Size", size(c.size_bytes));
  cell("Trigger", c.trigger);
  cell("Created", el("time", when(c.created_at), { datetime: c.created_at ?? "" }));
  cell("Expires", c.expires_at ? el("time", when(c.expires_at), { datetime: c.expires_at }) : `kept until deleted${c.pinned ? " (pinned)" : ""}`);
  const actions = cell("Actions", "");
  actions.classList.add("actions");
  const restore = el("button", "Restore…", { type: "button", "aria-label": `Restore ${shown.id} from ${c.id}` });
  const fork = el("button", "Fork…", { type: "button", "aria-label": `Fork a new session from ${c.id}` });
  const why = noRestore(c);
  if (why) {
    restore.setAttribute("disabled", "");
    restore.title = why;
  }
  if (c.state !== "ready") {
    fork.setAttribute("disabled", "");
    fork.title = `only a ready checkpoint can be forked (this one is ${c.state})`;
  }
  restore.addEventListener("click", () => act("restore", shown.session, c));
  fork.addEventListener("click", () => act("fork", shown.session, c));
  actions.append(restore, fork);
  return tr;
}

older.addEventListener("click", () => shown.cursor && page(shown.id, shown.cursor));
