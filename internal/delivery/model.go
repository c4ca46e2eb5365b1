package delivery

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Rules of docs/WEBHOOKS.md.
const (
	// RotationOverlap is how long a rotated-out secret still signs: both
	// secrets sign every delivery for 24 h after a rotation.
	RotationOverlap = 24 * time.Hour
	// MaxRetiredSecrets bounds the rotated-out secrets still signing (ours:
	// a delivery carries at most 1 + this many signatures).
	MaxRetiredSecrets = 4
	// DisableAfter: an endpoint whose every delivery failed for this long
	// (5 days) is disabled.
	DisableAfter = 5 * 24 * time.Hour
	// LogRetention is how long a delivery stays in the log (30 days; a
	// DynamoDB TTL in the table).
	LogRetention = 30 * 24 * time.Hour
	// AttemptTimeout: an answer later than 15 s is a failure.
	AttemptTimeout = 15 * time.Second
	// WatchEvery is how often an endpoint's watch looks at the deliveries
	// parked on it (ours; Engine.Attempt parks an attempt over its
	// endpoint's cap, Endpoint.AttemptCap): the attempt that lets go of a
	// hold wakes the next parked delivery at once, the watch is what wakes
	// them when no attempt does (its holder crashed, the endpoint was
	// changed, deleted or disabled). A parked delivery is not read while
	// it waits.
	WatchEvery = time.Minute
	// WakeBatch is how many parked deliveries one wake dispatches at most
	// (ours): an endpoint that turns healthy with more parked has its watch
	// run again at once for the next batch.
	WakeBatch = 100
	// FailingGap is the least time between the starts of two attempts to
	// a failing endpoint (ours; DefaultSchedule's shortest retry wait; a
	// schedule with a shorter one shortens it to that): one that refuses
	// at once gets at most 12 attempts a minute, however many deliveries
	// wait for it.
	FailingGap = 5 * time.Second
	// SlowAnswer: an attempt answered after this long (5 s, a third of
	// AttemptTimeout) marks its endpoint slow (ours).
	SlowAnswer = 5 * time.Second
	// SlowEndpointConcurrency bounds the attempts under way at once to a
	// slow endpoint, across every process (ours, as Local's
	// DefaultPerEndpoint): a healthy endpoint that answers in 14 s takes 4
	// of the deliver function's 100 attempts in flight, not all of them.
	SlowEndpointConcurrency = 4
	// MaxResponseBody is how much of an answer's body is kept, in bytes (1 KiB).
	MaxResponseBody = 1 << 10
	// MaxEndpointsPerAccount bounds an account's endpoints (ours: every
	// event reads them all).
	MaxEndpointsPerAccount = 20
	// MaxAttemptsPerDelivery bounds a delivery's attempts, replays
	// included (ours: keeps a logged delivery well under DynamoDB's 400 KB
	// item limit).
	MaxAttemptsPerDelivery = 100
	// MaxURLLength bounds an endpoint URL, in bytes.
	MaxURLLength = 2048
	// MaxDescriptionLength bounds an endpoint description, in bytes.
	MaxDescriptionLength = 512
)

// Delivery statuses.
const (
	StatusPending   = "pending"   // an attempt is due or under way
	StatusSucceeded = "succeeded" // an attempt got a 2xx
	StatusFailed    = "failed"    // the schedule ran out, or the endpoint is gone or disabled
)

// EventTypes lists the event types an endpoint may subscribe to: the
// lowercase dotted form of every lifecycle detail type (EventType).
var EventTypes = []string{
	"session.provisioning", "session.running", "session.pausing", "session.paused",
	"session.resuming", "session.restoring", "session.archived", "session.deleted", "session.expired", "session.killed", "session.failed",
	"session.ready", "session.not_ready",
	"checkpoint.ready", "checkpoint.failed",
}

