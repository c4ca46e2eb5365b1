// <sandman-preview>: a session's preview for a customer's front end. It
// follows the session over the client channel (sandman.js) and shows the
// app in an iframe when it is ready, and otherwise a card for the state the
// session is in: sleeping (with one button that wakes it), waking,
// restoring from a checkpoint, starting the app, failed (with a retry) and
// ended. The server resumes a session that resumes on return when the page
// is visible again (docs/WAKE.md "Resume on return"); the element sends
// heartbeats while the person works inside the iframe, which the page's
// own input listeners cannot see.
import { connect, type SandmanSession } from "./sandman.js";
import { css } from "./styles.js";
import {
  announcement,
  defaultMessages,
  viewOf,
  when,
  withPath,
  type Messages,
  type PreviewState,
  type SessionStatus,
  type View,
} from "./state.js";

/** The answer of POST /v1/sessions/{id}/client-tokens (or just the token). */
export interface TokenAnswer {
  token: string;
  expires_at?: string | null;
  ws_url?: string | null;
}

/**
 * Where a client token comes from: the app's own server, which holds the
 * API key. Called at connect ("initial"), shortly before the token expires
 * ("expiring") and after a refused connect ("refused").
 */
export type TokenSource = (reason: "initial" | "expiring" | "refused") => TokenAnswer | string | Promise<TokenAnswer | string>;

/** detail of the "sandman-state" event: the new state and the status body that caused it. */
export interface StateChangeDetail {
  state: PreviewState;
  status: SessionStatus | null;
}

/** The element's tag name. */
export const tagName = "sandman-preview";

const icons: Record<string, string> = {
  moon: '<path d="M20.5 14.1A8.5 8.5 0 1 1 9.9 3.5a6.6 6.6 0 0 0 10.6 10.6z"/>',
  sun: '<circle cx="12" cy="12" r="4"/><path d="M12 2v2M12 20v2M4.9 4.9l1.4 1.4M17.7 17.7l1.4 1.4M2 12h2M20 12h2M4.9 19.1l1.4-1.4M17.7 6.3l1.4-1.4"/>',
  alert: '<path d="M10.3 3.9 1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z"/><path d="M12 9v4"/><path d="M12 17h.01"/>',
  archive: '<rect x="3" y="4" width="18" height="4" rx="1"/><path d="M5 8v11a1 1 0 0 0 1 1h12a1 1 0 0 0 1-1V8"/><path d="M10 12h4"/>',
};

const svg = (name: string) =>
  `<svg viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" focusable="false">${icons[name]}</svg>`;

const template = `<style>${css}</style>
<div class="frame" part="frame">
  <iframe part="iframe" hidden></iframe>
  <section class="card" part="card" tabindex="-1" aria-labelledby="title">
    <div class="icon" part="icon" aria-hidden="true"></div>
    <p class="title" id="title" part="title"></p>
    <p class="text" part="text"></p>
    <ol class="steps" part="steps">
      <li data-step="wake"><span class="mark" aria-hidden="true"></span><span class="label"></span> <span class="sr said"></span></li>
      <li data-step="app"><span class="mark" aria-hidden="true"></span><span class="label"></span> <span class="sr said"></span></li>
      <li data-step="open"><span class="mark" aria-hidden="true"></span><span class="label"></span> <span class="sr said"></span></li>
    </ol>
    <button type="button" class="button" part="button"></button>
    <p class="note" part="note"></p>
    <details part="details"><summary></summary><pre tabindex="0"></pre></details>
  </section>
</div>
<p class="banner" part="banner" hidden></p>
<div class="sr" role="status"></div>`;

const stepOrder = ["wake", "app", "open"] as const;

