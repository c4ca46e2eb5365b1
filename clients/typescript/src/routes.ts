/**
 * The routes of docs/openapi.json the SDK calls, written once. The drift
 * test (test/drift.test.mjs) fails when the document has a route, or a
 * query parameter or header of one, that is neither here nor in NOT_IN_SDK.
 *
 * `retry` says what the SDK may repeat on its own:
 * - "key": the call carries an Idempotency-Key, generated once per call and
 *   sent again on every retry, so the API does it once;
 * - "safe": doing it twice is the same as once (reads, and writes the API
 *   makes idempotent: pause, resume, delete, activity, a PATCH);
 * - "unsafe": a second time makes a second thing (a webhook endpoint, a
 *   new secret), so only a 429, which the API answers before acting, is
 *   retried.
 * `kind: "link"` routes are not called: the SDK builds their URL for a
 * browser (sessions.openUrl).
 *
 * A new route is one entry here and one method on its resource.
 */
export interface Route {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  readonly path: string;
  readonly retry: "key" | "safe" | "unsafe";
  /** Query parameters the SDK sends. */
  readonly query?: readonly string[];
  /** Request headers the SDK sends besides auth and content-type. */
  readonly headers?: readonly string[];
  readonly kind?: "link";
  /** Query parameters only Sandman's own pages add (the waking page's reopen=1, never activity); the SDK never builds them. */
  readonly pageQuery?: readonly string[];
  /** The SDK method that calls it. */
  readonly sdk: string;
}

export const ROUTES = {
  createSession: { method: "POST", path: "/v1/sessions", retry: "key", headers: ["Idempotency-Key"], sdk: "sessions.create" },
  listSessions: { method: "GET", path: "/v1/sessions", retry: "safe", query: ["limit", "cursor", "order", "state", "provider", "template", "metadata"], sdk: "sessions.list, sessions.listPage" },
  getSession: { method: "GET", path: "/v1/sessions/{id}", retry: "safe", sdk: "sessions.get" },
  deleteSession: { method: "DELETE", path: "/v1/sessions/{id}", retry: "safe", query: ["purge"], sdk: "sessions.delete" },
  sendActivity: { method: "POST", path: "/v1/sessions/{id}/activity", retry: "safe", sdk: "sessions.activity" },
  getSessionStatus: { method: "GET", path: "/v1/sessions/{id}/status", retry: "safe", sdk: "sessions.status, sessions.waitUntilReady" },
  resumeSession: { method: "POST", path: "/v1/sessions/{id}/resume", retry: "safe", query: ["wait"], sdk: "sessions.resume" },
  pauseSession: { method: "POST", path: "/v1/sessions/{id}/pause", retry: "safe", sdk: "sessions.pause" },
  reconnectSession: { method: "GET", path: "/v1/sessions/{id}/reconnect", retry: "safe", sdk: "sessions.reconnect" },
  diagnoseSession: { method: "GET", path: "/v1/sessions/{id}/diagnose", retry: "safe", sdk: "sessions.diagnose" },
  listSessionEvents: { method: "GET", path: "/v1/sessions/{id}/events", retry: "safe", query: ["limit", "cursor"], sdk: "sessions.events, sessions.eventsPage" },
  openSession: { method: "GET", path: "/v1/sessions/{id}/open", retry: "safe", query: ["wait", "token"], pageQuery: ["reopen"], kind: "link", sdk: "sessions.openUrl" },
  openSessionPath: { method: "GET", path: "/v1/sessions/{id}/open/{path}", retry: "safe", query: ["wait", "token"], pageQuery: ["reopen"], kind: "link", sdk: "sessions.openUrl" },
  createCheckpoint: { method: "POST", path: "/v1/sessions/{id}/checkpoints", retry: "key", headers: ["Idempotency-Key"], sdk: "checkpoints.create" },
  listCheckpoints: { method: "GET", path: "/v1/sessions/{id}/checkpoints", retry: "safe", query: ["limit", "cursor"], sdk: "checkpoints.list, checkpoints.listPage" },
  getCheckpoint: { method: "GET", path: "/v1/sessions/{id}/checkpoints/{checkpoint_id}", retry: "safe", sdk: "checkpoints.get, checkpoints.waitUntilReady" },
  deleteCheckpoint: { method: "DELETE", path: "/v1/sessions/{id}/checkpoints/{checkpoint_id}", retry: "safe", sdk: "checkpoints.delete" },
  restoreSession: { method: "POST", path: "/v1/sessions/{id}/restore", retry: "key", headers: ["Idempotency-Key"], sdk: "sessions.restore" },
  forkSession: { method: "POST", path: "/v1/sessions/{id}/fork", retry: "key", headers: ["Idempotency-Key"], sdk: "sessions.fork" },
  createClientToken: { method: "POST", path: "/v1/sessions/{id}/client-tokens", retry: "safe", sdk: "clientTokens.create" },
  getUsage: { method: "GET", path: "/v1/usage", retry: "safe", query: ["from", "to", "group_by", "limit", "cursor"], sdk: "usage.get, usage.lines" },
  listPools: { method: "GET", path: "/v1/pools", retry: "safe", sdk: "pools.list" },
  createWebhookEndpoint: { method: "POST", path: "/v1/webhook-endpoints", retry: "unsafe", sdk: "webhookEndpoints.create" },
  listWebhookEndpoints: { method: "GET", path: "/v1/webhook-endpoints", retry: "safe", sdk: "webhookEndpoints.list" },
  getWebhookEndpoint: { method: "GET", path: "/v1/webhook-endpoints/{id}", retry: "safe", sdk: "webhookEndpoints.get" },
  updateWebhookEndpoint: { method: "PATCH", path: "/v1/webhook-endpoints/{id}", retry: "safe", sdk: "webhookEndpoints.update" },
  deleteWebhookEndpoint: { method: "DELETE", path: "/v1/webhook-endpoints/{id}", retry: "safe", sdk: "webhookEndpoints.delete" },
  rotateWebhookSecret: { method: "POST", path: "/v1/webhook-endpoints/{id}/rotate-secret", retry: "unsafe", sdk: "webhookEndpoints.rotateSecret" },
  listWebhookDeliveries: { method: "GET", path: "/v1/webhook-endpoints/{id}/deliveries", retry: "safe", query: ["limit", "cursor"], sdk: "webhookDeliveries.list" },
  retryWebhookDelivery: { method: "POST", path: "/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/retry", retry: "safe", sdk: "webhookDeliveries.retry" },
} as const satisfies Record<string, Route>;

/** Routes of the document a backend SDK does not call, and why. */
export const NOT_IN_SDK: Readonly<Record<string, string>> = {
  "POST /v1/webhooks/{provider}": "providers' signed webhooks into Sandman, not a customer's call",
  "GET /v1/sandman.js": "the browser client module, loaded by pages",
  "GET /v1/openapi.json": "the contract itself; the SDK's types are generated from it",
  "POST /v1/sessions/{id}/snapshot": "the alias of POST /v1/sessions/{id}/pause (x-alias-of), kept for older callers; the SDK calls pause",
};

/** The API version the SDK was written against: docs/openapi.json's info.version, and the package's version. */
export const API_VERSION = "1.0.0";
