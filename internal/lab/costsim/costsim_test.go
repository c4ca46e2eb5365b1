package costsim_test

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var defaultReport = sync.OnceValue(func() costsim.Report { return costsim.Run(costsim.DefaultConfig()) })

// MustDefaultReport returns the report of DefaultConfig, computed once per
// test binary.
func MustDefaultReport(tb testing.TB) costsim.Report {
	tb.Helper()
	r := defaultReport()
	if got, want := len(r.Results), len(costsim.DefaultConfig().Scenarios); got != want {
		tb.Fatalf("default report has %d results, want %d", got, want)
	}
	return r
}

// MustResult returns the result of the scenario named name.
func MustResult(tb testing.TB, r costsim.Report, name string) costsim.Result {
	tb.Helper()
	for _, res := range r.Results {
		if res.Scenario.Name == name {
			return res
		}
	}
	tb.Fatalf("no scenario %q in the report", name)
	return costsim.Result{}
}

// MustReplay replays tr under cfg and fails the test on an error.
func MustReplay(tb testing.TB, cfg costsim.Config, tr costsim.Trace) costsim.Report {
	tb.Helper()
	r, err := costsim.Replay(cfg, tr)
	if err != nil {
		tb.Fatalf("replay: %v", err)
	}
	return r
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestRunIsDeterministic(t *testing.T) {
	// Every scenario, the scale simulation and the held-out check, on a
	// smaller configuration: the default's full run is paid once, by
	// MustDefaultReport, for the tests that read its figures.
	cfg := costsim.DefaultConfig()
	cfg.Sessions, cfg.HeldOutSeeds = 200, cfg.HeldOutSeeds[:min(2, len(cfg.HeldOutSeeds))]
	cfg.Scale.Sessions, cfg.Scale.DueRate, cfg.Scale.Intervals = 20_000, 2_000, 2
	a, b := costsim.Run(cfg), costsim.Run(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs of one config differ:\n%+v\n%+v", a.Results, b.Results)
	}
	if got, want := a.Markdown(), b.Markdown(); got != want {
		t.Fatalf("two renderings of the same report differ")
	}

	t.Run("OtherSeedDiffers", func(t *testing.T) {
		cfg.Seed = 2
		cfg.Scale.Sessions = 0
		other := costsim.Run(cfg)
		if got, same := other.Trace.ActiveMinutes, a.Trace.ActiveMinutes; got == same {
			t.Fatalf("seed 2 gave the same floor as seed 1 (%v minutes)", got)
		}
	})
}

func TestDefaultRunShape(t *testing.T) {
	r := MustDefaultReport(t)
	if got, want := r.Trace.Sessions, 1000; got != want {
		t.Fatalf("sessions = %d, want %d", got, want)
	}
	for _, res := range r.Results {
		if got := res.RunningAtEnd; got != 0 {
			t.Errorf("%s: %d sandboxes still running at the end of the replay", res.Scenario.Name, got)
		}
		if got, want := res.Heartbeats, r.Trace.Heartbeats; got != want {
			t.Errorf("%s: delivered %d heartbeats, trace holds %d", res.Scenario.Name, got, want)
		}
	}
}

func TestFloorIsBelowEveryPolicy(t *testing.T) {
	r := MustDefaultReport(t)
	floor := r.Trace.ActiveMinutes
	if floor <= 0 {
		t.Fatalf("floor = %v minutes, want > 0", floor)
	}
	for _, res := range r.Results {
		if res.Scenario.Outage.Duration > 0 {
			// An outage can block users from working at all, so billing
			// below the floor is possible there; not checked.
			continue
		}
		t.Run(res.Scenario.Name, func(t *testing.T) {
			if got := res.BilledMinutes; got < floor {
				t.Fatalf("billed %.1f minutes, below the floor of %.1f", got, floor)
			}
			if got, want := res.RatioToFloor, res.BilledMinutes/floor; !approx(got, want) {
				t.Fatalf("ratio to floor = %v, want %v", got, want)
			}
		})
	}
}

func TestNeverPauseCostsMost(t *testing.T) {
	r := MustDefaultReport(t)
	never := MustResult(t, r, "never pause")
	if got, want := never.BilledMinutes, r.NeverPauseMinutes; got != want {
		t.Fatalf("never-pause scenario billed %v, baseline %v", got, want)
	}
	for _, res := range r.Results {
		t.Run(res.Scenario.Name, func(t *testing.T) {
			if got := res.BilledMinutes; got > never.BilledMinutes {
				t.Fatalf("billed %.1f minutes, more than never pausing (%.1f)", got, never.BilledMinutes)
			}
			want := 100 * (never.BilledMinutes - res.BilledMinutes) / never.BilledMinutes
			if got := res.SavingsPercent; !approx(got, want) {
				t.Fatalf("savings = %v %%, want %v %%", got, want)
			}
		})
	}
}

// guardBound is how long past its idle timeout a Sandman sandbox can run
// whatever the sweep does: the provider timeout is never more than grace +
// the guard headroom past the recorded idle deadline, which is at most the
// coalescing window after the real one (lifecycle.Session.MarkActivity,
// lifecycle.Policy.ProviderTimeout, lifecycle.Policy.GuardBound).
func guardBound(tb testing.TB, cfg costsim.Config) time.Duration {
	tb.Helper()
	bound, holds := cfg.Lifecycle.GuardBound(cfg.Lifecycle.DefaultIdleTimeout)
	if !holds {
		tb.Fatalf("the provider cannot hold a %v idle timeout under %+v", cfg.Lifecycle.DefaultIdleTimeout, cfg.Lifecycle)
	}
	return bound
}

func TestGuardBoundsOvershootWithMissedSweeps(t *testing.T) {
	r := MustDefaultReport(t)
	bound := guardBound(t, costsim.DefaultConfig())
	interval := costsim.DefaultConfig().SweepInterval
	cron := MustResult(t, r, "cron sweep, 5% missed sweeps")
	ours := MustResult(t, r, "sandman, 5% missed sweeps")

	if cron.SweepsMissed == 0 {
		t.Fatalf("5%% scenario missed no sweep")
	}
	if got, want := ours.SweepsMissed, cron.SweepsMissed; got != want {
		t.Fatalf("sandman missed %d sweeps, cron %d: the scenarios should miss the same ticks", got, want)
	}
	// Sandman's deadline counts the coalescing window, so its sweep pauses
	// up to that much later than the cron sweep's.
	gran := costsim.DefaultConfig().Lifecycle.ActivityGranularity
	if got, limit := ours.OvershootP99, cron.OvershootP99+gran; got > limit {
		t.Fatalf("sandman overshoot p99 = %v, above the cron sweep's + the window, %v", got, limit)
	}
	if got := ours.OvershootMax; got > bound {
		t.Fatalf("sandman overshoot max = %v, want at most grace + headroom + granularity = %v", got, bound)
	}
	if got := ours.OvershootMax; got <= interval {
		t.Fatalf("sandman overshoot max with missed sweeps = %v, want beyond one sweep interval (%v): "+
			"a missed tick should leave the pause to the provider", got, interval)
	}
	// Sandman's recorded deadline counts the coalescing window
	// (lifecycle.Session.MarkActivity), so its sweep may pause up to one
	// interval after that, the window after the real idle timeout.
	for name, limit := range map[string]time.Duration{"cron sweep": interval,
		"sandman": interval + costsim.DefaultConfig().Lifecycle.ActivityGranularity} {
		if got := MustResult(t, r, name).OvershootMax; got > limit {
			t.Errorf("%s overshoot max without missed sweeps = %v, want at most %v", name, got, limit)
		}
	}
}

// TestNoEarlyProviderPauses: while the control plane is up, the provider
// timeout is at least grace (2 min) past the recorded idle deadline, which
// lags the real one by less than the coalescing granularity (30 s), so the
// provider never pauses before the idle timeout; the only early pauses are
// the sweep's, less than the granularity early. Cron writes every heartbeat
// and pauses none early.
func TestNoEarlyProviderPauses(t *testing.T) {
	r := MustDefaultReport(t)
	gran := costsim.DefaultConfig().Lifecycle.ActivityGranularity
	for _, name := range []string{"sandman", "sandman, 5% missed sweeps"} {
		t.Run(name, func(t *testing.T) {
			res := MustResult(t, r, name)
			if got, want := res.EarlyProviderPauses, 0; got != want {
				t.Errorf("early pauses by the provider = %d, want %d", got, want)
			}
			if res.ProviderPauses == 0 {
				t.Errorf("no pause by the provider timeout: the guard was never exercised")
			}
			if got, limit := res.OvershootMin, -gran; got <= limit {
				t.Errorf("earliest pause = %v, want after %v (the coalescing lag)", got, limit)
			}
		})
	}
	for _, name := range []string{"cron sweep", "cron sweep, 5% missed sweeps"} {
		t.Run(name, func(t *testing.T) {
			if got, want := MustResult(t, r, name).EarlyPauses, 0; got != want {
				t.Errorf("early pauses = %d, want %d", got, want)
			}
		})
	}
}

func TestOutageIsBoundedByTheGuard(t *testing.T) {
	r := MustDefaultReport(t)
	bound := guardBound(t, costsim.DefaultConfig())
	cron := MustResult(t, r, "cron sweep, 6 h outage")
	ours := MustResult(t, r, "sandman, 6 h outage")

	if got := ours.OvershootMax; got > bound {
		t.Fatalf("sandman overshoot max during the outage = %v, want at most grace + headroom + granularity = %v", got, bound)
	}
	if got := cron.OvershootMax; got <= bound {
		t.Fatalf("cron overshoot max during the outage = %v, want beyond the guard's bound %v", got, bound)
	}
	if got, want := cron.OvershootMax, 5*time.Hour; got < want {
		t.Fatalf("cron overshoot max during a 6 h outage = %v, want at least %v", got, want)
	}
	if cron.RefusedRequests == 0 || ours.RefusedRequests != cron.RefusedRequests {
		t.Fatalf("refused requests: cron %d, sandman %d; want the same, non-zero",
			cron.RefusedRequests, ours.RefusedRequests)
	}
	if got, limit := ours.BilledMinutes, cron.BilledMinutes; got > limit {
		t.Fatalf("sandman billed %.1f minutes in the outage, more than cron's %.1f", got, limit)
	}
	// Refused heartbeats do not move the deadline: the provider pauses some
	// users who are still working.
	if ours.EarlyProviderPauses == 0 || ours.Interrupted == 0 || ours.Interrupted > ours.EarlyProviderPauses {
		t.Fatalf("outage: %d early provider pauses, %d under an active user; want some, the latter among the former",
			ours.EarlyProviderPauses, ours.Interrupted)
	}
}

func TestCoalescingSavesWrites(t *testing.T) {
	r := MustDefaultReport(t)
	cron, ours := MustResult(t, r, "cron sweep"), MustResult(t, r, "sandman")
	// The cron design writes every heartbeat but creates and resumes.
	if got, want := cron.HeartbeatWrites, r.Trace.Heartbeats-r.Trace.Sessions-cron.Resumes; got != want {
		t.Fatalf("cron heartbeat writes = %d, want %d", got, want)
	}
	if got, limit := ours.HeartbeatWrites, cron.HeartbeatWrites*3/4; got > limit {
		t.Fatalf("sandman heartbeat writes = %d, want at most %d (coalescing)", got, limit)
	}
	if ours.ProviderRefreshes == 0 || ours.ProviderRefreshes > ours.HeartbeatWrites/5 {
		t.Fatalf("sandman provider refreshes = %d for %d writes, want a few per idle timeout",
			ours.ProviderRefreshes, ours.HeartbeatWrites)
	}
	// A refresh comes only once more than the guard's refresh interval (its
	// headroom) has run since the provider timeout was last set (at create,
	// resume or a refresh), so a running span of length L holds fewer than
	// L / interval of them.
	pol := costsim.DefaultConfig().Lifecycle
	every := pol.GuardRefreshInterval(pol.DefaultIdleTimeout)
	for _, name := range []string{"sandman", "sandman, 5% missed sweeps", "sandman, 6 h outage"} {
		res := MustResult(t, r, name)
		if got, limit := float64(res.ProviderRefreshes), res.BilledMinutes/every.Minutes(); got >= limit {
			t.Errorf("%s: %d provider refreshes in %.0f running minutes, want fewer than one per %v",
				name, res.ProviderRefreshes, res.BilledMinutes, every)
		}
	}
}

// handConfig replays one scenario per policy with no jitter anywhere, with
// a guard headroom of 5 min (half the idle timeout), so that the provider's
// timeout pauses before the sweep in the hand-worked traces below.
func handConfig() costsim.Config {
	cfg := costsim.DefaultConfig()
	cfg.Lifecycle.GuardHeadroom = 5 * time.Minute
	cfg.Scenarios = []costsim.Scenario{
		{Name: "never", Policy: costsim.NeverPause},
		{Name: "cron", Policy: costsim.CronSweep},
		{Name: "sandman", Policy: costsim.Sandman},
	}
	return cfg
}

// handTrace is one session starting 1 min after a sweep tick: active 0-10
// min, idle 30 min, active 40-45 min, a heartbeat exactly every 30 s.
func handTrace() costsim.Trace {
	start := time.Minute
	return costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: start, End: start + 10*time.Minute},
		costsim.Burst{Start: start + 40*time.Minute, End: start + 45*time.Minute},
	)}}
}

