package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestPoolRemovedFromTheConfigurationDrainsItsSparesAtBoot: a process that
// boots without a pool (taken out of SANDMAN_POOLS) kills that pool's
// ready spares and deletes their items at once, without waiting a lease;
// the spares of a pool still configured and the sandbox a session claimed
// from the removed pool are left alone.
func TestPoolRemovedFromTheConfigurationDrainsItsSparesAtBoot(t *testing.T) {
	var kept lifecycle.Pool
	e, removed := poolEnv(t, 2, lifecycle.TierPaused, func(c *lifecycle.Config) {
		app, err := lifecycle.ResolveApp(nil, appInput("npm start", 60))
		if err != nil {
			t.Fatal(err)
		}
		kept = lifecycle.Pool{ID: lifecycle.PoolID("fake", "base", app), Provider: "fake", Template: "base", App: app,
			Size: 1, Tier: lifecycle.TierPaused, MaxAge: time.Hour}
		c.Pools = append(c.Pools, kept)
	})
	if sum := e.svc.FillPools(t.Context()); sum.Made != 3 {
		t.Fatalf("fill = %+v, want 3 made", sum)
	}
	claimed := e.mustCreate(t, lifecycle.CreateInput{App: appInput(poolLine, 60)})
	if !claimed.FromPool {
		t.Fatal("create did not take a spare")
	}
	drained := e.spares(t, removed.ID)
	keptSpares := e.spares(t, kept.ID)
	if len(drained) != 1 || len(keptSpares) != 1 {
		t.Fatalf("spares before the drain: %d of the removed pool, %d of the kept one; want 1 and 1", len(drained), len(keptSpares))
	}

	cfg := e.svc.Config()
	cfg.Pools = []lifecycle.Pool{kept} // the next boot's configuration
	killed, err := lifecycle.NewService(cfg).DrainRemovedPools(t.Context())
	if err != nil || killed != 1 {
		t.Fatalf("drain = %d, %v; want 1 killed", killed, err)
	}
	if got := e.sandboxState(drained[0].SandboxID); got != "gone" {
		t.Errorf("the removed pool's spare sandbox is %s, want gone", got)
	}
	if left := e.spares(t, removed.ID); len(left) != 0 {
		t.Errorf("the removed pool keeps %d spare items, want none", len(left))
	}
	if got := e.sandboxState(keptSpares[0].SandboxID); got != lifecycle.SandboxPaused {
		t.Errorf("the kept pool's spare is %s, want paused (left alone)", got)
	}
	if got := e.sandboxState(claimed.SandboxID); got != lifecycle.SandboxRunning {
		t.Errorf("the claimed sandbox is %s, want running (its session's)", got)
	}
}
