package costsim_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// timerConfig replays the hand traces under Sandman with timers, with and
// without presence.
func timerConfig() costsim.Config {
	cfg := costsim.DefaultConfig()
	cfg.Scenarios = []costsim.Scenario{
		{Name: "timers", Policy: costsim.SandmanTimers},
		{Name: "presence", Policy: costsim.SandmanTimers, Presence: true, AwayProbability: 0.5},
	}
	return cfg
}

// twoBursts is one session active 1:00-11:00 and 41:00-46:00 (offsets from
// the epoch), a heartbeat exactly every 30 s (so every one is written), with
// the presence draw away for the gap between them.
func twoBursts(away float64) costsim.Trace {
	st := costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: time.Minute, End: 11 * time.Minute},
		costsim.Burst{Start: 41 * time.Minute, End: 46 * time.Minute})
	st.Away = []float64{away}
	return costsim.Trace{Sessions: []costsim.SessionTrace{st}}
}

// TestTimerPausesAtDeadline: a session due between two ticks pauses within
// 1 s + the timer lateness of its recorded deadline, not at the next tick.
// Active 1:00.250-11:00.250, every heartbeat written: idle deadline
// 21:30.250 (the real one, 21:00.250, plus the 30 s coalescing window). The
// tick at 15:00 arms nothing (its horizon is 21:00, the next tick + 1 min);
// the tick at 20:00 arms a timer with a delay of 90.25 s rounded up to 91 s,
// which lands the lateness later: at 21:31 + lateness, an overshoot of
// 30.75 s + lateness past the real idle timeout, never before it. The
// second burst pauses the same way.
func TestTimerPausesAtDeadline(t *testing.T) {
	for _, late := range []time.Duration{time.Second, 3 * time.Second} {
		t.Run(late.String(), func(t *testing.T) {
			cfg := timerConfig()
			cfg.TimerLateness = late
			cfg.Scenarios = cfg.Scenarios[:1]
			off := 250 * time.Millisecond
			tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
				costsim.Burst{Start: time.Minute + off, End: 11*time.Minute + off},
				costsim.Burst{Start: 41*time.Minute + off, End: 46*time.Minute + off})}}
			res := MustResult(t, MustReplay(t, cfg, tr), "timers")
			want := 30*time.Second + 750*time.Millisecond + late
			if got := res.OvershootMax; got != want {
				t.Errorf("overshoot max = %v, want %v", got, want)
			}
			if got := res.OvershootMin; got != want {
				t.Errorf("overshoot min = %v, want %v", got, want)
			}
			if got, want := res.TimerPauses, 2; got != want {
				t.Errorf("pauses by timer = %d, want %d", got, want)
			}
			if got, want := res.Pauses, 2; got != want {
				t.Errorf("pauses = %d, want %d", got, want)
			}
			if got, want := res.Resumes, 1; got != want {
				t.Errorf("resumes = %d, want %d", got, want)
			}
			// Billed 1:00.25 .. 21:31+late and 41:00.25 .. 56:31+late.
			if got, want := res.BilledMinutes, (36*time.Minute + 1500*time.Millisecond + 2*late).Minutes(); !approx(got, want) {
				t.Errorf("billed = %v minutes, want %v", got, want)
			}
		})
	}
}

