/**
 * @sandmanhq/sdk: Sandman's API for backends (Node 20+, Deno, Bun, edge
 * runtimes; fetch only). Types are generated from docs/openapi.json
 * (src/openapi.ts); routes are listed once in src/routes.ts.
 */
import type { components, operations } from "./openapi.js";
import { SandmanError } from "./errors.js";
import { ROUTES, type Route } from "./routes.js";
import {
  send,
  buildUrl,
  type Call,
  type CallOptions,
  type IdempotentOptions,
  type RetryOptions,
  type TransportConfig,
} from "./transport.js";

export { SandmanError } from "./errors.js";
export { ROUTES, NOT_IN_SDK, API_VERSION, type Route } from "./routes.js";
export type { CallOptions, IdempotentOptions, RetryOptions } from "./transport.js";
export { verifyWebhook, type WebhookEvent } from "./webhooks.js";
export type { components, paths, operations } from "./openapi.js";

type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type SessionState = Schemas["SessionState"];
export type SessionList = Schemas["SessionList"];
export type CreateSessionRequest = Schemas["CreateSessionRequest"];
export type AppRequest = Schemas["AppRequest"];
export type App = Schemas["App"];
export type ActivityRequest = Schemas["ActivityRequest"];
export type Status = Schemas["Status"];
export type Readiness = Schemas["Readiness"];
export type LifecycleEnvelope = Schemas["LifecycleEnvelope"];
export type ResumeResult = Schemas["ResumeResult"];
/** What pause answers. */
export type PauseResult = Schemas["PauseResult"];
export type ReconnectResult = Schemas["ReconnectResult"];
export type Diagnosis = Schemas["Diagnosis"];
export type SessionEvent = Schemas["SessionEvent"];
export type SessionEventList = Schemas["SessionEventList"];
export type ClientTokenRequest = Schemas["ClientTokenRequest"];
export type ClientToken = Schemas["ClientToken"];
export type Usage = Schemas["Usage"];
export type UsageLine = Schemas["UsageLine"];
export type UsageQuery = NonNullable<operations["getUsage"]["parameters"]["query"]>;
export type Pool = Schemas["Pool"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookEndpointRequest = Schemas["WebhookEndpointRequest"];
export type WebhookEventType = Schemas["WebhookEventType"];
export type WebhookDelivery = Schemas["WebhookDelivery"];
export type WebhookDeliveryList = Schemas["WebhookDeliveryList"];
export type ErrorEnvelope = Schemas["Error"];
export type Checkpoint = Schemas["Checkpoint"];
export type CheckpointState = Schemas["CheckpointState"];
export type CheckpointList = Schemas["CheckpointList"];
export type CreateCheckpointRequest = Schemas["CreateCheckpointRequest"];
export type ForkRequest = Schemas["ForkRequest"];

/** new Sandman(options): every field optional. */
export interface SandmanOptions {
  /** The API's base URL; default SANDMAN_URL, else http://127.0.0.1:8080 (make run). */
  baseUrl?: string;
  /** An API key (or a client token, for status, activity and resume); default SANDMAN_API_KEY. */
  apiKey?: string;
  /** One attempt's timeout; default 30 000 ms. */
  timeoutMs?: number;
  /** Retries; defaults in RetryOptions. */
  retry?: RetryOptions;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** The environment variable, where the runtime has process.env (Node, Bun; edge runtimes may not). */
function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name] || undefined;
}

/** The client: one per process is enough (it holds no connection of its own). */
export class Sandman {
  readonly baseUrl: string;
  readonly sessions: Sessions;
  readonly checkpoints: Checkpoints;
  readonly clientTokens: ClientTokens;
  readonly usage: UsageResource;
  readonly pools: Pools;
  readonly webhookEndpoints: WebhookEndpoints;
  readonly webhookDeliveries: WebhookDeliveries;
  /** @internal */
  readonly transport: TransportConfig;

