package reliability_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// freezeConfig sizes one freeze run.
type freezeConfig struct {
	creates int           // creates in all, each with its own Idempotency-Key
	workers int           // concurrent creates
	after   int           // creates answered before the freeze starts
	freeze  time.Duration // how long the table stalls
	hold    time.Duration // how long a stalled request attempt waits before its timeout
	budget  time.Duration // each create's request budget (API Gateway's 29 s in AWS)
}

func freezeConfigFor() freezeConfig {
	if longMode() {
		// The figure of docs/RELIABILITY.md: 500 creates, the table
		// frozen 20 s, each attempt timing out as the SDK's 10 s
		// client timeout does, a 29 s request budget.
		return freezeConfig{creates: 500, workers: 32, after: 100, freeze: 20 * time.Second, hold: 10 * time.Second, budget: 29 * time.Second}
	}
	return freezeConfig{creates: 80, workers: 16, after: 16, freeze: 1500 * time.Millisecond, hold: 400 * time.Millisecond, budget: 3 * time.Second}
}

// TestTableFreezeDuringCreates: with the table stalled in the middle of
// many concurrent creates (writes that commit but whose answer is lost,
// writes that never arrive, reads that time out), no session ends expired
// or keeps a running row without its sandbox, no sandbox outlives its
// session, and every Idempotency-Key resolves: a retry with it answers a
// running session. The default run is scaled down (80 creates, 1.5 s);
// SANDMAN_RELIABILITY_LONG=1 runs 500 creates through a 20 s freeze.
func TestTableFreezeDuringCreates(t *testing.T) {
	cfg := freezeConfigFor()
	clock := lifecycle.NewManualClock(t0)
	prov := fake.New(fake.Config{Clock: clock})
	client, freezer := dynamotest.MustFreezeClient(t, 3)
	store := dynamo.New(dynamo.Config{Client: client, Table: dynamotest.MustTable(t), Log: quiet()})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: quiet(),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})

	var (
		mu       sync.Mutex
		answers  = map[string]int{} // outcome → count
		told     = map[string]string{}
		answered atomic.Int64
		froze    sync.Once
		next     atomic.Int64
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range cfg.workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.creates) {
					return
				}
				key := fmt.Sprintf("freeze-%04d", i)
				ctx, cancel := context.WithTimeout(context.Background(), cfg.budget)
				sess, _, err := svc.Create(ctx, account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
				cancel()
				outcome := "201"
				switch {
				case err != nil:
					outcome = string(lifecycle.ErrorCode(err))
				case sess.State != lifecycle.StateRunning:
					outcome = "answered " + string(sess.State)
				}
				mu.Lock()
				answers[outcome]++
				told[key] = outcome
				mu.Unlock()
				if answered.Add(1) == int64(cfg.after) {
					froze.Do(func() { freezer.Freeze(cfg.freeze, cfg.hold) })
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stalled, committed := freezer.Counts()
	if stalled == 0 {
		t.Fatal("no request met the freeze: the run proves nothing")
	}

	// The lease passes and the sweep settles what the stall left.
	clock.Advance(lifecycle.DefaultPolicy().LeaseDuration + time.Second)
	if _, err := MustSweeper(t, svc).Run(t.Context()); err != nil {
		t.Fatalf("sweep: %v", err)
	}

	// Every key resolves: a retry answers a running session (a replay, or a
	// new attempt when the stalled one was settled failed).
	resolved, replayed := 0, 0
	for i := range cfg.creates {
		key := fmt.Sprintf("freeze-%04d", i)
		sess, rep, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
		if err != nil || sess.State != lifecycle.StateRunning {
			t.Errorf("key %s (first told %s): retry answered %v, want a running session", key, told[key], err)
			continue
		}
		resolved++
		if rep {
			replayed++
		}
	}

	byState := map[lifecycle.State]int{}
	live := 0
	for cursor := ""; ; {
		page, err := store.ListSessions(t.Context(), account, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			byState[s.State]++
			if s.State == lifecycle.StateExpired {
				t.Errorf("session %s ended expired", s.ID)
			}
			if s.State == lifecycle.StateRunning {
				live++
				if _, ok := prov.Sandbox(s.SandboxID); !ok {
					t.Errorf("session %s is running but its sandbox %s was killed", s.ID, s.SandboxID)
				}
			}
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	if got := len(prov.Sandboxes()); got != live {
		t.Errorf("%d sandboxes at the provider for %d running sessions, want one each", got, live)
	}
	outcomes := make([]string, 0, len(answers))
	for o, n := range answers {
		outcomes = append(outcomes, fmt.Sprintf("%s×%d", o, n))
	}
	sort.Strings(outcomes)
	t.Logf("%d creates (%d workers) in %s, table frozen %s after %d answers (attempt timeout %s): answers %v; "+
		"%d request attempts stalled (%d reached the table); after the lease and a sweep, sessions by state %v; "+
		"%d/%d keys resolve to a running session (%d replays)",
		cfg.creates, cfg.workers, elapsed.Round(time.Millisecond), cfg.freeze, cfg.after, cfg.hold, outcomes,
		stalled, committed, byState, resolved, cfg.creates, replayed)
}
