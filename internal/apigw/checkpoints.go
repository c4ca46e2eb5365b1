package apigw

import (
	"context"
	"net/http"
	"strings"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// The checkpoint routes (docs/CHECKPOINTS.md), API key only: create, list,
// get and delete a session's checkpoints, restore a session in place from
// one, fork a new session from one.

// createCheckpointBody is the optional body of POST …/checkpoints.
type createCheckpointBody struct {
	Label    string       `json:"label"`
	Metadata metadataBody `json:"metadata"`
	// Pin keeps the checkpoint out of the automatic keep count.
	Pin bool `json:"pin"`
}

// restoreBody is the body of POST …/restore.
type restoreBody struct {
	CheckpointID string `json:"checkpoint_id"`
}

// forkBody is the optional body of POST …/fork: checkpoint_id absent for
// a fresh checkpoint of the current state, metadata absent for the
// source's, and a create's options.
type forkBody struct {
	CheckpointID       string       `json:"checkpoint_id"`
	Metadata           metadataBody `json:"metadata"`
	IdleTimeoutSeconds int64        `json:"idle_timeout_seconds"`
	MaxLifetimeSeconds int64        `json:"max_lifetime_seconds"`
	AwayTimeoutSeconds *int64       `json:"away_timeout_seconds"`
	ResumeOnReturn     *bool        `json:"resume_on_return"`
	// The automatic checkpoint options, as a create's.
	CheckpointOnPause      *bool  `json:"checkpoint_on_pause"`
	CheckpointEverySeconds *int64 `json:"checkpoint_every_seconds"`
	CheckpointsKeep        *int   `json:"checkpoints_keep"`
}

// checkpointOptions returns a body's automatic checkpoint options; absent
// or null: the deployment's default.
func checkpointOptions(onPause *bool, everySeconds *int64, keep *int) lifecycle.CheckpointOptions {
	return lifecycle.CheckpointOptions{OnPause: onPause, EverySeconds: everySeconds, Keep: keep}
}

// idempotencyKey returns the request's Idempotency-Key ("" when absent).
// Errors: invalid for an empty one.
func (r *request) idempotencyKey() (string, error) {
	key, ok := r.header("Idempotency-Key")
	if !ok {
		return "", nil
	}
	if key = strings.TrimSpace(key); key == "" {
		return "", invalidf("the Idempotency-Key header must not be empty")
	}
	return key, nil
}

// createCheckpoint serves POST /v1/sessions/{id}/checkpoints: 202 with the
// checkpoint, saving, and a Location; 200 with Idempotent-Replayed: true
// and the checkpoint as it now is for a repeated Idempotency-Key.
func (h *Handler) createCheckpoint(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	var body createCheckpointBody
	if err := r.decodeJSON(&body, true); err != nil {
		return response{}, err
	}
	key, err := r.idempotencyKey()
	if err != nil {
		return response{}, err
	}
	c, replayed, err := h.svc.CreateCheckpoint(ctx, r.accountID, id, lifecycle.CheckpointInput{
		Label: body.Label, Metadata: map[string]string(body.Metadata), Pin: body.Pin, IdempotencyKey: key})
	if err != nil {
		return response{}, err
	}
	return createdOrReplayed(http.StatusAccepted, httpapi.CheckpointJSON(c), "/v1/sessions/"+id+"/checkpoints/"+c.ID, replayed), nil
}

// listCheckpoints serves GET /v1/sessions/{id}/checkpoints?limit=&cursor=:
// newest first; limit 1..100, default 20.
func (h *Handler) listCheckpoints(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	limit, err := r.queryInt("limit", defaultListLimit, 1, maxListLimit)
	if err != nil {
		return response{}, err
	}
	page, err := h.svc.ListCheckpoints(ctx, r.accountID, id, r.event.QueryStringParameters["cursor"], limit)
	if err != nil {
		return response{}, err
	}
	out := api.CheckpointList{Checkpoints: make([]api.Checkpoint, 0, len(page.Checkpoints)), NextCursor: httpapi.Nullable(page.Cursor)}
	for _, c := range page.Checkpoints {
		out.Checkpoints = append(out.Checkpoints, httpapi.CheckpointJSON(c))
	}
	return response{status: http.StatusOK, body: out}, nil
}

// getCheckpoint serves GET /v1/sessions/{id}/checkpoints/{checkpoint_id}.
func (h *Handler) getCheckpoint(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	c, err := h.svc.GetCheckpoint(ctx, r.accountID, id, r.event.PathParameters["checkpoint_id"])
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, body: httpapi.CheckpointJSON(c)}, nil
}

// deleteCheckpoint serves DELETE /v1/sessions/{id}/checkpoints/{checkpoint_id}:
// 204 once the snapshot or archive and the checkpoint are deleted.
func (h *Handler) deleteCheckpoint(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	if err := h.svc.DeleteCheckpoint(ctx, r.accountID, id, r.event.PathParameters["checkpoint_id"]); err != nil {
		return response{}, err
	}
	return response{status: http.StatusNoContent}, nil
}

// restore serves POST /v1/sessions/{id}/restore {"checkpoint_id"}: 202 with
// the session, restoring (the same id, link and client tokens); 200 with
// Idempotent-Replayed: true and the session as it now is when the
// Idempotency-Key is the session's last restore's.
func (h *Handler) restore(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	var body restoreBody
	if err := r.decodeJSON(&body, false); err != nil {
		return response{}, err
	}
	if body.CheckpointID == "" {
		return response{}, invalidf("checkpoint_id is required")
	}
	key, err := r.idempotencyKey()
	if err != nil {
		return response{}, err
	}
	sess, replayed, err := h.svc.RestoreIdempotent(ctx, r.accountID, id, body.CheckpointID, key)
	if err != nil {
		return response{}, err
	}
	if replayed {
		return createdOrReplayed(http.StatusAccepted, httpapi.SessionJSON(sess), "", true), nil
	}
	return response{status: http.StatusAccepted, body: httpapi.SessionJSON(sess)}, nil
}

// fork serves POST /v1/sessions/{id}/fork: 201 with the new session
// (provisioning, forked_from) and a Location; 200 with
// Idempotent-Replayed: true for a repeated Idempotency-Key.
func (h *Handler) fork(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	var body forkBody
	if err := r.decodeJSON(&body, true); err != nil {
		return response{}, err
	}
	key, err := r.idempotencyKey()
	if err != nil {
		return response{}, err
	}
	sess, replayed, err := h.svc.Fork(ctx, r.accountID, id, lifecycle.ForkInput{CheckpointID: body.CheckpointID,
		Metadata: map[string]string(body.Metadata), IdleTimeoutSeconds: body.IdleTimeoutSeconds,
		MaxLifetimeSeconds: body.MaxLifetimeSeconds, AwayTimeoutSeconds: body.AwayTimeoutSeconds,
		ResumeOnReturn: body.ResumeOnReturn, IdempotencyKey: key,
		Checkpoints: checkpointOptions(body.CheckpointOnPause, body.CheckpointEverySeconds, body.CheckpointsKeep)})
	if err != nil {
		return response{}, err
	}
	return createdOrReplayed(http.StatusCreated, httpapi.SessionJSON(sess), "/v1/sessions/"+sess.ID, replayed), nil
}