// TestHandTrace checks a trace small enough to replay by hand (times from
// the session's start; sweep ticks fall at -1, 4, 9, 14, ... min; idle
// timeout 10 min, grace 2 min, headroom 5 min, granularity 30 s):
//
//   - never: runs 0-45 min: 45 min.
//   - cron: every heartbeat written (30 writes: all but the create and the
//     resume); idle deadline 20 min, next tick 24 min: paused (overshoot 4
//     min); resumed at 40; deadline 55, paused at tick 59 (4 min again):
//     24 + 19 = 43 min. Ticks -1 .. 59 run: 13.
//   - sandman: created at 0 with deadline 10:30 (the idle timeout plus the
//     30 s coalescing window) and provider timeout 10:30 + 2 + 5 = 17:30.
//     Each heartbeat comes exactly 30 s after the last recorded one, so
//     none is coalesced: writes at 0:30 .. 10:00 (20), each moving the
//     deadline to the write + 10:30. A write refreshes when the timeout
//     17:30 is before its deadline + grace (w + 12:30), first at 5:30:
//     timeout 5:30 + 17:30 = 23:00; the next refresh would need w + 12:30 >
//     23:00, after 10:30, so none. Last write 10:00: deadline 20:30. The
//     tick at 19 finds it not due; the provider pauses it at 23:00, before
//     the tick at 24: overshoot +3:00. Resumed at 40: deadline 50:30,
//     timeout 57:30. Writes 40:30 .. 45:00 (10); a refresh needs w + 12:30 >
//     57:30, after 45: none. Deadline 55:30; the tick at 54 finds it not
//     due, the provider pauses it at 57:30, before the tick at 59: overshoot
//     +2:30. Billed 23 + 17.5 = 40.5 min; 30 writes, 1 refresh, 2 pauses by
//     the provider, none early; overshoots [2:30, 3:00]: p50 (nearest rank)
//     2:30, max 3:00. Ticks -1 .. 59 run (the 59 one finds nothing running
//     and stops the sweeps): 13.
//
// (The first guard, deadline + grace refreshed when less than 5 min was
// left, paused at 19:30 and 52, 30 s and 3 min before the idle timeout, for
// 31.5 min.)
func TestHandTrace(t *testing.T) {
	r := MustReplay(t, handConfig(), handTrace())
	if got, want := r.Trace.ActiveMinutes, 15.0; got != want {
		t.Fatalf("floor = %v minutes, want %v", got, want)
	}
	if got, want := r.NeverPauseMinutes, 45.0; got != want {
		t.Fatalf("never-pause baseline = %v minutes, want %v", got, want)
	}
	tests := []struct {
		name                   string
		billed                 float64
		resumes, pauses, early int
		providerPauses         int
		p50, max               time.Duration
		writes, refreshes      int
		sweeps                 int
	}{
		{name: "never", billed: 45},
		{name: "cron", billed: 43, resumes: 1, pauses: 2, p50: 4 * time.Minute, max: 4 * time.Minute,
			writes: 30, sweeps: 13},
		{name: "sandman", billed: 40.5, resumes: 1, pauses: 2, providerPauses: 2,
			p50: 2*time.Minute + 30*time.Second, max: 3 * time.Minute, writes: 30, refreshes: 1, sweeps: 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := MustResult(t, r, tt.name)
			if got, want := res.BilledMinutes, tt.billed; !approx(got, want) {
				t.Errorf("billed = %v minutes, want %v", got, want)
			}
			if got, want := res.Resumes, tt.resumes; got != want {
				t.Errorf("resumes = %d, want %d", got, want)
			}
			if got, want := res.Pauses, tt.pauses; got != want {
				t.Errorf("pauses = %d, want %d", got, want)
			}
			if got, want := res.ProviderPauses, tt.providerPauses; got != want {
				t.Errorf("pauses by the provider timeout = %d, want %d", got, want)
			}
			if got, want := res.EarlyPauses, tt.early; got != want {
				t.Errorf("early pauses = %d, want %d", got, want)
			}
			if got, want := res.OvershootP50, tt.p50; got != want {
				t.Errorf("overshoot p50 = %v, want %v", got, want)
			}
			if got, want := res.OvershootMax, tt.max; got != want {
				t.Errorf("overshoot max = %v, want %v", got, want)
			}
			if got, want := res.HeartbeatWrites, tt.writes; got != want {
				t.Errorf("heartbeat writes = %d, want %d", got, want)
			}
			if got, want := res.ProviderRefreshes, tt.refreshes; got != want {
				t.Errorf("provider refreshes = %d, want %d", got, want)
			}
			if got, want := res.SweepsRun, tt.sweeps; got != want {
				t.Errorf("sweeps run = %d, want %d", got, want)
			}
			if got, want := res.UserWait, time.Duration(tt.resumes)*time.Second; got != want {
				t.Errorf("user wait = %v, want %v", got, want)
			}
			wantCost := tt.billed * 60 * 2 * 0.000014
			if got := res.CostUSD; math.Abs(got-wantCost) > 1e-12 {
				t.Errorf("cost = %v USD, want %v", got, wantCost)
			}
		})
	}
}

