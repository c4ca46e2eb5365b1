package apigw

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// List page sizes of GET /v1/sessions: lifecycle's, defined once there.
const (
	defaultListLimit = lifecycle.DefaultListLimit
	maxListLimit     = lifecycle.MaxListLimit
)

// createSessionBody is the body of POST /v1/sessions. Zero
// idle_timeout_seconds means the default (600 s); zero max_lifetime_seconds
// means no limit. An absent provider means the deployment's default.
type createSessionBody struct {
	Template           string       `json:"template"`
	IdleTimeoutSeconds int64        `json:"idle_timeout_seconds"`
	MaxLifetimeSeconds int64        `json:"max_lifetime_seconds"`
	Metadata           metadataBody `json:"metadata"`
	Provider           string       `json:"provider"`
	// AwayTimeoutSeconds: absent or null for the default (120 s), 0 for
	// presence off (lifecycle.AwayTimeout).
	AwayTimeoutSeconds *int64 `json:"away_timeout_seconds"`
	// ResumeOnReturn: absent or null for on exactly when presence is on
	// (lifecycle.ResumeOnReturnDefault).
	ResumeOnReturn *bool `json:"resume_on_return"`
	// App is the app spec (docs/READINESS.md "The app spec"); absent: the
	// template's default, if any.
	App *appBody `json:"app"`
	// The automatic checkpoint options (docs/CHECKPOINTS.md); absent or
	// null: the deployment's default.
	CheckpointOnPause      *bool  `json:"checkpoint_on_pause"`
	CheckpointEverySeconds *int64 `json:"checkpoint_every_seconds"`
	CheckpointsKeep        *int   `json:"checkpoints_keep"`
	// IdlePolicy: fixed or learned; absent for the deployment's
	// (SANDMAN_IDLE_POLICY; docs/COST.md).
	IdlePolicy string `json:"idle_policy"`
	// OnLost: restore, recreate or expire; absent for restore
	// (docs/RELIABILITY.md "Recovery").
	OnLost string `json:"on_lost"`
	// The retention tiers in seconds after the pause (docs/CHECKPOINTS.md
	// "Retention tiers"); absent or null: the deployment's, 0: never.
	ArchiveAfterSeconds *int64 `json:"archive_after_seconds"`
	DeleteAfterSeconds  *int64 `json:"delete_after_seconds"`
}

// appBody is the app spec of a create; absent fields are left to the
// template's default (lifecycle.ResolveApp).
type appBody struct {
	Port                *int              `json:"port"`
	StartCommand        *string           `json:"start_command"`
	Cwd                 *string           `json:"cwd"`
	Env                 map[string]string `json:"env"`
	ReadyPath           *string           `json:"ready_path"`
	ReadyTimeoutSeconds *int64            `json:"ready_timeout_seconds"`
}

// noBody is the body of routes that take none: empty, or {}.
type noBody struct{}

// createSession serves POST /v1/sessions: 201 with the session and a
// Location header, or 200 with Idempotent-Replayed: true for a repeated
// Idempotency-Key.
func (h *Handler) createSession(ctx context.Context, r *request) (response, error) {
	var body createSessionBody
	if err := r.decodeJSON(&body, false); err != nil {
		return response{}, err
	}
	in := lifecycle.CreateInput{
		Template:           body.Template,
		IdleTimeoutSeconds: body.IdleTimeoutSeconds,
		MaxLifetimeSeconds: body.MaxLifetimeSeconds,
		Metadata:           map[string]string(body.Metadata),
		Provider:           body.Provider,
		AwayTimeoutSeconds: body.AwayTimeoutSeconds,
		ResumeOnReturn:     body.ResumeOnReturn,
		Checkpoints:        checkpointOptions(body.CheckpointOnPause, body.CheckpointEverySeconds, body.CheckpointsKeep),
		IdlePolicy:         lifecycle.IdlePolicy(body.IdlePolicy),
		OnLost:             lifecycle.OnLost(body.OnLost),
		Tiers:              lifecycle.Tiers{ArchiveAfter: seconds(body.ArchiveAfterSeconds), DeleteAfter: seconds(body.DeleteAfterSeconds)},
	}
	if a := body.App; a != nil {
		in.App = &lifecycle.AppInput{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd, Env: a.Env,
			ReadyPath: a.ReadyPath, ReadyTimeoutSeconds: a.ReadyTimeoutSeconds}
	}
	var err error
	if in.IdempotencyKey, err = r.idempotencyKey(); err != nil {
		return response{}, err
	}
	sess, replayed, err := h.svc.Create(ctx, r.accountID, in)
	if err != nil {
		return response{}, err
	}
	return createdOrReplayed(http.StatusCreated, httpapi.SessionJSON(sess), "/v1/sessions/"+sess.ID, replayed), nil
}

// createdOrReplayed is the answer of a create with an Idempotency-Key:
// status (201 Created, or 202 Accepted for work a job finishes) with body
// and a Location, or, for a replay, 200 with body and
// Idempotent-Replayed: true.
func createdOrReplayed(status int, body any, location string, replayed bool) response {
	if replayed {
		return response{status: http.StatusOK, body: body, headers: map[string]string{"Idempotent-Replayed": "true"}}
	}
	return response{status: status, body: body, headers: map[string]string{"Location": location}}
}

