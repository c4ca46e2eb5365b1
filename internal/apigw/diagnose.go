package apigw

import (
	"context"
	"net/http"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// diagnoseJSON is the body of GET /v1/sessions/{id}/diagnose
// (lifecycle.Diagnosis; docs/DESIGN.md "Operators").
type diagnoseJSON struct {
	Session        api.Session      `json:"session"`
	LeaseExpiresAt *string          `json:"lease_expires_at"`
	LeaseExpired   bool             `json:"lease_expired"`
	Provider       providerViewJSON `json:"provider"`
	Preview        previewViewJSON  `json:"preview"`
	Agree          bool             `json:"agree"`
	Verdict        string           `json:"verdict"`
	Events         []eventJSON      `json:"events"` // newest first
}

// eventJSON is one of a session's recent lifecycle events (lifecycle.Event).
type eventJSON struct {
	EventID string  `json:"event_id"`
	Time    *string `json:"time"`
	From    string  `json:"from"` // "" for the create
	To      string  `json:"to"`
	Reason  string  `json:"reason"`
	Version int64   `json:"version"`
}

type providerViewJSON struct {
	Checked bool    `json:"checked"`
	State   *string `json:"state"` // "running", "paused", "gone"; null when not checked or unanswered
	Error   *string `json:"error"`
}

type previewViewJSON struct {
	Checked  bool    `json:"checked"`
	Answered bool    `json:"answered"`
	Status   *int    `json:"status"`
	Error    *string `json:"error"`
}

// diagnose serves GET /v1/sessions/{id}/diagnose: read-only, not activity.
func (h *Handler) diagnose(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	d, err := h.svc.Diagnose(ctx, r.accountID, id, h.prober)
	if err != nil {
		return response{}, err
	}
	out := diagnoseJSON{
		Session:        httpapi.SessionJSON(d.Session),
		LeaseExpiresAt: api.Time(d.Session.LeaseExpiresAt),
		LeaseExpired:   d.LeaseExpired,
		Provider:       providerViewJSON{Checked: d.Provider.Checked, Error: httpapi.Nullable(d.Provider.Error)},
		Preview:        previewViewJSON{Checked: d.Preview.Checked, Answered: d.Preview.Answered, Error: httpapi.Nullable(d.Preview.Error)},
		Agree:          d.Agree,
		Verdict:        d.Verdict,
		Events:         make([]eventJSON, 0, len(d.Events)),
	}
	for _, ev := range d.Events {
		out.Events = append(out.Events, eventJSON{EventID: ev.EventID, Time: api.Time(ev.Time),
			From: string(ev.From), To: string(ev.To), Reason: ev.Reason, Version: ev.Version})
	}
	switch {
	case d.Provider.Gone:
		out.Provider.State = httpapi.Nullable("gone")
	case d.Provider.State != "":
		out.Provider.State = httpapi.Nullable(string(d.Provider.State))
	}
	if d.Preview.Status != 0 {
		st := d.Preview.Status
		out.Preview.Status = &st
	}
	return response{status: http.StatusOK, body: out}, nil
}
