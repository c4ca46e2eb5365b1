// sandman.js: the browser client of Sandman's client channel (DESIGN.md,
// "Client channel"). One ES module, no dependencies, no build step.
//
//   import { connect } from "/sandman.js";
//   const session = connect({
//     url: answer.ws_url,               // from POST /v1/sessions/{id}/client-tokens
//     token: answer.token,
//     expiresAt: answer.expires_at,
//     onTokenExpired: async () => (await fetch("/my-app/sandman-token")).json(),
//   });
//   session.addEventListener("session", (e) => render(e.detail)); // the status body
//   await session.resume();
//
// The server pushes {"type":"session","session":<status body>} in answer to
// the {"action":"hello","visible":true|false} the client sends as soon as the socket opens (API
// Gateway cannot push during $connect, so the status at connect is asked
// for) and after every committed transition. The client sends
// {"action":"heartbeat","visible":true|false} on user input (at most one per
// heartbeatIntervalMs, 30 s by default: the server's activity granularity),
// at once when the page's visibility changes, and at connect only when the
// page is hidden (a new connection counts as visible); and {"action":"resume"}.
// It reconnects after a drop with capped exponential backoff and jitter, and
// asks the app for a fresh token (onTokenExpired) shortly before the token
// expires and whenever a connect is refused (a WebSocket handshake refused
// with 401/403 reaches the page as a close before open).

/**
 * The answer of POST /v1/sessions/{id}/client-tokens, or just the token.
 * @typedef {{token: string, expires_at?: string|null, ws_url?: string|null} | string} TokenAnswer
 */

/**
 * @typedef {Object} ConnectOptions
 * @property {string} url WebSocket URL (`ws_url` of the client-token answer); http(s) URLs and paths are turned into ws(s) URLs. The token is added as `?token=`.
 * @property {string} token the client token.
 * @property {string|number|Date} [expiresAt] when the token expires (RFC 3339, epoch ms or Date); the client refreshes refreshBeforeMs earlier.
 * @property {(reason: "expiring"|"refused") => (TokenAnswer|Promise<TokenAnswer>)} [onTokenExpired] the app fetches a fresh token (from its own server, which holds the API key).
 * @property {number} [heartbeatIntervalMs=30000] at most one input heartbeat per this many milliseconds (the activity granularity).
 * @property {number} [reconnectBaseMs=500] first reconnect delay cap in milliseconds; doubles per failed attempt.
 * @property {number} [reconnectMaxMs=30000] largest reconnect delay in milliseconds.
 * @property {number} [refreshBeforeMs=60000] refresh the token this many milliseconds before expiresAt.
 * @property {() => number} [random=Math.random] jitter source in [0, 1).
 * @property {string[]} [inputEvents] DOM events that count as user input.
 * @property {Document} [document=globalThis.document] the page whose input and visibility are watched.
 * @property {typeof WebSocket} [WebSocket=globalThis.WebSocket] the WebSocket constructor.
 */

/**
 * A connection state: "connecting", "open", "reconnecting" (waiting for the
 * next attempt), "closed" (close() was called).
 * @typedef {"connecting"|"open"|"reconnecting"|"closed"} ConnectionState
 */

const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Whether a status body shows a usable preview: running, and ready or
 * without an app (readiness null; docs/READINESS.md).
 * @param {any} s
 * @returns {boolean}
 */
export function isReady(s) {
  return s?.state === "running" && (s.readiness == null || s.readiness === "ready");
}
/**
 * What to tell a person while a lost session is recovered (docs/RELIABILITY.md
 * "Recovery"): "Restoring your work from <time>" (the checkpoint's created_at
 * in the reader's zone) while the status is restoring with a `recovery`;
 * "Starting a fresh sandbox" for a recreate; null otherwise.
 * @param {any} s a status body
 * @returns {string|null}
 */
