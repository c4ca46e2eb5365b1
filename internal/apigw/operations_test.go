package apigw_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("Running", func(t *testing.T) {
		before := h.mustSession(t, s.ID)
		h.prov.ResetCalls()
		now := h.clock.Advance(3 * time.Minute)
		r := h.invoke(t, MustEvent(t, "status.json", withID(s.ID)))
		wantStatus(t, r, 200)
		st := mustDecode[api.Status](t, r)
		if got := h.providerCalls(); got != 0 {
			t.Errorf("provider calls = %d, want 0", got)
		}
		after := h.mustSession(t, s.ID)
		if !after.IdleDeadline.Equal(before.IdleDeadline) || after.Version != before.Version {
			t.Errorf("status wrote: idle deadline %v → %v, version %d → %d",
				before.IdleDeadline, after.IdleDeadline, before.Version, after.Version)
		}
		if st.SessionID != s.ID || st.State != "running" || st.SandboxPaused || st.HasSnapshot {
			t.Errorf("status = %+v, want running, not paused, no snapshot", st)
		}
		if got, want := str(st.PreviewURL), str(s.PreviewURL); got != want {
			t.Errorf("preview_url = %q, want %q", got, want)
		}
		env := st.Lifecycle
		if got, want := str(env.ServerTime), ts(now); got != want {
			t.Errorf("server_time = %q, want %q", got, want)
		}
		if got, want := str(env.PauseDeadline), ts(before.IdleDeadline); got != want {
			t.Errorf("pause_deadline = %q, want %q", got, want)
		}
		if got, want := str(env.LastActivityAt), ts(t0); got != want {
			t.Errorf("last_activity_at = %q, want %q", got, want)
		}
		if got, want := str(env.SandboxExpiresAt), ts(before.SandboxExpiresAt); got != want {
			t.Errorf("sandbox_expires_at = %q, want %q", got, want)
		}
	})
	t.Run("Paused", func(t *testing.T) {
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), 200)
		h.prov.ResetCalls()
		r := h.invoke(t, MustEvent(t, "status.json", withID(s.ID)))
		wantStatus(t, r, 200)
		st := mustDecode[api.Status](t, r)
		if !st.SandboxPaused || !st.HasSnapshot || st.State != "paused" {
			t.Errorf("status = %+v, want paused with a snapshot", st)
		}
		if st.Lifecycle.PauseDeadline != nil {
			t.Errorf("pause_deadline = %q while paused, want null", *st.Lifecycle.PauseDeadline)
		}
		if got := h.providerCalls(); got != 0 {
			t.Errorf("provider calls = %d, want 0", got)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "status.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "status.json", withID(lifecycle.NewSessionID()))), 404, "not_found")
	})
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("TwiceOnePause", func(t *testing.T) {
		for i := range 2 {
			r := h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID)))
			wantStatus(t, r, 200)
			out := mustDecode[api.PauseResult](t, r)
			if !out.Paused || out.Session.State != "paused" {
				t.Errorf("snapshot %d = paused %v, state %q; want true, paused", i+1, out.Paused, out.Session.State)
			}
		}
		if got, want := h.prov.Calls(fake.OpPause), 1; got != want {
			t.Errorf("provider pauses = %d, want %d", got, want)
		}
		if sb, _ := h.prov.Sandbox(*s.SandboxID); sb.State != lifecycle.SandboxPaused {
			t.Errorf("provider state = %q, want paused", sb.State)
		}
		h.wantEvents(t, s.ID, lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StatePausing, lifecycle.StatePaused)
	})
	t.Run("ErrProviderUnavailable", func(t *testing.T) {
		other := h.mustCreate(t)
		h.prov.FailNext(fake.OpPause, lifecycle.ErrProviderTransient)
		r := h.invoke(t, MustEvent(t, "snapshot.json", withID(other.ID)))
		wantError(t, r, 503, lifecycle.TypeSandboxUnreachable)
		if got, want := h.mustSession(t, other.ID).State, lifecycle.StateRunning; got != want {
			t.Errorf("state = %s, want %s (rolled back)", got, want)
		}
	})
	t.Run("ErrBody", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID), withBody(`{"force":true}`))), 400, "invalid", `"force"`)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(lifecycle.NewSessionID()))), 404, "not_found")
	})
	t.Run("ErrConflictKilled", func(t *testing.T) {
		other := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(other.ID))), 200)
		wantError(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(other.ID))), 409, "conflict", "killed")
	})
}

