package costsim_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// smallCalls is the provider-call model scaled down: 6,000 active sessions
// refreshing every 5 min (a 5 min guard headroom: 600 refreshes per 30 s), 100 pauses, 100 resumes
// and 30 creates per 30 s, against a limit of 200 per 30 s: 830 calls per
// 30 s, 4.15× the limit.
func smallCalls() costsim.ScaleConfig {
	c := costsim.DefaultScale()
	c.Sessions, c.DueRate, c.ResumeRate, c.CreateRate = 6000, 1000, 1000, 300
	c.Intervals, c.RateLimit = 1, 200
	c.Guard.GuardHeadroom = 5 * time.Minute
	c.MassDisconnect = 0
	return c
}

// TestSharedLimiterDelays: the provider call limiter with one class (first
// come first served) over its limit delays every kind alike and drains one
// interval's calls at the limit; with its classes it keeps resumes and
// creates within seconds while refreshes wait longest; calls still waiting
// when the drain stops are unserved.
func TestSharedLimiterDelays(t *testing.T) {
	r := MustScale(t, smallCalls())
	if got, want := len(r.Calls), 3; got != want {
		t.Fatalf("limiter rows = %d, want %d", got, want)
	}
	fifo, prio, none := r.Calls[0], r.Calls[1], r.Calls[2]
	resume, create, pause, refresh := costsim.CallResume, costsim.CallCreate, costsim.CallPause, costsim.CallRefresh
	if got, want := fifo.Demand.Total(), 830.0; math.Abs(got-want) > 1e-9 {
		t.Fatalf("demand = %v calls per 30 s, want %v", got, want)
	}
	if got, want := fifo.Calls[refresh], 6000; got != want {
		t.Errorf("refreshes in one interval = %d, want %d", got, want)
	}
	// 8,300 calls at 200 per 30 s take 1,245 s.
	if got, want := fifo.Drained, 1245*time.Second; got < want*98/100 || got > want*102/100 {
		t.Errorf("first come first served drained at %v, want about %v", got, want)
	}
	for k := range 4 {
		kind := costsim.CallKind(k)
		if d := fifo.DelayP50[kind] - fifo.DelayP50[pause]; d < -fifo.Drained/10 || d > fifo.Drained/10 {
			t.Errorf("first come first served: %s p50 %v, pause p50 %v: want alike", kind, fifo.DelayP50[kind], fifo.DelayP50[pause])
		}
	}
	if prio.DelayP99[resume] > 5*time.Second || prio.DelayP99[create] > 5*time.Second {
		t.Errorf("users first: resume p99 %v, create p99 %v, want within 5 s", prio.DelayP99[resume], prio.DelayP99[create])
	}
	if !(prio.DelayP50[refresh] > prio.DelayP50[pause] && prio.DelayP50[pause] > prio.DelayP50[resume]) {
		t.Errorf("users first: p50 refresh %v, pause %v, resume %v: want refreshes longest, resumes shortest",
			prio.DelayP50[refresh], prio.DelayP50[pause], prio.DelayP50[resume])
	}
	// Without refreshes: 230 per 30 s, 1.15× the limit. The users' 130
	// are served first; the pauses get the other 70 of their 100 while the
	// interval lasts, so the one arriving at 210 s waits until 300 s (90 s),
	// and the excess (0.15 × 300 s) drains 45 s after the interval.
	if none.Calls[refresh] != 0 {
		t.Errorf("no refresh row made %d refreshes", none.Calls[refresh])
	}
	if got := none.DelayMax[pause]; got < 80*time.Second || got > 100*time.Second {
		t.Errorf("no refresh: pause delay max %v, want about 90 s", got)
	}
	if got, want := none.Drained, 345*time.Second; got < want-5*time.Second || got > want+5*time.Second {
		t.Errorf("no refresh: drained at %v, want about %v", got, want)
	}
	if none.DelayP99[resume] > 5*time.Second || none.DelayP99[create] > 5*time.Second {
		t.Errorf("no refresh: resume p99 %v, create p99 %v, want within 5 s", none.DelayP99[resume], none.DelayP99[create])
	}

	c := smallCalls()
	c.LimiterDrain = 10 * time.Minute
	short := MustScale(t, c).Calls[1]
	if short.Unserved[refresh] == 0 || short.Unserved[resume] != 0 {
		t.Errorf("drain stopped at 10 min: %d refreshes and %d resumes unserved, want some and none",
			short.Unserved[refresh], short.Unserved[resume])
	}
}

// TestProviderCallsAtTheTarget pins the default target's demand (refreshes
// = 1,000,000 active sessions × 30 s / the 27.5 min default headroom) and
// checks the section names every provider limit and the headroom options
// with their refresh intervals (the 1 h one capped by the 1 h plan) and
// bounds.
func TestProviderCallsAtTheTarget(t *testing.T) {
	r := MustDefaultReport(t)
	today := r.Scale.Calls[0].Demand
	want := costsim.CallDemand{costsim.CallResume: 10_000, costsim.CallCreate: 3_000, costsim.CallPause: 10_000, costsim.CallRefresh: 1_000_000 * 30.0 / 1650}
	for k := range want {
		if math.Abs(today[k]-want[k]) > 1e-6 {
			t.Errorf("demand per 30 s = %v, want %v", today, want)
		}
	}
	md := r.Markdown()
	for _, s := range []string{
		"### Scale: provider calls at the target",
		"| e2b (Pro) | 20,000 | 41,181 | 2.06 | 23,000 | 1.15 |",
		"| 5 min | 5 min | 100,000 | 123,000 | 153,750 | 7.7 | 7.5 min |",
		"| 27.5 min (today) | 27.5 min | 18,181 | 41,181 | 51,477 | 2.6 | 30 min |",
		"| 1 h | 47.5 min (the 1 h cap) | 10,526 | 33,526 | 41,907 | 2.1 | 50 min |",
		"| none | never | 0 | 23,000 | 28,750 | 1.4 |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("Markdown lacks %q", s)
		}
	}
}
