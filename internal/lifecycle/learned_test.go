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

func TestPlanMinimisesExpectedCost(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	// 200 returns after 2 min: keeping alive 3 min costs 2.5 min a gap,
	// pausing at the floor 1 + B + the wait; the 30 returns after an hour
	// wait under any deadline below the cap.
	h := histogramOf(200, 2*time.Minute+10*time.Second)
	h.Observe(6 * time.Minute)
	for i := range 30 {
		h.Observe(time.Hour + time.Duration(i)*3*time.Minute)
	}
	if got, want := p.Plan(10*time.Minute, h).PauseAfter, 3*time.Minute; got != want {
		t.Errorf("pause after %v, want %v", got, want)
	}
	t.Run("LateReturnsPauseAtTheFloor", func(t *testing.T) {
		// Every return after 20 min or more, spread: nothing to predict,
		// nothing worth keeping alive for.
		late := histogramOf(3, 20*time.Minute, 45*time.Minute, 70*time.Minute, 2*time.Hour)
		plan := p.Plan(10*time.Minute, late)
		if plan.PauseAfter != p.Floor || plan.Why != lifecycle.WhyLearned {
			t.Errorf("plan %+v, want the floor, learned", plan)
		}
	})
	t.Run("CapIsTheCeiling", func(t *testing.T) {
		// Every return before the cap, spread over it: keeping alive to
		// the cap is cheapest, and the cap is never passed.
		wide := histogramOf(20, 2*time.Minute, 4*time.Minute, 6*time.Minute, 9*time.Minute)
		if got, want := p.Plan(10*time.Minute, wide).PauseAfter, 10*time.Minute; got != want {
			t.Errorf("pause after %v, want the cap %v", got, want)
		}
		if got, want := p.Plan(5*time.Minute, histogramOf(10, 2*time.Minute, 3*time.Minute, 4*time.Minute)).PauseAfter, 5*time.Minute; got != want {
			t.Errorf("pause after %v, want the cap %v", got, want)
		}
	})
	t.Run("EndsPauseSooner", func(t *testing.T) {
		// Back after 2 min when back at all: with three pauses of four
		// never followed by a return, the floor is cheaper.
		back := histogramOf(20, 2*time.Minute+10*time.Second)
		if got, want := p.Plan(10*time.Minute, back).PauseAfter, 3*time.Minute; got != want {
			t.Fatalf("pause after %v, want %v", got, want)
		}
		for range 60 {
			back.RecordPause()
		}
		if got, want := p.Plan(10*time.Minute, back).PauseAfter, p.Floor; got != want {
			t.Errorf("with ends: pause after %v, want the floor %v", got, want)
		}
	})
	t.Run("ThinUserLeansOnTheAccount", func(t *testing.T) {
		// The account's users come back after 20 min (the floor); this
		// user's five returns after 2 min move the deadline to 3 min.
		account := histogramOf(100, 20*time.Minute+time.Duration(0))
		if got := p.Plan(10*time.Minute, nil, account).PauseAfter; got != p.Floor {
			t.Fatalf("account alone: pause after %v, want the floor", got)
		}
		user := histogramOf(5, 2*time.Minute+10*time.Second)
		plan := p.Plan(10*time.Minute, user, account)
		if plan.Level != 1 || plan.PauseAfter != 3*time.Minute {
			t.Errorf("plan %+v: want level 1 and 3 min", plan)
		}
	})
}

func TestPlanPreResumesOnlyFromTheUserKey(t *testing.T) {
	p := lifecycle.DefaultLearnedPolicy()
	// The account's users come back every 30 min like clockwork; this
	// user is thin: the deadline leans on the account, but a shared
	// histogram predicts no one's return.
	account := histogramOf(10, 29*time.Minute+30*time.Second, 30*time.Minute+10*time.Second, 31*time.Minute)
	plan := p.Plan(10*time.Minute, histogramOf(1, 30*time.Minute), account)
	if plan.Level != 1 || plan.PreResume || plan.PreResumeAfter != 0 || plan.Why != lifecycle.WhyLearned {
		t.Errorf("plan %+v: want level 1, learned, no pre-resume", plan)
	}
	if got := p.Plan(10*time.Minute, account).Why; got != lifecycle.WhyPredicted {
		t.Errorf("the same histogram as the user key's: why = %s, want %s", got, lifecycle.WhyPredicted)
	}
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
		for range p.MissLimit {
			h.RecordOutcome(false)
		}
		plan := p.Plan(10*time.Minute, h)
		if got, want := plan.Why, lifecycle.WhyMissed; got != want {
			t.Fatalf("why = %s, want %s", got, want)
		}
		if plan.PreResume || plan.PauseAfter != p.Floor || plan.PreResumeAfter <= 0 {
			t.Errorf("plan %+v: want the floor, no pre-resume, the window still judged", plan)
		}
		h.RecordOutcome(true)
		if got, want := p.Plan(10*time.Minute, h).Why, lifecycle.WhyPredicted; got != want {
			t.Errorf("after a hit why = %s, want %s", got, want)
		}
	})
	t.Run("WideIsNotPredicted", func(t *testing.T) {
		// Spread over 50 min and four nights: no window holds 80 % of the
		// returns after its head.
		wide := histogramOf(4, 20*time.Minute, 35*time.Minute, 50*time.Minute, 70*time.Minute, 14*time.Hour)
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
	p = lifecycle.DefaultLearnedPolicy()
	p.Precision = 0
	if p.Validate() == nil {
		t.Error("precision 0: want an error")
	}
}