// EventType returns the event type of ev: its EventBridge detail type in
// lowercase, a dot after the first word and underscores for the other
// spaces ("Session Paused" → "session.paused", "Session Not Ready" →
// "session.not_ready", "Checkpoint Ready" → "checkpoint.ready").
func EventType(ev lifecycle.Event) string {
	noun, rest, _ := strings.Cut(strings.ToLower(ev.DetailType()), " ")
	return noun + "." + strings.ReplaceAll(rest, " ", "_")
}

// Endpoint is one account's webhook target.
type Endpoint struct {
	ID          string // "we_" + 26 lowercase base32 characters
	AccountID   string
	URL         string
	Description string
	// EventTypes the endpoint receives; empty: every type.
	EventTypes []string
	// Disabled endpoints get no deliveries; DisabledReason says why
	// ("disabled by request", or the failures that disabled it).
	Disabled       bool
	DisabledReason string
	// Secret signs every delivery ("whsec_…"). Each secret in Retired
	// signs too until its Until (a rotation's overlap).
	Secret string
	// Retired are the secrets rotations replaced that may still sign,
	// newest first, at most MaxRetiredSecrets.
	Retired []RetiredSecret
	// FailingSince is the first failed attempt since the last success;
	// zero while the endpoint is healthy.
	FailingSince time.Time
	// SlowSince is the first attempt since the last quick answer that was
	// answered after SlowAnswer or more (a timeout included); zero while
	// the endpoint answers quickly.
	SlowSince time.Time
	// Holds are the ends of the holds of attempts under way to a capped
	// endpoint (AttemptCap), across every process, and, after a failed
	// attempt, of the FailingGap before the next; one ended is free
	// (Engine.Attempt). Empty while the endpoint is healthy and quick.
	Holds     []time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Version increments on every write; updates are conditional on it.
	Version int64
}

// Wants reports whether e receives events of type typ.
func (e *Endpoint) Wants(typ string) bool {
	return !e.Disabled && (len(e.EventTypes) == 0 || slices.Contains(e.EventTypes, typ))
}

// AttemptCap returns how many attempts may be under way to e at once,
// across every process: 1 while it is failing (one starting at most
// each FailingGap), SlowEndpointConcurrency while it is slow, 0 (no bound but
// the dispatcher's) while it is healthy and quick.
func (e *Endpoint) AttemptCap() int {
	switch {
	case !e.FailingSince.IsZero():
		return 1
	case !e.SlowSince.IsZero():
		return SlowEndpointConcurrency
	}
	return 0
}

// liveHolds returns e's holds that have not ended at now.
func (e *Endpoint) liveHolds(now time.Time) []time.Time {
	var live []time.Time
	for _, h := range e.Holds {
		if now.Before(h) {
			live = append(live, h)
		}
	}
	return live
}

// RetiredSecret is a secret a rotation replaced: it still signs until
// Until (RotationOverlap after that rotation).
type RetiredSecret struct {
	Secret string
	Until  time.Time
}

// Secrets returns the secrets that sign a delivery at now: the current one,
// and each retired one during its overlap.
func (e *Endpoint) Secrets(now time.Time) []string {
	s := []string{e.Secret}
	for _, r := range e.Retired {
		if r.Secret != "" && now.Before(r.Until) {
			s = append(s, r.Secret)
		}
	}
	return s
}

// Rotate makes secret the endpoint's secret at now. The one it replaces
// signs for RotationOverlap more, and so does every earlier one still in
// its own overlap: a rotation repeated because its answer (the new secret,
// shown once) was lost must not cut short the secret the receiver holds.
// At most MaxRetiredSecrets are kept (the oldest go first).
func (e *Endpoint) Rotate(secret string, now time.Time) {
	retired := []RetiredSecret{{Secret: e.Secret, Until: now.Add(RotationOverlap)}}
	for _, r := range e.Retired {
		if now.Before(r.Until) && len(retired) < MaxRetiredSecrets {
			retired = append(retired, r)
		}
	}
	e.Secret, e.Retired = secret, retired
}

// RetiredUntil is when the last retired secret stops signing, zero when
// none signs at now.
func (e *Endpoint) RetiredUntil(now time.Time) time.Time {
	var until time.Time
	for _, r := range e.Retired {
		if now.Before(r.Until) && r.Until.After(until) {
			until = r.Until
		}
	}
	return until
}

