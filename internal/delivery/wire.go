package delivery

import "time"

// The JSON shapes of the /v1/webhook-endpoints routes (docs/openapi.json,
// components WebhookEndpoint, WebhookDelivery and their lists), declared
// once for the HTTP edge (internal/apigw), the CLI and the tests. Times
// are RFC 3339 UTC strings; nil pointers encode as null.

// EndpointJSON is an endpoint as the API shows it. Secret is set only in
// the answers of a create and of a rotation (shown once).
type EndpointJSON struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	EventTypes     []string `json:"event_types"` // empty: every type
	Disabled       bool     `json:"disabled"`
	DisabledReason *string  `json:"disabled_reason"`
	// FailingSince is the first failed attempt since the last success;
	// null while healthy.
	FailingSince *string `json:"failing_since"`
	// PreviousSecretExpiresAt is when the rotated-out secret stops
	// signing; null when none does.
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
	Secret                  string  `json:"secret,omitempty"`
}

// EndpointListJSON is the body of GET /v1/webhook-endpoints.
type EndpointListJSON struct {
	WebhookEndpoints []EndpointJSON `json:"webhook_endpoints"`
}

// EndpointRequestJSON is the body of a create (url required) and of a
// PATCH (absent fields unchanged).
type EndpointRequestJSON struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	Disabled    *bool     `json:"disabled"`
}

// AttemptJSON is one attempt of a delivery.
type AttemptJSON struct {
	At         string  `json:"at"`
	StatusCode *int    `json:"status_code"` // null: no answer (error says why)
	LatencyMS  int64   `json:"latency_ms"`  // milliseconds
	Error      *string `json:"error"`
	// ResponseBody is at most 1 KiB of the answer's body.
	ResponseBody string `json:"response_body"`
}

// DeliveryJSON is one delivery in the log.
type DeliveryJSON struct {
	ID            string        `json:"id"`
	EndpointID    string        `json:"endpoint_id"`
	EventID       string        `json:"event_id"` // the webhook-id header
	EventType     string        `json:"event_type"`
	Status        string        `json:"status"` // pending, succeeded or failed
	Reason        *string       `json:"reason"` // why a failed delivery stopped
	Attempts      []AttemptJSON `json:"attempts"`
	NextAttemptAt *string       `json:"next_attempt_at"` // null unless pending
	CreatedAt     string        `json:"created_at"`
	ExpiresAt     string        `json:"expires_at"` // when the log forgets it (30 days)
}

// DeliveryListJSON is the body of GET …/deliveries: newest first.
type DeliveryListJSON struct {
	Deliveries []DeliveryJSON `json:"deliveries"`
	NextCursor *string        `json:"next_cursor"`
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timeText(t)
	return &s
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// JSON returns e as the API shows it at now, with its secret when
// withSecret.
func (e *Endpoint) JSON(now time.Time, withSecret bool) EndpointJSON {
	out := EndpointJSON{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes,
		Disabled: e.Disabled, DisabledReason: optString(e.DisabledReason), FailingSince: optTime(e.FailingSince),
		CreatedAt: timeText(e.CreatedAt), UpdatedAt: timeText(e.UpdatedAt)}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if e.PreviousSecret != "" && now.Before(e.PreviousSecretUntil) {
		out.PreviousSecretExpiresAt = optTime(e.PreviousSecretUntil)
	}
	if withSecret {
		out.Secret = e.Secret
	}
	return out
}

// JSON returns d as the API shows it.
func (d *Delivery) JSON() DeliveryJSON {
	out := DeliveryJSON{ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType,
		Status: d.Status, Reason: optString(d.Reason), Attempts: make([]AttemptJSON, 0, len(d.Attempts)),
		CreatedAt: timeText(d.CreatedAt), ExpiresAt: timeText(d.ExpiresAt)}
	if d.Status == StatusPending {
		out.NextAttemptAt = optTime(d.NextAttemptAt)
	}
	for _, a := range d.Attempts {
		aj := AttemptJSON{At: timeText(a.At), LatencyMS: a.LatencyMS, Error: optString(a.Error), ResponseBody: a.Response}
		if a.StatusCode != 0 {
			code := a.StatusCode
			aj.StatusCode = &code
		}
		out.Attempts = append(out.Attempts, aj)
	}
	return out
}
