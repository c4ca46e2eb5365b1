package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// twoProviders is an env whose default provider is e.fake ("fake") with a
// second fake named "other" configured next to it.
func twoProviders(t *testing.T) (*env, *fake.Provider) {
	t.Helper()
	var other *fake.Provider
	e := newEnv(t, func(c *lifecycle.Config) {
		other = fake.New(fake.Config{Clock: c.Clock, Name: "other"})
		c.Providers = []lifecycle.Provider{other, c.Provider} // the default repeated: kept once
	})
	return e, other
}

func TestProviderNames(t *testing.T) {
	e, _ := twoProviders(t)
	if got, want := strings.Join(e.svc.ProviderNames(), ","), "fake,other"; got != want {
		t.Errorf("ProviderNames() = %s, want %s (the default first)", got, want)
	}
	if got, want := e.svc.ProviderName(), "fake"; got != want {
		t.Errorf("ProviderName() = %s, want %s", got, want)
	}
}

// A session created on a named provider keeps it: every operation on it
// goes to that provider, never to the default.
func TestCreateOnNamedProvider(t *testing.T) {
	e, other := twoProviders(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{Provider: "other"})
	if got, want := sess.Provider, "other"; got != want {
		t.Fatalf("session provider = %q, want %q", got, want)
	}
	if _, ok := other.Sandbox(sess.SandboxID); !ok {
		t.Fatalf("sandbox %s not on provider other", sess.SandboxID)
	}
	if got := e.fake.Calls(fake.OpCreate); got != 0 {
		t.Errorf("default provider got %d creates, want 0", got)
	}
	if got := e.mustGet(t, sess.ID).Provider; got != "other" {
		t.Errorf("stored provider = %q, want other", got)
	}

	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if sb, _ := other.Sandbox(sess.SandboxID); sb.State != lifecycle.SandboxPaused {
		t.Errorf("after snapshot: sandbox on other is %q, want paused", sb.State)
	}
	if _, err := e.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, err := e.svc.Reconnect(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("reconnect: %v", err)
	}
	if _, err := e.svc.Delete(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := other.Sandbox(sess.SandboxID); ok {
		t.Errorf("after delete: sandbox still on other")
	}
	for _, op := range fake.Ops {
		if got := e.fake.Calls(op); got != 0 {
			t.Errorf("default provider got %d %s calls for a session on other, want 0", got, op)
		}
	}

	def := e.mustCreate(t, lifecycle.CreateInput{})
	if got, want := def.Provider, "fake"; got != want {
		t.Errorf("create naming no provider: %q, want the default %q", got, want)
	}
}

// An unknown or unconfigured provider is refused before anything is
// written, and the message names the configured ones.
func TestCreateUnknownProvider(t *testing.T) {
	e, other := twoProviders(t)
	for _, name := range []string{"vercel", "FAKE", strings.Repeat("x", 100)} {
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", Provider: name,
			IdempotencyKey: "k-" + name[:1]})
		if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Fatalf("provider %q: err = %v, want invalid", name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "configured: fake, other") || len(msg) > 200 {
			t.Errorf("provider %q: message %q does not name the configured providers briefly", name, msg)
		}
	}
	page, err := e.store.ListSessions(t.Context(), acct, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 0 || len(e.events.events) != 0 {
		t.Errorf("refused creates wrote %d sessions and %d events", len(page.Sessions), len(e.events.events))
	}
	if e.fake.Calls(fake.OpCreate)+other.Calls(fake.OpCreate) != 0 {
		t.Error("a refused create reached a provider")
	}
	// The Idempotency-Key was not claimed: the same key works afterwards.
	if _, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-v"}); err != nil {
		t.Errorf("create with the refused create's key: %v", err)
	}
}

// A session whose provider this service does not hold fails with an error
// naming it, and no configured provider is called.
func TestSessionOfUnconfiguredProvider(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	e.fake.ResetCalls()
	moved := e.mustGet(t, sess.ID)
	moved.Provider = "gone-provider"
	if _, err := e.svc.Reconcile(t.Context(), moved); err == nil ||
		!strings.Contains(err.Error(), `"gone-provider" is not configured`) {
		t.Errorf("reconcile of a session on an unconfigured provider: err = %v", err)
	}
	if got := e.fake.Calls(fake.OpGet) + e.fake.Calls(fake.OpProbe); got != 0 {
		t.Errorf("the default provider was called %d times for another provider's session", got)
	}
}

// The sweep's provider list covers every provider: ListSandboxes stamps
// the provider's name, SessionOfSandbox and ReapOrphan use it.
func TestListSandboxesPerProvider(t *testing.T) {
	e, other := twoProviders(t)
	onOther := e.mustCreate(t, lifecycle.CreateInput{Provider: "other"})
	page, err := e.svc.ListSandboxes(t.Context(), "other", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sandboxes) != 1 || page.Sandboxes[0].Provider != "other" || page.Sandboxes[0].ID != onOther.SandboxID {
		t.Fatalf("ListSandboxes(other) = %+v, want the one sandbox stamped other", page.Sandboxes)
	}
	got, err := e.svc.SessionOfSandbox(t.Context(), page.Sandboxes[0])
	if err != nil || got.ID != onOther.ID {
		t.Fatalf("SessionOfSandbox = %v, %v; want %s", got, err, onOther.ID)
	}
	if page, err := e.svc.ListSandboxes(t.Context(), "fake", "", 10); err != nil || len(page.Sandboxes) != 0 {
		t.Errorf("ListSandboxes(fake) = %d sandboxes, %v; want none", len(page.Sandboxes), err)
	}

	// An orphan on other (its session was deleted without the kill reaching
	// the provider) is killed on other.
	orphan, err := other.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour,
		Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_nobody"}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Second)
	orphan.Provider = "other"
	killed, err := e.svc.ReapOrphan(t.Context(), orphan)
	if err != nil || !killed {
		t.Fatalf("ReapOrphan = %v, %v; want killed", killed, err)
	}
	if _, ok := other.Sandbox(orphan.ID); ok {
		t.Error("the orphan is still on other")
	}
	if got := e.fake.Calls(fake.OpKill); got != 0 {
		t.Errorf("the default provider got %d kills", got)
	}
}