// Attempt is one POST of a delivery.
type Attempt struct {
	At         time.Time
	StatusCode int // 0: no answer (Error says why)
	LatencyMS  int64
	Error      string // "" for an answer; else why there was none ("timeout", "refused: …")
	Response   string // at most MaxResponseBody bytes of the answer's body
}

// Succeeded reports whether the attempt got a 2xx.
func (a Attempt) Succeeded() bool { return a.StatusCode >= 200 && a.StatusCode < 300 }

// Delivery is one event to one endpoint, with its attempts.
type Delivery struct {
	// ID is DeliveryID(event time, endpoint id, event id): deliveries of an
	// endpoint sort by event time, and the same event never makes two.
	ID         string
	EndpointID string
	AccountID  string
	EventID    string
	EventType  string
	// Payload is the exact body every attempt sends (the event, JSON).
	Payload  []byte
	Status   string
	Attempts []Attempt
	// RoundStart is the index in Attempts where the current run of the
	// schedule began (a replay starts a new run).
	RoundStart int
	// NextAttemptAt is when the next attempt is due (while one is under
	// way, the end of its claim); zero unless pending.
	NextAttemptAt time.Time
	// Reason says why a failed delivery stopped ("retry schedule
	// exhausted", "attempt limit reached", "endpoint disabled", "endpoint
	// deleted").
	Reason    string
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when the log forgets it: CreatedAt + LogRetention.
	ExpiresAt time.Time
	Version   int64
}

// Job names one delivery whose next attempt is due (a Dispatcher's unit).
type Job struct {
	AccountID  string `json:"account_id"`
	EndpointID string `json:"endpoint_id"`
	DeliveryID string `json:"delivery_id"`
	// Seq is how many attempts the delivery had when the job was made; a
	// job whose Seq no longer matches is stale and dropped, so duplicate
	// jobs (SQS delivers at least once) never make two attempts.
	Seq int `json:"seq"`
	// Watch, when set, makes the job its endpoint's watch instead (no
	// DeliveryID): the watch started at Watch (Store.StartWatch), which
	// wakes the endpoint's parked deliveries (Engine.Attempt).
	Watch time.Time `json:"watch,omitzero"`
}

// Parked is a delivery waiting for its endpoint, at its cap when the
// delivery's attempt came due (Engine.Attempt): the job that found it so
// is dropped, and a wake (the attempt that lets go of a hold, or the
// endpoint's watch) dispatches the delivery again.
type Parked struct {
	EndpointID string
	AccountID  string
	DeliveryID string
	// Seq is the delivery's attempt count when it parked (Job.Seq).
	Seq int
	// ParkedAt tells one parking from another of the same delivery: a wake
	// removes only the one it dispatched (Store.UnparkDelivery).
	ParkedAt time.Time
	// ExpiresAt is the delivery's: the record goes with the log.
	ExpiresAt time.Time
	// WokenAt is when a wake claimed the parking (Store.ClaimParked), zero
	// before; a claim older than WatchEvery is of a wake that crashed.
	WokenAt time.Time
}

// Job returns the job that runs p's delivery again.
func (p *Parked) Job() Job {
	return Job{AccountID: p.AccountID, EndpointID: p.EndpointID, DeliveryID: p.DeliveryID, Seq: p.Seq}
}

// Dispatcher runs a job's attempt (Engine.Attempt) at or soon after at:
// Local in process, sqsqueue through an SQS queue in AWS. Errors: the job
// could not be scheduled (the caller keeps it pending and says so).
type Dispatcher interface {
	Dispatch(ctx context.Context, job Job, at time.Time) error
}

