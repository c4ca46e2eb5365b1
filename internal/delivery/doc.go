// Package delivery sends Sandman's lifecycle events to the customers' own
// HTTPS endpoints (docs/WEBHOOKS.md; docs/DESIGN.md "Webhooks to
// customers"). It is the outbound side; internal/providerhook is the
// inbound one (provider webhooks).
//
// An account registers endpoints (Endpoint, through Service): a URL, the
// event types it wants ("session.paused", …; none: every type) and a
// signing secret ("whsec_" + base64 of 32 random bytes) shown once. Every
// lifecycle event of the account becomes one Delivery per matching endpoint
// (Engine.Accept). A delivery is a POST of the event, signed by the Standard
// Webhooks spec (Sign): "webhook-id" is the event's event_id (stable across
// retries and replays, so receivers dedupe on it), "webhook-timestamp" the
// attempt's Unix seconds and "webhook-signature" "v1,<base64 HMAC-SHA256 of
// id.timestamp.body>", one per secret while a rotation's old secret is still
// valid (24 h), space-separated.
//
// A 2xx answer within 15 s is success; anything else is retried on the
// schedule (DefaultSchedule, SANDMAN_WEBHOOK_RETRY_SCHEDULE), then the
// delivery is failed. An endpoint whose every delivery failed for 5 days
// (DisableAfter) is disabled, with the reason on it. Every attempt is kept
// in the delivery log (status code, latency, at most 1 KiB of the answer)
// for 30 days (LogRetention); a delivery can be replayed (Service.Retry).
//
// Engine runs one attempt at a time and hands the next one to a Dispatcher:
// locally a Local runner (in process, one bounded lane per endpoint so a
// slow endpoint never delays another), in AWS an SQS queue
// (internal/delivery/sqsqueue) consumed by functions/deliver, which waits
// through message delays, never sleeping. A failing endpoint (one attempt
// at a time, one start each FailingGap) and a slow one
// (SlowEndpointConcurrency at once) are capped across every process by
// holds on the endpoint item (Endpoint.Holds); an attempt over the cap
// parks its delivery (park.go): nothing reads or writes it while it waits,
// the attempt that lets go of a hold wakes the next one, and the endpoint's
// watch (a job every WatchEvery) wakes what no attempt does, so a dead
// endpoint's queue costs the table almost nothing while it waits.
//
// Targets are checked twice (Guard): at registration the URL's host must
// resolve only to public addresses (and be https), and at every attempt the
// address actually dialled is checked again, so a DNS answer that changed
// to a private address after registration is refused. Redirects are not
// followed. AllowPrivate (SANDMAN_WEBHOOK_ALLOW_PRIVATE_TARGETS, set by
// make run, never by the stack) allows http and private addresses.
package delivery
