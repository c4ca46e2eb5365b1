package costsim_test

import (
	"fmt"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// One session, active 0-10 min and 40-45 min after a start 1 min past a sweep
// tick, replayed under the three policies. The cron sweep pauses 4 min after
// each idle deadline (20 and 55 min), at the next tick. Sandman's provider
// timeout, with a 5 min guard headroom, refreshed once at 5:30 to 5:30 + 10
// min idle + 2 min grace + 5 min headroom = 22:30, pauses the first run there,
// and the resume at 40 sets it to 57 min: 2:30 and 2:00 past the idle
// deadlines, each before the next tick. (With the default 27.5 min headroom
// the sweep pauses first, as the cron sweep does.)
func ExampleReplay() {
	cfg := costsim.DefaultConfig()
	cfg.Lifecycle.GuardHeadroom = 5 * time.Minute
	cfg.Scenarios = []costsim.Scenario{
		{Name: "never pause", Policy: costsim.NeverPause},
		{Name: "cron sweep", Policy: costsim.CronSweep},
		{Name: "sandman", Policy: costsim.Sandman},
	}
	start := time.Minute
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{costsim.NewSessionTrace(30*time.Second,
		costsim.Burst{Start: start, End: start + 10*time.Minute},
		costsim.Burst{Start: start + 40*time.Minute, End: start + 45*time.Minute},
	)}}
	r, err := costsim.Replay(cfg, tr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("floor: %.1f min\n", r.Trace.ActiveMinutes)
	for _, res := range r.Results {
		fmt.Printf("%s: %.1f min billed, %d resume(s), overshoot max %v\n",
			res.Scenario.Name, res.BilledMinutes, res.Resumes, res.OvershootMax)
	}
	// Output:
	// floor: 15.0 min
	// never pause: 45.0 min billed, 0 resume(s), overshoot max 0s
	// cron sweep: 43.0 min billed, 1 resume(s), overshoot max 4m0s
	// sandman: 40.5 min billed, 1 resume(s), overshoot max 3m0s
}

// Run on a smaller trace, without the scale simulation; DefaultConfig's
// 1,000 sessions over 7 days take under a second, and its scale simulation
// (1.2 million deadlines, four rows) about as long again.
func ExampleRun() {
	cfg := costsim.DefaultConfig()
	cfg.Sessions = 50
	cfg.Scale.Sessions = 0 // leave out the scale simulation
	r := costsim.Run(cfg)
	for _, res := range r.Results[:2] {
		fmt.Printf("%s: billed more than the floor: %v\n", res.Scenario.Name, res.BilledMinutes > r.Trace.ActiveMinutes)
	}
	// Output:
	// never pause: billed more than the floor: true
	// cron sweep: billed more than the floor: true
}
