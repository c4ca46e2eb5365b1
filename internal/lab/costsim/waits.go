package costsim

import (
	"fmt"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// waitsMarkdown renders the provider profiles and, per policy row, what
// users waited for resumes on each of them.
func (r Report) waitsMarkdown(w func(string, ...any)) {
	c := r.Config
	if len(c.Providers) == 0 {
		return
	}
	w("\n### Resume to ready: what users wait, per provider\n\n")
	w("A resume is over when the preview answers (docs/READINESS.md), not when the provider says running. A provider that " +
		"keeps processes across a pause waits only for its resume; one that loses them restarts the app after it.\n\n")
	w("| provider | resume (s) | processes kept | app start after resume (s) | Sandman's overhead (s) | resume to ready (s) | cold create to ready (s) | source |\n")
	w("|---|---:|---|---:|---:|---:|---:|---|\n")
	for _, p := range c.Providers {
		start := "—"
		if !p.KeepsProcesses {
			start = fmt.Sprintf("%.2f", p.AppStart.Seconds())
		}
		w("| %s | %.3f | %s | %s | %.3f | %.3f | %.1f | %s |\n", p.Name, p.Resume.Seconds(),
			map[bool]string{true: "yes", false: "no"}[p.KeepsProcesses], start, p.Overhead.Seconds(),
			p.ResumeToReady().Seconds(), p.ColdStart().Seconds(), p.Source)
	}
	t := c.Trace
	w("\nWith *resume on return* (docs/WAKE.md \"Resume on return\") a session paused while its client was away is resumed "+
		"the moment the tab is visible again, which comes a *lead* before the user's first request. The lead model: no "+
		"trace at hand records the time from a tab becoming visible to the first request, so it is drawn per gap, log-normal "+
		"with median %s and σ %g, clamped to %s..%s. The median is the Keystroke-Level Model's first click (Card, Moran and "+
		"Newell 1980: mental preparation 1.35 s + pointing 1.1 s + button press 0.1 s); the spread is assumed (this trace: "+
		"p10 %s, p50 %s, p90 %s; `-return-lead-median`, `-return-lead-sigma`). A user waits max(0, resume to ready − lead); "+
		"a request that finds the sandbox paused waits all of it. Per user return (the first request after each gap): the "+
		"sum of seconds waited, and the p95 over returns (returns that met no resume waited 0).\n\n",
		fmt.Sprintf("%g s", t.ReturnLeadMedian.Seconds()), t.ReturnLeadSigma, human(t.ReturnLeadMin), human(t.ReturnLeadMax),
		human(r.Trace.LeadP10), human(r.Trace.LeadP50), human(r.Trace.LeadP90))
	w("| policy | returns | resumes (on return) |")
	for _, p := range c.Providers {
		w(" %s: s waited (p95 s) |", p.Name)
	}
	w("\n|---|---:|---:|")
	for range c.Providers {
		w("---:|")
	}
	w("\n")
	for _, res := range r.Results {
		if res.Scenario.Policy == NeverPause {
			continue
		}
		w("| %s | %s | %s (%s) |", res.Scenario.Name, numfmt.Thousands(res.Returns), numfmt.Thousands(res.Resumes),
			numfmt.Thousands(res.ReturnResumes))
		for _, p := range c.Providers {
			sum, p95, _ := res.Waited(p)
			w(" %s (%.2f) |", numfmt.Thousands(int(sum.Seconds()+0.5)), p95.Seconds())
		}
		w("\n")
	}
}

// returnTarget is the resume-on-return target on this report's rows: the
// row with timers, presence at targetAwayProbability and resume on return
// (no faults) against the cron sweep. ok is false when a row is missing.
type returnTarget struct {
	row, cron Result
	// billedOK: row bills at most targetPresenceRatio × the floor.
	billedOK bool
	// waitOK[i]: on Config.Providers[i] its users waited no more seconds
	// than the cron sweep's.
	waitOK []bool
}

// met reports whether every part of the target holds.
func (t returnTarget) met() bool {
	for _, ok := range t.waitOK {
		if !ok {
			return false
		}
	}
	return t.billedOK
}

// returnTarget judges the resume-on-return target, if its rows are there.
func (r Report) returnTarget() (returnTarget, bool) {
	row, ok := r.find(func(res Result) bool {
		return res.Scenario.ResumeOnReturn && res.Scenario.Policy == SandmanTimers &&
			res.Scenario.AwayProbability == targetAwayProbability && noFaults(res)
	})
	cron, okC := r.find(func(res Result) bool { return res.Scenario.Policy == CronSweep && noFaults(res) })
	if !ok || !okC {
		return returnTarget{}, false
	}
	t := returnTarget{row: row, cron: cron, billedOK: row.RatioToFloor <= targetPresenceRatio}
	for _, p := range r.Config.Providers {
		a, _, _ := row.Waited(p)
		b, _, _ := cron.Waited(p)
		t.waitOK = append(t.waitOK, a <= b)
	}
	return t, true
}
