package costsim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// HeldOutRow is the resume-on-return target (docs/WAKE.md "Resume on
// return") judged on the trace of one seed.
type HeldOutRow struct {
	Seed uint64
	// Cron is the cron sweep's row and Return the row with timers,
	// presence at away_prob 0.5 and resume on return, both with no faults.
	Cron, Return Result
	// Target is the judgement (returnTarget) of Return against Cron.
	Target returnTarget
}

// Met reports whether the seed meets the target: billed ≤ 1.25× the floor
// and, on every provider, no more seconds waited than the cron sweep's.
func (h HeldOutRow) Met() bool { return h.Target.met() }

// HeldOut replays, for each seed, cfg's trace drawn with that seed under the
// cron sweep and under timers with presence at away_prob 0.5 and resume on
// return (no faults, no pools, no frontier, no scale simulation), and judges
// the resume-on-return target on it. Seeds never used to tune the model are
// the held-out check of that target. Errors: cfg fails Validate, or a
// replay fails.
func HeldOut(cfg Config, seeds []uint64) ([]HeldOutRow, error) {
	cfg.Scenarios = []Scenario{
		{Name: "cron sweep", Policy: CronSweep},
		{Name: "sandman + timers + presence + resume on return, away_prob 0.5", Policy: SandmanTimers,
			Presence: true, AwayProbability: targetAwayProbability, ResumeOnReturn: true},
	}
	cfg.AwayFrontier, cfg.Pools, cfg.Scale = nil, nil, ScaleConfig{}
	var rows []HeldOutRow
	for _, seed := range seeds {
		cfg.Seed = seed
		tr, err := Generate(cfg)
		if err != nil {
			return nil, err
		}
		r, err := Replay(cfg, tr)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		t, _ := r.returnTarget()
		rows = append(rows, HeldOutRow{Seed: seed, Cron: r.Results[0], Return: r.Results[1], Target: t})
	}
	return rows, nil
}

// HeldOutMarkdown renders HeldOut's rows as a table: per seed the billed
// ratio and, per provider, seconds waited with resume on return against the
// cron sweep's.
func HeldOutMarkdown(cfg Config, rows []HeldOutRow) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("| seed | × floor (≤ %.2f) | resumes: cron / on return (of them on return) |", targetPresenceRatio)
	for _, p := range cfg.Providers {
		w(" %s s waited: on return / cron |", p.Name)
	}
	w(" target |\n|---:|---:|---:|")
	for range cfg.Providers {
		w("---:|")
	}
	w("---|\n")
	met := 0
	for _, h := range rows {
		w("| %d | %.3f %s | %s / %s (%s) |", h.Seed, h.Return.RatioToFloor, mark(h.Target.billedOK),
			numfmt.Thousands(h.Cron.Resumes), numfmt.Thousands(h.Return.Resumes), numfmt.Thousands(h.Return.ReturnResumes))
		for i, p := range cfg.Providers {
			a, _, _ := h.Return.Waited(p)
			c, _, _ := h.Cron.Waited(p)
			w(" %s / %s %s |", numfmt.Thousands(int(a.Seconds()+0.5)), numfmt.Thousands(int(c.Seconds()+0.5)), mark(h.Target.waitOK[i]))
		}
		if h.Met() {
			met++
		}
		w(" %s |\n", map[bool]string{true: "met", false: "not met"}[h.Met()])
	}
	w("\nMet on %d of %d seeds.\n", met, len(rows))
	return b.String()
}

// SensitivityRow is the resume-on-return target on some held-out seeds with
// one assumption changed.
type SensitivityRow struct {
	// Change says what changed, e.g. "app restart 6 s".
	Change string
	// Met of Of seeds meet the target.
	Met, Of int
}

// heldOutReport runs HeldOut on cfg.HeldOutSeeds and, on the first five,
// with the app's restart after a cold resume at 4, 6 and 8 s and with the
// return lead's median at 1 s.
func heldOutReport(cfg Config) ([]HeldOutRow, []SensitivityRow, error) {
	if len(cfg.HeldOutSeeds) == 0 {
		return nil, nil, nil
	}
	rows, err := HeldOut(cfg, cfg.HeldOutSeeds)
	if err != nil {
		return nil, nil, err
	}
	few := cfg.HeldOutSeeds[:min(5, len(cfg.HeldOutSeeds))]
	var sens []SensitivityRow
	try := func(change string, c Config) error {
		rs, err := HeldOut(c, few)
		if err != nil {
			return err
		}
		row := SensitivityRow{Change: change, Of: len(rs)}
		for _, r := range rs {
			if r.Met() {
				row.Met++
			}
		}
		sens = append(sens, row)
		return nil
	}
	for _, start := range []time.Duration{4 * time.Second, 6 * time.Second, 8 * time.Second} {
		c := cfg
		c.Providers = slices.Clone(cfg.Providers)
		for i := range c.Providers {
			c.Providers[i].AppStart = start
		}
		if err := try(fmt.Sprintf("app restart after a cold resume %s (`-app-start %s`)", human(start), start), c); err != nil {
			return nil, nil, err
		}
	}
	c := cfg
	c.Trace.ReturnLeadMedian = time.Second
	if err := try("return lead median 1 s (`-return-lead-median 1s`)", c); err != nil {
		return nil, nil, err
	}
	return rows, sens, nil
}

// heldOutMarkdown renders the held-out check and its sensitivity.
func (r Report) heldOutMarkdown(w func(string, ...any)) {
	if len(r.HeldOut) == 0 {
		return
	}
	seeds := make([]string, len(r.Config.HeldOutSeeds))
	for i, s := range r.Config.HeldOutSeeds {
		seeds[i] = strconv.FormatUint(s, 10)
	}
	w("\n### Held-out check: resume on return on seeds never used to tune the model\n\n")
	w("The resume-on-return target judged on the traces of other seeds (`go -C internal/lab run ./cmd/costsim -held-out %s`): "+
		"per seed, the cron sweep and timers with presence at away_prob %g and resume on return, no faults.\n\n",
		strings.Join(seeds, ","), targetAwayProbability)
	w("%s", HeldOutMarkdown(r.Config, r.HeldOut))
	if len(r.Sensitivity) == 0 {
		return
	}
	w("\nWhere it stops holding, on the first %d of those seeds with one assumption changed:\n\n", r.Sensitivity[0].Of)
	w("| change | seeds meeting the target |\n|---|---:|\n")
	for _, s := range r.Sensitivity {
		w("| %s | %d of %d |\n", s.Change, s.Met, s.Of)
	}
	w("\nPresence makes about 40 %% more resumes than the cron sweep; on a provider that loses processes each costs the " +
		"app's whole restart, and resume on return hides only the lead of each, not their number. Where the target fails it " +
		"fails there (Vercel Sandbox, Daytona); E2B and the local provider keep their processes and meet it.\n")
}
