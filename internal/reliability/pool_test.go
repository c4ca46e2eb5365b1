package reliability_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// TestClaimCrash kills the creating process in the middle of a claim from a
// warm pool, on DynamoDB Local: at the claim's write (before it commits) and
// right after it (at the resume). Either leaves a spare or a session, never
// both and never neither; the next create or the sweep recovers, and the
// session ends up running on the spare's sandbox.
func TestClaimCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
		// spareLeft: the crash left the spare (and no session).
		spareLeft bool
	}{
		{"AtTheClaimWrite", func(s reliability.Step) bool { return s.Op == reliability.StepWrite && s.From == "" }, true},
		{"AtTheResume", func(s reliability.Step) bool { return s.Op == "resume" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := lifecycle.NewManualClock(t0)
			prov := fake.New(fake.Config{Clock: clock})
			store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t), Log: quiet()})
			pool := lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", nil), Provider: "fake", Template: "base", Size: 1,
				Tier: lifecycle.TierPaused, MaxAge: 24 * time.Hour}
			cfg := lifecycle.Config{Store: store, Provider: prov, Clock: clock, Log: quiet(), Pools: []lifecycle.Pool{pool},
				Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
			healthy := lifecycle.NewService(cfg)
			if sum := healthy.FillPools(t.Context()); sum.Made != 1 {
				t.Fatalf("fill = %+v", sum)
			}
			spare := mustSpares(t, store, pool.ID)[0]

			crasher := &reliability.Crasher{At: tc.at}
			dying := cfg
			dying.Store, dying.Provider = crasher.Store(store), crasher.Provider(prov)
			if _, _, err := lifecycle.NewService(dying).Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); err == nil {
				t.Fatal("the dying create succeeded")
			}
			if _, dead := crasher.Dead(); !dead {
				t.Fatal("the process did not die")
			}
			spares := mustSpares(t, store, pool.ID)
			page, err := store.ListSessions(t.Context(), account, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if tc.spareLeft != (len(spares) == 1) || tc.spareLeft == (len(page.Sessions) == 1) || len(spares)+len(page.Sessions) != 1 {
				t.Fatalf("after the crash: %d spares and %d sessions; want exactly one of them (the spare: %v)",
					len(spares), len(page.Sessions), tc.spareLeft)
			}

			var sess *lifecycle.Session
			if tc.spareLeft {
				// The next create takes the spare the dead one never claimed.
				if sess, _, err = healthy.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); err != nil {
					t.Fatal(err)
				}
			} else {
				// The sweep finds the claim's lease run out and completes it.
				clock.Advance(healthy.Policy().LeaseDuration + time.Second)
				if _, err := sweep.New(healthy, sweep.Config{}, quiet()).Run(t.Context()); err != nil {
					t.Fatal(err)
				}
				if sess, err = store.GetSession(t.Context(), page.Sessions[0].ID); err != nil {
					t.Fatal(err)
				}
			}
			if sess.State != lifecycle.StateRunning || !sess.FromPool || sess.SandboxID != spare.SandboxID {
				t.Errorf("recovered session: %s from_pool=%v on %s; want running on the spare's %s", sess.State, sess.FromPool,
					sess.SandboxID, spare.SandboxID)
			}
			if sb, ok := prov.Sandbox(spare.SandboxID); !ok || sb.State != lifecycle.SandboxRunning {
				t.Errorf("the spare's sandbox is %v (exists %v), want running", sb.State, ok)
			}
			if left := mustSpares(t, store, pool.ID); len(left) != 0 && left[0].SandboxID == spare.SandboxID {
				t.Errorf("the claimed spare is still listed")
			}
		})
	}
}

func mustSpares(t *testing.T, store *dynamo.Store, poolID string) []*lifecycle.Spare {
	t.Helper()
	sp, err := store.ListSpares(t.Context(), poolID)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
