// Package daytonahook is Daytona's lifecycle webhook format
// (docs/providers/daytona.md "Lifecycle webhooks"): Svix-signed
// deliveries of flat camelCase JSON bodies, verified and mapped to
// lifecycle.ProviderEvent. Standard library only.
//
// Signature (Svix, "Verifying Webhooks Manually"): the key is the
// base64-decoded secret after its "whsec_" prefix; the signature is
// HMAC-SHA256 over "<id>.<timestamp>.<raw body>" in standard base64; the
// signature header holds space-separated "v1,<base64>" entries (several
// during a secret rotation) and a delivery is valid when any v1 entry
// matches, compared in constant time. The timestamp (Unix seconds) must be
// within Tolerance of now, either way, so a captured delivery cannot be
// replayed later. Daytona does not document whether Svix sends its svix-*
// headers or the branded webhook-* ones, so both are read (svix-* first).
//
// The message id (svix-id) is the same on every retry of a message: it is
// the event's ID, the dedupe key. Delivery is at least once and unordered,
// and the bodies carry no labels, so events are mapped by sandbox id and
// ordered by their time (updatedAt, else timestamp).
package daytonahook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Provider is the provider name parsed events carry.
const Provider = "daytona"

// SecretPrefix starts every Svix endpoint secret.
const SecretPrefix = "whsec_"

// Tolerance is how far a delivery's timestamp may be from now, either way
// (Svix's libraries use 5 min).
const Tolerance = 5 * time.Minute

