package delivery

import (
	"time"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// Conversions to the API's JSON shapes of webhook endpoints and deliveries
// (internal/openapi/api, declared once for the handlers, the CLI and the
// tests). Times are RFC 3339 UTC strings; nil pointers encode as null.

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// JSON returns e as the API shows it at now, with its secret when
// withSecret.
func (e *Endpoint) JSON(now time.Time, withSecret bool) api.WebhookEndpoint {
	out := api.WebhookEndpoint{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes,
		Disabled: e.Disabled, DisabledReason: optString(e.DisabledReason), FailingSince: api.Time(e.FailingSince),
		CreatedAt: timeText(e.CreatedAt), UpdatedAt: timeText(e.UpdatedAt)}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if until := e.RetiredUntil(now); !until.IsZero() {
		out.PreviousSecretExpiresAt = api.Time(until)
	}
	if withSecret {
		out.Secret = e.Secret
	}
	return out
}

// JSON returns d as the API shows it.
func (d *Delivery) JSON() api.WebhookDelivery {
	out := api.WebhookDelivery{ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType,
		Status: d.Status, Reason: optString(d.Reason), Attempts: make([]api.WebhookAttempt, 0, len(d.Attempts)),
		CreatedAt: timeText(d.CreatedAt), ExpiresAt: timeText(d.ExpiresAt)}
	if d.Status == StatusPending {
		out.NextAttemptAt = api.Time(d.NextAttemptAt)
	}
	for _, a := range d.Attempts {
		aj := api.WebhookAttempt{At: timeText(a.At), LatencyMS: a.LatencyMS, Error: optString(a.Error), ResponseBody: a.Response}
		if a.StatusCode != 0 {
			code := a.StatusCode
			aj.StatusCode = &code
		}
		out.Attempts = append(out.Attempts, aj)
	}
	return out
}
