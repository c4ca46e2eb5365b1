package lifecycle_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// newLearnedEnv is a timer env whose sessions key their histograms by the
// metadata field "user".
func newLearnedEnv(t *testing.T, deployment lifecycle.IdlePolicy) (*env, *manualTimers) {
	t.Helper()
	timers := &manualTimers{}
	e := newEnv(t, func(c *lifecycle.Config) {
		c.Timers, c.IdleUserField, c.IdlePolicy = timers, "user", deployment
	})
	cfg := e.svc.Config()
	cfg.IdleHistograms = e.store // the store under the outbox's wrapper
	e.svc = lifecycle.NewService(cfg)
	return e, timers
}

// mustSeed stores a user key's histogram: every gap n times.
func (e *env) mustSeed(t *testing.T, key string, n int, gaps ...time.Duration) {
	t.Helper()
	it := lifecycle.IdleHistogramItem{Key: key, Histogram: *histogramOf(n, gaps...)}
	if err := e.store.PutIdleHistogram(t.Context(), &it); err != nil {
		t.Fatal(err)
	}
}

// A user who comes back every 30 min: status shows the learned pause
// deadline and why, the session pauses at the floor (an end counted on the
// user key), is pre-resumed before the predicted return, and the return
// learns from the gap (the end taken back).
func TestLearnedSessionPreResumesBeforeTheReturn(t *testing.T) {
	e, timers := newLearnedEnv(t, "")
	const key = "user#" + acct + "#ada"
	e.mustSeed(t, key, 10, 29*time.Minute+30*time.Second, 30*time.Minute+10*time.Second)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdlePolicy: lifecycle.IdlePolicyLearned, Metadata: map[string]string{"user": "ada"}})
	_, env, err := e.svc.Status(t.Context(), acct, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	floor := lifecycle.DefaultLearnedPolicy().Floor
	if got, want := env.PauseDeadline, svcT0.Add(floor+e.svc.Policy().ActivityGranularity); !got.Equal(want) {
		t.Fatalf("status pause deadline %v, want the learned %v", got, want)
	}
	if got, want := env.PauseDeadlineWhy, string(lifecycle.WhyPredicted); got != want {
		t.Fatalf("status why %q, want %q", got, want)
	}
	out := timers.runDue(t, e, svcT0.Add(5*time.Minute))
	if !slices.Contains(out, lifecycle.TimerPaused) {
		t.Fatalf("outcomes %v, want a pause", out)
	}
	paused := e.mustGet(t, sess.ID)
	if it, err := e.store.GetIdleHistogram(t.Context(), key); err != nil || it.Histogram.Ends != 1 {
		t.Errorf("after the pause: ends %d (%v), want 1", it.Histogram.Ends, err)
	}
	want := svcT0.Add(29*time.Minute - lifecycle.DefaultLearnedPolicy().PreResumeLead)
	if got := paused.Idle.PreResumeAt; !got.Equal(want) {
		t.Fatalf("pre-resume at %v, want %v", got, want)
	}
	_, env, _ = e.svc.Status(t.Context(), acct, sess.ID)
	if !env.PreResumeAt.Equal(want) {
		t.Errorf("status pre_resume_at %v, want %v", env.PreResumeAt, want)
	}
	out = timers.runDue(t, e, want)
	if got := out[len(out)-1]; got != lifecycle.TimerPreResumed {
		t.Fatalf("outcomes %v, want a pre-resume last", out)
	}
	running := e.mustGet(t, sess.ID)
	if running.State != lifecycle.StateRunning || running.Reason != lifecycle.ReasonPredicted {
		t.Fatalf("state %s (%s), want running (predicted)", running.State, running.Reason)
	}
	if !running.LastActivityAt.Equal(svcT0) {
		t.Errorf("a pre-resume moved the last activity to %v", running.LastActivityAt)
	}
	// The user is back at 30 min: no wait, a hit, the gap learned.
	e.clock.Set(svcT0.Add(30 * time.Minute))
	if _, err := e.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	it, err := e.store.GetIdleHistogram(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := it.Histogram.Returns(), 21; got != want {
		t.Errorf("histogram holds %d returns, want %d", got, want)
	}
	if got := it.Histogram.Predictions; got != 1 || it.Histogram.RecentMisses(1) != 0 {
		t.Errorf("predictions %d, misses %d: want one hit", got, it.Histogram.RecentMisses(1))
	}
	if got := it.Histogram.Ends; got != 0 {
		t.Errorf("after the return: ends %d, want 0", got)
	}
	if got := e.mustGet(t, sess.ID); got.Idle.PreResumed {
		t.Error("the return left the session pre-resumed")
	}
}

func TestLearnedIsOptIn(t *testing.T) {
	t.Run("FixedByDefault", func(t *testing.T) {
		e, _ := newLearnedEnv(t, "")
		sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
		if sess.Idle != nil {
			t.Fatalf("a create without idle_policy is learned: %+v", sess.Idle)
		}
		_, env, _ := e.svc.Status(t.Context(), acct, sess.ID)
		if got, want := env.PauseDeadlineWhy, "fixed"; got != want {
			t.Errorf("why %q, want %q", got, want)
		}
	})
	t.Run("Deployment", func(t *testing.T) {
		e, _ := newLearnedEnv(t, lifecycle.IdlePolicyLearned)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if !sess.Learned() || sess.Idle.Plan.Why != lifecycle.WhyThin {
			t.Fatalf("idle %+v, want learned and thin", sess.Idle)
		}
		if got, want := sess.PauseDeadline(), svcT0.Add(lifecycle.DefaultLearnedPolicy().BreakEven+30*time.Second); !got.Equal(want) {
			t.Errorf("pause deadline %v, want the break-even %v", got, want)
		}
		fixed := e.mustCreate(t, lifecycle.CreateInput{IdlePolicy: lifecycle.IdlePolicyFixed})
		if fixed.Idle != nil {
			t.Error("a create asking for fixed got learned")
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		e, _ := newLearnedEnv(t, "")
		_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", IdlePolicy: "smart"})
		if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Fatalf("err %v, want invalid", err)
		}
	})
}

// The idle timeout stays the cap: a user whose gaps are all long learns
// nothing past it, and a hold still holds.
func TestLearnedKeepsTheCapAndHolds(t *testing.T) {
	e, _ := newLearnedEnv(t, lifecycle.IdlePolicyLearned)
	e.mustSeed(t, "user#"+acct+"#bob", 10, 2*time.Minute, 3*time.Minute, 4*time.Minute)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 300, Metadata: map[string]string{"user": "bob"}})
	if got, want := sess.PauseDeadline(), svcT0.Add(5*time.Minute+30*time.Second); !got.Equal(want) {
		t.Fatalf("pause deadline %v, want the 5 min cap %v", got, want)
	}
	if _, err := e.svc.Hold(t.Context(), acct, sess.ID, 3600); err != nil {
		t.Fatal(err)
	}
	_, env, _ := e.svc.Status(t.Context(), acct, sess.ID)
	if got, want := env.PauseDeadline, svcT0.Add(time.Hour); !got.Equal(want) || env.PauseDeadlineWhy != "hold" {
		t.Errorf("held: deadline %v (%s), want %v (hold)", got, env.PauseDeadlineWhy, want)
	}
}
