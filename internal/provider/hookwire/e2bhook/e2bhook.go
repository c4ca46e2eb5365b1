// Package e2bhook is E2B's lifecycle webhook format (docs/providers/e2b.md
// "Lifecycle webhooks"): the body, its headers, the v1 signature, and the
// mapping of a delivery to a lifecycle.ProviderEvent, and its declaration
// (Webhook) for the adapters that speak it. The provider hook handler
// (internal/providerhook) verifies with it; the local provider, the fake and
// test fixtures build and sign with it. It lives in internal/provider/hookwire,
// beside no adapter, because three adapters share it and none may import
// another. It imports only the standard library, lifecycle and registry.
//
// The v1 signature is SHA-256 over the secret's bytes followed by the raw
// body, in unpadded URL-safe base64 (standard base64 with + → -, / → _ and
// the trailing = removed). It is not an HMAC. Verify compares in constant
// time; verify before Parse, over the exact bytes received.
//
// event_data.set_timeout on updated events is the new END TIME, an RFC 3339
// string (docs/providers/e2b.md, "Checked against the real spec"); Parse turns it
// into a timeout (the end time minus the event's timestamp, truncated to
// whole seconds). Any other shape, or a timeout that is not between one
// second and MaxTimeout, is ignored and the event carries no Timeout.
//
// Shapes Parse accepts: the orchestrator's "v2" body with snake_case fields,
// where event_category, event_label and event_data.sandbox_metadata may be
// absent; and the "v1" camelCase body E2B's public docs show (sandboxId,
// eventData, ...). A well-formed event of a type Sandman does not use
// (sandbox.lifecycle.checkpointed, sent on fork, or any type added later)
// is ErrIgnoredType: the receiver acknowledges it and does nothing.
package e2bhook

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Provider is the provider name parsed events carry.
const Provider = "e2b"

// The headers of a delivery.
const (
	HeaderWebhookID        = "e2b-webhook-id"        // the registered webhook's id
	HeaderDeliveryID       = "e2b-delivery-id"       // one per delivery attempt
	HeaderSignatureVersion = "e2b-signature-version" // SignatureVersion
	HeaderSignature        = "e2b-signature"         // Sign's output
)

// Format constants of the body and signature.
const (
	SignatureVersion = "v1"        // the only signature scheme E2B documents
	BodyVersion      = "v2"        // the body's version field
	EventCategory    = "lifecycle" // the body's event_category
)

// The E2B event types.
const (
	TypeCreated = "sandbox.lifecycle.created"
	TypePaused  = "sandbox.lifecycle.paused"
	TypeResumed = "sandbox.lifecycle.resumed"
	TypeUpdated = "sandbox.lifecycle.updated"
	TypeKilled  = "sandbox.lifecycle.killed"
	// TypeCheckpointed is sent on fork; Sandman ignores it.
	TypeCheckpointed = "sandbox.lifecycle.checkpointed"
)

// BodyVersionV1 is the version of the camelCase body E2B's docs show.
const BodyVersionV1 = "v1"

// ErrIgnoredType is wrapped by Parse's error for a well-formed event whose
// type Sandman does not use (see the package doc): acknowledge it, do
// nothing.
var ErrIgnoredType = errors.New("e2b webhook event type is not one Sandman uses")

// The kill reasons E2B documents for killed events.
const (
	KillRequest      = "request"
	KillTimeout      = "timeout"
	KillAdmin        = "admin"
	KillOrphaned     = "orphaned"
	KillResumeFailed = "resume_failed"
	KillUnknown      = "unknown"
)

// MaxTimeout bounds a set_timeout Parse accepts (ours: E2B's longest plan
// run is 24 h; anything past a month is taken as a misread shape).
const MaxTimeout = 31 * 24 * time.Hour

// maxIDLen bounds id and sandbox_id (ours: they become DynamoDB key parts).
const maxIDLen = 256

