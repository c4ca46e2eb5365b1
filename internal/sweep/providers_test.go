package sweep_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// TestRunProviderListEveryProvider: phase 3 lists every configured
// provider, so drift on a provider that sends no webhooks (Vercel) is
// found within one sweep, and the reconcile reads the session's own
// provider.
func TestRunProviderListEveryProvider(t *testing.T) {
	e := MustEnv(t)
	quietOther := fake.New(fake.Config{Clock: e.clock, Name: "quiet", IDPrefix: "quiet"})
	cfg := e.svc.Config()
	cfg.Providers = []lifecycle.Provider{quietOther}
	e.svc = lifecycle.NewService(cfg)

	onDefault := MustSessions(t, e, 2)
	var onQuiet []*lifecycle.Session
	for range 3 {
		sess, _, err := e.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", Provider: "quiet"})
		if err != nil {
			t.Fatalf("create on quiet: %v", err)
		}
		onQuiet = append(onQuiet, sess)
	}
	// The quiet provider stopped one session at its own deadline and told
	// nobody; so did the default provider with one of its own.
	quietOther.SetState(onQuiet[0].SandboxID, lifecycle.SandboxPaused)
	e.prov.SetState(onDefault[0].SandboxID, lifecycle.SandboxPaused)
	e.clock.Advance(time.Minute) // nothing is due yet
	e.prov.ResetCalls()
	quietOther.ResetCalls()

	sum := MustRun(t, t.Context(), MustSweeper(t, e, sweep.Config{PageSize: 2}))

	if got, want := sum.Listed, 5; got != want {
		t.Errorf("listed = %d, want %d (both providers)", got, want)
	}
	if got, want := sum.Reconciled, 2; got != want {
		t.Errorf("reconciled = %d, want %d", got, want)
	}
	if got, want := sum.Unknown, 0; got != want {
		t.Errorf("unknown = %d, want %d", got, want)
	}
	MustState(t, e, onQuiet[0].ID, lifecycle.StatePaused)
	MustState(t, e, onDefault[0].ID, lifecycle.StatePaused)
	for _, s := range append(onQuiet[1:], onDefault[1:]...) {
		MustState(t, e, s.ID, lifecycle.StateRunning)
	}
	if got := quietOther.Calls(fake.OpList); got < 2 {
		t.Errorf("quiet provider listed %d times, want its 3 sandboxes in pages of 2", got)
	}
	if got := quietOther.CallsFor(fake.OpGet, onQuiet[0].SandboxID); got == 0 {
		t.Error("the drifted quiet session was not read from its own provider")
	}
	if got := e.prov.CallsFor(fake.OpGet, onQuiet[0].SandboxID); got != 0 {
		t.Errorf("the default provider was asked %d times about the quiet provider's sandbox", got)
	}
}