// TestHandTraceOutage takes the control plane down from 10:30 into the hand
// trace for 6 h (times from the session start, as in TestHandTrace).
//
//   - cron: no sweep until 6 h 10:30; the first tick after that is at 6 h
//     14 min: billed 374 min. The second burst's 11 requests are refused
//     but the user works on in the running sandbox, so the overshoot runs
//     from its last request: 6 h 14 - (45 + 10) min = 5 h 19 min.
//   - sandman: the first burst ends before the outage, so the provider
//     timeout is 23:00 as in TestHandTrace (refreshed at 5:30), and the
//     provider, which keeps running, pauses the sandbox there: overshoot
//     +3:00, within grace + headroom + granularity = 7:30. The resume at 40
//     and the rest of the second burst are refused and find it paused: 11
//     blocked, no resume, billed 23 min.
func TestHandTraceOutage(t *testing.T) {
	cfg := handConfig()
	outage := costsim.Outage{Start: time.Minute + 10*time.Minute + 30*time.Second, Duration: 6 * time.Hour}
	cfg.Scenarios = []costsim.Scenario{
		{Name: "cron", Policy: costsim.CronSweep, Outage: outage},
		{Name: "sandman", Policy: costsim.Sandman, Outage: outage},
	}
	r := MustReplay(t, cfg, handTrace())

	cron := MustResult(t, r, "cron")
	if got, want := cron.BilledMinutes, 374.0; !approx(got, want) {
		t.Errorf("cron billed = %v minutes, want %v", got, want)
	}
	if got, want := cron.OvershootMax, 5*time.Hour+19*time.Minute; got != want {
		t.Errorf("cron overshoot = %v, want %v", got, want)
	}
	if got, want := cron.RefusedRequests, 11; got != want {
		t.Errorf("cron refused requests = %d, want %d (the second burst)", got, want)
	}
	if got, want := cron.BlockedRequests, 0; got != want {
		t.Errorf("cron blocked requests = %d, want %d (the sandbox kept running)", got, want)
	}

	ours := MustResult(t, r, "sandman")
	if got, want := ours.BilledMinutes, 23.0; !approx(got, want) {
		t.Errorf("sandman billed = %v minutes, want %v", got, want)
	}
	if got, want := ours.OvershootMax, 3*time.Minute; got != want {
		t.Errorf("sandman overshoot = %v, want %v", got, want)
	}
	if got, want := ours.ProviderPauses, 1; got != want {
		t.Errorf("sandman pauses by the provider = %d, want %d", got, want)
	}
	if got, want := ours.BlockedRequests, 11; got != want {
		t.Errorf("sandman blocked requests = %d, want %d (paused, no resume possible)", got, want)
	}
	if got, want := ours.Resumes, 0; got != want {
		t.Errorf("sandman resumes = %d, want %d", got, want)
	}
}

