package api

// The JSON shapes of the /v1/webhook-endpoints routes (docs/WEBHOOKS.md;
// components of the same names). internal/delivery fills them.

// WebhookEndpoint is an endpoint as the API shows it. Secret is set only in
// the answers of a create and of a rotation (shown once).
type WebhookEndpoint struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	EventTypes     []string `json:"event_types"` // empty: every type
	Disabled       bool     `json:"disabled"`
	DisabledReason *string  `json:"disabled_reason"`
	// FailingSince is the first failed attempt since the last success;
	// null while healthy.
	FailingSince *string `json:"failing_since"`
	// PreviousSecretExpiresAt is when the last rotated-out secret stops
	// signing; null when none does.
	PreviousSecretExpiresAt *string `json:"previous_secret_expires_at"`
	CreatedAt               string  `json:"created_at"`
	UpdatedAt               string  `json:"updated_at"`
	Secret                  string  `json:"secret,omitempty"`
}

// WebhookEndpointList is the body of GET /v1/webhook-endpoints.
type WebhookEndpointList struct {
	WebhookEndpoints []WebhookEndpoint `json:"webhook_endpoints"`
}

// WebhookEndpointRequest is the body of a create (url required) and of a
// PATCH (absent fields unchanged).
type WebhookEndpointRequest struct {
	URL         *string   `json:"url"`
	Description *string   `json:"description"`
	EventTypes  *[]string `json:"event_types"`
	Disabled    *bool     `json:"disabled"`
}

// WebhookAttempt is one attempt of a delivery.
type WebhookAttempt struct {
	At         string  `json:"at"`
	StatusCode *int    `json:"status_code"` // null: no answer (error says why)
	LatencyMS  int64   `json:"latency_ms"`  // milliseconds
	Error      *string `json:"error"`
	// ResponseBody is at most 1 KiB of the answer's body.
	ResponseBody string `json:"response_body"`
}

// WebhookDelivery is one delivery in the log.
type WebhookDelivery struct {
	ID            string           `json:"id"`
	EndpointID    string           `json:"endpoint_id"`
	EventID       string           `json:"event_id"` // the webhook-id header
	EventType     string           `json:"event_type"`
	Status        string           `json:"status"` // pending, succeeded or failed
	Reason        *string          `json:"reason"` // why a failed delivery stopped
	Attempts      []WebhookAttempt `json:"attempts"`
	NextAttemptAt *string          `json:"next_attempt_at"` // null unless pending
	CreatedAt     string           `json:"created_at"`
	ExpiresAt     string           `json:"expires_at"` // when the log forgets it (30 days)
}

// WebhookDeliveryList is the body of GET …/deliveries: newest first.
type WebhookDeliveryList struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
	NextCursor *string           `json:"next_cursor"`
}
