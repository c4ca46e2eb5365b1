// Package providerhook serves POST /v1/webhooks/{provider} (routes.Webhook):
// the providers' hooks coming in, as opposed to the customers' webhooks going
// out (internal/delivery). It takes a provider's signed lifecycle webhook as
// an API Gateway HTTP API (payload v2) request, checks it, and hands the
// parsed event to
// lifecycle.Service.ApplyProviderEvent, which owns every rule about what the
// event does to a session (docs/DESIGN.md "Webhooks": timestamp ordering, dedupe
// on the event id, unknown sandboxes acknowledged). This package only
// decides whether a request is a genuine, well-formed event.
//
// # Order of checks
//
// A request is refused at the first check it fails, and nothing past that
// check runs:
//
//  1. Size: a body over the limit (Config.MaxBodyBytes, default
//     DefaultMaxBodyBytes, 256 KiB, after base64 decoding) answers 413 too_large.
//  2. Transport decoding: when API Gateway set isBase64Encoded the body is
//     decoded to the raw bytes the provider sent; invalid base64 answers
//     400 invalid. Everything below sees only the raw bytes.
//  3. Provider: the {provider} path parameter picks a Format by its Name;
//     an unknown one answers 404 not_found.
//  4. Signature: Format.Verify checks the signature over the raw bytes, in
//     constant time, before anything parses them. A missing or bad
//     signature, or a missing or unsupported signature version, answers
//     401 unauthorized.
//  5. Parse: Format.Parse turns the bytes into a lifecycle.ProviderEvent; a
//     malformed body answers 400 invalid. A well-formed event of a kind
//     Sandman does not use (E2B: sandbox.lifecycle.checkpointed, or a type
//     added later; ErrIgnored) answers 200 {"status":"ok","outcome":
//     "ignored"} and changes nothing, so the provider does not retry it.
//  6. Apply: lifecycle.Service.ApplyProviderEvent, bounded by the request
//     timeout (29 s by default, under API Gateway's 30 s). Every outcome
//     (applied, recorded, stale, duplicate, unknown_sandbox) answers
//     200 {"status":"ok","outcome":"<outcome>"}: the provider has delivered
//     the event and must not retry it. The outcome deferred (the session is
//     mid-operation: create, pause or resume) answers 503 unavailable with
//     Retry-After instead, so the provider delivers it again once the
//     operation has settled. A store failure (or a panic) answers
//     500 internal, and a lost race or timeout 503 unavailable with
//     Retry-After (5 s by default), so the provider retries; the timestamp
//     and dedupe rules make the retry safe.
//
// Answers are built by httpapi.Responder, as the API's are: the envelope
// {"status":"error","error":"...","error_type":"..."}, the status table
// httpapi.StatusFor, Retry-After in whole seconds, and the same CORS and
// Cache-Control headers. No API key is asked for: the signature is the
// authentication, so a 401 carries no WWW-Authenticate challenge. Header
// names are matched case-insensitively.
//
// # Provider names
//
// A Format has two names. Name is the path segment it answers on
// ("/v1/webhooks/e2b"); the event it parses is stamped with the provider
// name sessions are stored with (lifecycle.Session.Provider), because
// ApplyProviderEvent finds the session by (provider, sandbox id). They
// differ for the local stack: the local process provider sends E2B-format
// webhooks to /v1/webhooks/e2b, but its sessions are stored with provider
// "local", so it runs NewE2B("local", secret). In AWS the E2B format
// stamps "e2b". Formats picks the enabled providers' formats from their
// declarations. Adding a provider's format is one more Format here (its wire
// details in internal/provider/hookwire) and a case in Formats; the rules do
// not change.
//
// # Logging
//
// Every request that reaches step 6 logs one line "webhook" with the
// outcome, event_id, provider, sandbox_id, type, event timestamp and the
// session the event names (sandman_session_id in E2B's sandbox metadata,
// when present); unknown_sandbox is logged at warn, a store failure at
// error. Refused requests log at warn with the reason but never the body.
//
// # Fixtures
//
// events/webhooks holds signed sample deliveries (see its README.md). The
// package's tests generate them, check that they verify and deliver them;
// `go generate ./internal/providerhook/` rewrites them and the fuzz seed corpus.
//
//go:generate go test . -run ^Test(Daytona)?Fixtures$ -update
package providerhook