// eventType is one E2B type's domain type and event_label.
type eventType struct {
	domain lifecycle.ProviderEventType
	label  string
}

var types = map[string]eventType{
	TypeCreated: {lifecycle.ProviderEventCreated, "create"},
	TypePaused:  {lifecycle.ProviderEventPaused, "pause"},
	TypeResumed: {lifecycle.ProviderEventResumed, "resume"},
	TypeUpdated: {lifecycle.ProviderEventUpdated, "update"},
	TypeKilled:  {lifecycle.ProviderEventKilled, "kill"},
}

// Body is a webhook body, field names exactly as E2B sends them. Times are
// RFC 3339 strings as received.
type Body struct {
	ID                 string    `json:"id"`      // the event id (a uuid), the dedupe key
	Version            string    `json:"version"` // BodyVersion
	Type               string    `json:"type"`    // one of the Type constants
	Timestamp          string    `json:"timestamp"`
	EventCategory      string    `json:"event_category"` // EventCategory
	EventLabel         string    `json:"event_label"`    // create, pause, resume, update or kill
	SandboxID          string    `json:"sandbox_id"`
	SandboxExecutionID string    `json:"sandbox_execution_id"`
	SandboxTemplateID  string    `json:"sandbox_template_id"`
	SandboxBuildID     string    `json:"sandbox_build_id"`
	SandboxTeamID      string    `json:"sandbox_team_id"`
	EventData          EventData `json:"event_data"`
}

// BodyV1 holds the camelCase names of E2B's public docs' body (version
// "v1"; its eventData keeps snake_case keys inside). Parse reads them where
// the snake_case ones are absent.
type BodyV1 struct {
	SandboxID          string     `json:"sandboxId"`
	SandboxExecutionID string     `json:"sandboxExecutionId"`
	SandboxTemplateID  string     `json:"sandboxTemplateId"`
	SandboxBuildID     string     `json:"sandboxBuildId"`
	SandboxTeamID      string     `json:"sandboxTeamId"`
	EventCategory      string     `json:"eventCategory"`
	EventLabel         string     `json:"eventLabel"`
	EventData          *EventData `json:"eventData"`
}

// EventData is a body's event_data.
type EventData struct {
	// SandboxMetadata is the sandbox's metadata; absent when it has none.
	SandboxMetadata map[string]string `json:"sandbox_metadata,omitempty"`
	// Execution is sent on paused and killed events.
	Execution *Execution `json:"execution,omitempty"`
	// KillReason is sent on killed events: one of the Kill constants.
	KillReason string `json:"kill_reason,omitempty"`
	// SetTimeout is sent on updated events: the new end time, RFC 3339
	// (see the package doc).
	SetTimeout json.RawMessage `json:"set_timeout,omitempty"`
}

// Execution is event_data.execution: the run that just ended.
type Execution struct {
	StartedAt string `json:"started_at"` // RFC 3339 UTC
	VCPUCount int64  `json:"vcpu_count"`
	MemoryMB  int64  `json:"memory_mb"`
	// ExecutionTime is the run's length. E2B's docs have said both
	// milliseconds and seconds; Sandman does not use it.
	ExecutionTime float64 `json:"execution_time"`
}

// Sign returns the v1 signature of body under secret.
func Sign(secret string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(secret))
	h.Write(body)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Verify reports whether signature is body's v1 signature under secret,
// comparing in constant time. An empty secret verifies nothing.
func Verify(secret string, body []byte, signature string) bool {
	if secret == "" {
		return false
	}
	want := Sign(secret, body)
	return subtle.ConstantTimeCompare([]byte(want), []byte(signature)) == 1
}

// Header returns the headers of a signed delivery of body: webhook id,
// delivery id, signature version and signature.
func Header(secret, webhookID, deliveryID string, body []byte) http.Header {
	h := http.Header{}
	h.Set(HeaderWebhookID, webhookID)
	h.Set(HeaderDeliveryID, deliveryID)
	h.Set(HeaderSignatureVersion, SignatureVersion)
	h.Set(HeaderSignature, Sign(secret, body))
	return h
}

