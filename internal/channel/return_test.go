package channel_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// pause pauses session id with reason, as the sweep or the API would.
func (e *env) pause(t *testing.T, id, reason string) {
	t.Helper()
	if err := e.svc.Pause(t.Context(), e.session(t, id), reason, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
}

// TestHelloResumesSessionPausedForAbsence: a client coming back to a
// session paused for absence resumes it with its hello (reason return), and
// a hidden hello does not.
func TestHelloResumesSessionPausedForAbsence(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 30)
	e.pause(t, sess.ID, lifecycle.ReasonAway)
	e.send(t, channel.RouteConnect, "a", tok, "")
	if got := e.send(t, channel.RouteDefault, "a", "", `{"action":"hello","visible":false}`); got != http.StatusOK {
		t.Fatalf("hidden hello: %d", got)
	}
	if got := e.session(t, sess.ID).State; got != lifecycle.StatePaused {
		t.Fatalf("after a hidden hello: %s, want paused", got)
	}
	if got := e.send(t, channel.RouteDefault, "a", "", `{"action":"hello","visible":true}`); got != http.StatusOK {
		t.Fatalf("visible hello: %d", got)
	}
	if got := e.session(t, sess.ID); got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonReturn {
		t.Errorf("after a visible hello: %s (%s), want running (return)", got.State, got.Reason)
	}
}

// TestVisibleHeartbeatResumesAtMostOncePerMinute: a heartbeat turning
// visible resumes a session paused for idleness (reason return); after a
// second pause, another within the minute does not, one a minute later
// does; a session the API paused is never resumed on return.
func TestVisibleHeartbeatResumesAtMostOncePerMinute(t *testing.T) {
	e := newEnv(t)
	sess, tok := e.create(t, 30)
	e.send(t, channel.RouteConnect, "a", tok, "")
	beat := func(visible string) {
		t.Helper()
		e.send(t, channel.RouteDefault, "a", "", `{"action":"heartbeat","visible":false}`)
		e.clock.Advance(time.Second)
		if got := e.send(t, channel.RouteDefault, "a", "", `{"action":"heartbeat","visible":`+visible+`}`); got != http.StatusOK {
			t.Fatalf("heartbeat: %d", got)
		}
	}
	e.pause(t, sess.ID, lifecycle.ReasonIdle)
	beat("true")
	if got := e.session(t, sess.ID); got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonReturn {
		t.Fatalf("after a visible heartbeat: %s (%s), want running (return)", got.State, got.Reason)
	}
	e.clock.Advance(20 * time.Second)
	e.pause(t, sess.ID, lifecycle.ReasonIdle)
	beat("true")
	if got := e.session(t, sess.ID).State; got != lifecycle.StatePaused {
		t.Fatalf("a second return within the minute: %s, want paused", got)
	}
	e.clock.Advance(lifecycle.ReturnResumeInterval)
	beat("true")
	if got := e.session(t, sess.ID).State; got != lifecycle.StateRunning {
		t.Fatalf("a return a minute later: %s, want running", got)
	}
	e.clock.Advance(lifecycle.ReturnResumeInterval)
	e.pause(t, sess.ID, lifecycle.ReasonRequest)
	beat("true")
	if got := e.session(t, sess.ID).State; got != lifecycle.StatePaused {
		t.Errorf("a return after a pause the API asked for: %s, want paused", got)
	}
}
