package costsim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// TestPoolClaimsAndRefills: three sessions start at 1:00, 1:05 and 3:00 on
// a provider whose spare takes 20 s to make (create 5 s + first app start
// 15 s; + 4 s pause for a paused spare). A pool of one serves the first
// start, misses the second (its refill is ready at 1:20 or 1:24) and serves
// the third; a pool of two serves all three. The running tier bills its
// spares from the epoch to the last start plus every making; the paused
// tier bills the makings and stores the spares.
func TestPoolClaimsAndRefills(t *testing.T) {
	cfg := costsim.DefaultConfig()
	cfg.Scenarios = nil
	p := costsim.ProviderProfile{Name: "p", Resume: time.Second, AppStart: 2 * time.Second,
		Create: 5 * time.Second, CreateAppStart: 15 * time.Second}
	cfg.Providers = []costsim.ProviderProfile{p}
	cfg.Pools = []costsim.Pool{
		{Tier: costsim.PoolPaused, Size: 1, MaxAge: time.Hour},
		{Tier: costsim.PoolRunning, Size: 1, MaxAge: time.Hour},
		{Tier: costsim.PoolRunning, Size: 2, MaxAge: time.Minute},
	}
	one := func(at time.Duration) costsim.SessionTrace {
		return costsim.NewSessionTrace(30*time.Second, costsim.Burst{Start: at, End: at + time.Minute})
	}
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{one(time.Minute), one(time.Minute + 5*time.Second), one(3 * time.Minute)}}
	r := MustReplay(t, cfg, tr)
	if got, want := len(r.Pools), 3; got != want {
		t.Fatalf("pool rows = %d, want %d", got, want)
	}
	pc := cfg.PoolCosts
	end := 3 * time.Minute
	tests := []struct {
		name        string
		res         costsim.PoolResult
		hits, made  int
		running     time.Duration
		storage     float64
		wait, saved time.Duration
	}{
		// Made: the first fill and a refill per claim.
		{"PausedOfOne", r.Pools[0], 2, 3, 3 * 24 * time.Second, end.Hours() * pc.SnapshotGiB,
			pc.Claim + p.ResumeToReady(), 0},
		{"RunningOfOne", r.Pools[1], 2, 3, end + 3*20*time.Second, 0, pc.Claim, 0},
		// Max age 1 min: besides the first fill (2) and the refills (3),
		// each spare is replaced once per minute it waited: the first
		// fill's at 1:00 (claimed at 1:00 and 1:05), the 1:00 refill at
		// 2:00 and 3:00 (claimed at 3:00), the 1:05 refill at 2:05 (still
		// waiting at the end): 5 more.
		{"RunningOfTwoReplaced", r.Pools[2], 3, 2 + 3 + 5, 2*end + 10*20*time.Second, 0, pc.Claim, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.res
			if res.Starts != 3 || res.Hits != tt.hits {
				t.Errorf("hits %d of %d starts, want %d of 3", res.Hits, res.Starts, tt.hits)
			}
			if res.Made != tt.made {
				t.Errorf("spares made = %d, want %d", res.Made, tt.made)
			}
			if got, want := res.RunningMinutes, tt.running.Minutes(); !approx(got, want) {
				t.Errorf("running = %v min, want %v", got, want)
			}
			if !approx(res.StorageGiBHours, tt.storage) {
				t.Errorf("storage = %v GiB-h, want %v", res.StorageGiBHours, tt.storage)
			}
			if res.PoolWait != tt.wait {
				t.Errorf("wait from the pool = %v, want %v", res.PoolWait, tt.wait)
			}
			if got, want := res.ColdWait, p.ColdStart(); got != want {
				t.Errorf("cold wait = %v, want %v", got, want)
			}
			if got, want := res.SavedSeconds, float64(tt.hits)*(res.ColdWait-res.PoolWait).Seconds(); !approx(got, want) {
				t.Errorf("saved %v s, want %v", got, want)
			}
			wantCost := res.RunningMinutes*60*float64(cfg.VCPUs)*cfg.PricePerVCPUSecond + res.StorageGiBHours*pc.StoragePerGiBMonth/730
			if !approx(res.CostUSD, wantCost) {
				t.Errorf("cost = %v, want %v", res.CostUSD, wantCost)
			}
		})
	}
	if md := r.Markdown(); !strings.Contains(md, "### Warm pools") || !strings.Contains(md, "| paused | 1 | p | 2 of 3 |") {
		t.Errorf("Markdown lacks the pool rows")
	}
}
