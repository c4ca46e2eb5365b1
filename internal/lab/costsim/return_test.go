package costsim_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// returnConfig replays hand traces with presence, with and without resume
// on return, and the cron sweep.
func returnConfig() costsim.Config {
	cfg := costsim.DefaultConfig()
	cfg.Scenarios = []costsim.Scenario{
		{Name: "cron", Policy: costsim.CronSweep},
		{Name: "presence", Policy: costsim.SandmanTimers, Presence: true, AwayProbability: 0.5},
		{Name: "return", Policy: costsim.SandmanTimers, Presence: true, AwayProbability: 0.5, ResumeOnReturn: true},
	}
	cfg.Pools = nil
	return cfg
}

// TestResumeOnReturnStartsBeforeTheRequest: the twoBursts session is away
// for its gap and paused at 13:01 (its away deadline 13:00 + 1 s). Its tab is
// visible again 2 s before the 41:00 request. With resume on return the
// resume starts then (reason return), so the sandbox bills 2 s more and the
// user, whose request comes 2 s after the resume started, waits
// resume-to-ready - 2 s: nothing on E2B (1.015 s), 1.147 s on Vercel
// (3.147 s). Without it the request meets the paused sandbox and waits all
// of it.
func TestResumeOnReturnStartsBeforeTheRequest(t *testing.T) {
	tr := twoBursts(0.1)
	tr.Sessions[0].Lead = []time.Duration{2 * time.Second}
	r := MustReplay(t, returnConfig(), tr)
	pres, ret := MustResult(t, r, "presence"), MustResult(t, r, "return")
	if got, want := ret.BilledMinutes-pres.BilledMinutes, (2 * time.Second).Minutes(); !approx(got, want) {
		t.Errorf("resume on return bills %v minutes more, want %v (the lead)", got, want)
	}
	for _, tt := range []struct {
		name                       string
		res                        costsim.Result
		resumes, onReturn, returns int
	}{
		{"presence", pres, 1, 0, 1},
		{"return", ret, 1, 1, 1},
	} {
		if tt.res.Resumes != tt.resumes || tt.res.ReturnResumes != tt.onReturn || tt.res.Returns != tt.returns {
			t.Errorf("%s: resumes %d (on return %d), returns %d; want %d (%d), %d", tt.name,
				tt.res.Resumes, tt.res.ReturnResumes, tt.res.Returns, tt.resumes, tt.onReturn, tt.returns)
		}
	}
	e2b, vercel := costsim.DefaultProviders[0], costsim.DefaultProviders[1]
	tests := []struct {
		name string
		res  costsim.Result
		p    costsim.ProviderProfile
		want time.Duration
	}{
		{"PresenceE2B", pres, e2b, 1015 * time.Millisecond},
		{"PresenceVercel", pres, vercel, 3147 * time.Millisecond},
		{"ReturnE2B", ret, e2b, 0},
		{"ReturnVercel", ret, vercel, 1147 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, p95, _ := tt.res.Waited(tt.p)
			if sum != tt.want || p95 != tt.want {
				t.Errorf("waited %v (p95 %v), want %v", sum, p95, tt.want)
			}
		})
	}
}

// TestReturnClearsTheAwayDeadline: a client visible again before its away
// deadline takes the deadline away, so the session is not paused for the
// gap. The gap of 11:00-13:30 is just longer than the 2 min away timeout;
// the tab is visible 40 s before 13:30, at 12:50, before the 13:00 away
// deadline: no pause and no resume. With a 10 s lead (visible at 13:20) it
// pauses at 13:01 and, with resume on return, resumes at 13:20.
func TestReturnClearsTheAwayDeadline(t *testing.T) {
	trace := func(lead time.Duration) costsim.Trace {
		st := costsim.NewSessionTrace(30*time.Second,
			costsim.Burst{Start: time.Minute, End: 11 * time.Minute},
			costsim.Burst{Start: 13*time.Minute + 30*time.Second, End: 20 * time.Minute})
		st.Away, st.Lead = []float64{0.1}, []time.Duration{lead}
		return costsim.Trace{Sessions: []costsim.SessionTrace{st}}
	}
	tests := []struct {
		name                      string
		lead                      time.Duration
		awayPauses, resumes, back int
	}{
		{"VisibleBeforeTheDeadline", 40 * time.Second, 1, 0, 0},
		{"VisibleAfterThePause", 10 * time.Second, 2, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := MustResult(t, MustReplay(t, returnConfig(), trace(tt.lead)), "return")
			// The leaving user closes the page after the last burst: one
			// away pause in every case.
			if res.AwayPauses != tt.awayPauses || res.Resumes != tt.resumes || res.ReturnResumes != tt.back {
				t.Errorf("away pauses %d, resumes %d (on return %d); want %d, %d (%d)",
					res.AwayPauses, res.Resumes, res.ReturnResumes, tt.awayPauses, tt.resumes, tt.back)
			}
			if res.EarlyPauses != 0 {
				t.Errorf("early pauses = %d, want 0", res.EarlyPauses)
			}
		})
	}
}