// TestGuardPausesUnderActiveUserInOutage: active 1:00-21:00 (offsets from
// the epoch), a heartbeat every 30 s, the control plane down from 1:01. The
// create at 1:00 gets through: deadline 11:30 (with the coalescing window),
// provider timeout 11:30 + 2 + 5 = 18:30. The 40 heartbeats 1:30 .. 21:00
// are refused, so none moves the deadline or the timeout, and the provider
// pauses the sandbox at 18:30 while the user is active: an early provider
// pause, 18:30 - (18:30 + 10) = -10 min. The heartbeat at 18:30 goes before
// the timeout at the same instant and finds it running; the 5 of 19:00 ..
// 21:00 find it paused (blocked). Billed 1:00 .. 18:30 = 17.5 min.
func TestGuardPausesUnderActiveUserInOutage(t *testing.T) {
	cfg := handConfig()
	cfg.Scenarios = []costsim.Scenario{{Name: "sandman", Policy: costsim.Sandman,
		Outage: costsim.Outage{Start: time.Minute + time.Second, Duration: time.Hour}}}
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: time.Minute, End: time.Minute + 20*time.Minute})}}
	res := MustResult(t, MustReplay(t, cfg, tr), "sandman")
	if got, want := res.BilledMinutes, 17.5; !approx(got, want) {
		t.Errorf("billed = %v minutes, want %v", got, want)
	}
	if got, want := res.Interrupted, 1; got != want {
		t.Errorf("pauses under an active user = %d, want %d", got, want)
	}
	if got, want := res.EarlyProviderPauses, 1; got != want {
		t.Errorf("early provider pauses = %d, want %d", got, want)
	}
	if got, want := res.OvershootMax, -10*time.Minute; got != want {
		t.Errorf("overshoot = %v, want %v", got, want)
	}
	if got, want := res.RefusedRequests, 40; got != want {
		t.Errorf("refused requests = %d, want %d (1:30 .. 21:00)", got, want)
	}
	if got, want := res.BlockedRequests, 5; got != want {
		t.Errorf("blocked requests = %d, want %d (19:00 .. 21:00)", got, want)
	}
}