func TestResume(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)

	// paused returns a new paused session, created then snapshotted.
	paused := func(t *testing.T) api.Session {
		t.Helper()
		s := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), 200)
		return s
	}

	t.Run("OK", func(t *testing.T) {
		s := paused(t)
		now := h.clock.Advance(5 * time.Minute)
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID)))
		wantStatus(t, r, 200)
		out := mustDecode[api.ResumeResult](t, r)
		if got, want := out.Session.State, "running"; got != want {
			t.Errorf("state = %q, want %q", got, want)
		}
		if got, want := str(out.PreviewURL), fake.PreviewURL(*s.SandboxID); got != want {
			t.Errorf("preview_url = %q, want %q", got, want)
		}
		if got, want := str(out.Session.LastActivityAt), ts(now); got != want {
			t.Errorf("last_activity_at = %q, want %q (a resume is activity)", got, want)
		}
		if sb, _ := h.prov.Sandbox(*s.SandboxID); sb.State != lifecycle.SandboxRunning {
			t.Errorf("provider state = %q, want running", sb.State)
		}
		h.wantEvents(t, s.ID, lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StatePausing,
			lifecycle.StatePaused, lifecycle.StateResuming, lifecycle.StateRunning)
	})
	t.Run("AlreadyRunning", func(t *testing.T) {
		s := h.mustCreate(t)
		h.prov.ResetCalls()
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID)))
		wantStatus(t, r, 200)
		if got, want := str(mustDecode[api.ResumeResult](t, r).PreviewURL), str(s.PreviewURL); got != want {
			t.Errorf("preview_url = %q, want the current %q", got, want)
		}
		if got := h.providerCalls(); got != 0 {
			t.Errorf("provider calls = %d, want 0", got)
		}
	})
	t.Run("ErrSandboxExpired", func(t *testing.T) {
		s := paused(t)
		h.prov.Forget(*s.SandboxID)
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID)))
		wantError(t, r, 503, lifecycle.TypeSandboxExpired)
		got := h.mustSession(t, s.ID)
		if got.State != lifecycle.StateExpired || got.SandboxID != "" {
			t.Errorf("session = %s with sandbox %q, want expired without one", got.State, got.SandboxID)
		}
		r = h.invoke(t, MustEvent(t, "sessions-get.json", withID(s.ID)))
		wantStatus(t, r, 200)
		if out := mustDecode[api.Session](t, r); out.State != "expired" || out.SandboxID != nil {
			t.Errorf("GET = %s with sandbox_id %s, want expired with null", out.State, str(out.SandboxID))
		}
	})
	t.Run("ErrSandboxUnreachable", func(t *testing.T) {
		s := paused(t)
		before := h.prov.Calls(fake.OpResume)
		h.prov.FailNext(fake.OpResume, lifecycle.ErrProviderTransient)
		h.prov.FailNext(fake.OpResume, lifecycle.ErrProviderTransient)
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID)))
		wantError(t, r, 503, lifecycle.TypeSandboxUnreachable, "retry")
		if got, want := r.headers["Retry-After"], "5"; got != want {
			t.Errorf("Retry-After = %q, want %q", got, want)
		}
		if got, want := h.prov.Calls(fake.OpResume)-before, 2; got != want {
			t.Errorf("provider resumes = %d, want %d (two attempts)", got, want)
		}
		if got, want := h.mustSession(t, s.ID).State, lifecycle.StatePaused; got != want {
			t.Errorf("state = %s, want %s", got, want)
		}
	})
	t.Run("SecondAttemptWins", func(t *testing.T) {
		s := paused(t)
		h.prov.FailNext(fake.OpResume, lifecycle.ErrProviderTransient)
		wantStatus(t, h.invoke(t, MustEvent(t, "resume.json", withID(s.ID))), 200)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		s := paused(t)
		wantError(t, h.invoke(t, MustEvent(t, "resume.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
		if got, want := h.mustSession(t, s.ID).State, lifecycle.StatePaused; got != want {
			t.Errorf("state = %s, want %s", got, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "resume.json", withID(lifecycle.NewSessionID()))), 404, "not_found")
	})
}

func TestReconnect(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)

	probe := func(t *testing.T, id string) api.ReconnectResult {
		t.Helper()
		r := h.invoke(t, MustEvent(t, "reconnect.json", withID(id)))
		wantStatus(t, r, 200)
		return mustDecode[api.ReconnectResult](t, r)
	}

	t.Run("Connected", func(t *testing.T) {
		s := h.mustCreate(t)
		before := h.mustSession(t, s.ID)
		out := probe(t, s.ID)
		sb, _ := h.prov.Sandbox(*s.SandboxID)
		if got, want := out.Status, "connected"; got != want {
			t.Errorf("status = %q, want %q", got, want)
		}
		if got, want := str(out.ExpiresAt), ts(sb.ExpiresAt); got != want {
			t.Errorf("expires_at = %q, want %q", got, want)
		}
		if got, want := str(out.Lifecycle.ServerTime), ts(h.clock.Now()); got != want {
			t.Errorf("lifecycle.server_time = %q, want %q", got, want)
		}
		if got := h.mustSession(t, s.ID); got.Version != before.Version || !got.IdleDeadline.Equal(before.IdleDeadline) {
			t.Errorf("a probe wrote: version %d → %d (not activity)", before.Version, got.Version)
		}
	})
	t.Run("Paused", func(t *testing.T) {
		s := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), 200)
		out := probe(t, s.ID)
		if out.Status != "paused" || out.ExpiresAt != nil {
			t.Errorf("reconnect = %s expires_at %s, want paused with null", out.Status, str(out.ExpiresAt))
		}
		if sb, _ := h.prov.Sandbox(*s.SandboxID); sb.State != lifecycle.SandboxPaused {
			t.Errorf("provider state = %q: the probe woke the sandbox", sb.State)
		}
		if got := h.prov.CallsFor(fake.OpResume, *s.SandboxID); got != 0 {
			t.Errorf("provider resumes = %d, want 0", got)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		s := h.mustCreate(t)
		before := h.mustSession(t, s.ID)
		h.prov.FailNext(fake.OpProbe, lifecycle.ErrProviderTransient)
		out := probe(t, s.ID)
		if got, want := out.Status, "unreachable"; got != want {
			t.Errorf("status = %q, want %q", got, want)
		}
		after := h.mustSession(t, s.ID)
		if after.Version != before.Version || after.State != lifecycle.StateRunning || after.SandboxID != before.SandboxID {
			t.Errorf("a transient probe failure changed the session: %s v%d → %s v%d",
				before.State, before.Version, after.State, after.Version)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		s := h.mustCreate(t)
		h.prov.Forget(*s.SandboxID)
		out := probe(t, s.ID)
		if out.Status != "expired" || out.State != "expired" {
			t.Errorf("reconnect = status %q state %q, want expired, expired", out.Status, out.State)
		}
		got := h.mustSession(t, s.ID)
		if got.State != lifecycle.StateExpired || got.SandboxID != "" {
			t.Errorf("session = %s sandbox %q, want expired with no sandbox", got.State, got.SandboxID)
		}
		h.wantEvents(t, s.ID, lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StateExpired)
	})
	t.Run("NoSandbox", func(t *testing.T) {
		s := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(s.ID))), 200)
		h.prov.ResetCalls()
		if got, want := probe(t, s.ID).Status, "no_sandbox"; got != want {
			t.Errorf("status = %q, want %q", got, want)
		}
		if got := h.providerCalls(); got != 0 {
			t.Errorf("provider calls = %d, want 0", got)
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		s := h.mustCreate(t)
		wantError(t, h.invoke(t, MustEvent(t, "reconnect.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "reconnect.json", withID(lifecycle.NewSessionID()))), 404, "not_found")
	})
}