// The headers of a delivery, in Svix's own names and in the branded
// Standard Webhooks names.
const (
	HeaderID               = "svix-id"
	HeaderTimestamp        = "svix-timestamp"
	HeaderSignature        = "svix-signature"
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// The Daytona event types.
const (
	TypeSandboxCreated      = "sandbox.created"
	TypeSandboxStateUpdated = "sandbox.state.updated"
	TypeSnapshotCreated     = "snapshot.created"
	TypeSnapshotState       = "snapshot.state.updated"
	TypeSnapshotRemoved     = "snapshot.removed"
	TypeVolumeCreated       = "volume.created"
	TypeVolumeState         = "volume.state.updated"
)

// ErrNotSandboxEvent is returned by Parse for a well-formed event that is
// not about a sandbox (snapshot.*, volume.*): acknowledge it (2xx) so Svix
// does not retry it, and apply nothing.
var ErrNotSandboxEvent = errors.New("daytona event is not about a sandbox")

// maxIDLen bounds ids (ours: they become DynamoDB key parts).
const maxIDLen = 256

// Body is a webhook body, field names exactly as Daytona sends them.
// Times are ISO 8601 strings as received.
type Body struct {
	Event          string `json:"event"`
	Timestamp      string `json:"timestamp"`
	ID             string `json:"id"`
	OrganizationID string `json:"organizationId"`
	// sandbox.created
	State        string `json:"state,omitempty"`
	SandboxClass string `json:"sandboxClass,omitempty"`
	CreatedAt    string `json:"createdAt,omitempty"`
	// sandbox.state.updated
	OldState  string `json:"oldState,omitempty"`
	NewState  string `json:"newState,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// Verifier checks Svix signatures with one endpoint secret.
type Verifier struct {
	key   []byte
	clock lifecycle.Clock
}

// NewVerifier returns a Verifier for secret ("whsec_" and base64; the
// prefix is optional) on clock (nil: the system clock). Errors: an empty
// secret or one that is not base64.
func NewVerifier(secret string, clock lifecycle.Clock) (*Verifier, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	return &Verifier{key: key, clock: clock}, nil
}

func decodeSecret(secret string) ([]byte, error) {
	raw := strings.TrimPrefix(strings.TrimSpace(secret), SecretPrefix)
	if raw == "" {
		return nil, errors.New("daytona webhook secret is empty")
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("daytona webhook secret is not whsec_ and base64: %w", err)
	}
	return key, nil
}

// Sign returns the "v1,<base64>" signature of a message under secret.
// Errors: as NewVerifier's.
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, msgID, strconv.FormatInt(ts.Unix(), 10), body)), nil
}

// Header returns the svix-* headers of a signed delivery of body.
// Errors: as NewVerifier's.
func Header(secret, msgID string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secret, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h, nil
}

func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a delivery's headers against its raw body and returns the
// message id. Errors: CodeUnauthorized when the id, timestamp or signature
// header is missing, the timestamp is not Unix seconds or is more than
// Tolerance from now, or no v1 entry matches.
func (v *Verifier) Verify(h http.Header, body []byte) (string, error) {
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" && ts == "" && sigs == "" {
		id, ts, sigs = h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	}
	if id == "" || ts == "" || sigs == "" {
		return "", unauthorized("the webhook id, timestamp or signature header is missing")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", unauthorized("the webhook timestamp is not Unix seconds")
	}
	now := v.clock.Now().Unix()
	if d := now - secs; d > int64(Tolerance/time.Second) || d < -int64(Tolerance/time.Second) {
		return "", unauthorized("the webhook timestamp is more than 5 minutes from now")
	}
	want := mac(v.key, id, ts, body)
	ok := false
	for _, entry := range strings.Fields(sigs) {
		version, sig, found := strings.Cut(entry, ",")
		if !found || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			ok = true // keep going: the time taken does not depend on which entry matched
		}
	}
	if !ok {
		return "", unauthorized("the webhook signature is wrong")
	}
	return id, nil
}

// VerifyAndParse verifies a delivery and parses its body into an event
// whose ID is the message id. Errors: CodeUnauthorized from Verify,
// CodeInvalid or ErrNotSandboxEvent from Parse.
func (v *Verifier) VerifyAndParse(h http.Header, body []byte) (lifecycle.ProviderEvent, error) {
	id, err := v.Verify(h, body)
	if err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	return Parse(id, body)
}

// Parse maps a body to a lifecycle.ProviderEvent with ID msgID (the
// svix-id). sandbox.created is created; sandbox.state.updated maps by
// newState: started is resumed (but started → started, a warm-pool claim,
// is created), stopped, paused and archived are paused, destroyed is
// killed (KillReason "unknown": Daytona sends no reason, auto-stop and
// manual stop look alike), and every other state (transitional ones,
// error, build_failed, unknown) is updated: it changes nothing but the
// session's last event time, and the sweep's GET decides. Timestamp is
// updatedAt (createdAt for created), else timestamp, in UTC.
// Errors: ErrNotSandboxEvent for snapshot and volume events; CodeInvalid
// naming the field for a body that is not one JSON object, an unknown
// event, a missing or oversized id, msgID, or newState, or a bad time.
func Parse(msgID string, body []byte) (lifecycle.ProviderEvent, error) {
	var b Body
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return lifecycle.ProviderEvent{}, invalid("the webhook body is not a JSON object of the documented fields", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return lifecycle.ProviderEvent{}, invalid("the webhook body holds more than one JSON value", nil)
	}
	switch b.Event {
	case TypeSandboxCreated, TypeSandboxStateUpdated:
	case TypeSnapshotCreated, TypeSnapshotState, TypeSnapshotRemoved, TypeVolumeCreated, TypeVolumeState:
		return lifecycle.ProviderEvent{}, ErrNotSandboxEvent
	default:
		return lifecycle.ProviderEvent{}, invalid(fmt.Sprintf("webhook field event %q is not a known event type", b.Event), nil)
	}
	if err := checkID("svix-id", msgID); err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	if err := checkID("id", b.ID); err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	field, when := "timestamp", b.Timestamp
	if b.Event == TypeSandboxCreated && b.CreatedAt != "" {
		field, when = "createdAt", b.CreatedAt
	}
	if b.Event == TypeSandboxStateUpdated && b.UpdatedAt != "" {
		field, when = "updatedAt", b.UpdatedAt
	}
	at, err := parseTime(field, when)
	if err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	ev := lifecycle.ProviderEvent{ID: msgID, Provider: Provider, SandboxID: b.ID, Timestamp: at}
	if b.Event == TypeSandboxCreated {
		ev.Type = lifecycle.ProviderEventCreated
		return ev, nil
	}
	if b.NewState == "" {
		return lifecycle.ProviderEvent{}, invalid("webhook field newState is missing", nil)
	}
	switch b.NewState {
	case "started":
		ev.Type = lifecycle.ProviderEventResumed
		if b.OldState == "started" {
			ev.Type = lifecycle.ProviderEventCreated
		}
	case "stopped", "paused", "archived":
		ev.Type = lifecycle.ProviderEventPaused
	case "destroyed":
		ev.Type, ev.KillReason = lifecycle.ProviderEventKilled, "unknown"
	default:
		ev.Type = lifecycle.ProviderEventUpdated
	}
	return ev, nil
}

// NewStateBody returns the sandbox.state.updated body Daytona would send.
func NewStateBody(sandboxID, orgID, oldState, newState string, at time.Time) Body {
	t := at.UTC().Format("2006-01-02T15:04:05.000Z")
	return Body{Event: TypeSandboxStateUpdated, Timestamp: t, ID: sandboxID, OrganizationID: orgID,
		OldState: oldState, NewState: newState, UpdatedAt: t}
}

func parseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, invalid("webhook field "+field+" is missing", nil)
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, invalid("webhook field "+field+" is not an ISO 8601 time", err)
	}
	t = t.UTC()
	if y := t.Year(); y < 2000 || y > 9999 {
		return time.Time{}, invalid("webhook field "+field+" is out of range", nil)
	}
	return t, nil
}

func checkID(field, v string) error {
	switch {
	case v == "":
		return invalid("webhook field "+field+" is missing", nil)
	case len(v) > maxIDLen:
		return invalid(fmt.Sprintf("webhook field %s is longer than %d bytes", field, maxIDLen), nil)
	}
	return nil
}

func invalid(msg string, cause error) error {
	return &lifecycle.Error{Code: lifecycle.CodeInvalid, Message: msg, Err: cause}
}

func unauthorized(msg string) error {
	return &lifecycle.Error{Code: lifecycle.CodeUnauthorized, Message: msg}
}