// Store keeps endpoints and deliveries: the sessions table in AWS
// (internal/delivery/dynamostore), memory in tests (memstore). Every write is
// conditional; errors are *lifecycle.Error with the codes named.
type Store interface {
	// CreateEndpoint stores a new endpoint. Errors: conflict when the id
	// exists, or the account has MaxEndpointsPerAccount already.
	CreateEndpoint(ctx context.Context, e *Endpoint) error
	// GetEndpoint returns one endpoint of the account. Errors: not_found.
	GetEndpoint(ctx context.Context, accountID, id string) (*Endpoint, error)
	// ListEndpoints returns the account's endpoints, oldest first.
	ListEndpoints(ctx context.Context, accountID string) ([]*Endpoint, error)
	// UpdateEndpoint replaces e if its stored version is prevVersion.
	// Errors: not_found, conflict (the version moved).
	UpdateEndpoint(ctx context.Context, e *Endpoint, prevVersion int64) error
	// DeleteEndpoint removes the endpoint (its deliveries expire with their
	// TTL). Errors: not_found.
	DeleteEndpoint(ctx context.Context, accountID, id string) error

	// CreateDelivery stores d unless a delivery with its id exists; it
	// reports whether it stored it.
	CreateDelivery(ctx context.Context, d *Delivery) (bool, error)
	// GetDelivery returns one delivery of the endpoint. Errors: not_found
	// (also once it expired).
	GetDelivery(ctx context.Context, endpointID, id string) (*Delivery, error)
	// UpdateDelivery replaces d if its stored version is prevVersion.
	// Errors: not_found, conflict.
	UpdateDelivery(ctx context.Context, d *Delivery, prevVersion int64) error
	// ListDeliveries returns the endpoint's deliveries, newest first, at
	// most limit, and a cursor for the next page ("" at the end).
	// Errors: invalid for a cursor it did not issue.
	ListDeliveries(ctx context.Context, endpointID string, limit int, cursor string) ([]*Delivery, string, error)

	// ParkDelivery records p, replacing the delivery's earlier parking.
	ParkDelivery(ctx context.Context, p *Parked) error
	// ParkedDeliveries returns at most limit of the endpoint's parked
	// deliveries, oldest delivery first (by id: event time), read
	// strongly consistent.
	ParkedDeliveries(ctx context.Context, endpointID string, limit int) ([]*Parked, error)
	// ClaimParked marks p's parking woken at now, if it is still the one
	// stored (same ParkedAt) and no wake claimed it after before; it
	// reports whether it did. Two wakes never dispatch one parking.
	ClaimParked(ctx context.Context, p *Parked, now, before time.Time) (bool, error)
	// UnparkDelivery removes p's parking if it is still the one stored
	// (same ParkedAt); else it does nothing. Not an error when gone.
	UnparkDelivery(ctx context.Context, p *Parked) error
	// StartWatch records that the endpoint's watch started at since,
	// unless a watch is recorded already; it reports whether it recorded
	// this one.
	StartWatch(ctx context.Context, endpointID string, since time.Time) (bool, error)
	// Watching returns when the endpoint's recorded watch started (zero:
	// none), read strongly consistent.
	Watching(ctx context.Context, endpointID string) (time.Time, error)
	// EndWatch removes the endpoint's watch if it is the one started at
	// since; else it does nothing.
	EndWatch(ctx context.Context, endpointID string, since time.Time) error
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewEndpointID returns a new endpoint id: "we_" and 26 lowercase base32
// characters (128 random bits).
func NewEndpointID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "we_" + strings.ToLower(idEncoding.EncodeToString(b))
}

// NewSecret returns a new signing secret: "whsec_" and the base64 of 32
// random bytes (the Standard Webhooks format allows 24 to 64).
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// DeliveryID returns the id of the delivery of event eventID (committed at
// at) to endpoint endpointID: "dlv_", the event time in epoch milliseconds
// as 12 hex digits (so ids sort by event time), and 16 hex digits of
// SHA-256 of the endpoint and event ids (so an event redelivered by the
// outbox makes no second delivery).
func DeliveryID(at time.Time, endpointID, eventID string) string {
	sum := sha256.Sum256([]byte(endpointID + "|" + eventID))
	return fmt.Sprintf("dlv_%012x%s", at.UnixMilli(), hex.EncodeToString(sum[:8]))
}
