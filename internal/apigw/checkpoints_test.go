package apigw_test

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// withCheckpoints rebuilds h's handlers on a service whose provider keeps
// files and snapshots (reliability.SnapshotProvider over the harness's
// fake) and whose checkpoint jobs wait in the queue returned.
func (h *harness) withCheckpoints(tb testing.TB) (*reliability.SnapshotProvider, *reliability.Jobs) {
	tb.Helper()
	snaps, jobs := reliability.NewSnapshotProvider(h.prov, h.clock), &reliability.Jobs{}
	cfg := h.svc.Config()
	cfg.Provider, cfg.CheckpointJobs = snaps, jobs
	h.svc = lifecycle.NewService(cfg)
	for _, fn := range apiFunctions {
		hd, err := apigw.New(apigw.Config{Function: fn, Service: h.svc, Keys: h.store, Log: apigwLogger(h.logs)})
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
	return snaps, jobs
}

// withCheckpointID puts a checkpoint id into the path.
func withCheckpointID(id string) func(*events.APIGatewayV2HTTPRequest) {
	const fixture = "chk_0000000000aaaaaaaaaaaaaaaa"
	return func(ev *events.APIGatewayV2HTTPRequest) {
		ev.PathParameters["checkpoint_id"] = id
		ev.RawPath = replaceOnce(ev.RawPath, fixture, id)
		ev.RequestContext.HTTP.Path = replaceOnce(ev.RequestContext.HTTP.Path, fixture, id)
	}
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}

// TestCheckpointRoutes walks the checkpoint routes through the handlers
// (each answer checked against docs/openapi.json): create (202, then a
// replay 200), list, get, restore (202 restoring, then running on a new
// sandbox), fork (201 provisioning, forked_from), delete (204), and a
// purge.
func TestCheckpointRoutes(t *testing.T) {
	h := MustHarness(t)
	_, jobs := h.withCheckpoints(t)
	drain := func() {
		t.Helper()
		if errs := jobs.Drain(t.Context(), h.svc.RunCheckpointJob, 5); len(errs) > 0 {
			t.Fatalf("jobs: %v", errs)
		}
	}
	sess := h.mustCreate(t)
	id := withID(sess.ID)

	r := h.invoke(t, MustEvent(t, "checkpoints-create.json", id))
	wantStatus(t, r, 202)
	c := mustDecode[api.Checkpoint](t, r)
	if c.State != "saving" || c.Label != "before the refactor" || c.Metadata["commit"] != "abc123" || c.Trigger != "api" ||
		r.headers["Location"] != "/v1/sessions/"+sess.ID+"/checkpoints/"+c.ID {
		t.Errorf("created %+v (Location %q)", c, r.headers["Location"])
	}
	r = h.invoke(t, MustEvent(t, "checkpoints-create.json", id))
	wantStatus(t, r, 200)
	if again := mustDecode[api.Checkpoint](t, r); again.ID != c.ID || r.headers["Idempotent-Replayed"] != "true" {
		t.Errorf("replay = %s (%v), want %s replayed", again.ID, r.headers, c.ID)
	}
	drain()

	r = h.invoke(t, MustEvent(t, "checkpoints-get.json", id, withCheckpointID(c.ID)))
	wantStatus(t, r, 200)
	if got := mustDecode[api.Checkpoint](t, r); got.State != "ready" || got.Kind != "snapshot" || got.SizeBytes == 0 {
		t.Errorf("after its job = %+v, want a ready snapshot with a size", got)
	}
	r = h.invoke(t, MustEvent(t, "checkpoints-list.json", id))
	wantStatus(t, r, 200)
	if list := mustDecode[api.CheckpointList](t, r); len(list.Checkpoints) != 1 || list.NextCursor != nil {
		t.Errorf("list = %+v, want the one checkpoint", list)
	}

	restore := func() result {
		return h.invoke(t, MustEvent(t, "restore.json", id, withBody(`{"checkpoint_id":"`+c.ID+`"}`), withHeader("idempotency-key", "restore-1")))
	}
	r = restore()
	wantStatus(t, r, 202)
	if got := mustDecode[api.Session](t, r); got.State != "restoring" || got.Reason != "restore" || str(got.RestoreCheckpointID) != c.ID {
		t.Errorf("restore answered %s (%s, %s)", got.State, got.Reason, str(got.RestoreCheckpointID))
	}
	drain()
	r = restore() // the retry of a restore whose answer was lost, after it is done
	wantStatus(t, r, 200)
	if got := mustDecode[api.Session](t, r); got.State != "running" || r.headers["Idempotent-Replayed"] != "true" {
		t.Errorf("a replayed restore answered %s (%v), want the running session, replayed", got.State, r.headers)
	}
	if got := h.mustSession(t, sess.ID); got.State != lifecycle.StateRunning || got.SandboxID == str(sess.SandboxID) {
		t.Errorf("after the restore = %s on %s, want running on a new sandbox", got.State, got.SandboxID)
	}

	r = h.invoke(t, MustEvent(t, "fork.json", id, withBody(`{"checkpoint_id":"`+c.ID+`","checkpoint_every_seconds":600}`)))
	wantStatus(t, r, 201)
	fork := mustDecode[api.Session](t, r)
	if fork.ID == sess.ID || fork.State != "provisioning" || fork.ForkedFrom == nil || fork.ForkedFrom.SessionID != sess.ID ||
		fork.ForkedFrom.CheckpointID != c.ID || fork.CheckpointEverySeconds != 600 || r.headers["Location"] != "/v1/sessions/"+fork.ID {
		t.Errorf("fork = %+v", fork)
	}
	r = h.invoke(t, MustEvent(t, "fork.json", id, withBody(`{"checkpoint_id":"`+c.ID+`","checkpoint_every_seconds":600}`)))
	wantStatus(t, r, 200)
	if again := mustDecode[api.Session](t, r); again.ID != fork.ID {
		t.Errorf("a replayed fork answered %s, want %s", again.ID, fork.ID)
	}
	drain()

	r = h.invoke(t, MustEvent(t, "checkpoints-delete.json", id, withCheckpointID(c.ID)))
	wantStatus(t, r, 204)
	r = h.invoke(t, MustEvent(t, "checkpoints-get.json", id, withCheckpointID(c.ID)))
	wantError(t, r, 404, "not_found")

	r = h.invoke(t, MustEvent(t, "checkpoints-create.json", withID(fork.ID), withHeader("idempotency-key", "")))
	wantStatus(t, r, 202)
	drain()
	r = h.invoke(t, MustEvent(t, "sessions-delete.json", withID(fork.ID), withQuery("purge", "true")))
	wantStatus(t, r, 200)
	drain()
	r = h.invoke(t, MustEvent(t, "checkpoints-list.json", withID(fork.ID)))
	if list := mustDecode[api.CheckpointList](t, r); len(list.Checkpoints) != 0 {
		t.Errorf("after a purge %d checkpoints are left", len(list.Checkpoints))
	}
}

// TestCheckpointRoutesRefuse: bad input, another account, what cannot be
// restored, and a deployment without checkpoints answer the error
// envelope.
func TestCheckpointRoutesRefuse(t *testing.T) {
	h := MustHarness(t)
	sess := h.mustCreate(t)
	id := withID(sess.ID)
	r := h.invoke(t, MustEvent(t, "checkpoints-create.json", id))
	wantError(t, r, 503, "unavailable", "not available")

	_, jobs := h.withCheckpoints(t)
	r = h.invoke(t, MustEvent(t, "checkpoints-create.json", id, withBody(`{"label":1}`)))
	wantError(t, r, 400, "invalid", "label")
	r = h.invoke(t, MustEvent(t, "checkpoints-create.json", id, withBody(`{"pinned":true}`)))
	wantError(t, r, 400, "invalid", "pinned")
	r = h.invoke(t, MustEvent(t, "restore.json", id, withBody(`{}`)))
	wantError(t, r, 400, "invalid", "checkpoint_id")
	r = h.invoke(t, MustEvent(t, "restore.json", id))
	wantError(t, r, 404, "not_found", "chk_0000000000aaaaaaaaaaaaaaaa")
	r = h.invoke(t, MustEvent(t, "checkpoints-get.json", id, withCheckpointID("chk_nope")))
	wantError(t, r, 404, "not_found")
	r = h.invoke(t, MustEvent(t, "checkpoints-list.json", id, withKey(h.otherKey)))
	wantError(t, r, 403, "forbidden")
	r = h.invoke(t, MustEvent(t, "sessions-delete.json", id, withQuery("purge", "yes")))
	wantError(t, r, 400, "invalid", "purge")

	r = h.invoke(t, MustEvent(t, "checkpoints-create.json", id))
	c := mustDecode[api.Checkpoint](t, r)
	r = h.invoke(t, MustEvent(t, "restore.json", id, withBody(`{"checkpoint_id":"`+c.ID+`"}`)))
	wantError(t, r, 409, "checkpoint_saving")
	r = h.invoke(t, MustEvent(t, "checkpoints-delete.json", id, withCheckpointID(c.ID)))
	wantError(t, r, 409, "conflict", "still saving")
	jobs.Take()
	h.clock.Advance(h.svc.Policy().LeaseDuration + h.svc.Config().CheckpointWait + 1)
	stuck, err := h.svc.GetCheckpoint(t.Context(), apigw.DevAccountID, sess.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.svc.ReconcileCheckpoint(t.Context(), stuck); err != nil {
		t.Fatal(err)
	}
	r = h.invoke(t, MustEvent(t, "restore.json", id, withBody(`{"checkpoint_id":"`+c.ID+`"}`)))
	wantError(t, r, 409, "checkpoint_failed")
	r = h.invoke(t, MustEvent(t, "fork.json", id, withBody(`{"checkpoint_id":"`+c.ID+`"}`)))
	wantError(t, r, 409, "checkpoint_failed")
}