// TestGuardBoundIsTight misses every sweep, so only the provider timeout
// pauses. Active 1:00-6:30 (offsets from the epoch), a heartbeat every 30 s.
// sandman: created at 1:00, deadline 11:30 (with the 30 s coalescing
// window), timeout 18:30; writes 1:30 .. 6:30 (11), the one at 6:30 the
// first whose deadline + grace (6:30 + 12:30 = 19:00) is past 18:30:
// refreshed to 6:30 + 17:30 = 24:00. That last write was also the user's
// last request, so the provider pauses at 24:00, exactly grace + headroom +
// granularity = 7:30 past the real idle deadline 16:30: the bound is
// reached. Ticks
// at 0, 5, .., 25 are missed (6); at 25 nothing runs and sweeps stop.
// cron: no sweep ever runs, nothing else pauses: it runs until the replay's
// end, Tail (48 h) after the last activity: 48 h 5.5 min billed.
func TestGuardBoundIsTight(t *testing.T) {
	cfg := handConfig()
	cfg.Scenarios = []costsim.Scenario{
		{Name: "cron", Policy: costsim.CronSweep, SweepFailureRate: 1},
		{Name: "sandman", Policy: costsim.Sandman, SweepFailureRate: 1},
	}
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: time.Minute, End: 6*time.Minute + 30*time.Second})}}
	r := MustReplay(t, cfg, tr)

	ours := MustResult(t, r, "sandman")
	if got, want := ours.OvershootMax, guardBound(t, cfg); got != want {
		t.Errorf("sandman overshoot = %v, want grace + headroom + granularity = %v", got, want)
	}
	if got, want := ours.ProviderPauses, 1; got != want {
		t.Errorf("sandman pauses by the provider = %d, want %d", got, want)
	}
	if got, want := ours.HeartbeatWrites, 11; got != want {
		t.Errorf("sandman heartbeat writes = %d, want %d", got, want)
	}
	if got, want := ours.ProviderRefreshes, 1; got != want {
		t.Errorf("sandman provider refreshes = %d, want %d", got, want)
	}
	if got, want := ours.BilledMinutes, 23.0; !approx(got, want) {
		t.Errorf("sandman billed = %v minutes, want %v", got, want)
	}
	if got, want := ours.SweepsMissed, 6; got != want {
		t.Errorf("sandman sweeps missed = %d, want %d", got, want)
	}
	if got, want := ours.SweepsRun, 0; got != want {
		t.Errorf("sandman sweeps run = %d, want %d", got, want)
	}

	cron := MustResult(t, r, "cron")
	if got, want := cron.Pauses, 0; got != want {
		t.Errorf("cron pauses = %d, want %d", got, want)
	}
	if got, want := cron.RunningAtEnd, 1; got != want {
		t.Errorf("cron running at end = %d, want %d", got, want)
	}
	if got, want := cron.BilledMinutes, 48*60+5.5; !approx(got, want) {
		t.Errorf("cron billed = %v minutes, want %v", got, want)
	}
}

