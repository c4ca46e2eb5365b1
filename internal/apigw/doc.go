// Package apigw is Sandman's HTTP edge: it turns API Gateway HTTP API
// (payload version 2.0) requests into calls of lifecycle.Service and the
// results into JSON responses. One Handler serves the routes of one Lambda
// function (routes.Table); the local stack's API Gateway adapter calls the
// same handlers.
//
// The edge parses, validates, authenticates and maps; the lifecycle rules
// live in internal/lifecycle. Decisions made here (docs/DESIGN.md "HTTP API" is
// silent on them):
//
//   - Routing is by event.RouteKey ("POST /v1/sessions/{id}/resume"). A
//     route key this function does not serve answers 404 not_found. Any
//     OPTIONS request answers 204 with the CORS headers, without an API key.
//   - Auth: exactly one of "Authorization: Bearer <key>" or "x-api-key: <key>"
//     (header names case-insensitive). Both, neither, a malformed bearer or
//     an unknown key answer 401 unauthorized with WWW-Authenticate: Bearer.
//     Keys are looked up by the lowercase hex SHA-256 of the secret
//     (HashAPIKey); NewAPIKey mints one.
//   - A path id that is not "ses_" + 26 lowercase base32 characters answers
//     404 not_found ("no session ..."), exactly as an unknown id would: it
//     cannot name a session, and the store is not asked.
//   - Bodies: at most MaxBodyBytes (64 KiB) after base64 decoding, else 413
//     too_large. A body must be one JSON object; unknown fields (matched
//     exactly, case-sensitively), wrong types and trailing data answer 400
//     invalid with a sentence naming the field. Routes without a body accept
//     an empty body or an empty object. Content-Type is not checked (the
//     body is parsed as JSON whatever it says). Query parameters other than
//     the documented ones are ignored.
//   - Responses are JSON in snake_case built from this package's response
//     structs (never the domain types). Times are RFC 3339 UTC strings with
//     up to nanosecond precision; a zero time is null, as is an empty
//     sandbox_id or preview_url. Metadata is always an object.
//   - POST /v1/sessions answers 201 with a Location header, or 200 with
//     Idempotent-Replayed: true when the Idempotency-Key was seen before.
//   - DELETE /v1/sessions/{id} answers 200 with the killed session; deleting
//     a killed session answers the same 200 again.
//   - POST /v1/sessions/{id}/activity answers 204 without a body.
//   - GET /v1/sessions/{id}/reconnect answers 200 for every probe outcome
//     (connected, paused, expired, no_sandbox, unreachable): the probe
//     worked, its finding is the body, and "unreachable" carries no
//     Retry-After. Errors are only not_found, forbidden and unauthorized.
//   - Errors use the envelope {"status":"error","error":"<sentence>",
//     "error_type":"<type>"} and one table from lifecycle.Code to status
//     (internal/httpapi.StatusFor). A *lifecycle.Error with a RetryAfter adds Retry-After in
//     whole seconds, rounded up. Anything that is not a *lifecycle.Error
//     answers 500 internal with a generic sentence and the request id; the
//     detail goes to the log only. A 401 adds WWW-Authenticate: Bearer.
//   - Every response, errors included, carries the CORS headers
//     (Access-Control-Allow-Origin from Config.AllowOrigin, default "*") and
//     Cache-Control: no-store.
//   - httpapi.Responder builds every response above (JSON for answers,
//     Error for the envelope); the provider hook function
//     (internal/providerhook) answers through it too, so the two edges
//     cannot drift apart.
//   - Each request writes one access log line ("request") with the route,
//     method, path, status, duration_ms, account_id and, on errors,
//     error_type; the request id (requestContext.requestId) is attached to
//     every log line written under the request's context when the logger's
//     handler is wrapped with httpapi.NewLogHandler.
package apigw
