package costsim

import (
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/costsim/numfmt"
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