// VerifyAndParse checks a delivery's signature headers against body and
// then parses it. Errors: CodeUnauthorized when the signature is missing or
// wrong or its version is not v1 (when sent); CodeInvalid from Parse.
func VerifyAndParse(secret string, h http.Header, body []byte) (lifecycle.ProviderEvent, error) {
	if v := h.Get(HeaderSignatureVersion); v != "" && v != SignatureVersion {
		return lifecycle.ProviderEvent{}, lifecycle.Errorf(lifecycle.CodeUnauthorized,
			"unsupported webhook signature version %q", v)
	}
	if !Verify(secret, body, h.Get(HeaderSignature)) {
		return lifecycle.ProviderEvent{}, lifecycle.Errorf(lifecycle.CodeUnauthorized,
			"the webhook signature is missing or wrong")
	}
	return Parse(body)
}

// Parse maps a webhook body (v2 snake_case or v1 camelCase, see the package
// doc) to a lifecycle.ProviderEvent: the E2B type to the domain type, id,
// sandbox_id, timestamp (in UTC), kill_reason on killed events, and
// set_timeout on updated events. Other fields are read but not mapped. It
// does not verify the signature.
// Errors: an error wrapping ErrIgnoredType (a *lifecycle.Error of
// CodeInvalid too) for a well-formed event of a type Sandman does not use;
// CodeInvalid naming the field, for a body that is not one JSON object, a
// version other than "v2" or "v1", a missing type, or a missing or bad id,
// sandbox_id or timestamp (RFC 3339, in years 2000..9999 once in UTC).
func Parse(body []byte) (lifecycle.ProviderEvent, error) {
	var b Body
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return lifecycle.ProviderEvent{}, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return lifecycle.ProviderEvent{}, invalid("the webhook body holds more than one JSON value", nil)
	}
	if b.Version != BodyVersion && b.Version != BodyVersionV1 {
		return lifecycle.ProviderEvent{}, invalid(fmt.Sprintf("webhook field version must be %q or %q, got %q", BodyVersion, BodyVersionV1, b.Version), nil)
	}
	var v1 BodyV1
	if err := json.Unmarshal(body, &v1); err != nil {
		return lifecycle.ProviderEvent{}, decodeError(err)
	}
	if b.SandboxID == "" {
		b.SandboxID = v1.SandboxID
	}
	if v1.EventData != nil && b.EventData.SandboxMetadata == nil && b.EventData.Execution == nil &&
		b.EventData.KillReason == "" && len(b.EventData.SetTimeout) == 0 {
		b.EventData = *v1.EventData
	}
	if b.Type == "" {
		return lifecycle.ProviderEvent{}, invalid("webhook field type is missing", nil)
	}
	t, known := types[b.Type]
	if err := checkID("id", b.ID); err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	if err := checkID("sandbox_id", b.SandboxID); err != nil {
		return lifecycle.ProviderEvent{}, err
	}
	if !known {
		return lifecycle.ProviderEvent{}, &lifecycle.Error{Code: lifecycle.CodeInvalid,
			Message: fmt.Sprintf("webhook type %q is not one Sandman uses", clip(b.Type)), Err: ErrIgnoredType}
	}
	if b.Timestamp == "" {
		return lifecycle.ProviderEvent{}, invalid("webhook field timestamp is missing", nil)
	}
	at, err := time.Parse(time.RFC3339Nano, b.Timestamp)
	if err != nil {
		return lifecycle.ProviderEvent{}, invalid("webhook field timestamp is not an RFC 3339 time", err)
	}
	at = at.UTC()
	if y := at.Year(); y < 2000 || y > 9999 {
		return lifecycle.ProviderEvent{}, invalid("webhook field timestamp is out of range", nil)
	}
	ev := lifecycle.ProviderEvent{
		ID: b.ID, Provider: Provider, Type: t.domain, SandboxID: b.SandboxID, Timestamp: at,
	}
	switch t.domain {
	case lifecycle.ProviderEventKilled:
		ev.KillReason = b.EventData.KillReason
	case lifecycle.ProviderEventUpdated:
		ev.Timeout = setTimeout(b.EventData.SetTimeout, at)
	}
	return ev, nil
}

