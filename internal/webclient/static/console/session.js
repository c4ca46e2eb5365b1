// A session's page in the console (#/sessions/<id>): its facts, its app's
// readiness and output, its usage summed from its timeline, its
// checkpoints (checkpoints.js), and the timeline itself (GET
// /v1/sessions/{id}/events: every transition, newest first, with its
// reason, actor and duration), older pages on demand. A transition of the
// session on the feed reads it again. Reading only; the one way to act is
// a checkpoint's Restore or Fork, confirmed first (actions.js).
import { read, el, badge, when, duration, pairs, say } from "./api.js";
import { showCheckpoints, clearCheckpoints } from "./checkpoints.js";

const root = /** @type {HTMLElement} */ (document.getElementById("view-session"));
const timeline = /** @type {HTMLElement} */ (root.querySelector(".timeline tbody"));
const older = /** @type {HTMLButtonElement} */ (root.querySelector(".older"));

/** The session shown: its id, its timeline's next cursor, the events read. */
const shown = { id: "", cursor: /** @type {string|null} */ (null), /** @type {any[]} */ events: [] };

/** @param {string} id */
const base = (id) => `/console/api/sessions/${encodeURIComponent(id)}`;

/**
 * Shows session id: reads it and the first page of its timeline.
 * @param {string} id
 */
export async function showSession(id) {
  if (shown.id !== id) {
    shown.id = id;
    shown.events = [];
    shown.cursor = null;
    timeline.replaceChildren();
    clearCheckpoints(id);
    root.querySelector(".facts")?.replaceChildren();
    root.querySelector(".readiness")?.replaceChildren();
    root.querySelector("h2 .id").textContent = id;
    const b = /** @type {HTMLElement} */ (root.querySelector("h2 .badge"));
    b.textContent = "";
    b.dataset.state = "";
  }
  /** @type {HTMLAnchorElement} */ (root.querySelector(".as-user")).href = `preview.html?id=${encodeURIComponent(id)}`;
  await Promise.all([facts(id), events(id, "")]);
}

/**
 * A transition on the feed: the shown session reads itself again.
 * @param {{session_id: string}} ev
 */
export function sessionEvent(ev) {
  if (root.hidden || ev.session_id !== shown.id) return;
  facts(shown.id);
  events(shown.id, "");
}

/** @param {string} id */
async function facts(id) {
  let s;
  try {
    s = await read(base(id));
  } catch (e) {
    say(e.status === 404 ? `No session ${id} in this account.` : `cannot read ${id}: ${e.message ?? e}`);
    return;
  }
  if (id !== shown.id) return;
  root.querySelector("h2 .id").textContent = s.id;
  const b = /** @type {HTMLElement} */ (root.querySelector("h2 .badge"));
  b.textContent = s.state;
  b.dataset.state = s.state;
  list(root.querySelector(".facts"), [
    ["State", `${s.state} (reason ${s.reason})`],
    ["Provider", s.provider], ["Template", s.template], ["Sandbox", s.sandbox_id ?? "–"],
    ["Preview URL", s.preview_url ?? "–"], ["Metadata", pairs(s.metadata)],
    ["Created", when(s.created_at)], ["Updated", when(s.updated_at)], ["Last activity", when(s.last_activity_at)],
    ["Running since", when(s.running_since)], ["Paused at", when(s.paused_at)],
    ["Pause deadline", when(s.pause_deadline)], ["Idle timeout", duration(s.idle_timeout_seconds * 1000)],
    ["Away timeout", s.away_timeout_seconds ? duration(s.away_timeout_seconds * 1000) : "off (presence off)"],
    ["Away deadline", when(s.away_deadline)], ["Resumes on return", s.resume_on_return ? "yes" : "no"],
    ["From a warm pool", s.from_pool ? "yes" : "no"], ["Version", String(s.version)],
    ...(s.forked_from ? [["Forked from", `${s.forked_from.session_id} at ${s.forked_from.checkpoint_id}`]] : []),
    ...(s.restore_checkpoint_id ? [[s.state === "restoring" ? "Restoring from" : "Last restored from", s.restore_checkpoint_id]] : []),
    ...(s.restore_error ? [["Last restore failed", s.restore_error]] : []),
  ]);
  showCheckpoints(s);
  const app = s.app;
  list(root.querySelector(".readiness"), app ? [
    ["Readiness", s.readiness ?? "–"], ["Ready at", when(s.ready_at)],
    ["Start command", app.start_command], ["Port", String(app.port)], ["Ready path", app.ready_path],
  ] : [["App", "none: the session is ready when running"]]);
  const out = /** @type {HTMLElement} */ (root.querySelector(".output"));
  out.textContent = s.readiness_detail ?? "";
  out.hidden = !s.readiness_detail;
}

/**
 * Reads a page of the timeline: the first (cursor "", replacing what is
 * shown) or the next.
 * @param {string} id
 * @param {string} cursor
 */
async function events(id, cursor) {
  const q = new URLSearchParams({ limit: "50" });
  if (cursor) q.set("cursor", cursor);
  let page;
  try {
    page = await read(`${base(id)}/events?${q}`);
  } catch (e) {
    if (e.status !== 404) say(`cannot read the timeline of ${id}: ${e.message ?? e}`);
    return;
  }
  if (id !== shown.id) return;
  shown.events = cursor ? [...shown.events, ...page.events] : page.events;
  if (!cursor || shown.cursor !== null) shown.cursor = page.next_cursor;
  timeline.replaceChildren(...shown.events.map(entry));
  if (shown.events.length === 0) {
    const tr = el("tr");
    tr.append(el("td", "No events yet: the publisher records each about a second after it happens.", { colspan: "5" }));
    timeline.append(tr);
  }
  older.hidden = !shown.cursor;
  usage();
}

/** One timeline row. @param {any} ev */
function entry(ev) {
  const tr = el("tr");
  const what = ev.readiness ? `app ${ev.readiness}${ev.readiness_detail ? `: ${ev.readiness_detail}` : ""}` : `${ev.from || "(new)"} → ${ev.to}`;
  for (const [label, text] of [["When", when(ev.time)], ["Transition", what], ["Reason", ev.reason],
    ["Actor", ev.actor ?? "–"], ["After", ev.readiness ? `${duration(ev.duration_ms)} starting` : `${duration(ev.duration_ms)} ${ev.from || ""}`.trim()]]) {
    tr.append(el("td", text, { "data-label": label }));
  }
  return tr;
}

/**
 * The session's usage over the events read: the time spent running (in a
 * state that holds a sandbox running: provisioning, running, pausing,
 * resuming) and paused, summed from each event's duration in its from.
 */
function usage() {
  let running = 0;
  let paused = 0;
  for (const ev of shown.events) {
    if (ev.readiness || ev.duration_ms == null) continue;
    if (ev.from === "paused") paused += ev.duration_ms;
    else if (["provisioning", "running", "pausing", "resuming"].includes(ev.from)) running += ev.duration_ms;
  }
  const more = shown.cursor ? " (over the events read so far: “Older events” adds the rest)" : "";
  root.querySelector(".usage").textContent =
    `${duration(running)} running and ${duration(paused)} paused, until the last transition${more}.`;
}

older.addEventListener("click", () => shown.cursor && events(shown.id, shown.cursor));

/**
 * Fills a definition list.
 * @param {Element|null} dl
 * @param {string[][]} rows
 */
function list(dl, rows) {
  if (!dl) return;
  dl.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", k), el("dd", v)]));
}