// TestCoalescedHeartbeatNeverPausesEarly: heartbeats every 20 s from 0:30
// to 10:10. Sandman writes only every other one (20 s < 30 s granularity):
// at 1:10, 1:50, ..., 9:50; the last, at 10:10, is coalesced. Its idle
// deadline counts the coalescing window, 9:50 + 10:30 = 20:20, after the
// real 20:10, so the tick at 20:00 leaves it and the one at 25:00 pauses it,
// as the cron design that writes all 29 does.
func TestCoalescedHeartbeatNeverPausesEarly(t *testing.T) {
	cfg := handConfig()
	cfg.Lifecycle.ProviderGrace = time.Hour // keep the provider timeout out of it
	cfg.Scenarios = []costsim.Scenario{
		{Name: "cron", Policy: costsim.CronSweep},
		{Name: "sandman", Policy: costsim.Sandman},
	}
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(20*time.Second,
		costsim.Burst{Start: 30 * time.Second, End: 10*time.Minute + 10*time.Second})}}
	r := MustReplay(t, cfg, tr)
	tests := []struct {
		name      string
		writes    int
		overshoot time.Duration
	}{
		{"cron", 29, 4*time.Minute + 50*time.Second},
		{"sandman", 14, 4*time.Minute + 50*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := MustResult(t, r, tt.name)
			if got, want := res.HeartbeatWrites, tt.writes; got != want {
				t.Errorf("heartbeat writes = %d, want %d", got, want)
			}
			if got, want := res.SweepPauses, 1; got != want {
				t.Fatalf("sweep pauses = %d, want %d", got, want)
			}
			if got, want := res.OvershootMax, tt.overshoot; got != want {
				t.Errorf("overshoot = %v, want %v", got, want)
			}
		})
	}
}

