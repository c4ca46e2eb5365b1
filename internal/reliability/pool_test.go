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

// TestClaimedSpareGoneCrash kills the creating process after its claim took
// a spare whose sandbox the provider no longer had, on DynamoDB Local: at
// the cold create that replaces it (before the provider makes the sandbox)
// and at the write of running (after it did). Either leaves the claim's
// session provisioning on the gone sandbox and no spare; its lease runs out,
// the sweep's reconcile comes back to the claim, finds the sandbox gone
// again and makes the cold sandbox, killing one an earlier try left. One
// session, one sandbox tagged with it, the lost spare counted once.
func TestClaimedSpareGoneCrash(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(reliability.Step) bool
		// made: the provider made a sandbox for the session before the crash.
		made bool
	}{
		{"AtTheColdCreate", func(s reliability.Step) bool { return s.Op == "create" }, false},
		{"AtTheRunningWrite", func(s reliability.Step) bool {
			return s.Op == reliability.StepWrite && s.From == lifecycle.StateProvisioning && s.To == lifecycle.StateRunning
		}, true},
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
			prov.Forget(spare.SandboxID) // the provider expired it

			crasher := &reliability.Crasher{At: tc.at}
			dying := cfg
			dying.Store, dying.Provider = crasher.Store(store), crasher.Provider(prov)
			if _, _, err := lifecycle.NewService(dying).Create(t.Context(), account, lifecycle.CreateInput{Template: "base"}); err == nil {
				t.Fatal("the dying create succeeded")
			}
			if _, dead := crasher.Dead(); !dead {
				t.Fatal("the process did not die")
			}
			page, err := store.ListSessions(t.Context(), account, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Sessions) != 1 || len(mustSpares(t, store, pool.ID)) != 0 {
				t.Fatalf("after the crash: %d sessions and %d spares; want the claim's session only",
					len(page.Sessions), len(mustSpares(t, store, pool.ID)))
			}
			left := page.Sessions[0]
			if left.State != lifecycle.StateProvisioning || !left.FromPool || left.SandboxID != spare.SandboxID {
				t.Fatalf("after the crash: %s from_pool=%v on %s; want provisioning on the gone spare's sandbox",
					left.State, left.FromPool, left.SandboxID)
			}
			if got := tagged(t, prov, left.ID); (len(got) == 1) != tc.made {
				t.Fatalf("sandboxes tagged with the session after the crash: %d; want one: %v", len(got), tc.made)
			}

			clock.Advance(healthy.Policy().LeaseDuration + time.Second)
			if _, err := sweep.New(healthy, sweep.Config{}, quiet()).Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			sess, err := store.GetSession(t.Context(), left.ID)
			if err != nil {
				t.Fatal(err)
			}
			if sess.State != lifecycle.StateRunning || sess.FromPool || sess.SandboxID == "" || sess.SandboxID == spare.SandboxID {
				t.Fatalf("recovered session: %s from_pool=%v on %q; want running on a cold sandbox", sess.State, sess.FromPool, sess.SandboxID)
			}
			if got := tagged(t, prov, sess.ID); len(got) != 1 || got[0].ID != sess.SandboxID || got[0].State != lifecycle.SandboxRunning {
				t.Errorf("sandboxes tagged with the session: %v; want exactly its running %s", got, sess.SandboxID)
			}
			if page, _ := store.ListSessions(t.Context(), account, "", 10); len(page.Sessions) != 1 {
				t.Errorf("sessions = %d, want 1", len(page.Sessions))
			}
			st, err := store.PoolStatus(t.Context(), pool.ID)
			if err != nil || st.Lost != 1 || st.Hits != 0 || st.Misses != 1 {
				t.Errorf("pool status = %+v (%v), want the lost spare counted once, as a miss", st, err)
			}
		})
	}
}

// tagged returns the provider's sandboxes tagged with session id.
func tagged(t *testing.T, prov *fake.Provider, id string) []lifecycle.Sandbox {
	t.Helper()
	var out []lifecycle.Sandbox
	for _, sb := range prov.Sandboxes() {
		if sb.Metadata[lifecycle.MetadataSessionID] == id {
			out = append(out, sb)
		}
	}
	return out
}