// TestTimerRearmsWhenDeadlineMoves: idle timeout 2 min, so writes set
// deadlines inside the horizon and arm timers at once. Active 0:40-1:10 and
// 2:10-2:40 (offsets from the epoch; the gap is 60 s, so every heartbeat is
// written). The writes at 0:40, 1:10, 2:10 and 2:40 arm timers for their
// deadlines with the 30 s coalescing window, 3:10, 3:40, 4:40 and 5:10
// (each lands 1 s late). Those of 3:11, 3:41 and 4:41 find the deadline
// moved to 5:10 and re-arm for it instead of pausing; the tick at 5:00 arms
// one more for it; the five timers at 5:11 pause the session once, 31 s
// after the real idle timeout ran out (2:40 + 2:00).
func TestTimerRearmsWhenDeadlineMoves(t *testing.T) {
	cfg := timerConfig()
	cfg.Lifecycle.DefaultIdleTimeout = 2 * time.Minute
	cfg.Scenarios = cfg.Scenarios[:1]
	s := time.Second
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: 40 * s, End: 70 * s}, costsim.Burst{Start: 130 * s, End: 160 * s})}}
	res := MustResult(t, MustReplay(t, cfg, tr), "timers")
	tests := []struct {
		name      string
		got, want int
	}{
		{"pauses", res.Pauses, 1},
		{"pauses by timer", res.TimerPauses, 1},
		{"timers armed", res.TimersArmed, 8},
		{"re-armed", res.TimerRearms, 3},
		{"fired with nothing due", res.TimersIdle, 7},
		{"resumes", res.Resumes, 0},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if got, want := res.OvershootMax, 31*time.Second; got != want {
		t.Errorf("overshoot = %v, want %v", got, want)
	}
}

// TestAwayDeadlinePausesEarly: with presence, the client that leaves at
// 11:00 for an away gap gets an away deadline of 13:00; the disconnect arms
// a timer and the session pauses at 13:01 (reason away), not at its idle
// deadline 21:00. The return at 41:00 resumes it, and the user who leaves
// for good at 46:00 closes the page: paused at 48:01. Billed 12:01 + 7:01.
// Timers alone pause at 21:31 and 56:31 (the idle deadline counts the 30 s
// coalescing window): 20:31 + 15:31. With the gap's draw above away_prob
// the client stays: the first pause is the idle one, 31 s past the real
// idle timeout; the away one still lands 1 s after its deadline.
func TestAwayDeadlinePausesEarly(t *testing.T) {
	tests := []struct {
		name                 string
		draw                 float64
		billed               time.Duration
		awayPauses, deadline int
		overshoot            time.Duration
	}{
		{"Away", 0.1, 19*time.Minute + 2*time.Second, 2, 2, time.Second},
		{"Visible", 0.9, 27*time.Minute + 32*time.Second, 1, 1, 31 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := MustReplay(t, timerConfig(), twoBursts(tt.draw))
			res := MustResult(t, r, "presence")
			if got, want := res.BilledMinutes, tt.billed.Minutes(); !approx(got, want) {
				t.Errorf("billed = %v minutes, want %v", got, want)
			}
			if got, want := res.AwayPauses, tt.awayPauses; got != want {
				t.Errorf("pauses at an away deadline = %d, want %d", got, want)
			}
			if got, want := res.AwayDeadlines, tt.deadline; got != want {
				t.Errorf("away deadlines = %d, want %d", got, want)
			}
			if got, want := res.Resumes, 1; got != want {
				t.Errorf("resumes = %d, want %d", got, want)
			}
			if got, want := res.OvershootMax, tt.overshoot; got != want {
				t.Errorf("overshoot max = %v, want %v (against the away or idle deadline)", got, want)
			}
			if got, want := res.EarlyPauses, 0; got != want {
				t.Errorf("early pauses = %d, want %d", got, want)
			}
			timers := MustResult(t, r, "timers")
			if got, want := timers.BilledMinutes, (36*time.Minute + 2*time.Second).Minutes(); !approx(got, want) {
				t.Errorf("timers alone billed = %v minutes, want %v", got, want)
			}
			if got, want := timers.AwayPauses, 0; got != want {
				t.Errorf("timers alone: pauses at an away deadline = %d, want %d", got, want)
			}
		})
	}
}