func TestGenerateTrace(t *testing.T) {
	cfg := costsim.DefaultConfig()
	tr, err := costsim.Generate(cfg)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if got, want := len(tr.Sessions), cfg.Sessions; got != want {
		t.Fatalf("sessions = %d, want %d", got, want)
	}
	hb := cfg.Trace.HeartbeatInterval
	jitter := cfg.Trace.HeartbeatJitter
	var peak, night int
	for i, s := range tr.Sessions {
		first := s.Bursts[0].Start
		if first < 0 || first >= time.Duration(cfg.Days)*24*time.Hour {
			t.Fatalf("session %d starts at %v, outside the %d days", i, first, cfg.Days)
		}
		switch h := (first % (24 * time.Hour)) / time.Hour; {
		case h >= 12 && h < 18:
			peak++
		case h < 6:
			night++
		}
		k := 0
		for j, b := range s.Bursts {
			if j > 0 && b.Start-s.Bursts[j-1].End < time.Second {
				t.Fatalf("session %d: gap before burst %d is shorter than 1s", i, j)
			}
			if got, want := s.Heartbeats[k], b.Start; got != want {
				t.Fatalf("session %d burst %d: first heartbeat %v, want its start %v", i, j, got, want)
			}
			for ; k+1 < len(s.Heartbeats) && s.Heartbeats[k+1] <= b.End; k++ {
				d := s.Heartbeats[k+1] - s.Heartbeats[k]
				if d > hb+jitter || (d < hb-jitter && s.Heartbeats[k+1] != b.End) {
					t.Fatalf("session %d: heartbeat interval %v outside %v ± %v", i, d, hb, jitter)
				}
			}
			if got, want := s.Heartbeats[k], b.End; got != want {
				t.Fatalf("session %d burst %d: last heartbeat %v, want its end %v", i, j, got, want)
			}
			k++
		}
		if got, want := k, len(s.Heartbeats); got != want {
			t.Fatalf("session %d: %d heartbeats fall outside its bursts", i, want-got)
		}
	}
	if peak < 2*night {
		t.Fatalf("starts 12-18 UTC = %d, 00-06 UTC = %d: want a diurnal pattern", peak, night)
	}
}

