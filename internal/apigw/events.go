package apigw

import (
	"context"
	"net/http"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// sessionEvents serves GET /v1/sessions/{id}/events?limit=&cursor=: the
// session's timeline, newest first; limit 1..100, default 20. Read-only,
// not activity.
func (h *Handler) sessionEvents(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	limit, err := r.queryInt("limit", lifecycle.DefaultEventPage, 1, lifecycle.MaxEventPage)
	if err != nil {
		return response{}, err
	}
	page, err := h.svc.SessionEvents(ctx, r.accountID, id, limit, r.event.QueryStringParameters["cursor"])
	if err != nil {
		return response{}, err
	}
	out := api.SessionEventList{Events: make([]api.SessionEvent, 0, len(page.Events)), NextCursor: httpapi.Nullable(page.Cursor)}
	for _, ev := range page.Events {
		out.Events = append(out.Events, SessionEventJSON(ev))
	}
	return response{status: http.StatusOK, body: out}, nil
}

// SessionEventJSON returns ev as the API shows it in a session's timeline.
func SessionEventJSON(ev lifecycle.Event) api.SessionEvent {
	out := api.SessionEvent{EventID: ev.EventID, From: string(ev.From), To: string(ev.To), Reason: ev.Reason,
		Actor: httpapi.Nullable(ev.Actor), Version: ev.Version,
		Readiness: httpapi.Nullable(string(ev.Readiness)), ReadinessDetail: httpapi.Nullable(ev.ReadinessDetail)}
	if t := api.Time(ev.Time); t != nil {
		out.Time = *t
	}
	if !ev.Since.IsZero() && !ev.Since.After(ev.Time) {
		ms := ev.Time.Sub(ev.Since).Milliseconds()
		out.DurationMS = &ms
	}
	if !ev.IsReadiness() {
		out.Readiness, out.ReadinessDetail = nil, nil
	}
	return out
}
