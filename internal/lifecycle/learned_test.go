package lifecycle_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// histogramOf returns a histogram holding each gap n times.
func histogramOf(n int, gaps ...time.Duration) *lifecycle.IdleHistogram {
	h := &lifecycle.IdleHistogram{}
	for range n {
		for _, g := range gaps {
			h.Observe(g)
		}
	}
	return h
}

func TestPlanThinUsesBreakEven(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	plan := p.Plan(10*time.Minute, histogramOf(1, 3*time.Minute), nil)
	if got, want := plan.Why, lifecycle.WhyThin; got != want {
		t.Fatalf("why = %s, want %s", got, want)
	}
	if got, want := plan.PauseAfter, p.BreakEven; got != want {
		t.Errorf("pause after %v, want the break-even %v", got, want)
	}
	t.Run("CapBelowBreakEven", func(t *testing.T) {
		if got, want := p.Plan(90*time.Second).PauseAfter, 90*time.Second; got != want {
			t.Errorf("pause after %v, want the cap %v", got, want)
		}
	})
	t.Run("CapAtFloor", func(t *testing.T) {
		if got, want := p.Plan(time.Minute).Why, lifecycle.WhyCap; got != want {
			t.Errorf("why = %s, want %s", got, want)
		}
	})
}

func TestPlanFallsBackAlongTheChain(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	user := histogramOf(1, 2*time.Minute)                 // thin
	account := histogramOf(50, 2*time.Minute+time.Second) // not thin
	plan := p.Plan(10*time.Minute, user, account)
	if got, want := plan.Level, 1; got != want {
		t.Fatalf("level = %d, want %d (the account's)", got, want)
	}
	if got, want := plan.Why, lifecycle.WhyLearned; got != want {
		t.Errorf("why = %s, want %s", got, want)
	}
}

func TestPlanKeepsAliveToTheTail(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	// 200 returns after 2 min, 1 after 6 min (0.5 %, within the 1 %
	// share), 30 after an hour (beyond the cap, waited for anyway).
	h := histogramOf(200, 2*time.Minute+10*time.Second)
	h.Observe(6 * time.Minute)
	for range 30 {
		h.Observe(time.Hour + 17*time.Minute*time.Duration(len(h.Counts)%3))
	}
	plan := p.Plan(10*time.Minute, h)
	if got, want := plan.PauseAfter, 3*time.Minute; got != want {
		t.Errorf("pause after %v, want %v", got, want)
	}
	t.Run("CapIsTheCeiling", func(t *testing.T) {
		wide := histogramOf(20, 2*time.Minute, 9*time.Minute, 20*time.Minute)
		if got, want := p.Plan(10*time.Minute, wide).PauseAfter, 10*time.Minute; got != want {
			t.Errorf("pause after %v, want the cap %v", got, want)
		}
	})
	t.Run("FewReturnsStretch", func(t *testing.T) {
		// Six returns between 2 and 4 min cannot show a 1 % tail: the
		// timeout is stretched past the largest.
		few := histogramOf(1, 2*time.Minute, 2*time.Minute+30*time.Second, 3*time.Minute, 3*time.Minute+20*time.Second,
			3*time.Minute+40*time.Second, 4*time.Minute)
		if got := p.Plan(30*time.Minute, few).PauseAfter; got <= 5*time.Minute {
			t.Errorf("pause after %v, want past the largest bin (5 min)", got)
		}
	})
}

func TestPlanPredictsClockwork(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	// Every 30 min (29..31), and two out-of-bounds nights.
	h := histogramOf(10, 29*time.Minute+30*time.Second, 30*time.Minute+10*time.Second, 31*time.Minute)
	h.Observe(15 * time.Hour)
	h.Observe(16 * time.Hour)
	plan := p.Plan(10*time.Minute, h)
	if got, want := plan.Why, lifecycle.WhyPredicted; got != want {
		t.Fatalf("why = %s, want %s", got, want)
	}
	if got, want := plan.PauseAfter, p.Floor; got != want {
		t.Errorf("pause after %v, want the floor %v", got, want)
	}
	if got, want := plan.PreResumeAfter, 29*time.Minute-p.PreResumeLead; got != want {
		t.Errorf("pre-resume after %v, want %v", got, want)
	}
	if got, want := plan.PreResumeKeep, 3*time.Minute+p.PreResumeLead; got != want {
		t.Errorf("keep %v, want %v", got, want)
	}
	for _, tt := range []struct {
		gap        time.Duration
		preResumed bool
		want       lifecycle.Outcome
	}{
		{30 * time.Second, false, lifecycle.OutcomeNone},
		{20 * time.Minute, false, lifecycle.OutcomeEarly},
		{30 * time.Minute, true, lifecycle.OutcomeHit},
		{40 * time.Minute, true, lifecycle.OutcomeNone},
		{40 * time.Minute, false, lifecycle.OutcomeLate},
	} {
		if got := plan.Outcome(tt.gap, tt.preResumed); got != tt.want {
			t.Errorf("outcome of %v (pre-resumed %v) = %v, want %v", tt.gap, tt.preResumed, got, tt.want)
		}
	}
	t.Run("MissesFallBack", func(t *testing.T) {
		h.RecordOutcome(false)
		h.RecordOutcome(false)
		plan := p.Plan(10*time.Minute, h)
		if got, want := plan.Why, lifecycle.WhyMissed; got != want {
			t.Fatalf("why = %s, want %s", got, want)
		}
		if plan.PreResume || plan.PauseAfter != p.BreakEven {
			t.Errorf("plan %+v: want no pre-resume and the break-even timeout", plan)
		}
		h.RecordOutcome(true)
		h.RecordOutcome(true)
		h.RecordOutcome(true)
		if got, want := p.Plan(10*time.Minute, h).Why, lifecycle.WhyPredicted; got != want {
			t.Errorf("after three hits why = %s, want %s", got, want)
		}
	})
	t.Run("WideIsNotPredicted", func(t *testing.T) {
		wide := histogramOf(4, 20*time.Minute, 35*time.Minute, 50*time.Minute, 70*time.Minute)
		if got := p.Plan(10*time.Minute, wide).Why; got == lifecycle.WhyPredicted {
			t.Errorf("gaps spread over 50 min were predicted")
		}
	})
}

func TestLearnedPolicyValidate(t *testing.T) {
	if err := lifecycle.DefaultLearnedPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	p := lifecycle.DefaultLearnedPolicy()
	p.Floor = time.Second
	if p.Validate() == nil {
		t.Error("a floor under a minute: want an error")
	}
	p = lifecycle.DefaultLearnedPolicy()
	p.MissLimit = 5
	if p.Validate() == nil {
		t.Error("miss limit 5: want an error")
	}
}
