import { SandmanError, errorFromResponse } from "./errors.js";
import type { Route } from "./routes.js";

/** How the SDK retries: on 429, on 503 (not sandbox_expired) and on network errors (see Route.retry). */
export interface RetryOptions {
  /** Retries after the first attempt; default 4. 0 turns retries off. */
  maxRetries?: number;
  /** First backoff, doubled each retry, with full jitter in its upper half; default 250 ms. */
  baseDelayMs?: number;
  /** Longest backoff; default 5000 ms. A Retry-After longer than this is still honoured. */
  maxDelayMs?: number;
  /** Total time a call may take, every attempt and wait included; default 60 000 ms. */
  deadlineMs?: number;
}

/** Options every call takes. */
export interface CallOptions {
  /** One attempt's timeout; default the client's timeoutMs (30 000 ms). */
  timeoutMs?: number;
  /** Overrides the client's retry options for this call. */
  retry?: RetryOptions;
  /** Aborts the call (no retry after it). */
  signal?: AbortSignal;
}

/** Options of calls that create: the Idempotency-Key, generated when absent. */
export interface IdempotentOptions extends CallOptions {
  idempotencyKey?: string;
}

export interface TransportConfig {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  retry: Required<RetryOptions>;
  fetch: typeof fetch;
  userAgent?: string;
}

export interface Call {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined | null>;
  body?: unknown;
  idempotencyKey?: string;
  options?: CallOptions;
}

/** What a call gave back: the decoded body (undefined for 204) and the answer's headers. */
export interface Answer<T> {
  data: T;
  status: number;
  headers: Headers;
  attempts: number;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Fills a route's path template; each parameter is percent-encoded except path's slashes. */
export function fillPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined || v === "") throw new TypeError(`missing path parameter ${name}`);
    return name === "path" ? v.split("/").map(encodeURIComponent).join("/") : encodeURIComponent(v);
  });
}

export function buildUrl(base: string, route: Route, call: Pick<Call, "params" | "query">): string {
  let url = base.replace(/\/+$/, "") + fillPath(route.path, call.params);
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(call.query ?? {})) {
    if (v === undefined || v === null) continue;
    // A deepObject parameter travels as name[key]=value (GET /v1/sessions's metadata).
    if (!route.query?.includes(k.replace(/\[.*\]$/, ""))) throw new TypeError(`${route.method} ${route.path} takes no query parameter ${k}`);
    q.set(k, String(v));
  }
  const qs = q.toString();
  if (qs) url += "?" + qs;
  return url;
}

/** Backoff before retry n (1-based): base·2^(n-1) capped, jittered over its upper half. */
export function backoff(n: number, r: Required<RetryOptions>, random = Math.random): number {
  const d = Math.min(r.maxDelayMs, r.baseDelayMs * 2 ** (n - 1));
  return d / 2 + random() * (d / 2);
}

function retryable(route: Route, err: SandmanError): boolean {
  if (err.status === 429) return true; // answered before acting: safe on every route
  if (route.retry === "unsafe") return false;
  if (err.status === 503) return err.errorType !== "sandbox_expired"; // gone stays gone
  return err.status === 0 && (err.errorType === "network" || err.errorType === "timeout");
}

/** Sends one call with the SDK's retries, timeouts and Idempotency-Key. */
export async function send<T>(cfg: TransportConfig, route: Route, call: Call): Promise<Answer<T>> {
  const opts = call.options ?? {};
  const retry = { ...cfg.retry, ...opts.retry };
  const timeoutMs = opts.timeoutMs ?? cfg.timeoutMs;
  const url = buildUrl(cfg.baseUrl, route, call);
  const deadline = Date.now() + retry.deadlineMs;
  const headers: Record<string, string> = { authorization: "Bearer " + cfg.apiKey, accept: "application/json" };
  if (cfg.userAgent) headers["user-agent"] = cfg.userAgent;
  if (route.retry === "key") headers["idempotency-key"] = call.idempotencyKey ?? crypto.randomUUID();
  let body: string | undefined;
  if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers["content-type"] = "application/json";
  }
  for (let attempt = 1; ; attempt++) {
    const left = deadline - Date.now();
    const ctl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctl.abort();
    }, Math.max(1, Math.min(timeoutMs, left)));
    const onAbort = () => ctl.abort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let err: SandmanError;
    try {
      if (opts.signal?.aborted) throw opts.signal.reason;
      const res = await cfg.fetch(url, { method: route.method, headers, body, signal: ctl.signal, redirect: "manual" });
      if (res.status >= 200 && res.status < 300) {
        const text = await res.text();
        const data = (text === "" ? undefined : JSON.parse(text)) as T;
        return { data, status: res.status, headers: res.headers, attempts: attempt };
      }
      err = await errorFromResponse(res, attempt);
    } catch (e) {
      if (opts.signal?.aborted) {
        throw new SandmanError({ status: 0, errorType: "aborted", message: `${route.method} ${route.path}: aborted`, attempts: attempt, cause: e });
      }
      const what = timedOut ? `no answer within ${Math.min(timeoutMs, left)} ms` : `no answer (${describe(e)})`;
      err = new SandmanError({
        status: 0,
        errorType: timedOut ? "timeout" : "network",
        message: `${route.method} ${route.path}: ${what}`,
        attempts: attempt,
        cause: e,
      });
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    }
    if (attempt > retry.maxRetries || !retryable(route, err)) throw err;
    const wait = err.retryAfter != null ? err.retryAfter * 1000 : backoff(attempt, retry);
    if (Date.now() + wait >= deadline) throw err; // the deadline comes first: answer now
    try {
      await sleep(wait, opts.signal);
    } catch (e) {
      throw new SandmanError({ status: 0, errorType: "aborted", message: `${route.method} ${route.path}: aborted`, attempts: attempt, cause: e });
    }
  }
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const c = (e as { cause?: unknown }).cause;
    const code = c && typeof c === "object" && "code" in c ? String((c as { code: unknown }).code) : "";
    return code ? `${e.message}: ${code}` : e.message;
  }
  return String(e);
}
