package costsim_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// One session with a 5 min and a 30 min gap under the fixed 10 min timer:
// the idle-running minutes, the waited return and the clairvoyant optimum
// follow from the rules by hand.
func TestMeasuresByHand(t *testing.T) {
	cfg := costsim.DefaultConfig()
	cfg.Learned.BreakEven = 2 * time.Minute
	st := costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: time.Hour, End: time.Hour + 4*time.Minute},
		costsim.Burst{Start: time.Hour + 9*time.Minute, End: time.Hour + 13*time.Minute},
		costsim.Burst{Start: time.Hour + 43*time.Minute, End: time.Hour + 47*time.Minute},
	)
	st.User, st.Account, st.Template = "ada", "acme", "web"
	ms, v, err := costsim.MeasureLearned(cfg, costsim.Trace{Sessions: []costsim.SessionTrace{st}})
	if err != nil {
		t.Fatal(err)
	}
	fixed := ms[0].Overall
	if got, want := fixed.ActiveMinutes, 12.0; got != want {
		t.Errorf("active %.2f min, want %.2f", got, want)
	}
	// The 30 min gap and the end each pause on the recorded deadline:
	// last activity + 10 min + the 30 s window, landing within 2 s.
	if fixed.IdleMinutes < 5+2*10.5 || fixed.IdleMinutes > 5+2*10.5+0.1 {
		t.Errorf("idle %.2f min, want about %.1f", fixed.IdleMinutes, 5+2*10.5)
	}
	if got, want := fixed.Waits[0].Waited, 1; got != want {
		t.Errorf("%d returns waited, want %d", got, want)
	}
	if got, want := fixed.Returns, 2; got != want {
		t.Errorf("%d returns, want %d", got, want)
	}
	// Optimum: 12 active + min(5, 2) + min(30, 2) + 2 for the end.
	if got, want := fixed.OptimumMinutes, 18.0; got != want {
		t.Errorf("optimum %.2f min, want %.2f", got, want)
	}
	if got, want := fixed.CostMinutes, fixed.BilledMinutes+2*float64(fixed.Pauses); got != want {
		t.Errorf("cost %.2f, want billed + B × pauses %.2f", got, want)
	}
	if len(ms[0].Accounts) != 1 || ms[0].Accounts[0].Account != "acme" {
		t.Errorf("accounts %+v, want acme alone", ms[0].Accounts)
	}
	if len(v.WaitedDelta) != len(cfg.Providers) {
		t.Errorf("verdict has %d providers, want %d", len(v.WaitedDelta), len(cfg.Providers))
	}
}

func TestJudgeCountsAccountsAtP75(t *testing.T) {
	set := func(idle float64, waited int) costsim.MeasureSet {
		return costsim.MeasureSet{IdleMinutes: idle, CostMinutes: 2, OptimumMinutes: 2,
			Waits: []costsim.WaitMeasure{{Provider: "e2b", Waited: waited}}}
	}
	accounts := func(waits ...int) []costsim.AccountMeasures {
		var out []costsim.AccountMeasures
		for i, w := range waits {
			out = append(out, costsim.AccountMeasures{Account: string(rune('a' + i)), MeasureSet: set(1, w)})
		}
		return out
	}
	fixed := costsim.Measures{Overall: set(100, 40), Accounts: accounts(10, 10, 10, 10)}
	learned := costsim.Measures{Overall: set(30, 38), Accounts: accounts(5, 9, 10, 14)}
	v := costsim.Judge(fixed, learned)
	if got, want := v.IdleCut, 0.7; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("idle cut %.3f, want %.3f", got, want)
	}
	if got, want := v.WaitedDelta[0], -2; got != want {
		t.Errorf("waited delta %d, want %d", got, want)
	}
	// Account changes -5, -1, 0, +4: the p75 (nearest rank, the 3rd) is 0.
	if got, want := v.AccountP75[0], 0; got != want {
		t.Errorf("p75 account delta %d, want %d", got, want)
	}
	if got, want := v.CostRatio, 1.0; got != want {
		t.Errorf("cost ratio %.2f, want %.2f", got, want)
	}
}

func TestLearnedMarkdown(t *testing.T) {
	cfg := costsim.DefaultConfig()
	p := costsim.DefaultPeople()
	p.Users, p.Accounts = 60, 4
	lc := costsim.LearnedConfig{Shapes: []costsim.Shape{{Name: "small", People: &p}, {Name: "i.i.d."}},
		HeldOutSeeds: []uint64{2}, HeldOutShapeSeed: 3}
	cfg.Sessions = 50
	rows, err := costsim.RunLearned(cfg, lc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), 3; got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	if !rows[0].Training || rows[1].Training {
		t.Errorf("only the first row is the training trace")
	}
	md := costsim.LearnedMarkdown(cfg, rows)
	for _, want := range []string{"## Learned idle timeouts", "| learned |", "| fixed idle timeout |", "Per account", "### Targets, per trace",
		"| i.i.d. | 3 |", "Idle-running minutes by cause"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, r := range rows {
		for _, m := range r.Policies {
			if m.Interrupted != 0 {
				t.Errorf("%s %s: %d pauses during a burst or an agent's turn", r.Shape, m.Scenario.Name, m.Interrupted)
			}
			if m.Overall.BilledMinutes < m.Overall.ActiveMinutes-1e-6 {
				t.Errorf("%s %s: billed %.1f below the floor %.1f", r.Shape, m.Scenario.Name, m.Overall.BilledMinutes, m.Overall.ActiveMinutes)
			}
			var causes time.Duration
			for _, d := range m.IdleBy {
				causes += d
			}
			if got, want := causes.Minutes(), m.Overall.IdleMinutes; math.Abs(got-want) > 1e-3 {
				t.Errorf("%s %s: idle by cause %.1f min, idle %.1f", r.Shape, m.Scenario.Name, got, want)
			}
			if m.Overall.OptimumMinutes > m.Overall.CostMinutes+1e-6 {
				t.Errorf("%s %s: cost %.1f below the clairvoyant optimum %.1f", r.Shape, m.Scenario.Name, m.Overall.CostMinutes, m.Overall.OptimumMinutes)
			}
		}
	}
}
