// A session as its end user sees it (console/preview.html?id=ses_…): the
// session's preview with its sleeping card and waking line, live over the
// client channel with sandman.js. Unlike the console, this page is a user:
// its channel counts as a visible client, its hello wakes a paused session
// that resumes on return, its input is activity. It reads the session once
// through the local dev API and mints its client token there
// (internal/webclient's package doc); every later state is a push.
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
  // A resume asked for says "Waking…" at once (wakeLine); one refused
  // does not.
  act(".resume-preview", async () => {
    card.wake.asked = true;
    render(card, card.session);
    try {
      if (!card.channel) throw new Error("no live channel");
      return await card.channel.resume();
    } catch (e) {
      card.wake.asked = false;
      throw e;
    }
  });

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

  if (FINAL.has(state) && card.channel) {
    card.channel.close();
    card.channel = null;
  }
}

const id = new URLSearchParams(location.search).get("id") ?? "";
list.querySelector(".empty")?.remove();
try {
  if (!/^ses_[a-z2-7]{26}$/.test(id)) throw new Error("no session: open this page as preview.html?id=ses_…");
  document.title = `Sandman: ${id} as its user sees it`;
  await addSession(await api("GET", `${API}/${encodeURIComponent(id)}`));
} catch (e) {
  say(`cannot show the session: ${e.message ?? e}`);
}