export function recoveryText(s) {
  const r = s?.state === "restoring" ? s.recovery : null;
  if (!r) return null;
  const t = Date.parse(r.checkpoint_created_at ?? "");
  if (isNaN(t)) return "Starting a fresh sandbox";
  return "Restoring your work from " + new Date(t).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

const DEFAULT_INPUT_EVENTS = ["pointerdown", "keydown", "wheel", "touchstart", "scroll", "mousemove"];

/**
 * A live session. Events (all CustomEvent, data in `detail`):
 * - "session": detail is the status body (`state`, `sandbox_paused`, `preview_url`, `lifecycle`,
 *   `readiness`, `readiness_detail`, `ready_at`, `recovery`, ...; recoveryText says a recovery in
 *   words). A session with an app is usable when
 *   running with `readiness` "ready" (see `ready` and `whenReady`; docs/READINESS.md).
 * - "connection": detail is `{state: ConnectionState, attempt: number, delayMs?: number}`.
 * - "token": detail is `{reason: "expiring"|"refused"}` after a successful refresh.
 * - "error": detail is `{message: string, error?: unknown}` (a failed refresh, a bad message).
 */
export class SandmanSession extends EventTarget {
  /** @param {ConnectOptions} opts */
  constructor(opts) {
    super();
    if (!opts || !opts.url || !opts.token) throw new TypeError("sandman: connect needs url and token");
    /** @type {ConnectOptions} */
    this.options = opts;
    /** @type {string} */
    this.url = opts.url;
    /** @type {string} */
    this.token = opts.token;
    /** @type {number|null} token expiry, epoch ms */
    this.expiresAt = toMillis(opts.expiresAt);
    /** @type {any} the last status body the server pushed, or null */
    this.status = null;
    /** @type {ConnectionState} */
    this.connectionState = "connecting";
    /** @type {number} failed connects since the last open */
    this.attempt = 0;

    this._hbInterval = opts.heartbeatIntervalMs ?? 30000;
    this._base = opts.reconnectBaseMs ?? 500;
    this._max = opts.reconnectMaxMs ?? 30000;
    this._refreshBefore = opts.refreshBeforeMs ?? 60000;
    this._random = opts.random ?? Math.random;
    this._doc = opts.document ?? globalThis.document;
    this._WS = opts.WebSocket ?? globalThis.WebSocket;
    /** @type {WebSocket|null} */
    this._ws = null;
    this._opened = false;
    this._lastHeartbeat = -Infinity; // epoch ms of the last heartbeat sent
    /** @type {boolean|null} */
    this._lastVisible = null;
    this._pendingInput = false;
    /** @type {ReturnType<typeof setTimeout>|null} */
    this._hbTimer = null;
    /** @type {ReturnType<typeof setTimeout>|null} */
    this._retryTimer = null;
    /** @type {ReturnType<typeof setTimeout>|null} */
    this._refreshTimer = null;
    /** @type {Promise<void>|null} */
    this._refreshing = null;
    /** @type {Array<{resolve: () => void, reject: (e: Error) => void}>} */
    this._resumeWaiters = [];

    this._onInput = () => this._input();
    this._onVisibility = () => this._visibility();
    if (this._doc) {
      for (const ev of opts.inputEvents ?? DEFAULT_INPUT_EVENTS) {
        this._doc.addEventListener(ev, this._onInput, { passive: true, capture: true });
      }
      this._doc.addEventListener("visibilitychange", this._onVisibility);
    }
    this._armRefresh();
    this._open();
  }

  /**
   * Listens to an event; returns a function that removes the listener.
   * @param {"session"|"connection"|"token"|"error"} type
   * @param {(detail: any) => void} fn
   * @returns {() => void}
   */
  on(type, fn) {
    const h = (/** @type {Event} */ e) => fn(/** @type {CustomEvent} */ (e).detail);
    this.addEventListener(type, h);
    return () => this.removeEventListener(type, h);
  }

  /**
   * The app's readiness from the last status pushed: "starting", "ready",
   * "failed", or null (no app, not running, or nothing pushed yet).
   * @returns {"starting"|"ready"|"failed"|null}
   */
  get readiness() {
    return this.status?.readiness ?? null;
  }

  /**
   * Whether the preview can be shown: running, and either ready or without
   * an app (readiness null).
   * @returns {boolean}
   */
  get ready() {
    return isReady(this.status);
  }

  /**
   * Resolves with the status body once the session is running and ready
   * (at once when it already is); rejects when its readiness is "failed"
   * (the error's message carries readiness_detail) or timeoutMs (default
   * 120000) passes. It does not resume: call resume() first.
   * @param {{timeoutMs?: number}} [o]
   * @returns {Promise<any>}
   */
  whenReady(o) {
    const timeoutMs = o?.timeoutMs ?? 120000;
    return new Promise((resolve, reject) => {
      const check = (/** @type {any} */ s) => {
        if (isReady(s)) {
          done();
          resolve(s);
        } else if (s?.state === "running" && s?.readiness === "failed") {
          done();
          reject(new Error("sandman: the app did not start: " + (s.readiness_detail ?? "no detail")));
        }
      };
      const off = this.on("session", check);
      const t = setTimeout(() => { off(); reject(new Error("sandman: not ready in time")); }, timeoutMs);
      const done = () => { off(); clearTimeout(t); };
      check(this.status);
    });
  }

  /**
   * Asks the server to resume the session ({"action":"resume"}). Resolves
   * when a "session" event says running (at once when it already is),
   * rejects when not connected, when the channel closes first, or when
   * timeoutMs (default 60000) passes.
   * @param {{timeoutMs?: number}} [o]
   * @returns {Promise<void>}
   */
  resume(o) {
    const timeoutMs = o?.timeoutMs ?? 60000;
    return new Promise((resolve, reject) => {
      if (!this._send({ action: "resume" })) {
        reject(new Error("sandman: not connected"));
        return;
      }
      if (this.status?.state === "running") {
        resolve(); // nothing to wait for: no transition will be pushed
        return;
      }
      const w = {
        resolve: () => { clearTimeout(t); resolve(); },
        reject: (/** @type {Error} */ e) => { clearTimeout(t); reject(e); },
      };
      const t = setTimeout(() => {
        this._resumeWaiters = this._resumeWaiters.filter((x) => x !== w);
        reject(new Error("sandman: resume timed out"));
      }, timeoutMs);
      this._resumeWaiters.push(w);
    });
  }

  /**
   * Sends a heartbeat now, whatever the throttle says.
   * @returns {boolean} whether it was sent (false when not connected)
   */
  heartbeat() {
    return this._sendHeartbeat();
  }

  /** Closes the channel for good and removes the page listeners. */
  close() {
    this.connectionState = "closed";
    clearTimeout(this._retryTimer ?? undefined);
    clearTimeout(this._hbTimer ?? undefined);
    clearTimeout(this._refreshTimer ?? undefined);
    if (this._doc) {
      for (const ev of this.options.inputEvents ?? DEFAULT_INPUT_EVENTS) {
        this._doc.removeEventListener(ev, this._onInput, { capture: true });
      }
      this._doc.removeEventListener("visibilitychange", this._onVisibility);
    }
    const ws = this._ws;
    this._ws = null;
    if (ws) ws.close(1000, "closed by the page");
    this._failResumes("sandman: closed");
    this._emit("connection", { state: "closed", attempt: this.attempt });
  }

  // --- internals ---

  /**
   * @param {string} type
   * @param {unknown} detail
   */
  _emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  _visible() {
    return !this._doc || this._doc.visibilityState !== "hidden";
  }

  _wsURL() {
    const base = globalThis.location?.href;
    const u = base ? new URL(this.url, base) : new URL(this.url);
    if (u.protocol === "http:") u.protocol = "ws:";
    if (u.protocol === "https:") u.protocol = "wss:";
    u.searchParams.set("token", this.token);
    return u.toString();
  }

  _open() {
    if (this.connectionState === "closed") return;
    this.connectionState = "connecting";
    this._emit("connection", { state: "connecting", attempt: this.attempt });
    this._opened = false;
    let ws;
    try {
      ws = new this._WS(this._wsURL());
    } catch (error) {
      this._emit("error", { message: "sandman: cannot open the channel", error });
      this._scheduleReconnect(false);
      return;
    }
    this._ws = ws;
    ws.onopen = () => {
      if (this._ws !== ws) return;
      this._opened = true;
      this.attempt = 0;
      this.connectionState = "open";
      this._emit("connection", { state: "open", attempt: 0 });
      // The current status: the server answers with one push. Saying the
      // page is visible lets a paused session that resumes on return wake
      // now, before the first click (docs/WAKE.md "Resume on return").
      this._send({ action: "hello", visible: this._visible() });
      // The server counts a new connection as a visible client; say so only
      // when the page is hidden, or when input arrived while disconnected.
      // (A heartbeat is activity; an open connection alone is not, DESIGN.md
      // "Activity and idle", so reconnects do not bump the idle deadline.)
      if (!this._visible() || this._pendingInput) this._sendHeartbeat();
    };
    ws.onmessage = (ev) => {
      if (this._ws !== ws) return;
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (error) {
        this._emit("error", { message: "sandman: message is not JSON", error });
        return;
      }
      if (msg && msg.type === "session" && msg.session) {
        this.status = msg.session;
        this._emit("session", msg.session);
        if (msg.session.state === "running") {
          const ws2 = this._resumeWaiters;
          this._resumeWaiters = [];
          ws2.forEach((w) => w.resolve());
        }
      }
    };
    ws.onclose = () => {
      if (this._ws !== ws) return;
      this._ws = null;
      clearTimeout(this._hbTimer ?? undefined);
      this._hbTimer = null;
      this._failResumes("sandman: the channel closed");
      this._scheduleReconnect(this._opened);
    };
    ws.onerror = () => {}; // a close always follows
  }

  /** @param {string} message */
  _failResumes(message) {
    const ws = this._resumeWaiters;
    this._resumeWaiters = [];
    ws.forEach((w) => w.reject(new Error(message)));
  }

  /** @param {boolean} wasOpen */
  _scheduleReconnect(wasOpen) {
    if (this.connectionState === "closed") return;
    // Capped exponential backoff with jitter: the cap doubles per failed
    // attempt, the delay is uniform in [cap/2, cap).
    const cap = Math.min(this._max, this._base * 2 ** this.attempt);
    const delayMs = Math.round(cap / 2 + (cap / 2) * this._random());
    this.attempt++;
    this.connectionState = "reconnecting";
    this._emit("connection", { state: "reconnecting", attempt: this.attempt, delayMs });
    // A connect that never opened was refused (or the network is down): the
    // browser cannot tell a 401 apart, so fetch a fresh token first.
    const refresh = !wasOpen && this.options.onTokenExpired ? this._refresh("refused") : Promise.resolve();
    this._retryTimer = setTimeout(() => {
      this._retryTimer = null;
      refresh.finally(() => this._open());
    }, delayMs);
  }

  _armRefresh() {
    clearTimeout(this._refreshTimer ?? undefined);
    this._refreshTimer = null;
    if (this.expiresAt == null || !this.options.onTokenExpired) return;
    const wait = Math.max(0, this.expiresAt - this._refreshBefore - Date.now());
    // setTimeout fires at once for delays over 2^31-1 ms (24.8 days): wait
    // in steps and look again.
    if (wait > MAX_TIMER_MS) {
      this._refreshTimer = setTimeout(() => this._armRefresh(), MAX_TIMER_MS);
      return;
    }
    this._refreshTimer = setTimeout(() => {
      this._refreshTimer = null;
      this._refresh("expiring");
    }, wait);
  }

  /** @param {"expiring"|"refused"} reason */
  _refresh(reason) {
    if (this._refreshing) return this._refreshing;
    const cb = this.options.onTokenExpired;
    if (!cb) return Promise.resolve();
    this._refreshing = (async () => {
      try {
        const a = await cb(reason);
        const ans = typeof a === "string" ? { token: a } : a;
        if (!ans || !ans.token) throw new Error("onTokenExpired returned no token");
        this.token = ans.token;
        if (ans.ws_url) this.url = ans.ws_url;
        this.expiresAt = toMillis(ans.expires_at);
        this._emit("token", { reason });
        this._armRefresh();
      } catch (error) {
        this._emit("error", { message: "sandman: token refresh failed", error });
      } finally {
        this._refreshing = null;
      }
    })();
    return this._refreshing;
  }

  /** @param {object} obj */
  _send(obj) {
    const ws = this._ws;
    if (!ws || !this._opened || ws.readyState !== 1) return false;
    ws.send(JSON.stringify(obj));
    return true;
  }

  _sendHeartbeat() {
    const visible = this._visible();
    if (!this._send({ action: "heartbeat", visible })) return false;
    this._lastHeartbeat = Date.now();
    this._lastVisible = visible;
    this._pendingInput = false;
    clearTimeout(this._hbTimer ?? undefined);
    this._hbTimer = null;
    return true;
  }

  // User input: a heartbeat at most once per interval; input inside the
  // interval is sent once when the interval ends (so the server's record is
  // never more than one interval stale).
  _input() {
    if (!this._visible()) return;
    const since = Date.now() - this._lastHeartbeat;
    if (since >= this._hbInterval) {
      // Not connected: remember it; the next open sends it.
      if (!this._sendHeartbeat()) this._pendingInput = true;
      return;
    }
    if (this._pendingInput) return;
    this._pendingInput = true;
    this._hbTimer = setTimeout(() => {
      this._hbTimer = null;
      if (this._pendingInput) this._sendHeartbeat();
    }, this._hbInterval - since);
  }

  // Visibility: a change is presence, so it is sent at once; the same
  // visibility again counts as input.
  _visibility() {
    if (this._visible() === this._lastVisible) {
      this._input();
      return;
    }
    this._sendHeartbeat();
  }
}

/**
 * Opens the client channel of one session.
 * @param {ConnectOptions} opts
 * @returns {SandmanSession}
 */
export function connect(opts) {
  return new SandmanSession(opts);
}

/**
 * @param {string|number|Date|null|undefined} v
 * @returns {number|null}
 */
function toMillis(v) {
  if (v == null || v === "") return null;
  if (v instanceof Date) return v.getTime();
  if (typeof v === "number") return v;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
}
