// What the console's views share: reads through the local dev API (the
// contract in internal/webclient's package doc; every route a read that is
// not activity), and the formatting of states, times and durations.

/** The final states: a session in one never changes again. */
export const ENDED = ["expired", "killed", "failed", "deleted"];
/** The states of a session that is not final. */
export const LIVE = ["provisioning", "running", "pausing", "paused", "resuming", "restoring", "archived"];

/**
 * GET path of the dev API; resolves with its JSON, throws the error
 * envelope's sentence.
 * @param {string} path
 */
export async function read(path) {
  const res = await fetch(path, { headers: { Accept: "application/json" } });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw new Error(`GET ${path}: HTTP ${res.status}, not JSON`);
  }
  if (!res.ok) {
    const e = new Error(data?.error ?? `GET ${path}: HTTP ${res.status}`);
    /** @type {any} */ (e).status = res.status;
    throw e;
  }
  return data;
}

/**
 * An element with text and attributes.
 * @param {string} tag
 * @param {string} [text]
 * @param {Record<string, string>} [attrs]
 */
export function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  for (const [k, v] of Object.entries(attrs ?? {})) e.setAttribute(k, v);
  return e;
}

/** A state badge. @param {string} state */
export function badge(state) {
  const b = el("span", state, { class: "badge" });
  b.dataset.state = state;
  return b;
}

/**
 * A time as the operator's local time, "–" for null.
 * @param {string|null|undefined} t
 */
export function when(t) {
  if (!t) return "–";
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? t : d.toLocaleString();
}

/**
 * A duration in milliseconds, to the second ("1 h 2 min", "42 s", "350 ms").
 * @param {number|null|undefined} ms
 */
export function duration(ms) {
  if (ms == null) return "–";
  if (ms < 1000) return `${ms} ms`;
  let s = Math.round(ms / 1000);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  const parts = [];
  if (d) parts.push(`${d} d`);
  if (h) parts.push(`${h} h`);
  if (m && !d) parts.push(`${m} min`);
  if (s && !d && !h) parts.push(`${s} s`);
  return parts.join(" ") || "0 s";
}

/** metadata as "k=v, k=v", "–" when empty. @param {Record<string,string>|null|undefined} m */
export function pairs(m) {
  const e = Object.entries(m ?? {});
  return e.length ? e.map(([k, v]) => `${k}=${v}`).join(", ") : "–";
}

/** Says message in the page's alert line ("" clears it). @param {string} message */
export function say(message) {
  const notice = document.getElementById("notice");
  if (notice) notice.textContent = message;
}
