"""The routes of docs/openapi.json the SDK calls, written once.

The drift test (tests/test_drift.py) fails when the document has a route,
or a query parameter, header or request field of one, that the SDK lacks.

``retry`` says what the SDK may repeat on its own:

- ``key``: the call carries an Idempotency-Key, generated once per call and
  sent again on every retry, so the API does it once;
- ``safe``: doing it twice is the same as once (reads, and the writes the
  API makes idempotent: pause, resume, delete, activity, a PATCH);
- ``unsafe``: a second time makes a second thing (a webhook endpoint, a new
  secret), so only a 429, which the API answers before acting, is retried.

``kind="link"`` routes are not called: the SDK builds their URL for a
browser (``sessions.open_url``). ``sdk`` names the methods that call the
route; the drift test checks their keyword arguments against the request
body's fields. A new route is one entry here and one method on its
resource.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    retry: str  # "key", "safe" or "unsafe"
    sdk: tuple[str, ...]
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    kind: str | None = None
    # Query parameters only Sandman's own pages add (the waking page's
    # reopen=1, which is never activity); the SDK never builds them.
    page_query: tuple[str, ...] = ()


ROUTES: dict[str, Route] = {
    "createSession": Route("POST", "/v1/sessions", "key", ("sessions.create",), headers=("Idempotency-Key",)),
    "listSessions": Route(
        "GET", "/v1/sessions", "safe", ("sessions.list", "sessions.list_page"),
        query=("limit", "cursor", "order", "state", "provider", "template", "metadata"),
    ),
    "getSession": Route("GET", "/v1/sessions/{id}", "safe", ("sessions.get",)),
    "deleteSession": Route("DELETE", "/v1/sessions/{id}", "safe", ("sessions.delete",), query=("purge",)),
    "sendActivity": Route("POST", "/v1/sessions/{id}/activity", "safe", ("sessions.activity",)),
    "getSessionStatus": Route("GET", "/v1/sessions/{id}/status", "safe", ("sessions.status", "sessions.wait_until_ready")),
    "resumeSession": Route("POST", "/v1/sessions/{id}/resume", "safe", ("sessions.resume",), query=("wait",)),
    "pauseSession": Route("POST", "/v1/sessions/{id}/pause", "safe", ("sessions.pause",)),
    "reconnectSession": Route("GET", "/v1/sessions/{id}/reconnect", "safe", ("sessions.reconnect",)),
    "diagnoseSession": Route("GET", "/v1/sessions/{id}/diagnose", "safe", ("sessions.diagnose",)),
    "listSessionEvents": Route("GET", "/v1/sessions/{id}/events", "safe", ("sessions.events", "sessions.events_page"), query=("limit", "cursor")),
    "openSession": Route("GET", "/v1/sessions/{id}/open", "safe", ("sessions.open_url",), query=("wait", "token"), kind="link", page_query=("reopen",)),
    "openSessionPath": Route("GET", "/v1/sessions/{id}/open/{path}", "safe", ("sessions.open_url",), query=("wait", "token"), kind="link", page_query=("reopen",)),
    "createCheckpoint": Route("POST", "/v1/sessions/{id}/checkpoints", "key", ("checkpoints.create",), headers=("Idempotency-Key",)),
    "listCheckpoints": Route("GET", "/v1/sessions/{id}/checkpoints", "safe", ("checkpoints.list", "checkpoints.list_page"), query=("limit", "cursor")),
    "getCheckpoint": Route(
        "GET", "/v1/sessions/{id}/checkpoints/{checkpoint_id}", "safe", ("checkpoints.get", "checkpoints.wait_until_ready")
    ),
    "deleteCheckpoint": Route("DELETE", "/v1/sessions/{id}/checkpoints/{checkpoint_id}", "safe", ("checkpoints.delete",)),
    "restoreSession": Route("POST", "/v1/sessions/{id}/restore", "key", ("sessions.restore",), headers=("Idempotency-Key",)),
    "forkSession": Route("POST", "/v1/sessions/{id}/fork", "key", ("sessions.fork",), headers=("Idempotency-Key",)),
    "createClientToken": Route("POST", "/v1/sessions/{id}/client-tokens", "safe", ("client_tokens.create",)),
    "getUsage": Route("GET", "/v1/usage", "safe", ("usage.get", "usage.lines"), query=("from", "to", "group_by", "limit", "cursor")),
    "listPools": Route("GET", "/v1/pools", "safe", ("pools.list",)),
    "createWebhookEndpoint": Route("POST", "/v1/webhook-endpoints", "unsafe", ("webhook_endpoints.create",)),
    "listWebhookEndpoints": Route("GET", "/v1/webhook-endpoints", "safe", ("webhook_endpoints.list",)),
    "getWebhookEndpoint": Route("GET", "/v1/webhook-endpoints/{id}", "safe", ("webhook_endpoints.get",)),
    "updateWebhookEndpoint": Route("PATCH", "/v1/webhook-endpoints/{id}", "safe", ("webhook_endpoints.update",)),
    "deleteWebhookEndpoint": Route("DELETE", "/v1/webhook-endpoints/{id}", "safe", ("webhook_endpoints.delete",)),
    "rotateWebhookSecret": Route("POST", "/v1/webhook-endpoints/{id}/rotate-secret", "unsafe", ("webhook_endpoints.rotate_secret",)),
    "listWebhookDeliveries": Route("GET", "/v1/webhook-endpoints/{id}/deliveries", "safe", ("webhook_deliveries.list",), query=("limit", "cursor")),
    "retryWebhookDelivery": Route("POST", "/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/retry", "safe", ("webhook_deliveries.retry",)),
}

#: Routes of the document a backend SDK does not call, and why.
NOT_IN_SDK: dict[str, str] = {
    "POST /v1/webhooks/{provider}": "providers' signed webhooks into Sandman, not a customer's call",
    "GET /v1/sandman.js": "the browser client module, loaded by pages",
    "GET /v1/openapi.json": "the contract itself",
    "POST /v1/sessions/{id}/snapshot": "the alias of POST /v1/sessions/{id}/pause (x-alias-of), kept for older callers; the SDK calls pause",
}