// TestPresenceNeverKeepsRunning: with an away timeout longer than the idle
// timeout, an away client's session still pauses at its idle deadline
// (21:01 and 56:01, reason idle): presence only brings a pause forward.
func TestPresenceNeverKeepsRunning(t *testing.T) {
	cfg := timerConfig()
	cfg.AwayTimeout = 20 * time.Minute
	r := MustReplay(t, cfg, twoBursts(0))
	res, timers := MustResult(t, r, "presence"), MustResult(t, r, "timers")
	if got, want := res.AwayDeadlines, 2; got != want {
		t.Fatalf("away deadlines = %d, want %d", got, want)
	}
	if got, want := res.AwayPauses, 0; got != want {
		t.Errorf("pauses at an away deadline = %d, want %d", got, want)
	}
	if got, want := res.BilledMinutes, timers.BilledMinutes; !approx(got, want) {
		t.Errorf("billed = %v minutes, timers alone %v: want the same", got, want)
	}
	if got, want := res.OvershootMax, timers.OvershootMax; got != want {
		t.Errorf("overshoot max = %v, timers alone %v: want the same", got, want)
	}

	// On the default trace no presence row runs a session past its idle
	// deadline by more than the coalescing window and a timer's own lateness.
	def := MustDefaultReport(t)
	bound := time.Second + def.Config.TimerLateness + def.Config.Lifecycle.ActivityGranularity
	for _, res := range def.Results {
		if !res.Scenario.Presence {
			continue
		}
		if got := res.OvershootMax; got > bound {
			t.Errorf("%s: overshoot max = %v, want at most %v", res.Scenario.Name, got, bound)
		}
		if res.AwayPauses == 0 || res.AwayPauses > res.AwayDeadlines {
			t.Errorf("%s: %d away pauses for %d away deadlines; want some, at most one each",
				res.Scenario.Name, res.AwayPauses, res.AwayDeadlines)
		}
	}
}

// TestAwayProbZeroEqualsTimersOnly: with no client ever away (away_prob 0 and
// the leaving user not closing the page) presence changes nothing; with the
// page closed on leaving, only the last pause of each session moves, so the
// resumes stay the same and the bill drops.
func TestAwayProbZeroEqualsTimersOnly(t *testing.T) {
	cfg := costsim.DefaultConfig()
	cfg.Sessions = 300
	cfg.Scale.Sessions = 0 // not needed here
	cfg.Scenarios = []costsim.Scenario{
		{Name: "timers", Policy: costsim.SandmanTimers},
		{Name: "presence 0", Policy: costsim.SandmanTimers, Presence: true},
	}
	cfg.LeaveClosesPage = false
	r := costsim.Run(cfg)
	a, b := r.Results[0], r.Results[1]
	a.Scenario, b.Scenario = costsim.Scenario{}, costsim.Scenario{}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("away_prob 0 without closing the page differs from timers alone:\n%+v\n%+v", a, b)
	}

	cfg.LeaveClosesPage = true
	r = costsim.Run(cfg)
	timers, closed := r.Results[0], r.Results[1]
	if got, want := closed.AwayPauses, cfg.Sessions; got != want {
		t.Errorf("pauses at an away deadline = %d, want one per session (%d)", got, want)
	}
	if got, want := closed.Resumes, timers.Resumes; got != want {
		t.Errorf("resumes = %d, want timers alone's %d", got, want)
	}
	if got, limit := closed.BilledMinutes, timers.BilledMinutes; got >= limit {
		t.Errorf("billed %v minutes, want less than timers alone's %v", got, limit)
	}
}

