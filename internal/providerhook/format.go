package providerhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

// Format is one provider's webhook wire format: how its deliveries are
// signed and what their bodies look like. The rules of what an event does
// live in lifecycle.Service.ApplyProviderEvent, not here.
type Format interface {
	// Name is the path segment the format answers on, lowercase: "e2b" for
	// POST /v1/webhooks/e2b.
	Name() string
	// Verify checks the delivery's signature over body, the raw bytes the
	// provider sent, in constant time. headers have lowercase names.
	// Errors: unauthorized (missing or bad signature, missing or
	// unsupported signature version).
	Verify(headers map[string]string, body []byte) error
	// Parse decodes a verified body. The event's Provider is the name the
	// provider's sessions are stored with (lifecycle.Session.Provider),
	// which may differ from Name. Errors: one wrapping ErrIgnored for a
	// well-formed event the rules do not use (answered 200, nothing done);
	// invalid (malformed body).
	Parse(body []byte) (Event, error)
}

// ErrIgnored is wrapped by a Format's Parse error for a verified,
// well-formed event of a kind Sandman does not use (E2B:
// sandbox.lifecycle.checkpointed, or a type added later). The handler
// acknowledges it with 200, outcome "ignored", so the provider does not
// retry it, and changes nothing.
var ErrIgnored = errors.New("webhook event is ignored")

// Event is a verified, parsed delivery: the provider event the lifecycle
// rules apply, plus what is only logged.
type Event struct {
	lifecycle.ProviderEvent
	// SessionID is the Sandman session the provider's own record names
	// (E2B: sandbox_metadata.sandman_session_id, set at create), or "". It is
	// logged only: the rules find the session by sandbox id.
	SessionID string
}

// E2B is E2B's webhook format (docs/providers/e2b.md, "Lifecycle
// webhooks"; the wire details are internal/provider/hookwire/e2bhook's). Build it with NewE2B.
type E2B struct {
	provider string
	secrets  []string
}

var _ Format = (*E2B)(nil)

// E2BName is the path segment of E2B-format webhooks: /v1/webhooks/e2b.
const E2BName = "e2b"

// NewE2B returns the E2B format. provider is the name its events are
// stamped with, the one sessions are stored with: "e2b" for E2B itself,
// "local" for the local process provider, which sends E2B-format webhooks.
// secrets are the signature secrets accepted; more than one lets a secret
// be rotated (register the new one with E2B, then drop the old one). Each
// is tried in full whatever the result, in constant time over the body.
// Errors: an empty provider, no secret, an empty secret.
func NewE2B(provider string, secrets ...string) (*E2B, error) {
	if provider == "" {
		return nil, errors.New("e2b webhook format: provider name is required")
	}
	if len(secrets) == 0 {
		return nil, errors.New("e2b webhook format: a signature secret is required")
	}
	for i, s := range secrets {
		if s == "" {
			return nil, fmt.Errorf("e2b webhook format: secret %d is empty", i)
		}
	}
	return &E2B{provider: provider, secrets: append([]string(nil), secrets...)}, nil
}

// Name returns E2BName.
func (f *E2B) Name() string { return E2BName }

// Provider returns the provider name events are stamped with.
func (f *E2B) Provider() string { return f.provider }

// Verify checks E2B's v1 signature: the e2b-signature-version header must be
// "v1" and e2b-signature must match the body under one of the secrets.
// Errors: unauthorized.
func (f *E2B) Verify(headers map[string]string, body []byte) error {
	version, ok := headers[e2bhook.HeaderSignatureVersion]
	if !ok || version == "" {
		return lifecycle.Errorf(lifecycle.CodeUnauthorized, "the %s header is missing", e2bhook.HeaderSignatureVersion)
	}
	if version != e2bhook.SignatureVersion {
		return lifecycle.Errorf(lifecycle.CodeUnauthorized, "signature version %q is not supported; want %q",
			clip(version), e2bhook.SignatureVersion)
	}
	sig, ok := headers[e2bhook.HeaderSignature]
	if !ok || strings.TrimSpace(sig) == "" {
		return lifecycle.Errorf(lifecycle.CodeUnauthorized, "the %s header is missing", e2bhook.HeaderSignature)
	}
	matched := false
	for _, secret := range f.secrets { // every secret, no early exit
		if e2bhook.Verify(secret, body, sig) {
			matched = true
		}
	}
	if !matched {
		return lifecycle.Errorf(lifecycle.CodeUnauthorized, "the %s header does not match the body", e2bhook.HeaderSignature)
	}
	return nil
}

// Parse decodes an E2B lifecycle event (e2bhook.Parse: the v2 body, or the
// v1 camelCase one of E2B's docs) and stamps it with the configured provider
// name; SessionID is the sandbox metadata's lifecycle.MetadataSessionID.
// Errors: ErrIgnored for a type Sandman does not use; invalid.
func (f *E2B) Parse(body []byte) (Event, error) {
	ev, err := e2bhook.Parse(body)
	if errors.Is(err, e2bhook.ErrIgnoredType) {
		return Event{}, fmt.Errorf("%w: %w", ErrIgnored, err)
	}
	if err != nil {
		return Event{}, err
	}
	ev.Provider = f.provider
	// e2bhook.Parse accepted the body, so this decode succeeds.
	var meta e2bSessionMetadata
	_ = json.Unmarshal(body, &meta)
	return Event{ProviderEvent: ev, SessionID: clip(meta.EventData.SandboxMetadata.SessionID)}, nil
}

// e2bSessionMetadata reads only event_data.sandbox_metadata's
// "sandman_session_id" (lifecycle.MetadataSessionID), for the log.
type e2bSessionMetadata struct {
	EventData struct {
		SandboxMetadata struct {
			SessionID string `json:"sandman_session_id"`
		} `json:"sandbox_metadata"`
	} `json:"event_data"`
}
