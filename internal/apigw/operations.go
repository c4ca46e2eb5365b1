package apigw

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// status serves GET /v1/sessions/{id}/status: from the database only, no
// provider call, not activity.
func (h *Handler) status(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	sess, env, err := h.svc.Status(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: httpapi.StatusJSON(sess, env)}, nil
}

// waitReadyMargin is what resume?wait=ready leaves of the request's budget
// for writing its answer.
const waitReadyMargin = time.Second

// resume serves POST /v1/sessions/{id}/resume: 200 with the running session
// and its preview URL (fresh after a resume, the current one when it was
// running already).
func (h *Handler) resume(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	if err := r.decodeJSON(&noBody{}, true); err != nil {
		return response{}, err
	}
	wait := r.event.QueryStringParameters["wait"]
	if wait != "" && wait != "ready" {
		return response{}, invalidf("wait must be \"ready\" when given")
	}
	sess, err := h.svc.Resume(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	if wait == "ready" {
		// Hold until the app answers or the bound (docs/READINESS.md
		// "Waiting"); the answer is the session whatever its readiness.
		// Within the request's own budget, so the answer always leaves in
		// time (a Lambda past its timeout answers nothing).
		bound := lifecycle.MaxWaitReady
		if d, ok := ctx.Deadline(); ok {
			bound = min(bound, time.Until(d)-waitReadyMargin)
		}
		if bound > 0 {
			if waited, werr := h.svc.WaitReady(ctx, r.accountID, id, bound); werr == nil {
				sess = waited
			}
		}
	}
	return response{status: http.StatusOK, body: api.ResumeResult{
		PreviewURL: httpapi.Nullable(sess.PreviewURL),
		Session:    httpapi.SessionJSON(sess),
	}}, nil
}

// pause serves POST /v1/sessions/{id}/pause and its alias
// POST /v1/sessions/{id}/snapshot: 200 {"paused":true} with the session,
// whether it was running or paused already.
func (h *Handler) pause(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	if err := r.decodeJSON(&noBody{}, true); err != nil {
		return response{}, err
	}
	sess, err := h.svc.PauseNow(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: api.PauseResult{Paused: true, Session: httpapi.SessionJSON(sess)}}, nil
}

// reconnect serves GET /v1/sessions/{id}/reconnect: 200 with the probe's
// finding, whatever it is.
func (h *Handler) reconnect(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	res, err := h.svc.Reconnect(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	sess := res.Session
	return response{status: http.StatusOK, body: api.ReconnectResult{
		Status:       string(res.Status),
		SessionID:    sess.ID,
		State:        string(sess.State),
		ExpiresAt:    api.Time(res.ExpiresAt),
		PreviewURL:   httpapi.Nullable(sess.PreviewURL),
		Lifecycle:    httpapi.EnvelopeJSON(lifecycle.NewEnvelope(sess, h.svc.Now())),
		AppReadiness: httpapi.ReadinessJSON(sess),
	}}, nil
}

// openAPIDocument serves GET /v1/openapi.json: the API's OpenAPI 3.1
// document (internal/openapi), to anyone (no API key; routes.AuthNone).
func (h *Handler) openAPIDocument(_ context.Context, _ *request) (response, error) {
	return response{status: http.StatusOK, body: json.RawMessage(openapi.Document())}, nil
}
