// Package routes is the one route table of Sandman's HTTP API (docs/DESIGN.md
// "HTTP API"). The CDK stack (infra/) creates these API Gateway routes and
// the local stack's API Gateway v2 adapter routes by the same table, so the
// two cannot drift.
package routes

// Function names: one Lambda each, built from functions/<name>, named for
// what it runs. A function's CDK construct ids are pinned in infra
// (functionConstructIDs), so renaming one here replaces no deployed
// resource.
const (
	Sessions = "sessions"
	Status   = "status"
	Resume   = "resume"
	// Pause serves POST /v1/sessions/{id}/pause (and its alias
	// …/snapshot): pause now.
	Pause     = "pause"
	Reconnect = "reconnect"
	Webhook   = "webhook"
	// Sweep is invoked by the EventBridge schedule (ScheduleExpression)
	// and fed by the pool refill queue; it runs the sweep (internal/sweep,
	// docs/DESIGN.md "Idle pause").
	Sweep = "sweep"
	// Publisher is invoked by the table's DynamoDB stream; it publishes
	// lifecycle events (internal/outbox).
	Publisher = "publisher"
	// Timer is fed by the timer queue (SQS); it fires pause timers
	// (internal/timer/sqstimer, docs/DESIGN.md "Precise pausing").
	Timer = "timer"
	// Readiness is fed by the readiness queue (SQS); it brings a session's
	// app up and records its readiness (internal/readiness/sqsjobs,
	// docs/READINESS.md).
	Readiness = "readiness"
	// Channel serves the WebSocket API's $connect, $disconnect and
	// $default (internal/channel, docs/DESIGN.md "Client channel").
	Channel = "channel"
	// Notifier is invoked by an EventBridge rule with each lifecycle event;
	// it pushes the session's status to its WebSocket connections
	// (channel.Notifier.HandleEvent).
	Notifier = "notifier"
	// Deliver is fed by the webhook delivery queue (SQS), which an
	// EventBridge rule on the bus fills with lifecycle events; it sends
	// the accounts' signed webhooks (internal/delivery/sqsqueue,
	// docs/WEBHOOKS.md).
	Deliver = "deliver"
	// Checkpoint is fed by the checkpoint queue (SQS); it runs checkpoint
	// jobs, the saves, restores, forks and deletes of checkpoints
	// (internal/checkpoint/sqscheckpoint, docs/CHECKPOINTS.md "Jobs").
	Checkpoint = "checkpoint"
)

// Functions lists every Lambda function: HTTP, scheduled, stream, queue,
// WebSocket and bus.
var Functions = []string{Sessions, Status, Resume, Pause, Reconnect, Webhook, Sweep, Publisher, Timer, Readiness, Channel, Notifier, Deliver,
	Checkpoint}

// Route is one API Gateway route: Key is the route key as API Gateway writes
// it ("POST /v1/sessions/{id}/resume"), Function the Lambda that serves it.
type Route struct {
	Method   string
	Path     string
	Function string
}

// Key returns the API Gateway route key, "METHOD /path".
func (r Route) Key() string { return r.Method + " " + r.Path }

// Table lists every HTTP route. Path parameters use API Gateway's {name}.
var Table = []Route{
	{"POST", "/v1/sessions", Sessions},
	{"GET", "/v1/sessions", Sessions},
	{"GET", "/v1/sessions/{id}", Sessions},
	{"DELETE", "/v1/sessions/{id}", Sessions},
	{"POST", "/v1/sessions/{id}/activity", Sessions},
	{"GET", "/v1/sessions/{id}/status", Status},
	{"POST", "/v1/sessions/{id}/resume", Resume},
	{"GET", OpenPath, Resume},
	{"GET", OpenPath + "/{path+}", Resume},
	// The alias before the route it names: the stack builds a function's
	// API Gateway integration under its first route, and the pause
	// function's was built under …/snapshot (infra pins the ids).
	{"POST", "/v1/sessions/{id}/snapshot", Pause},
	{"POST", "/v1/sessions/{id}/pause", Pause},
	{"GET", "/v1/sessions/{id}/reconnect", Reconnect},
	{"GET", "/v1/sessions/{id}/diagnose", Sessions},
	{"POST", CheckpointsPath, Sessions},
	{"GET", CheckpointsPath, Sessions},
	{"GET", CheckpointsPath + "/{checkpoint_id}", Sessions},
	{"DELETE", CheckpointsPath + "/{checkpoint_id}", Sessions},
	{"POST", "/v1/sessions/{id}/restore", Sessions},
	{"POST", "/v1/sessions/{id}/fork", Sessions},
	{"GET", "/v1/sessions/{id}/events", Sessions},
	{"GET", UsagePath, Sessions},
	{"GET", PoolsPath, Sessions},
	{"POST", ClientTokensPath, Sessions},
	{"POST", "/v1/webhooks/{provider}", Webhook},
	{"GET", OpenAPIPath, Sessions},
	{"GET", ClientScriptPath, Sessions},
	{"POST", WebhookEndpointsPath, Sessions},
	{"GET", WebhookEndpointsPath, Sessions},
	{"GET", WebhookEndpointsPath + "/{id}", Sessions},
	{"PATCH", WebhookEndpointsPath + "/{id}", Sessions},
	{"DELETE", WebhookEndpointsPath + "/{id}", Sessions},
	{"POST", WebhookEndpointsPath + "/{id}/rotate-secret", Sessions},
	{"GET", WebhookEndpointsPath + "/{id}/deliveries", Sessions},
	{"POST", WebhookEndpointsPath + "/{id}/deliveries/{delivery_id}/retry", Sessions},
}

