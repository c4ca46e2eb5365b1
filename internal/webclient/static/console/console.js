// The Sandman console: lists the account's sessions through the local dev
// API (contract in internal/webclient's package doc), opens one client
// channel per live session with sandman.js, and renders every push. It never
// polls: after the first list, state changes arrive on the channel.
import { connect, isReady } from "/sandman.js";

const API = "/console/api/sessions";
const FINAL = new Set(["killed", "expired", "failed"]);

/** @type {Map<string, {el: HTMLElement, channel: import("/sandman.js").SandmanSession|null, session: any}>} */
const cards = new Map();
const list = /** @type {HTMLElement} */ (document.getElementById("sessions"));
const notice = /** @type {HTMLElement} */ (document.getElementById("notice"));
const cardTemplate = /** @type {HTMLTemplateElement} */ (document.getElementById("card"));

/**
 * fetch with JSON in and out; throws the error envelope's sentence.
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 */
async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) throw new Error(data?.error ?? `${method} ${path}: HTTP ${res.status}`);
  return data;
}

function say(message) {
  notice.textContent = message;
}

/** @param {string} id */
function tokenFor(id) {
  return api("POST", `${API}/${encodeURIComponent(id)}/client-tokens`);
}

/** @param {any} session */
async function addSession(session) {
  if (cards.has(session.id)) return;
  list.querySelector(".empty")?.remove();
  const el = /** @type {HTMLElement} */ (cardTemplate.content.firstElementChild.cloneNode(true));
  el.dataset.id = session.id;
  el.querySelector(".id").textContent = session.id;
  const card = { el, channel: null, session, wake: { step: "", since: 0, armed: false, asked: false, timer: 0 } };
  cards.set(session.id, card);
  list.prepend(el);
  render(card, session);

  const act = (sel, fn) => el.querySelector(sel).addEventListener("click", async (ev) => {
    const button = /** @type {HTMLButtonElement} */ (ev.currentTarget);
    button.disabled = true;
    try {
      await fn();
      say("");
    } catch (e) {
      say(String(e.message ?? e));
    } finally {
      button.disabled = false;
      render(card, card.session);
    }
  });
  const path = `${API}/${encodeURIComponent(session.id)}`;
  act(".pause", () => api("POST", `${path}/snapshot`));
  // A resume asked for says "Waking…" at once (wakeLine); one refused
  // does not.
  const waking = async (resume) => {
    card.wake.asked = true;
    render(card, card.session);
    try {
      return await resume();
    } catch (e) {
      card.wake.asked = false;
      throw e;
    }
  };
  act(".resume", () => waking(() => api("POST", `${path}/resume`)));
  act(".delete", async () => {
    const killed = await api("DELETE", path);
    if (killed) render(card, { ...card.session, ...killed });
  });
  act(".resume-preview", () => waking(async () => card.channel ? card.channel.resume() : api("POST", `${path}/resume`)));

  if (FINAL.has(session.state)) return;
  try {
    const t = await tokenFor(session.id);
    card.channel = connect({
      url: t.ws_url,
      token: t.token,
      expiresAt: t.expires_at,
      onTokenExpired: () => tokenFor(session.id),
    });
    card.channel.on("session", (s) => render(card, { ...card.session, ...s, id: session.id }));
  } catch (e) {
    say(`no live channel for ${session.id}: ${e.message ?? e}`);
  }
}

// A wake's steps, in order, as the card's line says them. A push carries the
// session as it is when sent, so one can jump from paused straight to
// running and ready: the card still says every step it skipped, each for at
// least LINE_MS, before the next (the preview shows after the last).
const WAKE_STEPS = ["waking", "starting", "ready"];
const LINE_MS = 400;

/**
 * The wake step a status body stands for: "waking" (resuming or
 * provisioning), "starting" (running, its app not answering yet), "ready"
 * (isReady), else "".
 * @param {any} s
 */
function wakeStep(s) {
  if (s.state === "resuming" || s.state === "provisioning") return "waking";
  if (s.state === "running" && s.readiness === "starting") return "starting";
  if (isReady(s)) return "ready";
  return "";
}

/**
 * Returns the wake step the card shows for s. A card follows a wake once
 * it has seen the session paused, resuming or provisioning, or a resume was
 * asked for (wake.asked: then a paused session already says "Waking…"); it
 * then walks the steps in order, one at a time: a step said for less than
 * LINE_MS holds the next back, and a timer renders again when it has been.
 * "starting" is skipped for a session without an app (readiness null). A
 * card that follows no wake shows what s stands for at once (a session
 * running when the page loaded never says "Waking…").
 * @param {{wake: {step: string, since: number, armed: boolean, asked: boolean, timer: any}, session: any}} card
 * @param {any} s
 */
function wakeLine(card, s) {
  const w = card.wake;
  const now = performance.now();
  if (s.state === "paused" && !w.asked) {
    w.armed = true;
    w.step = "";
    return "";
  }
  if (s.state === "resuming" || s.state === "provisioning" || w.asked) w.armed = true;
  const target = s.state === "paused" ? "waking" : wakeStep(s);
  const want = WAKE_STEPS.indexOf(target);
  if (!w.armed || want < 0) {
    // No wake followed, or it ended otherwise (pausing, failed, killed).
    w.armed = w.asked = false;
    w.step = target;
    w.since = now;
    return target;
  }
  let at = WAKE_STEPS.indexOf(w.step);
  while (at < want) {
    if (at >= 0 && now - w.since < LINE_MS) {
      clearTimeout(w.timer);
      w.timer = setTimeout(() => render(card, card.session), LINE_MS - (now - w.since) + 1);
      return w.step;
    }
    at++;
    if (WAKE_STEPS[at] === "starting" && s.readiness == null) at++;
    w.step = WAKE_STEPS[at];
    w.since = now;
  }
  if (w.step === "ready") w.armed = w.asked = false;
  return w.step;
}

