package reliability_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// TestPauseOnRequestCutByACrashDoesNotResumeOnReturn: an app pauses its
// session through the API and decides itself when to resume it, so a
// visible client coming back never resumes it (docs/WAKE.md "Resume on
// return"). The rule read the last transition's reason, which a crash
// rewrites: the process dies between the provider's pause and the paused
// write, and the sweep settles the session paused with reason reconcile,
// after which the next visible client resumed it. A pause the crash left
// to the sweep is still the app's own; an idle pause settled the same way
// is not, and resumes on return as before.
func TestPauseOnRequestCutByACrashDoesNotResumeOnReturn(t *testing.T) {
	for _, c := range []struct {
		name   string
		pause  func(t *testing.T, w *world, dying *lifecycle.Service, id string) error
		resume bool
	}{
		{"OnRequest", func(t *testing.T, _ *world, dying *lifecycle.Service, id string) error {
			_, err := dying.PauseNow(t.Context(), account, id)
			return err
		}, false},
		{"Idle", func(t *testing.T, w *world, dying *lifecycle.Service, id string) error {
			return idleSweep(t.Context(), w, dying, id)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := MustWorld(t, 1)
			on := true
			sess, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base",
				IdleTimeoutSeconds: 600, ResumeOnReturn: &on})
			if err != nil {
				t.Fatal(err)
			}
			crasher := &reliability.Crasher{At: writeStep(lifecycle.StatePausing, lifecycle.StatePaused)}
			cfg := w.svc.Config()
			cfg.Store, cfg.Provider, cfg.Log = crasher.Store(w.store), crasher.Provider(w.fake), quiet()
			if err := c.pause(t, w, lifecycle.NewService(cfg), sess.ID); !errors.Is(err, reliability.ErrCrashed) {
				t.Fatalf("the pause returned %v, want the crash", err)
			}
			stuck := w.MustSession(t, sess.ID)
			w.clock.Set(stuck.LeaseExpiresAt.Add(time.Second))
			w.MustSweep(t)
			if got := w.MustSession(t, sess.ID); got.State != lifecycle.StatePaused || got.Reason != lifecycle.ReasonReconcile {
				t.Fatalf("after the sweep the session is %s (reason %s), want paused by reconcile", got.State, got.Reason)
			}

			w.clock.Advance(time.Minute)
			got, resumed, err := w.svc.ReturnVisible(t.Context(), account, sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if resumed != c.resume || (got.State == lifecycle.StateRunning) != c.resume {
				t.Errorf("a visible client came back: resumed %v, session %s; want resumed %v", resumed, got.State, c.resume)
			}
		})
	}
}