// TestDefaultTimerRows checks the default report's new rows against each
// other and against the overshoot target.
func TestDefaultTimerRows(t *testing.T) {
	r := MustDefaultReport(t)
	cfg := r.Config
	timers := MustResult(t, r, "sandman + timers")
	cron, today := MustResult(t, r, "cron sweep"), MustResult(t, r, "sandman")

	t.Run("TimersOnDeadline", func(t *testing.T) {
		gran := cfg.Lifecycle.ActivityGranularity
		if got, limit := timers.OvershootP99, gran+10*time.Second; got > limit {
			t.Errorf("overshoot p99 = %v, want at most %v", got, limit)
		}
		if got, limit := timers.OvershootMax, time.Second+cfg.TimerLateness+gran; got > limit {
			t.Errorf("overshoot max = %v, want at most 1 s + lateness + the coalescing window = %v", got, limit)
		}
		if got := timers.OvershootMin; got < 0 {
			t.Errorf("earliest pause = %v, want none before the real idle timeout", got)
		}
		if got, want := timers.EarlyPauses, 0; got != want {
			t.Errorf("early pauses = %d, want %d", got, want)
		}
		if got, want := timers.ProviderPauses, 0; got != want {
			t.Errorf("pauses by the provider timeout = %d, want %d", got, want)
		}
		if timers.TimerPauses < timers.Pauses*99/100 {
			t.Errorf("%d of %d pauses by timer, want nearly all", timers.TimerPauses, timers.Pauses)
		}
		if got, limit := timers.BilledMinutes, today.BilledMinutes; got >= limit {
			t.Errorf("billed %v minutes, want less than sandman today's %v", got, limit)
		}
	})

	t.Run("MissedSweeps", func(t *testing.T) {
		missed := MustResult(t, r, "sandman + timers, 5% missed sweeps")
		if got, limit := missed.OvershootMax, guardBound(t, cfg); got > limit {
			t.Errorf("overshoot max = %v, want at most the guard's %v", got, limit)
		}
		if got, floor := missed.OvershootMax, time.Second+cfg.TimerLateness+cfg.Lifecycle.ActivityGranularity; got <= floor {
			t.Errorf("overshoot max = %v, want past a timer's lateness and the coalescing window, %v (a missed tick arms nothing)",
				got, floor)
		}
	})

	t.Run("PresenceMonotonic", func(t *testing.T) {
		var prev costsim.Result
		for i, p := range costsim.DefaultAwayProbabilities {
			res := MustResult(t, r, "sandman + timers + presence, away_prob "+strconv.FormatFloat(p, 'f', -1, 64))
			if res.RatioToFloor > timers.RatioToFloor {
				t.Errorf("%s: %.3f× the floor, more than timers alone's %.3f×", res.Scenario.Name, res.RatioToFloor, timers.RatioToFloor)
			}
			if i > 0 && (res.BilledMinutes >= prev.BilledMinutes || res.Resumes < prev.Resumes) {
				t.Errorf("%s: billed %.0f, %d resumes; %s billed %.0f, %d resumes: want less billed and no fewer resumes",
					res.Scenario.Name, res.BilledMinutes, res.Resumes, prev.Scenario.Name, prev.BilledMinutes, prev.Resumes)
			}
			prev = res
		}
		if got := MustResult(t, r, "sandman + timers + presence, away_prob 0").Resumes; got != timers.Resumes {
			t.Errorf("away_prob 0: %d resumes, timers alone %d: want the same", got, timers.Resumes)
		}
		if got := MustResult(t, r, "sandman + timers + presence, away_prob 1").Resumes; got <= cron.Resumes {
			t.Errorf("away_prob 1: %d resumes, want more than the cron sweep's %d", got, cron.Resumes)
		}
	})

	t.Run("Outage", func(t *testing.T) {
		ours, old := MustResult(t, r, "sandman + timers, 6 h outage"), MustResult(t, r, "sandman, 6 h outage")
		if got, limit := ours.BilledMinutes, old.BilledMinutes; got > limit {
			t.Errorf("billed %v minutes, more than today's %v", got, limit)
		}
		if got, limit := ours.OvershootMax, guardBound(t, cfg); got > limit {
			t.Errorf("overshoot max = %v, want at most the guard's %v", got, limit)
		}
		if got, want := ours.RefusedRequests, old.RefusedRequests; got != want {
			t.Errorf("refused requests = %d, today %d: want the same", got, want)
		}
	})
}

func TestInvalidTimerConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*costsim.Config)
		want   string
	}{
		{"AwayProbability", func(c *costsim.Config) {
			c.Scenarios = []costsim.Scenario{{Name: "x", Policy: costsim.SandmanTimers, Presence: true, AwayProbability: 1.5}}
		}, "away probability"},
		{"PresenceWithCron", func(c *costsim.Config) {
			c.Scenarios = []costsim.Scenario{{Name: "x", Policy: costsim.CronSweep, Presence: true}}
		}, "presence needs"},
		{"MarginPastSQSDelay", func(c *costsim.Config) { c.TimerMargin = 11 * time.Minute }, "15m maximum delay"},
		{"NegativeLateness", func(c *costsim.Config) { c.TimerLateness = -time.Second }, "timer lateness"},
		{"NegativeAwayTimeout", func(c *costsim.Config) { c.AwayTimeout = -time.Second }, "away timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := costsim.DefaultConfig()
			tt.mutate(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	t.Run("PresenceDrawsMismatch", func(t *testing.T) {
		tr := twoBursts(0.5)
		tr.Sessions[0].Away = []float64{0.1, 0.2}
		if _, err := costsim.Replay(timerConfig(), tr); err == nil {
			t.Fatalf("Replay accepted two presence draws for one gap")
		}
	})
}

// TestPublishedTimerFigures pins the default run's timers, presence and
// scale figures that the package comment ("Timers and presence") quotes, so
// a change that moves them fails here and the comment gets updated with it.
func TestPublishedTimerFigures(t *testing.T) {
	r := MustDefaultReport(t)
	mins := func(m float64) int { return int(m + 0.5) }
	secs := func(d time.Duration) int { return int(d.Round(time.Second) / time.Second) }
	tenths := func(d time.Duration) int { return int(d.Round(100*time.Millisecond) / (100 * time.Millisecond)) }
	timers := MustResult(t, r, "sandman + timers")
	missed := MustResult(t, r, "sandman + timers, 5% missed sweeps")
	p0 := MustResult(t, r, "sandman + timers + presence, away_prob 0")
	p5 := MustResult(t, r, "sandman + timers + presence, away_prob 0.5")
	p1 := MustResult(t, r, "sandman + timers + presence, away_prob 1")
	out := MustResult(t, r, "sandman + timers, 6 h outage")
	sc := r.Scale.Results
	tests := []struct {
		name      string
		got, want int
	}{
		{"timers billed minutes", mins(timers.BilledMinutes), 155217},
		{"timers resumes", timers.Resumes, 2463},
		{"timers pauses", timers.Pauses, 3463},
		{"timers early pauses", timers.EarlyPauses, 0},
		{"timers earliest pause s", secs(timers.OvershootMin), 1},
		{"timers overshoot p50 s", secs(timers.OvershootP50), 24},
		{"timers overshoot p99 s", secs(timers.OvershootP99), 32},
		{"timers overshoot max s", secs(timers.OvershootMax), 32},
		{"timers 5% missed billed minutes", mins(missed.BilledMinutes), 155476},
		{"timers 5% missed overshoot p99 s", secs(missed.OvershootP99), 193},
		{"timers 5% missed overshoot max s", secs(missed.OvershootMax), 568},
		{"presence 0 billed minutes", mins(p0.BilledMinutes), 146879},
		{"presence 0.5 billed minutes", mins(p5.BilledMinutes), 134788},
		{"presence 0.5 resumes", p5.Resumes, 3398},
		{"presence 1 billed minutes", mins(p1.BilledMinutes), 122294},
		{"presence 1 resumes", p1.Resumes, 4222},
		{"gaps between away and idle timeouts", r.Trace.GapsAwayToIdle, 1782},
		{"timers outage billed minutes", mins(out.BilledMinutes), 147123},
		{"timers outage overshoot max s", secs(out.OvershootMax), 1733},
		{"timers outage resumes", out.Resumes, 2309},
		{"scale sweep p50 ds", tenths(sc[0].LatenessP50), 2251},
		{"scale sweep p99 ds", tenths(sc[0].LatenessP99), 2985},
		{"scale timers p50 ds", tenths(sc[1].LatenessP50), 17},
		{"scale timers max ds", tenths(sc[1].LatenessMax), 20},
		{"scale shared p99 ds", tenths(sc[2].LatenessP99), 49},
		{"scale shared max ds", tenths(sc[2].LatenessMax), 51},
		{"scale mass p99 ds", tenths(sc[3].LatenessP99), 1335},
		{"scale mass max ds", tenths(sc[3].LatenessMax), 1515},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d (update the package comment with it)", tt.name, tt.got, tt.want)
		}
	}
}

// TestTargetsMarkdown: the targets section judges each target from the
// figures of the run, and names the assumptions it rests on.
func TestTargetsMarkdown(t *testing.T) {
	r := MustDefaultReport(t)
	md := r.Markdown()
	timers := MustResult(t, r, "sandman + timers")
	p5 := MustResult(t, r, "sandman + timers + presence, away_prob 0.5")
	cron := MustResult(t, r, "cron sweep")
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**not met**"
	}
	p99 := int(timers.OvershootP99.Round(time.Second) / time.Second)
	spread := float64(p5.Resumes-cron.Resumes) / float64(cron.Resumes)
	for _, want := range []string{
		"### Targets",
		"overshoot p99 " + strconv.Itoa(p99) + " s (target ≤ 10 s): " + verdict(timers.OvershootP99 <= 10*time.Second),
		"(target ≤ 1.25×): " + verdict(p5.RatioToFloor <= 1.25),
		"target within ±5 %): " + verdict(spread >= -0.05 && spread <= 0.05),
		"an away timeout of 2 min", "timer pause lands 1 s after",
		"### Scale", "| sandman + timers + presence, away_prob 0.5 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}

// TestAwayFrontier: each frontier point is the presence row replayed with
// its away timeout (the 2 min point equals the report's away_prob 0.5 row),
// a longer away timeout never bills less or resumes more on the same trace,
// and the table judges both targets from those figures.
func TestAwayFrontier(t *testing.T) {
	r := MustDefaultReport(t)
	if got, want := len(r.Frontier), len(costsim.DefaultAwayFrontier); got != want {
		t.Fatalf("frontier points = %d, want %d", got, want)
	}
	p5 := MustResult(t, r, "sandman + timers + presence, away_prob 0.5")
	first := r.Frontier[0]
	if first.AwayTimeout != r.Config.AwayTimeout {
		t.Fatalf("first frontier point at %s, want the configured away timeout %s", first.AwayTimeout, r.Config.AwayTimeout)
	}
	if first.Result.BilledMinutes != p5.BilledMinutes || first.Result.Resumes != p5.Resumes {
		t.Errorf("2 min point billed %v min with %d resumes, want the away_prob 0.5 row's %v with %d",
			first.Result.BilledMinutes, first.Result.Resumes, p5.BilledMinutes, p5.Resumes)
	}
	if first.GapsAwayToIdle != r.Trace.GapsAwayToIdle {
		t.Errorf("2 min point counts %d gaps, want the trace's %d", first.GapsAwayToIdle, r.Trace.GapsAwayToIdle)
	}
	for i := 1; i < len(r.Frontier); i++ {
		a, b := r.Frontier[i-1], r.Frontier[i]
		if b.Result.BilledMinutes < a.Result.BilledMinutes {
			t.Errorf("away timeout %s bills %v min, less than %s's %v", b.AwayTimeout, b.Result.BilledMinutes, a.AwayTimeout, a.Result.BilledMinutes)
		}
		if b.Result.Resumes > a.Result.Resumes {
			t.Errorf("away timeout %s resumes %d times, more than %s's %d", b.AwayTimeout, b.Result.Resumes, a.AwayTimeout, a.Result.Resumes)
		}
		if b.GapsAwayToIdle > a.GapsAwayToIdle {
			t.Errorf("away timeout %s has %d gaps before the idle timeout, more than %s's %d", b.AwayTimeout, b.GapsAwayToIdle, a.AwayTimeout, a.GapsAwayToIdle)
		}
	}
	if last := r.Frontier[len(r.Frontier)-1]; last.GapsAwayToIdle != 0 {
		t.Errorf("at the idle timeout %d gaps remain between it and the idle timeout, want 0", last.GapsAwayToIdle)
	}
	md := r.Markdown()
	for _, want := range []string{"### Presence trade-off: the away timeout", "| 2 min | 1,782 | 134,788 | 1.24 ✓ | 3,398 | +41.6 % ✗ | not met |"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
}
