package costsim

import (
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// Shape is a kind of trace the learned policy is measured on: a trace of
// people (People) or, with People nil, the i.i.d. trace of Generate.
type Shape struct {
	Name   string
	People *PeopleParams
}

// LearnedConfig is the learned policy's measurement (RunLearned): the
// tuning traces (Shapes[0] at Config.Seed and at TuningSeeds, the ones its
// settings were chosen on), the held-out seeds of that shape, and the
// held-out shapes, each at HeldOutShapeSeed. None of the held-out traces
// was used to choose a setting.
type LearnedConfig struct {
	Shapes           []Shape
	TuningSeeds      []uint64
	HeldOutSeeds     []uint64
	HeldOutShapeSeed uint64
}

// DefaultLearnedConfig is the report's: the default people at seeds 1,
// 21, 22 and 23 to tune, seeds 2..11 of it held out, and five other shapes
// at seed 12.
func DefaultLearnedConfig() LearnedConfig {
	people := DefaultPeople()
	without := func(name string, drop ...string) Shape {
		p := DefaultPeople()
		for i := range p.Behaviours {
			for _, d := range drop {
				if p.Behaviours[i].Name == d {
					p.Behaviours[i].Share = 0
				}
			}
		}
		return Shape{Name: name, People: &p}
	}
	heavyNever := DefaultPeople()
	for i := range heavyNever.Behaviours {
		if heavyNever.Behaviours[i].Name == "never" {
			heavyNever.Behaviours[i].Share = 0.5
		}
	}
	noRhythm := DefaultPeople()
	noRhythm.HabitJitter, noRhythm.WorkStartSpread, noRhythm.ContinueShare = 3*noRhythm.HabitJitter, 3*noRhythm.WorkStartSpread, 0.6
	return LearnedConfig{
		Shapes: []Shape{
			{Name: "people", People: &people},
			without("no clockwork", "clockwork"),
			without("agents only", "human", "clockwork", "never"),
			without("humans only", "agent", "clockwork", "never"),
			{Name: "half never-returners", People: &heavyNever},
			{Name: "loose rhythm, more returns after hours", People: &noRhythm},
			{Name: "i.i.d."},
		},
		TuningSeeds:      []uint64{21, 22, 23},
		HeldOutSeeds:     []uint64{2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
		HeldOutShapeSeed: 12,
	}
}

// LearnedScenarios are the policies compared: the fixed timer (the
// baseline), the break-even timer alone, the learned policy without
// pre-resumes, and the learned policy.
func LearnedScenarios() []Scenario {
	return []Scenario{
		{Name: "fixed idle timeout", Policy: SandmanTimers},
		{Name: "break-even timeout", Policy: SandmanTimers, Learned: true},
		{Name: "learned, no pre-resume", Policy: SandmanTimers, Learned: true, NoPreResume: true},
		{Name: "learned", Policy: SandmanTimers, Learned: true},
	}
}

// LearnedRow is the policies' Measures on one trace and the verdict of
// the learned one against the fixed timer; Training says the settings
// were chosen on it (a tuning trace).
type LearnedRow struct {
	Shape    string
	Seed     uint64
	Training bool
	Policies []Measures
	Verdict  Verdict
}

// MeasureLearned replays LearnedScenarios on tr under cfg and judges the
// learned policy. The break-even row runs the learned policy with every
// histogram thin. Errors: as Replay.
func MeasureLearned(cfg Config, tr Trace) ([]Measures, Verdict, error) {
	var out []Measures
	for i, sc := range LearnedScenarios() {
		c := cfg
		if i == 1 {
			c.Learned.MinReturns = 1 << 30
		}
		if err := c.Validate(); err != nil {
			return nil, Verdict{}, err
		}
		res, err := replay(c, tr, sc)
		if err != nil {
			return nil, Verdict{}, fmt.Errorf("%s: %w", sc.Name, err)
		}
		out = append(out, measure(cfg, tr, res))
	}
	v := Judge(out[0], out[3])
	l := out[3].Overall
	v.RecallCeiling = min(ratio(float64(PredictableReturns(tr, cfg.Learned)), float64(l.Hits+l.FoundPaused)), 1)
	return out, v, nil
}

// RunLearned measures the training trace and every held-out one.
// Errors: a trace cannot be drawn or replayed.
func RunLearned(cfg Config, lc LearnedConfig) ([]LearnedRow, error) {
	cfg.Scenarios = nil
	one := func(sh Shape, seed uint64, training bool) (LearnedRow, error) {
		c := cfg
		c.Seed = seed
		var tr Trace
		var err error
		if sh.People != nil {
			tr, err = GeneratePeople(c, *sh.People)
		} else {
			tr, err = Generate(c)
		}
		if err != nil {
			return LearnedRow{}, err
		}
		ms, v, err := MeasureLearned(c, tr)
		if err != nil {
			return LearnedRow{}, fmt.Errorf("%s seed %d: %w", sh.Name, seed, err)
		}
		return LearnedRow{Shape: sh.Name, Seed: seed, Training: training, Policies: ms, Verdict: v}, nil
	}
	var rows []LearnedRow
	row, err := one(lc.Shapes[0], cfg.Seed, true)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row)
	for _, seed := range lc.TuningSeeds {
		if row, err = one(lc.Shapes[0], seed, true); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	for _, seed := range lc.HeldOutSeeds {
		if row, err = one(lc.Shapes[0], seed, false); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	for _, sh := range lc.Shapes[1:] {
		if row, err = one(sh, lc.HeldOutShapeSeed, false); err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// LearnedMarkdown renders the measurement: the training trace's policies,
// waits per provider and accounts, then one line per held-out trace.
func LearnedMarkdown(cfg Config, rows []LearnedRow) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	lp := cfg.Learned
	w("## Learned idle timeouts against the fixed timer\n\n")
	w("Settings (`lifecycle.DefaultLearnedPolicy`): floor %s, break-even B = %s (also the B of the cost), wait cost %s, "+
		"thin below %d returns, prior %d returns, pre-resume lead %s, widest window %s holding at least %d returns and a "+
		"precision of %g, %d misses of the last 4 stop pre-resumes. Idle timeout (the cap, and the fixed timer) %s. "+
		"Cost = billed + B × pauses; the clairvoyant optimum = active + min(gap, B) per gap + B per session.\n\n",
		human(lp.Floor), human(lp.BreakEven), human(lp.WaitCost), lp.MinReturns, lp.Prior, human(lp.PreResumeLead),
		human(lp.MaxWindow), lp.MinFar, lp.Precision, lp.MissLimit, human(cfg.Lifecycle.DefaultIdleTimeout))
	if len(rows) == 0 {
		return b.String()
	}
	train := rows[0]
	w("### %s, seed %d (a trace the settings were chosen on)\n\n", train.Shape, train.Seed)
	policyTable(w, train.Policies)
	causeTable(w, train.Policies)
	waitTable(w, cfg, train.Policies)
	accountTable(w, train.Policies)
	w("\n### Targets, per trace\n\n")
	w("Learned against fixed: idle-running minutes cut (target ≥ %.0f %%), waited returns (learned − fixed, overall and the "+
		"p75 across accounts of the change, target ≤ 0 on every provider, and p95 seconds waited no higher), cost × the "+
		"optimum (≤ %.2f overall, ≤ %.0f on the worst account), pre-resume precision (≥ %.1f) and recall (≥ %.1f; its "+
		"ceiling: the returns a window could hold with hindsight over those that needed a resume, costsim.PredictableReturns). "+
		"Waited counts are on the first provider profile (%s); the p95 check is on every profile.\n\n",
		100*targetIdleCut, targetCostOverall, targetCostAccount, targetPrecision, targetRecall, cfg.Providers[0].Name)
	w("| trace | seed | idle cut | waited Δ (p75 account Δ) | p95 | cost × opt (worst account; bound at the floor) | precision | recall (ceiling) | target |\n")
	w("|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	met := 0
	for _, r := range rows {
		v := r.Verdict
		name := r.Shape
		if r.Training {
			name += " (tuning)"
		}
		p95 := "✓"
		for _, ok := range v.P95OK {
			if !ok {
				p95 = "✗"
			}
		}
		if v.Met() {
			met++
		}
		w("| %s | %d | %.1f %% %s | %+d (%+d) %s | %s | %.2f (%s %.2f; %.2f) %s | %.2f | %.2f (%.2f) | %s |\n", name, r.Seed,
			100*v.IdleCut, mark(v.idleOK()), v.WaitedDelta[0], v.AccountP75[0], mark(v.waitsOK()), p95,
			v.CostRatio, v.WorstAccount, v.WorstAccountRatio, v.FloorBound, mark(v.costOK()), v.Precision, v.Recall, v.RecallCeiling,
			map[bool]string{true: "met", false: "not met"}[v.Met()])
	}
	w("\nEvery part met on %d of %d traces.\n", met, len(rows))
	return b.String()
}

func policyTable(w func(string, ...any), ms []Measures) {
	w("| policy | billed min | idle-running min | vs fixed | returns | waited | pauses | paused mid-turn | cost × optimum | pre-resumes | precision | recall |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	base := ms[0].Overall.IdleMinutes
	for _, m := range ms {
		o := m.Overall
		w("| %s | %s | %s | %+.1f %% | %s | %s | %s | %d | %.3f | %s | %.2f | %.2f |\n", m.Scenario.Name,
			numfmt.Thousands(int(o.BilledMinutes+0.5)), numfmt.Thousands(int(o.IdleMinutes+0.5)), 100*(ratio(o.IdleMinutes, base)-1),
			numfmt.Thousands(o.Returns), numfmt.Thousands(o.Waits[0].Waited), numfmt.Thousands(o.Pauses), m.Interrupted, o.CostRatio(),
			numfmt.Thousands(o.PreResumes), o.Precision(), o.Recall())
	}
	o := ms[0].Overall
	w("\nClairvoyant optimum: %s running minutes at B (active floor %s). A clairvoyant policy that must wait the "+
		"learned floor before a pause costs %.3f× it; with the pause half the coalescing window past the floor, %.3f×: "+
		"no policy here can do better.\n", numfmt.Thousands(int(o.OptimumMinutes+0.5)), numfmt.Thousands(int(o.ActiveMinutes+0.5)),
		ratio(o.FloorOptimumMinutes, o.OptimumMinutes), ratio(o.WindowOptimumMinutes, o.OptimumMinutes))
}

func waitTable(w func(string, ...any), cfg Config, ms []Measures) {
	w("\nSeconds waited per provider profile: returns that waited, and p50 / p95 over every return (p95 over those that waited).\n\n| policy |")
	for _, p := range cfg.Providers {
		w(" %s |", p.Name)
	}
	w("\n|---|")
	for range cfg.Providers {
		w("---:|")
	}
	w("\n")
	for _, m := range ms {
		w("| %s |", m.Scenario.Name)
		for _, x := range m.Overall.Waits {
			w(" %s: %.2f / %.2f (%.2f) |", numfmt.Thousands(x.Waited), x.P50.Seconds(), x.P95.Seconds(), x.P95Waited.Seconds())
		}
		w("\n")
	}
}

func accountTable(w func(string, ...any), ms []Measures) {
	fixed, learned := ms[0], ms[len(ms)-1]
	w("\nPer account (fixed → learned):\n\n| account | returns | idle-running min | waited | cost × optimum | pre-resumes (hits) |\n|---|---:|---:|---:|---:|---:|\n")
	for i, a := range learned.Accounts {
		f := fixed.Accounts[i]
		w("| %s | %s | %s → %s | %s → %s | %.2f → %.2f | %s (%s) |\n", a.Account, numfmt.Thousands(a.Returns),
			numfmt.Thousands(int(f.IdleMinutes+0.5)), numfmt.Thousands(int(a.IdleMinutes+0.5)),
			numfmt.Thousands(f.Waits[0].Waited), numfmt.Thousands(a.Waits[0].Waited), f.CostRatio(), a.CostRatio(),
			numfmt.Thousands(a.PreResumes), numfmt.Thousands(a.Hits))
	}
}
