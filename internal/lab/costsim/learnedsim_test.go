package costsim_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// A clockwork user, back every 30 min for 2 min of work, replayed under
// the fixed 10 min timer and the learned policy: once the histogram holds
// enough returns, the learned policy pauses at its floor and pre-resumes
// before each return, so later returns do not wait.
func TestLearnedPreResumesAClockworkUser(t *testing.T) {
	cfg := costsim.DefaultConfig()
	cfg.Scenarios = []costsim.Scenario{
		{Name: "fixed", Policy: costsim.SandmanTimers},
		{Name: "learned", Policy: costsim.SandmanTimers, Learned: true},
	}
	var bursts []costsim.Burst
	for i := range 16 {
		start := time.Hour + time.Duration(i)*32*time.Minute
		bursts = append(bursts, costsim.Burst{Start: start, End: start + 2*time.Minute})
	}
	st := costsim.NewSessionTrace(30*time.Second, bursts...)
	st.User, st.Account, st.Template = "ada", "acme", "web"
	r := MustReplay(t, cfg, costsim.Trace{Sessions: []costsim.SessionTrace{st}})
	fixed, learned := r.Results[0], r.Results[1]
	if got, want := fixed.Resumes, 15; got != want {
		t.Fatalf("fixed: %d resumes, want %d", got, want)
	}
	if learned.PreResumes == 0 || learned.PreResumeHits == 0 {
		t.Fatalf("learned: %d pre-resumes, %d hits: want some", learned.PreResumes, learned.PreResumeHits)
	}
	// Every pre-resume but the one after the last burst, which no return
	// follows, is a hit.
	if got, want := learned.PreResumeHits, learned.PreResumes-1; got != want || learned.PreResumeFalse != 1 {
		t.Errorf("learned: %d hits and %d false of %d pre-resumes, want all but the last", got, learned.PreResumeFalse, learned.PreResumes)
	}
	_, _, waitedFixed := fixed.Waited(cfg.Providers[0])
	_, _, waitedLearned := learned.Waited(cfg.Providers[0])
	if waitedLearned >= waitedFixed {
		t.Errorf("learned: %d returns waited, fixed %d: want fewer", waitedLearned, waitedFixed)
	}
	if learned.BilledMinutes >= fixed.BilledMinutes {
		t.Errorf("learned billed %.1f min, fixed %.1f: want less", learned.BilledMinutes, fixed.BilledMinutes)
	}
	if learned.Interrupted != 0 {
		t.Errorf("learned paused %d times under an active user", learned.Interrupted)
	}
}

func TestLearnedNeedsTimers(t *testing.T) {
	cfg := costsim.DefaultConfig()
	cfg.Scenarios = []costsim.Scenario{{Name: "learned", Policy: costsim.Sandman, Learned: true}}
	if err := cfg.Validate(); err == nil {
		t.Fatal("learned without timers: want an error")
	}
}