/**
 * Shows a session's state: badge, preview iframe when running, sleeping
 * card when paused, buttons that fit the state.
 * @param {{el: HTMLElement, channel: any, session: any, wake: any}} card
 * @param {any} s the session or status body
 */
function render(card, s) {
  card.session = s;
  const { el } = card;
  const state = s.state ?? "unknown";
  el.dataset.state = state;
  const badge = /** @type {HTMLElement} */ (el.querySelector(".badge"));
  badge.textContent = state;
  badge.dataset.state = state;

  const preview = /** @type {HTMLElement} */ (el.querySelector(".preview"));
  const iframe = /** @type {HTMLIFrameElement} */ (el.querySelector("iframe"));
  const sleeping = /** @type {HTMLElement} */ (el.querySelector(".sleeping"));
  // The iframe only once the app answers: never a 502 in it
  // (docs/READINESS.md). A session without an app is ready when running.
  // The line says each step of a wake, even one a push skipped (wakeLine).
  const step = wakeLine(card, s);
  const running = step === "ready" && s.preview_url;
  preview.hidden = !running;
  const waking = /** @type {HTMLElement} */ (el.querySelector(".waking"));
  let wait = "";
  if (step === "waking") wait = "Waking…";
  else if (step === "starting") wait = "Starting the app…";
  else if (state === "running" && s.readiness === "failed") wait = "The app did not start: " + (s.readiness_detail ?? "no detail");
  waking.textContent = wait;
  waking.hidden = wait === "";
  if (running && iframe.getAttribute("src") !== s.preview_url) iframe.src = s.preview_url;
  if (!running && iframe.getAttribute("src")) iframe.removeAttribute("src");
  sleeping.hidden = state !== "paused" || step !== "";

  const link = el.querySelector(".link");
  link.replaceChildren();
  if (running) {
    const a = document.createElement("a");
    a.href = s.preview_url;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = "open preview";
    link.append(a);
  }

  const final = FINAL.has(state);
  /** @type {HTMLButtonElement} */ (el.querySelector(".pause")).disabled = state !== "running";
  /** @type {HTMLButtonElement} */ (el.querySelector(".resume")).disabled = state !== "paused";
  /** @type {HTMLButtonElement} */ (el.querySelector(".delete")).disabled = final;
  if (final && card.channel) {
    card.channel.close();
    card.channel = null;
  }
}

document.getElementById("create").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const form = /** @type {HTMLFormElement} */ (ev.currentTarget);
  const f = new FormData(form);
  const body = { template: String(f.get("template")) };
  for (const k of ["idle_timeout_seconds", "away_timeout_seconds"]) {
    const v = String(f.get(k) ?? "");
    if (v !== "") body[k] = Number(v);
  }
  const button = form.querySelector("button");
  button.disabled = true;
  try {
    const created = await api("POST", API, body);
    await addSession(created.session ?? created);
    say("");
  } catch (e) {
    say(String(e.message ?? e));
  } finally {
    button.disabled = false;
  }
});

try {
  const data = await api("GET", API);
  for (const s of [...(data.sessions ?? [])].reverse()) await addSession(s);
} catch (e) {
  say(`cannot list sessions: ${e.message ?? e}`);
}

// Webhook endpoints and their last deliveries (docs/WEBHOOKS.md), read on
// load and on Refresh: deliveries have no channel, so nothing updates live.
const HOOKS = "/console/api/webhook-endpoints";
const hooks = /** @type {HTMLElement} */ (document.getElementById("webhooks"));

/** @param {string} tag @param {string} text */
function cell(tag, text) {
  const el = document.createElement(tag);
  el.textContent = text;
  return el;
}

async function showWebhooks() {
  let data;
  try {
    data = await api("GET", HOOKS);
  } catch (e) {
    say(`cannot list webhook endpoints: ${e.message ?? e}`);
    return;
  }
  hooks.querySelectorAll(".endpoint").forEach((el) => el.remove());
  const endpoints = data.webhook_endpoints ?? [];
  hooks.querySelector(".empty").hidden = endpoints.length > 0;
  for (const ep of endpoints) {
    const box = document.createElement("article");
    box.className = "endpoint";
    const title = cell("header", "");
    title.append(cell("code", ep.id), " ", cell("span", ep.url), " ",
      cell("span", ep.disabled ? `disabled: ${ep.disabled_reason ?? ""}` : (ep.event_types.length ? ep.event_types.join(", ") : "all events")));
    box.append(title);
    const table = document.createElement("table");
    const head = document.createElement("tr");
    for (const h of ["event", "type", "status", "attempts (status codes)", "next attempt"]) head.append(cell("th", h));
    table.append(head);
    try {
      const log = await api("GET", `${HOOKS}/${encodeURIComponent(ep.id)}/deliveries?limit=5`);
      for (const d of log.deliveries ?? []) {
        const row = document.createElement("tr");
        row.dataset.status = d.status;
        const codes = d.attempts.map((a) => a.status_code ?? "–").join(", ");
        row.append(cell("td", d.event_id), cell("td", d.event_type), cell("td", d.status), cell("td", codes), cell("td", d.next_attempt_at ?? ""));
        table.append(row);
      }
    } catch (e) {
      box.append(cell("p", `cannot read deliveries: ${e.message ?? e}`));
    }
    box.append(table);
    hooks.append(box);
  }
}

document.getElementById("webhooks-refresh").addEventListener("click", showWebhooks);
await showWebhooks();