// Aliases maps each route kept under a former name to the route it is: the
// same function, handler and answer, documented as an alias in
// docs/openapi.json. POST …/snapshot is pause's former name, which existing
// callers use; "snapshot" is left to mean a saved state.
var Aliases = map[string]string{
	"POST /v1/sessions/{id}/snapshot": "POST /v1/sessions/{id}/pause",
}

// CheckpointsPath is the root of a session's checkpoints
// (docs/CHECKPOINTS.md), served by the sessions function with restore and
// fork: they write the table and queue a job (the checkpoint function in
// AWS runs it).
const CheckpointsPath = "/v1/sessions/{id}/checkpoints"

// WebhookEndpointsPath is the root of an account's outbound webhook
// endpoints and their delivery logs (docs/WEBHOOKS.md), served by the
// sessions function.
const WebhookEndpointsPath = "/v1/webhook-endpoints"

// OpenAPIPath is the path of the API's OpenAPI 3.1 document (docs/DESIGN.md
// "Operators"; internal/openapi), served by the sessions function.
const OpenAPIPath = "/v1/openapi.json"

// ClientScriptPath serves the browser client module sandman.js (docs/WAKE.md
// "The waking page", docs/DESIGN.md "Client channel") beside the API, to
// anyone, so the stable link's waking page (and an app) can import it from
// the API's own origin in AWS as locally. Served by the sessions function.
const ClientScriptPath = "/v1/sandman.js"

// UsagePath is the route of an account's usage and estimated cost
// (docs/DESIGN.md "Operators"), served by the sessions function.
const UsagePath = "/v1/usage"

// PoolsPath lists the deployment's warm pools (docs/POOLS.md), served by
// the sessions function.
const PoolsPath = "/v1/pools"

// OpenPath is a session's stable link (docs/WAKE.md), served by the resume
// function; OpenPath+"/{path+}" passes a path on to the preview. It also
// takes its client token as ?token= (an iframe or a new tab sends no
// header).
const OpenPath = "/v1/sessions/{id}/open"

// How a route authenticates its caller (Route.Auth).
const (
	AuthAPIKey    = "api_key"   // exactly one of Authorization: Bearer <key> or x-api-key
	AuthSignature = "signature" // the provider's webhook signature over the raw body
	AuthNone      = "none"      // anyone: the OpenAPI document and the client script
)

// Auth returns how the route authenticates its caller: AuthSignature for
// the webhook function's routes, AuthNone for the OpenAPI document and the
// client script (ClientScriptPath), AuthAPIKey for every other route. The OpenAPI document's security
// requirements must agree (a test in internal/openapi checks it).
func (r Route) Auth() string {
	switch {
	case r.Function == Webhook:
		return AuthSignature
	case r.Method == "GET" && (r.Path == OpenAPIPath || r.Path == ClientScriptPath):
		return AuthNone
	default:
		return AuthAPIKey
	}
}

// ClientTokensPath is the route that mints a session-scoped client token
// (docs/DESIGN.md "Client channel"), served by the sessions function.
const ClientTokensPath = "/v1/sessions/{id}/client-tokens"

// AcceptsClientToken reports whether the route also takes a client token
// (internal/clienttoken) as "Authorization: Bearer": that session's status,
// activity, resume and stable link (OpenPath), and nothing else (docs/DESIGN.md "Client channel").
func (r Route) AcceptsClientToken() bool {
	switch r.Key() {
	case "GET /v1/sessions/{id}/status", "POST /v1/sessions/{id}/activity", "POST /v1/sessions/{id}/resume",
		"GET " + OpenPath, "GET " + OpenPath + "/{path+}":
		return true
	}
	return false
}

// AcceptsQueryToken reports whether the route also takes its client token
// as ?token=: only the stable link's (OpenPath), which an iframe or a new
// tab opens without headers (docs/WAKE.md).
func (r Route) AcceptsQueryToken() bool {
	return r.Method == "GET" && (r.Path == OpenPath || r.Path == OpenPath+"/{path+}")
}

// ScheduleExpression is the EventBridge schedule that invokes Sweep.
const ScheduleExpression = "rate(5 minutes)"
