package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestFinalSessionAdvertisesNoURL: a session that becomes killed, failed or
// expired shows no preview URL and no provider-side expiry, in the session
// and in its lifecycle envelope.
func TestFinalSessionAdvertisesNoURL(t *testing.T) {
	for _, tc := range []struct{ from, to lifecycle.State }{
		{lifecycle.StateRunning, lifecycle.StateKilled},
		{lifecycle.StatePaused, lifecycle.StateKilled},
		{lifecycle.StateProvisioning, lifecycle.StateFailed},
		{lifecycle.StateRunning, lifecycle.StateExpired},
	} {
		t.Run(string(tc.from)+"To"+string(tc.to), func(t *testing.T) {
			s := &lifecycle.Session{State: tc.from, SandboxID: "sb_1", PreviewURL: "https://3000-sb_1.example",
				SandboxExpiresAt: t0.Add(time.Hour), IdleTimeout: 10 * time.Minute}
			if err := s.Transition(tc.to, lifecycle.ReasonRequest, t0, lifecycle.DefaultPolicy()); err != nil {
				t.Fatal(err)
			}
			if s.PreviewURL != "" || !s.SandboxExpiresAt.IsZero() {
				t.Errorf("%s session shows preview_url %q and sandbox_expires_at %v, want neither", tc.to, s.PreviewURL, s.SandboxExpiresAt)
			}
			if env := lifecycle.NewEnvelope(s, t0); !env.SandboxExpiresAt.IsZero() {
				t.Errorf("envelope sandbox_expires_at = %v, want none", env.SandboxExpiresAt)
			}
		})
	}
}
