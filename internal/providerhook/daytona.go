package providerhook

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
)

// DeliveryParser is implemented by a Format whose events take something
// from the delivery's headers as well as from its body (Daytona: the event
// id, the dedupe key, is the svix-id header). The handler calls
// ParseDelivery instead of Parse when a format has it; headers have
// lowercase names. Errors: as Format.Parse.
type DeliveryParser interface {
	ParseDelivery(headers map[string]string, body []byte) (Event, error)
}

// DaytonaName is the path segment of Daytona's webhooks: /v1/webhooks/daytona.
const DaytonaName = "daytona"

// Daytona is Daytona's webhook format (docs/providers/daytona.md,
// "Lifecycle webhooks"; the wire details are internal/provider/hookwire/daytonahook's):
// Svix-signed deliveries (svix-* or webhook-* headers), the timestamp within
// daytonahook.Tolerance (5 min) of the injected clock either way, the
// svix-id as the event id. Build it with NewDaytona.
type Daytona struct {
	verifiers []*daytonahook.Verifier
}

var (
	_ Format         = (*Daytona)(nil)
	_ DeliveryParser = (*Daytona)(nil)
)

// NewDaytona returns Daytona's format with the Svix endpoint secrets
// accepted ("whsec_" and base64; more than one lets a secret be rotated:
// Svix signs with both while a rotation is under way), the timestamp
// checked on clock (nil: the system clock). Its events are stamped
// "daytona". Errors: no secret, an empty or non-base64 secret.
func NewDaytona(clock lifecycle.Clock, secrets ...string) (*Daytona, error) {
	if len(secrets) == 0 {
		return nil, errors.New("daytona webhook format: a signing secret is required")
	}
	f := &Daytona{}
	for i, s := range secrets {
		v, err := daytonahook.NewVerifier(s, clock)
		if err != nil {
			return nil, fmt.Errorf("daytona webhook format: secret %d: %w", i, err)
		}
		f.verifiers = append(f.verifiers, v)
	}
	return f, nil
}

// Name returns DaytonaName.
func (f *Daytona) Name() string { return DaytonaName }

// Verify checks the Svix signature of body under each secret (every one is
// tried, no early exit) and the timestamp's tolerance. Errors: unauthorized.
func (f *Daytona) Verify(headers map[string]string, body []byte) error {
	h := make(http.Header, len(headers))
	for k, v := range headers {
		h.Set(k, v)
	}
	var first error
	matched := false
	for _, v := range f.verifiers {
		if _, err := v.Verify(h, body); err == nil {
			matched = true
		} else if first == nil {
			first = err
		}
	}
	if matched {
		return nil
	}
	return first
}

// Parse refuses: a Daytona event's id is in the delivery's headers
// (ParseDelivery). Errors: invalid.
func (f *Daytona) Parse(body []byte) (Event, error) { return f.ParseDelivery(nil, body) }

// ParseDelivery decodes a verified delivery (daytonahook.Parse) with the
// svix-id (or webhook-id) header as the event id. Daytona's bodies carry no
// labels, so SessionID is "": the rules find the session by sandbox id.
// Errors: ErrIgnored for snapshot and volume events; invalid.
func (f *Daytona) ParseDelivery(headers map[string]string, body []byte) (Event, error) {
	id := headers[daytonahook.HeaderID]
	if id == "" {
		id = headers[daytonahook.HeaderWebhookID]
	}
	ev, err := daytonahook.Parse(id, body)
	if errors.Is(err, daytonahook.ErrNotSandboxEvent) {
		return Event{}, fmt.Errorf("%w: %w", ErrIgnored, err)
	}
	if err != nil {
		return Event{}, err
	}
	return Event{ProviderEvent: ev}, nil
}