/**
 * The <sandman-preview> element. Attributes: `token-url` (the app's own
 * endpoint that answers POST with a client token, {"token","expires_at","ws_url"}),
 * or `token`, `ws-url` and `expires-at` as such; `path` (a path of the app
 * to open); `label` (the iframe's title); `allow` (the iframe's allow);
 * `theme` ("light" or "dark"; default: the page's); `heartbeat-interval`
 * (ms, default 30000). Properties: `getToken` (a TokenSource, instead of
 * token-url), `messages` (words to override), and read only `state`,
 * `status`, `session`. Events: "sandman-state" (StateChangeDetail),
 * "sandman-retry" (cancelable: the retry button; preventDefault() to retry
 * your own way), "sandman-error" ({message, error}). It reflects its state
 * in the `state` attribute.
 */
export class SandmanPreviewElement extends HTMLElement {
  static observedAttributes = ["token", "ws-url", "expires-at", "token-url", "path", "label", "allow", "heartbeat-interval"];

  /** Fetches a client token (instead of the token-url attribute). */
  getToken: TokenSource | null = null;

  #messages: Partial<Messages> = {};
  #session: SandmanSession | null = null;
  #status: SessionStatus | null = null;
  #view: View = { state: "connecting" };
  #said = "";
  #generation = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #restoring = false; // this wake restores from a checkpoint
  #wakeAsked = false; // the wake button was pressed and no move followed yet
  #wakeFailed = false;
  #focused = false; // the iframe has the focus
  #pointer = false; // the pointer is over the iframe
  #beat: ReturnType<typeof setInterval> | undefined;
  #lastBeat = 0;
  readonly #root: ShadowRoot;
  readonly #el: {
    iframe: HTMLIFrameElement;
    card: HTMLElement;
    icon: HTMLElement;
    title: HTMLElement;
    text: HTMLElement;
    steps: HTMLOListElement;
    details: HTMLDetailsElement;
    summary: HTMLElement;
    pre: HTMLPreElement;
    button: HTMLButtonElement;
    note: HTMLElement;
    banner: HTMLElement;
    live: HTMLElement;
  };

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: "open" });
    this.#root.innerHTML = template;
    const q = <T extends Element>(s: string) => this.#root.querySelector(s) as T;
    this.#el = {
      iframe: q("iframe"),
      card: q(".card"),
      icon: q(".icon"),
      title: q(".title"),
      text: q(".text"),
      steps: q(".steps"),
      details: q("details"),
      summary: q("summary"),
      pre: q("pre"),
      button: q(".button"),
      note: q(".note"),
      banner: q(".banner"),
      live: q('[role="status"]'),
    };
    this.#el.button.addEventListener("click", () => (this.#view.state === "sleeping" ? void this.wake() : this.retry()));
    this.#el.iframe.addEventListener("pointerenter", () => this.#engage("pointer", true));
    this.#el.iframe.addEventListener("pointerleave", () => this.#engage("pointer", false));
  }

  /** The state shown now. */
  get state(): PreviewState {
    return this.#view.state;
  }

  /** The last status body pushed, or null. */
  get status(): SessionStatus | null {
    return this.#status;
  }

  /** The client channel's session (sandman.js), or null before it connects. */
  get session(): SandmanSession | null {
    return this.#session;
  }

  /** The words the element says; set any of them to override the defaults. */
  get messages(): Messages {
    return { ...defaultMessages, ...this.#messages };
  }

  set messages(m: Partial<Messages>) {
    this.#messages = { ...m };
    this.#render();
  }

  connectedCallback(): void {
    this.#el.iframe.title = this.getAttribute("label") ?? this.messages.iframeTitle;
    const allow = this.getAttribute("allow");
    if (allow) this.#el.iframe.setAttribute("allow", allow);
    window.addEventListener("blur", this.#onWindowBlur);
    window.addEventListener("focus", this.#onWindowFocus);
    this.#render();
    // A microtask later, so that a framework setting getToken right after
    // inserting the element (React's ref) is in time for the first connect.
    queueMicrotask(() => {
      if (this.isConnected && !this.#session) void this.#start();
    });
  }

  disconnectedCallback(): void {
    window.removeEventListener("blur", this.#onWindowBlur);
    window.removeEventListener("focus", this.#onWindowFocus);
    this.#stop();
  }

  attributeChangedCallback(name: string, old: string | null, value: string | null): void {
    if (old === value || !this.isConnected) return;
    switch (name) {
      case "label":
        this.#el.iframe.title = value ?? this.messages.iframeTitle;
        return;
      case "allow":
        if (value) this.#el.iframe.setAttribute("allow", value);
        else this.#el.iframe.removeAttribute("allow");
        return;
      case "path":
        this.#render();
        return;
    }
    this.#stop();
    void this.#start();
  }

  /**
   * Wakes the sleeping session (the card's button): asks the channel to
   * resume it, shows the waking card at once, and says so on the card when
   * the resume fails.
   */
  async wake(): Promise<void> {
    const s = this.#session;
    if (!s || this.#view.state !== "sleeping" || this.#view.pausing) return;
    this.#wakeAsked = true;
    this.#wakeFailed = false;
    this.#render();
    try {
      await s.resume({ timeoutMs: 60000 });
    } catch (error) {
      if (this.#session !== s || !this.#wakeAsked) return;
      this.#wakeAsked = false;
      this.#wakeFailed = true;
      this.#render();
      this.#emit("sandman-error", { message: "sandman-preview: the session did not wake", error });
    }
  }

  /**
   * The retry of a failed or unreachable preview: dispatches the cancelable
   * "sandman-retry" event; unless a listener cancels it, connects again and
   * shows the session as it then is (a sleeping one then wakes on the
   * card's button).
   */
  retry(): void {
    if (!this.dispatchEvent(new CustomEvent("sandman-retry", { cancelable: true, detail: { status: this.#status } }))) return;
    this.#stop();
    this.#status = null;
    void this.#start();
  }

  // --- the channel ---

  async #token(reason: "initial" | "expiring" | "refused"): Promise<TokenAnswer> {
    if (this.getToken) {
      const a = await this.getToken(reason);
      return typeof a === "string" ? { token: a } : a;
    }
    const url = this.getAttribute("token-url");
    if (url) {
      const r = await fetch(url, { method: "POST", credentials: "same-origin", headers: { accept: "application/json" } });
      if (!r.ok) throw new Error(`sandman-preview: ${url} answered ${r.status}`);
      return (await r.json()) as TokenAnswer;
    }
    const token = this.getAttribute("token");
    if (token) return { token, ws_url: this.getAttribute("ws-url"), expires_at: this.getAttribute("expires-at") };
    throw new Error("sandman-preview: no token: set token-url, token and ws-url, or getToken");
  }

  async #start(): Promise<void> {
    const generation = ++this.#generation;
    let answer: TokenAnswer;
    try {
      answer = await this.#token("initial");
    } catch (error) {
      if (generation !== this.#generation) return;
      this.#emit("sandman-error", { message: "sandman-preview: no client token", error });
      this.#retryTimer = setTimeout(() => void this.#start(), 5000);
      return;
    }
    if (generation !== this.#generation || !this.isConnected) return;
    const url = answer.ws_url ?? this.getAttribute("ws-url");
    if (!url || !answer.token) {
      this.#emit("sandman-error", { message: "sandman-preview: the token answer names no ws_url (set ws-url)" });
      return;
    }
    const refreshable = this.getToken != null || this.hasAttribute("token-url");
    const interval = Number(this.getAttribute("heartbeat-interval")) || undefined;
    const s = connect({
      url,
      token: answer.token,
      expiresAt: answer.expires_at ?? undefined,
      onTokenExpired: refreshable ? (reason) => this.#token(reason) : undefined,
      heartbeatIntervalMs: interval,
    });
    this.#session = s;
    s.addEventListener("session", (e) => this.#update((e as CustomEvent).detail as SessionStatus));
    s.addEventListener("connection", (e) => {
      const reconnecting = (e as CustomEvent).detail.state === "reconnecting" && this.#status != null;
      this.#el.banner.textContent = this.messages.reconnecting;
      this.#el.banner.hidden = !reconnecting;
    });
    s.addEventListener("error", (e) => this.#emit("sandman-error", (e as CustomEvent).detail));
  }

  #stop(): void {
    this.#generation++;
    clearTimeout(this.#retryTimer);
    this.#session?.close();
    this.#session = null;
    this.#el.banner.hidden = true;
    this.#engage("focus", false);
    this.#engage("pointer", false);
  }

  #update(status: SessionStatus): void {
    const before = this.#status?.state;
    this.#status = status;
    const moving = ["resuming", "restoring", "provisioning"].includes(status.state);
    if (this.#wakeAsked && status.state === "paused" && before !== undefined && before !== "paused" && before !== "pausing") {
      // It went back to sleep after the wake started: the resume failed.
      this.#wakeAsked = false;
      this.#wakeFailed = true;
    } else if (this.#wakeAsked && status.state !== "paused" && status.state !== "pausing" && !moving) {
      this.#wakeAsked = false; // it arrived (running) or ended
    }
    if (status.state !== "paused") this.#wakeFailed = false;
    // The first step reads "restore" from a restoring push until the wake is over.
    if (status.state === "restoring") this.#restoring = true;
    if (status.state === "paused" || (status.state === "running" && status.readiness !== "starting")) this.#restoring = false;
    this.#render();
  }

  // --- rendering ---

  /** The view shown: the status's, or waking while a pressed wake has no answer yet. */
  #current(): View {
    const v = viewOf(this.#status);
    if (this.#wakeAsked && v.state === "sleeping" && !v.pausing) return { state: "waking", step: "wake" };
    return v;
  }

  #render(): void {
    const v = this.#current();
    const m = this.messages;
    const el = this.#el;
    const before = this.#view.state;
    const focus = this.#root.activeElement; // before anything focused is hidden
    this.#view = v;
    if (this.getAttribute("state") !== v.state) this.setAttribute("state", v.state);

    const ready = v.state === "ready";
    if (ready && v.previewURL) {
      const src = withPath(v.previewURL, this.getAttribute("path"));
      if (el.iframe.getAttribute("src") !== src) el.iframe.setAttribute("src", src);
    } else if (el.iframe.hasAttribute("src") && el.iframe.getAttribute("src") !== "about:blank") {
      el.iframe.setAttribute("src", "about:blank"); // a paused sandbox's preview answers nothing
    }
    el.iframe.hidden = !ready;
    el.card.hidden = ready;
    if (ready && focus && el.card.contains(focus)) el.iframe.focus();

    const card = this.#card(v, m);
    el.icon.innerHTML = card.icon === "spin" ? '<span class="spin"></span>' : svg(card.icon);
    el.title.textContent = card.title;
    el.text.textContent = card.text ?? "";
    el.text.hidden = !card.text;
    el.steps.hidden = !v.step;
    el.steps.setAttribute("aria-label", m.progress);
    if (v.step) this.#renderSteps(v.step, m);
    el.details.hidden = !card.detail;
    el.summary.textContent = m.details;
    el.pre.textContent = card.detail ?? "";
    el.button.hidden = !card.button;
    el.button.textContent = card.button ?? "";
    el.note.hidden = !card.note;
    el.note.textContent = card.note ?? "";

    // Pressing the wake button hides it: keep the focus on the card.
    if (before === "sleeping" && v.state !== "sleeping" && !ready && focus === el.button) el.card.focus();

    const said = this.#wakeFailed && v.state === "sleeping" ? m.wakeFailed : announcement(v, m);
    if (said !== this.#said) {
      this.#said = said;
      el.live.textContent = said;
    }
    if (before !== v.state) {
      this.#emit("sandman-state", { state: v.state, status: this.#status } satisfies StateChangeDetail);
      this.#beatNow();
    }
  }

  #card(v: View, m: Messages): { icon: string; title: string; text?: string; button?: string; note?: string; detail?: string } {
    switch (v.state) {
      case "connecting":
        return { icon: "spin", title: m.connectingTitle };
      case "sleeping":
        return v.pausing
          ? { icon: "moon", title: m.pausingTitle, text: m.pausingText }
          : { icon: "moon", title: m.sleepingTitle, text: m.sleepingText, button: m.wakeButton, note: this.#wakeFailed ? m.wakeFailed : undefined };
      case "restoring":
        if (v.recoveringFrom === "") return { icon: "sun", title: m.recreatingTitle, text: m.recreatingText };
        if (v.recoveringFrom) return { icon: "sun", title: m.recoveringTitle.replace("{time}", when(v.recoveringFrom)), text: m.recoveringText };
        return { icon: "sun", title: m.wakingTitle };
      case "waking":
      case "starting":
        return { icon: "sun", title: m.wakingTitle };
      case "ready":
        return { icon: "sun", title: m.ready };
      case "failed":
        return v.why === "app"
          ? { icon: "alert", title: m.appFailedTitle, text: v.reason ?? m.appFailedText, button: m.retryButton, detail: v.output }
          : { icon: "alert", title: m.noPreviewTitle, text: m.noPreviewText, button: m.retryButton };
      case "ended":
        return v.why === "killed"
          ? { icon: "archive", title: m.endedTitle, text: m.endedText }
          : { icon: "archive", title: m.unrecoverableTitle, text: m.unrecoverableText };
    }
  }

  #renderSteps(step: string, m: Messages): void {
    const labels: Record<string, string> = { wake: this.#restoring ? m.stepRestore : m.stepWake, app: m.stepApp, open: m.stepOpen };
    const said: Record<string, string> = { done: "(done)", current: "(under way)", todo: "(to do)" };
    let done = true;
    for (const id of stepOrder) {
      const li = this.#el.steps.querySelector(`[data-step="${id}"]`) as HTMLElement;
      const state = id === step ? "current" : done ? "done" : "todo";
      if (state === "current") done = false;
      li.className = state;
      if (state === "current") li.setAttribute("aria-current", "step");
      else li.removeAttribute("aria-current");
      (li.querySelector(".label") as HTMLElement).textContent = labels[id];
      (li.querySelector(".said") as HTMLElement).textContent = said[state];
    }
  }

  #emit(type: string, detail: unknown): void {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  // --- heartbeats from inside the iframe ---

  // A click into the cross-origin iframe blurs the window and leaves the
  // element as the document's active element: the person works in the app.
  #onWindowBlur = (): void => {
    setTimeout(() => this.#engage("focus", document.activeElement === this), 0);
  };

  #onWindowFocus = (): void => this.#engage("focus", false);

  #engage(how: "focus" | "pointer", on: boolean): void {
    if (how === "focus") this.#focused = on;
    else this.#pointer = on;
    const engaged = this.#focused || this.#pointer;
    if (engaged && this.#beat === undefined) {
      this.#beatNow();
      const every = Number(this.getAttribute("heartbeat-interval")) || 30000;
      this.#beat = setInterval(() => this.#beatNow(), every);
    } else if (!engaged && this.#beat !== undefined) {
      clearInterval(this.#beat);
      this.#beat = undefined;
    }
  }

  // One heartbeat per interval while the person is in the ready iframe and
  // the page is visible.
  #beatNow(): void {
    const every = Number(this.getAttribute("heartbeat-interval")) || 30000;
    if (!(this.#focused || this.#pointer) || this.#view.state !== "ready" || document.visibilityState === "hidden") return;
    if (Date.now() - this.#lastBeat < every - 50) return;
    if (this.#session?.heartbeat()) this.#lastBeat = Date.now();
  }
}

/** Defines <sandman-preview> (once; a second call does nothing). */
export function define(name: string = tagName): void {
  if (!customElements.get(name)) customElements.define(name, class extends SandmanPreviewElement {});
}

declare global {
  interface HTMLElementTagNameMap {
    "sandman-preview": SandmanPreviewElement;
  }
}