func TestInvalidInput(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*costsim.Config)
		want   string
	}{
		{"NoSessions", func(c *costsim.Config) { c.Sessions = 0 }, "sessions must be positive"},
		{"FailureRate", func(c *costsim.Config) { c.Scenarios[1].SweepFailureRate = 2 }, "sweep failure rate"},
		{"UnknownPolicy", func(c *costsim.Config) { c.Scenarios[0].Policy = "hope" }, "unknown policy"},
		{"Jitter", func(c *costsim.Config) { c.Trace.HeartbeatJitter = c.Trace.HeartbeatInterval }, "heartbeat jitter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := costsim.DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if _, err := costsim.Generate(cfg); err == nil {
				t.Fatalf("Generate accepted the invalid config")
			}
		})
	}
	t.Run("EmptyTrace", func(t *testing.T) {
		if _, err := costsim.Replay(costsim.DefaultConfig(), costsim.Trace{}); err == nil {
			t.Fatalf("Replay accepted an empty trace")
		}
	})
	t.Run("TraceBackInTime", func(t *testing.T) {
		tr := costsim.Trace{Sessions: []costsim.SessionTrace{{
			Bursts:     []costsim.Burst{{Start: time.Minute, End: 2 * time.Minute}},
			Heartbeats: []time.Duration{2 * time.Minute, time.Minute},
		}}}
		if _, err := costsim.Replay(costsim.DefaultConfig(), tr); err == nil {
			t.Fatalf("Replay accepted heartbeats out of order")
		}
	})
}

func TestMarkdown(t *testing.T) {
	r := MustDefaultReport(t)
	md := r.Markdown()
	for _, want := range []string{
		"## Cost replay", "| floor (active time) |", "### Method", "seed 1",
		"Pareto", "log-normal", "$0.000014 per vCPU-second",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	for _, res := range r.Results {
		if !strings.Contains(md, "| "+res.Scenario.Name+" |") {
			t.Errorf("Markdown lacks a row for %q", res.Scenario.Name)
		}
	}
}

func TestUsesLifecycleDefaults(t *testing.T) {
	if got, want := costsim.DefaultConfig().Lifecycle, lifecycle.DefaultPolicy(); got != want {
		t.Fatalf("default lifecycle policy = %+v, want lifecycle.DefaultPolicy() %+v", got, want)
	}
}

// TestPublishedFigures pins the default run's figures that the package
// comment ("The early-pause finding") quotes, so a change to the trace, the
// replay or the lifecycle rules that moves them fails here and the comment
// gets updated with it. Minutes and seconds are rounded as the report
// renders them.
func TestPublishedFigures(t *testing.T) {
	r := MustDefaultReport(t)
	mins := func(m float64) int { return int(m + 0.5) }
	secs := func(d time.Duration) int { return int(d.Round(time.Second) / time.Second) }
	if got, want := mins(r.NeverPauseMinutes), 330274; got != want {
		t.Errorf("never pause billed %d minutes, want %d", got, want)
	}
	cron, cronOut := MustResult(t, r, "cron sweep"), MustResult(t, r, "cron sweep, 6 h outage")
	ours, missed, out := MustResult(t, r, "sandman"), MustResult(t, r, "sandman, 5% missed sweeps"),
		MustResult(t, r, "sandman, 6 h outage")
	tests := []struct {
		name      string
		got, want int
	}{
		{"cron billed minutes", mins(cron.BilledMinutes), 162528},
		{"cron resumes", cron.Resumes, 2399},
		{"cron overshoot p50 s", secs(cron.OvershootP50), 147},
		{"cron overshoot p99 s", secs(cron.OvershootP99), 298},
		{"cron overshoot max s", secs(cron.OvershootMax), 300},
		{"cron outage overshoot max s", secs(cronOut.OvershootMax), 21569},
		{"sandman billed minutes", mins(ours.BilledMinutes), 163538},
		{"sandman pauses", ours.Pauses, 3387},
		{"sandman provider pauses", ours.ProviderPauses, 64},
		{"sandman early pauses", ours.EarlyPauses, 0},
		{"sandman early provider pauses", ours.EarlyProviderPauses, 0},
		{"sandman earliest pause s", secs(ours.OvershootMin), 4},
		{"sandman overshoot p50 s", secs(ours.OvershootP50), 164},
		{"sandman overshoot p99 s", secs(ours.OvershootP99), 322},
		{"sandman overshoot max s", secs(ours.OvershootMax), 330},
		{"sandman resumes", ours.Resumes, 2387},
		{"sandman provider refreshes", ours.ProviderRefreshes, 2840},
		{"sandman heartbeat writes", ours.HeartbeatWrites, 148819},
		{"sandman 5% missed overshoot max s", secs(missed.OvershootMax), 909},
		{"sandman outage billed minutes", mins(out.BilledMinutes), 154925},
		{"sandman outage overshoot max s", secs(out.OvershootMax), 1733},
		{"sandman outage early provider pauses", out.EarlyProviderPauses, 13},
		{"sandman outage pauses under an active user", out.Interrupted, 12},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d (update the package comment with it)", tt.name, tt.got, tt.want)
		}
	}
}
