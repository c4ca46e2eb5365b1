package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestNoPauseBeforeRealIdleTimeout: heartbeats are coalesced by the 30 s
// granularity, so the last real heartbeat may be up to 30 s after the last
// recorded one. A timer fired every second (the most eager pauser there is)
// must still not pause the session before the real last heartbeat plus the
// idle timeout, and must pause it within the coalescing window after that.
func TestNoPauseBeforeRealIdleTimeout(t *testing.T) {
	for _, lastOffset := range []time.Duration{0, 1 * time.Second, 15 * time.Second, 29 * time.Second} {
		t.Run(lastOffset.String(), func(t *testing.T) {
			e := newEnv(t)
			sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
			gran := lifecycle.DefaultPolicy().ActivityGranularity

			// A recorded heartbeat, then one more real heartbeat lastOffset
			// later, coalesced when lastOffset < granularity.
			e.clock.Advance(2 * time.Minute)
			mustHeartbeat(t, e, sess.ID)
			recorded := e.clock.Now()
			if lastOffset > 0 {
				e.clock.Advance(lastOffset)
				if wrote := mustHeartbeat(t, e, sess.ID); wrote {
					t.Fatalf("heartbeat %s after a recorded one was written, want coalesced", lastOffset)
				}
			}
			realIdle := e.clock.Now().Add(60 * time.Second)

			for e.clock.Now().Before(recorded.Add(60*time.Second + gran + time.Second)) {
				e.clock.Advance(time.Second)
				out, err := e.svc.FireTimer(t.Context(), sess.ID)
				if err != nil {
					t.Fatal(err)
				}
				if out == lifecycle.TimerPaused {
					if now := e.clock.Now(); now.Before(realIdle) {
						t.Fatalf("paused at %s, %s before the real idle timeout ran out", now, realIdle.Sub(now))
					}
					return
				}
			}
			t.Fatalf("not paused %s after the recorded heartbeat (idle timeout + window + 1 s)", e.clock.Now().Sub(recorded))
		})
	}
}

func mustHeartbeat(t *testing.T, e *env, id string) bool {
	t.Helper()
	wrote, err := e.svc.Heartbeat(t.Context(), acct, id)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	return wrote
}