// listSessions serves GET /v1/sessions?limit=&cursor=&state=&provider=
// &template=&metadata[key]=&order=: the caller's sessions newest first
// (order=asc: oldest first), those that pass the filters when any is given
// (sessionFilter); limit 1..100, default 20.
func (h *Handler) listSessions(ctx context.Context, r *request) (response, error) {
	limit, err := r.queryInt("limit", defaultListLimit, 1, maxListLimit)
	if err != nil {
		return response{}, err
	}
	filter, err := sessionFilter(r.event.QueryStringParameters)
	if err != nil {
		return response{}, err
	}
	order, err := lifecycle.ParseOrder(r.event.QueryStringParameters["order"])
	if err != nil {
		return response{}, err
	}
	page, err := h.svc.Find(ctx, r.accountID, filter, order, r.event.QueryStringParameters["cursor"], limit)
	if err != nil {
		return response{}, err
	}
	out := api.SessionList{Sessions: make([]api.Session, 0, len(page.Sessions)), NextCursor: httpapi.Nullable(page.Cursor)}
	for _, s := range page.Sessions {
		out.Sessions = append(out.Sessions, httpapi.SessionJSON(s))
	}
	return response{status: http.StatusOK, body: out}, nil
}

// getSession serves GET /v1/sessions/{id}.
func (h *Handler) getSession(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	sess, err := h.svc.Get(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: httpapi.SessionJSON(sess)}, nil
}

// deleteSession serves DELETE /v1/sessions/{id}: 200 with the killed
// session, again on a repeated delete; with ?purge=true the session's
// checkpoints (their snapshots and archives) are deleted too
// (docs/CHECKPOINTS.md "Delete").
func (h *Handler) deleteSession(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	purge := false
	if v, ok := r.event.QueryStringParameters["purge"]; ok {
		if v != "true" && v != "false" {
			return response{}, invalidf("query parameter purge must be true or false")
		}
		purge = v == "true"
	}
	del := h.svc.Delete
	if purge {
		del = h.svc.DeleteWithCheckpoints
	}
	sess, err := del(ctx, r.accountID, id)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: httpapi.SessionJSON(sess)}, nil
}

// activityBody is the optional body of POST /v1/sessions/{id}/activity.
type activityBody struct {
	// HoldSeconds, when present, is a busy hold in seconds (docs/DESIGN.md
	// "Busy hold"; lifecycle.Service.Hold). API key only: with a client
	// token the field is refused with 403 (a browser must not keep a
	// sandbox running for a day).
	HoldSeconds *int64 `json:"hold_seconds"`
}

// heartbeat serves POST /v1/sessions/{id}/activity: 204; 409 sandbox_paused
// when the session is paused; with {"hold_seconds": N} also a busy hold (400
// when N is outside 60..86400; 403 forbidden with a client token, before
// anything is written: docs/DESIGN.md "Busy hold").
func (h *Handler) heartbeat(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	var body activityBody
	if err := r.decodeJSON(&body, true); err != nil {
		return response{}, err
	}
	if body.HoldSeconds != nil && r.clientToken {
		return response{}, lifecycle.Errorf(lifecycle.CodeForbidden,
			"hold_seconds needs an API key: a client token may send heartbeats but not set a busy hold")
	}
	if body.HoldSeconds != nil {
		_, err = h.svc.Hold(ctx, r.accountID, id, *body.HoldSeconds)
	} else {
		_, err = h.svc.Heartbeat(ctx, r.accountID, id)
	}
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusNoContent}, nil
}

// sessionFilter reads a list's filters from its query: state (states,
// comma-separated; a repeated parameter arrives joined with commas),
// provider, template, and metadata[key]=value (OpenAPI's deepObject; each
// pair must match). Errors: invalid (an empty state, a malformed metadata
// parameter); lifecycle.SessionFilter.Normalize checks the rest.
func sessionFilter(q map[string]string) (lifecycle.SessionFilter, error) {
	var f lifecycle.SessionFilter
	if v, ok := q["state"]; ok {
		for _, st := range strings.Split(v, ",") {
			if st = strings.TrimSpace(st); st == "" {
				return f, invalidf("query parameter state must name states, comma-separated")
			}
			f.States = append(f.States, lifecycle.State(st))
		}
	}
	f.Provider, f.Template = q["provider"], q["template"]
	for k, v := range q {
		if !strings.HasPrefix(k, "metadata") {
			continue
		}
		key, prefixed := strings.CutPrefix(k, "metadata[")
		key, suffixed := strings.CutSuffix(key, "]")
		if !prefixed || !suffixed || key == "" {
			return f, invalidf("filter on metadata as metadata[key]=value, not %s", truncate(k, 64))
		}
		if f.Metadata == nil {
			f.Metadata = map[string]string{}
		}
		f.Metadata[key] = v
	}
	return f, nil
}

// seconds returns *n seconds as a duration, nil for nil; a negative or
// too large count becomes a duration ValidTiers refuses.
func seconds(n *int64) *time.Duration {
	if n == nil {
		return nil
	}
	d := time.Duration(lifecycle.MaxTierAfter + time.Second)
	if *n >= 0 && *n <= int64(lifecycle.MaxTierAfter/time.Second) {
		d = time.Duration(*n) * time.Second
	}
	return &d
}