// TestWaitedCountsEveryReturn: Waited sums max(0, resume to ready - lead)
// over the resumes users met, and takes the p95 over every return, those
// that met no resume counting 0.
func TestWaitedCountsEveryReturn(t *testing.T) {
	p := costsim.ProviderProfile{Name: "p", Resume: 3 * time.Second}
	res := costsim.Result{Returns: 40, ResumeLeads: []time.Duration{0, time.Second, 5 * time.Second}}
	sum, p95, waited := res.Waited(p)
	if got, want := sum, 5*time.Second; got != want {
		t.Errorf("sum = %v, want %v (3 s + 2 s + 0)", got, want)
	}
	if got, want := waited, 2; got != want {
		t.Errorf("returns that waited = %d, want %d", got, want)
	}
	// 40 returns: 38 waited 0, one 2 s, one 3 s; the 38th is the p95.
	if got, want := p95, time.Duration(0); got != want {
		t.Errorf("p95 = %v, want %v", got, want)
	}
	res.Returns = 20 // 18 zeros: the 19th, the p95, is the 2 s
	if _, p95, _ := res.Waited(p); p95 != 2*time.Second {
		t.Errorf("p95 over 20 returns = %v, want 2s", p95)
	}
	cold := costsim.ProviderProfile{Resume: time.Second, AppStart: 2 * time.Second, Overhead: 100 * time.Millisecond}
	if got, want := cold.ResumeToReady(), 3100*time.Millisecond; got != want {
		t.Errorf("a provider that loses processes: resume to ready %v, want %v", got, want)
	}
	cold.KeepsProcesses = true
	if got, want := cold.ResumeToReady(), 1100*time.Millisecond; got != want {
		t.Errorf("a provider that keeps processes: resume to ready %v, want %v", got, want)
	}
}

// TestHeldOutResumeOnReturn is the resume-on-return target on seeds the
// model was never tuned on: with presence at away_prob 0.5 and resume on
// return the bill stays within 1.25× the floor and users wait no more
// seconds than with the cron sweep, on every default provider.
func TestHeldOutResumeOnReturn(t *testing.T) {
	cfg := costsim.DefaultConfig()
	rows, err := costsim.HeldOut(cfg, []uint64{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range rows {
		if !h.Met() {
			t.Errorf("seed %d: target not met: billed %.3f× the floor, %d resumes (%d on return)",
				h.Seed, h.Return.RatioToFloor, h.Return.Resumes, h.Return.ReturnResumes)
		}
		if h.Return.ReturnResumes == 0 {
			t.Errorf("seed %d: no resume on return", h.Seed)
		}
	}
	md := costsim.HeldOutMarkdown(cfg, rows)
	if !strings.Contains(md, "Met on 3 of 3 seeds.") {
		t.Errorf("held-out table lacks its verdict:\n%s", md)
	}

	// A slower app start on the providers that lose processes turns the
	// extra resumes presence makes into more waiting than the cron sweep's:
	// the target is judged, not assumed.
	for i := range cfg.Providers {
		cfg.Providers[i].AppStart = 8 * time.Second
	}
	cfg.Providers = cfg.Providers[:2] // e2b keeps processes; vercel does not
	rows, err = costsim.HeldOut(cfg, []uint64{2})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Met() {
		t.Errorf("with an 8 s app start the target is met; want not met on the provider that loses processes")
	}
}

// TestDefaultReportHeldOut: the published report judges the target on its
// held-out seeds (met on every one) and shows where it stops holding.
func TestDefaultReportHeldOut(t *testing.T) {
	r := MustDefaultReport(t)
	if got, want := len(r.HeldOut), len(costsim.DefaultHeldOutSeeds); got != want {
		t.Fatalf("held-out rows = %d, want %d", got, want)
	}
	for _, h := range r.HeldOut {
		if !h.Met() {
			t.Errorf("seed %d: resume-on-return target not met", h.Seed)
		}
	}
	met := map[string]int{}
	for _, s := range r.Sensitivity {
		met[s.Change[:strings.Index(s.Change, " (")]] = s.Met
	}
	if met["app restart after a cold resume 4 s"] != 5 || met["app restart after a cold resume 6 s"] != 0 {
		t.Errorf("sensitivity %+v: want the target to hold at a 4 s restart and fail at 6 s", r.Sensitivity)
	}
	if md := r.Markdown(); !strings.Contains(md, "### Held-out check") || !strings.Contains(md, "Met on 10 of 10 seeds.") {
		t.Errorf("Markdown lacks the held-out section")
	}
}