  constructor(options: SandmanOptions = {}) {
    const apiKey = options.apiKey ?? env("SANDMAN_API_KEY");
    if (!apiKey) throw new TypeError("Sandman: no API key (pass apiKey or set SANDMAN_API_KEY)");
    this.baseUrl = (options.baseUrl ?? env("SANDMAN_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("Sandman: no fetch in this runtime (pass options.fetch)");
    this.transport = {
      baseUrl: this.baseUrl,
      apiKey,
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: { maxRetries: 4, baseDelayMs: 250, maxDelayMs: 5_000, deadlineMs: 60_000, ...options.retry },
      fetch: f.bind(globalThis),
    };
    this.sessions = new Sessions(this);
    this.checkpoints = new Checkpoints(this);
    this.clientTokens = new ClientTokens(this);
    this.usage = new UsageResource(this);
    this.pools = new Pools(this);
    this.webhookEndpoints = new WebhookEndpoints(this);
    this.webhookDeliveries = new WebhookDeliveries(this);
  }

  /** @internal One call of a route: its body, or throws SandmanError. */
  async call<T>(route: Route, call: Call = {}): Promise<T> {
    return (await send<T>(this.transport, route, call)).data;
  }
}

abstract class Resource {
  constructor(protected readonly sm: Sandman) {}
}

/** The order of a list by created_at: "desc" newest first (the API's default), "asc" oldest first. */
export type SessionOrder = "asc" | "desc";

/** Options of sessions.list. */
export interface ListSessionsOptions extends CallOptions, SessionFilter {
  /** Page size asked of the API, 1..100; default 20. */
  limit?: number;
  /** Start after this cursor (a previous page's next_cursor, of the same filters and order). */
  cursor?: string;
  /** "asc": oldest first; default newest first. */
  order?: SessionOrder;
}

/** GET /v1/sessions's filters; the API applies them (docs/API.md "Listing sessions"). */
export interface SessionFilter {
  /** Only sessions in this state, or in any of these. */
  state?: SessionState | SessionState[];
  /** Only sessions on this provider. */
  provider?: string;
  /** Only sessions of this template. */
  template?: string;
  /** Only sessions whose metadata holds every one of these pairs (at most 8). */
  metadata?: Record<string, string>;
}

/** A page's place in GET /v1/sessions: its size, cursor and order. */
interface PageQuery {
  limit?: number;
  cursor?: string;
  order?: SessionOrder;
}

/** The query of GET /v1/sessions for a filter, a limit, a cursor and an order. */
function listQuery(q: SessionFilter & PageQuery): Record<string, string | number | undefined> {
  const out: Record<string, string | number | undefined> = {
    limit: q.limit,
    cursor: q.cursor,
    order: q.order,
    state: Array.isArray(q.state) ? q.state.join(",") : q.state,
    provider: q.provider,
    template: q.template,
  };
  for (const [k, v] of Object.entries(q.metadata ?? {})) out[`metadata[${k}]`] = v;
  return out;
}

/** Options of sessions.waitUntilReady. */
export interface WaitOptions {
  /** How long to wait in all; default 60 000 ms. */
  timeoutMs?: number;
  /** First poll interval, doubled up to maxIntervalMs; default 250 ms. */
  intervalMs?: number;
  /** Longest poll interval; default 2 000 ms. */
  maxIntervalMs?: number;
  signal?: AbortSignal;
}

const FINAL_STATES = new Set(["failed", "expired", "killed"]);

/**
 * Whether a status is ready (docs/READINESS.md): running, and either its app
 * answered (readiness "ready") or it has no app (readiness null).
 */
export function isReady(s: Pick<Status, "state" | "readiness">): boolean {
  return s.state === "running" && (s.readiness === "ready" || s.readiness === null);
}

/** Sessions: create, read, list, pause, resume, delete, and what a backend watches. */
export class Sessions extends Resource {
  /** POST /v1/sessions: 201 a new session, or the first one when the Idempotency-Key was seen (24 h). */
  create(body: CreateSessionRequest, options: IdempotentOptions = {}): Promise<Session> {
    return this.sm.call(ROUTES.createSession, { body, idempotencyKey: options.idempotencyKey, options });
  }

  /** GET /v1/sessions/{id}. */
  get(id: string, options?: CallOptions): Promise<Session> {
    return this.sm.call(ROUTES.getSession, { params: { id }, options });
  }

  /**
   * GET /v1/sessions, one page (newest first; order "asc": oldest first),
   * filtered by state, provider, template and metadata when given. A
   * filtered page may be short, even empty, and still have a next_cursor.
   */
  listPage(query: SessionFilter & PageQuery = {}, options?: CallOptions): Promise<SessionList> {
    return this.sm.call(ROUTES.listSessions, { query: listQuery(query), options });
  }

  /** Every session that passes the filters, newest first (order "asc": oldest first), following next_cursor page by page. */
  async *list(options: ListSessionsOptions = {}): AsyncGenerator<Session> {
    const { limit, state, provider, template, metadata, order, ...call } = options;
    let cursor: string | null | undefined = options.cursor;
    do {
      const page = await this.listPage({ limit, state, provider, template, metadata, order, cursor: cursor ?? undefined }, call);
      yield* page.sessions;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /**
   * DELETE /v1/sessions/{id}: the killed session (again 200 when deleted
   * twice). purge also deletes its checkpoints, their snapshots and archives.
   */
  delete(id: string, options: CallOptions & { purge?: boolean } = {}): Promise<Session> {
    return this.sm.call(ROUTES.deleteSession, { params: { id }, query: { purge: options.purge ? "true" : undefined }, options });
  }

  /**
   * POST /v1/sessions/{id}/restore: 202, the session restoring from one of
   * its checkpoints in place (same id, link and client tokens); the old
   * sandbox is killed once the new one runs. A failed restore leaves the
   * session as it was, restore_error saying why. An Idempotency-Key is
   * made for the call (or options.idempotencyKey) and kept across the SDK's
   * retries: a repeat answers that restore (200, replayed) and starts none.
   */
  restore(id: string, checkpoint: string | { checkpointId: string }, options: IdempotentOptions = {}): Promise<Session> {
    const checkpointId = typeof checkpoint === "string" ? checkpoint : checkpoint.checkpointId;
    return this.sm.call(ROUTES.restoreSession, {
      params: { id },
      body: { checkpoint_id: checkpointId },
      idempotencyKey: options.idempotencyKey,
      options,
    });
  }

  /**
   * POST /v1/sessions/{id}/fork: 201, a new session (provisioning,
   * forked_from) made from a checkpoint of this one, or from a fresh one of
   * its current state when body.checkpoint_id is absent.
   */
  fork(id: string, body: ForkRequest = {}, options: IdempotentOptions = {}): Promise<Session> {
    return this.sm.call(ROUTES.forkSession, { params: { id }, body, idempotencyKey: options.idempotencyKey, options });
  }

  /** GET /v1/sessions/{id}/status: state, readiness, the lifecycle envelope; reads the table only. */
  status(id: string, options?: CallOptions): Promise<Status> {
    return this.sm.call(ROUTES.getSessionStatus, { params: { id }, options });
  }

  /** POST /v1/sessions/{id}/activity: a heartbeat (holdSeconds: a busy hold, 60..86400). 409 sandbox_paused when paused. */
  async activity(id: string, body: ActivityRequest = {}, options?: CallOptions): Promise<void> {
    await this.sm.call(ROUTES.sendActivity, { params: { id }, body, options });
  }

  /**
   * POST /v1/sessions/{id}/resume: the session running again, with a fresh
   * preview URL. waitReady holds the answer until the app is ready or
   * failed, at most 25 s.
   */
  resume(id: string, options: CallOptions & { waitReady?: boolean } = {}): Promise<ResumeResult> {
    return this.sm.call(ROUTES.resumeSession, {
      params: { id },
      query: { wait: options.waitReady ? "ready" : undefined },
      body: {},
      options,
    });
  }

  /**
   * Pauses the session now (its sandbox paused, kept for a resume): 200
   * whether it was running or paused: POST /v1/sessions/{id}/pause.
   */
  pause(id: string, options?: CallOptions): Promise<PauseResult> {
    return this.sm.call(ROUTES.pauseSession, { params: { id }, body: {}, options });
  }

  /** GET /v1/sessions/{id}/reconnect: a live probe of the sandbox. */
  reconnect(id: string, options?: CallOptions): Promise<ReconnectResult> {
    return this.sm.call(ROUTES.reconnectSession, { params: { id }, options });
  }

  /** GET /v1/sessions/{id}/diagnose: the table's and the provider's views, a verdict, the last events. */
  diagnose(id: string, options?: CallOptions): Promise<Diagnosis> {
    return this.sm.call(ROUTES.diagnoseSession, { params: { id }, options });
  }

  /** GET /v1/sessions/{id}/events, one page of the session's timeline (newest first). */
  eventsPage(id: string, query: { limit?: number; cursor?: string } = {}, options?: CallOptions): Promise<SessionEventList> {
    return this.sm.call(ROUTES.listSessionEvents, { params: { id }, query, options });
  }

  /**
   * The session's timeline, newest first, following next_cursor page by
   * page: every transition with its reason, actor and duration_ms.
   */
  async *events(id: string, options: CallOptions & { limit?: number; cursor?: string } = {}): AsyncGenerator<SessionEvent> {
    const { limit, ...call } = options;
    let cursor: string | null | undefined = options.cursor;
    do {
      const page = await this.eventsPage(id, { limit, cursor: cursor ?? undefined }, call);
      yield* page.events;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /**
   * The session's stable link for a browser (GET …/open): a redirect to the
   * preview, waking the session first. Pass a client token, since a browser
   * holds no API key; path opens a page under the preview.
   */
  openUrl(id: string, token?: string, options: { path?: string; wait?: boolean } = {}): string {
    const path = options.path?.replace(/^\/+/, "");
    return buildUrl(this.sm.baseUrl, path ? ROUTES.openSessionPath : ROUTES.openSession, {
      params: path ? { id, path } : { id },
      query: { token, wait: options.wait ? "ready" : undefined },
    });
  }

  /**
   * Polls the status, with backoff, until the session is ready (running and
   * its app answering, or running without an app) and returns that status.
   * Throws SandmanError not_ready when the session ends (failed, expired,
   * killed) or its app fails, timeout when timeoutMs passes first.
   */
  async waitUntilReady(id: string, options: WaitOptions = {}): Promise<Status> {
    return pollUntil(this.sm, `session ${id}`, options, (call) => this.status(id, call), (s) => {
      if (isReady(s)) return "ready";
      if (FINAL_STATES.has(s.state) || s.readiness === "failed") {
        return s.readiness === "failed" ? `its app failed${s.readiness_detail ? ": " + s.readiness_detail : ""}` : `it is ${s.state}`;
      }
      return null;
    }, (s) => `state ${s.state}, readiness ${s.readiness}`);
  }
}

/**
 * Polls read with backoff until judge says "ready" (returns what was read),
 * or a sentence why it never will be (throws not_ready), or timeoutMs
 * passes (throws timeout, saying where it stood with where).
 */
async function pollUntil<T>(
  sm: Sandman,
  what: string,
  options: WaitOptions,
  read: (call: CallOptions) => Promise<T>,
  judge: (x: T) => "ready" | string | null,
  where: (x: T) => string,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let interval = options.intervalMs ?? 250;
  const maxInterval = options.maxIntervalMs ?? 2_000;
  for (;;) {
    const left = deadline - Date.now();
    const x = await read({
      signal: options.signal,
      timeoutMs: Math.max(1, Math.min(sm.transport.timeoutMs, left)),
      retry: { deadlineMs: Math.max(1, left) },
    });
    const verdict = judge(x);
    if (verdict === "ready") return x;
    if (verdict !== null) {
      throw new SandmanError({ status: 0, errorType: "not_ready", message: `${what} will not be ready: ${verdict}` });
    }
    if (Date.now() + interval >= deadline) {
      throw new SandmanError({ status: 0, errorType: "timeout", message: `${what} not ready within ${timeoutMs} ms (${where(x)})` });
    }
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(maxInterval, interval * 2);
  }
}

/** A session's checkpoints (docs/CHECKPOINTS.md): saved states to restore or fork. */
export class Checkpoints extends Resource {
  /** POST /v1/sessions/{id}/checkpoints: 202, the checkpoint saving; checkpoint.ready or checkpoint.failed follows. */
  create(sessionId: string, body: CreateCheckpointRequest = {}, options: IdempotentOptions = {}): Promise<Checkpoint> {
    return this.sm.call(ROUTES.createCheckpoint, { params: { id: sessionId }, body, idempotencyKey: options.idempotencyKey, options });
  }
  /** GET /v1/sessions/{id}/checkpoints, one page (newest first). */
  listPage(sessionId: string, query: { limit?: number; cursor?: string } = {}, options?: CallOptions): Promise<CheckpointList> {
    return this.sm.call(ROUTES.listCheckpoints, { params: { id: sessionId }, query, options });
  }
  /** Every checkpoint of the session, newest first, following next_cursor. */
  async *list(sessionId: string, options: CallOptions & { limit?: number } = {}): AsyncGenerator<Checkpoint> {
    const { limit, ...call } = options;
    let cursor: string | undefined;
    do {
      const page = await this.listPage(sessionId, { limit, cursor }, call);
      yield* page.checkpoints;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  get(sessionId: string, checkpointId: string, options?: CallOptions): Promise<Checkpoint> {
    return this.sm.call(ROUTES.getCheckpoint, { params: { id: sessionId, checkpoint_id: checkpointId }, options });
  }
  /** Deletes the checkpoint and its snapshot or archive (409 while it is saving). */
  async delete(sessionId: string, checkpointId: string, options?: CallOptions): Promise<void> {
    await this.sm.call(ROUTES.deleteCheckpoint, { params: { id: sessionId, checkpoint_id: checkpointId }, options });
  }

  /**
   * Polls the checkpoint (GET …/checkpoints/{checkpoint_id}), with backoff,
   * until it is ready to restore or fork, and returns it. Throws
   * SandmanError not_ready as soon as it is failed (its reason says why) or
   * expired, timeout when timeoutMs (default 60 000) passes first.
   */
  async waitUntilReady(sessionId: string, checkpointId: string, options: WaitOptions = {}): Promise<Checkpoint> {
    return pollUntil(this.sm, `checkpoint ${checkpointId}`, options, (call) => this.get(sessionId, checkpointId, call), (c) => {
      if (c.state === "ready") return "ready";
      if (c.state === "failed" || c.state === "expired") return `it is ${c.state}${c.reason ? ": " + c.reason : ""}`;
      return null;
    }, (c) => `state ${c.state}`);
  }
}

/** Client tokens: what a browser holds instead of an API key. */
export class ClientTokens extends Resource {
  /** POST /v1/sessions/{id}/client-tokens: {token, expires_at, ws_url}; ttlSeconds default 900, at most 86400. */
  create(sessionId: string, body: ClientTokenRequest = {}, options?: CallOptions): Promise<ClientToken> {
    return this.sm.call(ROUTES.createClientToken, { params: { id: sessionId }, body, options });
  }
}

/** Usage: running and paused time, pauses, resumes and estimated cost. */
export class UsageResource extends Resource {
  /** GET /v1/usage: one page (per day, or per session and day with group_by "session"). */
  get(query: UsageQuery = {}, options?: CallOptions): Promise<Usage> {
    return this.sm.call(ROUTES.getUsage, { query, options });
  }

  /** Every usage line of the query, following next_cursor. */
  async *lines(query: UsageQuery = {}, options?: CallOptions): AsyncGenerator<UsageLine> {
    let cursor = query.cursor;
    do {
      const page = await this.get({ ...query, cursor }, options);
      yield* page.usage;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
}

/** Warm pools of the deployment. */
export class Pools extends Resource {
  /** GET /v1/pools. */
  async list(options?: CallOptions): Promise<Pool[]> {
    return (await this.sm.call<Schemas["PoolList"]>(ROUTES.listPools, { options })).pools;
  }
}

/** The account's webhook endpoints (docs/WEBHOOKS.md). */
export class WebhookEndpoints extends Resource {
  /** POST /v1/webhook-endpoints: the endpoint with its signing secret (whsec_…), shown once. Not retried but on 429. */
  create(body: WebhookEndpointRequest & { url: string }, options?: CallOptions): Promise<WebhookEndpoint> {
    return this.sm.call(ROUTES.createWebhookEndpoint, { body, options });
  }
  /** GET /v1/webhook-endpoints: oldest first, no secrets. */
  async list(options?: CallOptions): Promise<WebhookEndpoint[]> {
    return (await this.sm.call<Schemas["WebhookEndpointList"]>(ROUTES.listWebhookEndpoints, { options })).webhook_endpoints;
  }
  get(id: string, options?: CallOptions): Promise<WebhookEndpoint> {
    return this.sm.call(ROUTES.getWebhookEndpoint, { params: { id }, options });
  }
  /** PATCH: absent fields unchanged; disabled false re-enables. */
  update(id: string, body: WebhookEndpointRequest, options?: CallOptions): Promise<WebhookEndpoint> {
    return this.sm.call(ROUTES.updateWebhookEndpoint, { params: { id }, body, options });
  }
  async delete(id: string, options?: CallOptions): Promise<void> {
    await this.sm.call(ROUTES.deleteWebhookEndpoint, { params: { id }, options });
  }
  /** A new secret (shown once); the old one keeps signing for 24 h. Not retried but on 429. */
  rotateSecret(id: string, options?: CallOptions): Promise<WebhookEndpoint> {
    return this.sm.call(ROUTES.rotateWebhookSecret, { params: { id }, options });
  }
}

/** An endpoint's delivery log. */
export class WebhookDeliveries extends Resource {
  /** Every delivery of the endpoint, newest first, following next_cursor. */
  async *list(endpointId: string, options: CallOptions & { limit?: number } = {}): AsyncGenerator<WebhookDelivery> {
    const { limit, ...call } = options;
    let cursor: string | undefined;
    do {
      const page: WebhookDeliveryList = await this.sm.call(ROUTES.listWebhookDeliveries, {
        params: { id: endpointId },
        query: { limit, cursor },
        options: call,
      });
      yield* page.deliveries;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }
  /** 202: send the delivery again now, with the same webhook-id. */
  retry(endpointId: string, deliveryId: string, options?: CallOptions): Promise<WebhookDelivery> {
    return this.sm.call(ROUTES.retryWebhookDelivery, { params: { id: endpointId, delivery_id: deliveryId }, options });
  }
}