// NewBody returns the body E2B would send for ev: version v2, the E2B type,
// event_category and event_label, the timestamp in RFC 3339 with
// nanoseconds, metadata as sandbox_metadata (an empty object when nil),
// kill_reason on killed events and set_timeout, the end time
// (timestamp + Timeout, RFC 3339), on updated events with a Timeout. The other sandbox_* fields are left for the caller.
func NewBody(ev lifecycle.ProviderEvent, metadata map[string]string) Body {
	b := Body{
		ID:            ev.ID,
		Version:       BodyVersion,
		Timestamp:     ev.Timestamp.UTC().Format(time.RFC3339Nano),
		EventCategory: EventCategory,
		SandboxID:     ev.SandboxID,
	}
	for name, t := range types {
		if t.domain == ev.Type {
			b.Type, b.EventLabel = name, t.label
		}
	}
	if len(metadata) > 0 {
		b.EventData.SandboxMetadata = make(map[string]string, len(metadata))
		for k, v := range metadata {
			b.EventData.SandboxMetadata[k] = v
		}
	}
	switch ev.Type {
	case lifecycle.ProviderEventKilled:
		b.EventData.KillReason = ev.KillReason
	case lifecycle.ProviderEventUpdated:
		if secs := ev.Timeout / time.Second; secs > 0 {
			end := ev.Timestamp.UTC().Add(secs * time.Second).Format(time.RFC3339Nano)
			b.EventData.SetTimeout, _ = json.Marshal(end) // a string always encodes
		}
	}
	return b
}

// Build marshals b, refusing a body Parse would refuse, so what it returns
// always parses. Errors: CodeInvalid as Parse's.
func Build(b Body) ([]byte, error) {
	out, err := json.Marshal(b)
	if err != nil {
		return nil, invalid("webhook body cannot be encoded", err)
	}
	if _, err := Parse(out); err != nil {
		return nil, err
	}
	return out, nil
}

// setTimeout reads event_data.set_timeout, an RFC 3339 end time (see the
// package doc); 0 when absent or not understood (a number included: E2B
// sends an end time, and a number's unit would be a guess).
func setTimeout(raw json.RawMessage, at time.Time) time.Duration {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	var end string
	if json.Unmarshal(raw, &end) != nil {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, end)
	if err != nil {
		return 0
	}
	d := t.Sub(at).Truncate(time.Second)
	if d < time.Second || d > MaxTimeout {
		return 0
	}
	return d
}

// clip shortens a sender-supplied string before it goes into a message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// checkID requires a present, bounded id field.
func checkID(field, v string) error {
	switch {
	case v == "":
		return invalid("webhook field "+field+" is missing", nil)
	case len(v) > maxIDLen:
		return invalid(fmt.Sprintf("webhook field %s is longer than %d bytes", field, maxIDLen), nil)
	}
	return nil
}

// decodeError describes a body that does not decode, naming the field when
// encoding/json knows it.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return invalid("the webhook body is not a JSON object", err)
		}
		return invalid(fmt.Sprintf("webhook field %s must be a JSON %s", field, jsonKind(te.Type.Kind().String())), err)
	}
	return invalid("the webhook body is not valid JSON", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "struct", "map", "ptr":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	default:
		return "number"
	}
}

// invalid returns a CodeInvalid *lifecycle.Error with msg and cause.
func invalid(msg string, cause error) error {
	return &lifecycle.Error{Code: lifecycle.CodeInvalid, Message: msg, Err: cause}
}
