package costsim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/numfmt"
)

// PoolTier is how a warm pool keeps its spares (docs/DESIGN.md "Warm
// pools").
type PoolTier string

// The pool tiers.
const (
	// PoolPaused spares are made, brought to ready once and paused: a
	// claim resumes one (and restarts the app where the provider loses
	// processes). They bill the making and their paused storage.
	PoolPaused PoolTier = "paused"
	// PoolRunning spares are kept running and ready: a claim only binds
	// one. They bill as running the whole time.
	PoolRunning PoolTier = "running"
)

// Valid reports whether t is a known tier.
func (t PoolTier) Valid() bool { return t == PoolPaused || t == PoolRunning }

// Pool is one warm-pool row of the report: Size spares of Tier, each
// replaced MaxAge after it was made.
type Pool struct {
	Tier   PoolTier
	Size   int
	MaxAge time.Duration
}

// DefaultPools are the report's pool rows: each tier with 1 and 2 spares,
// replaced daily.
var DefaultPools = []Pool{
	{Tier: PoolPaused, Size: 1, MaxAge: 24 * time.Hour},
	{Tier: PoolPaused, Size: 2, MaxAge: 24 * time.Hour},
	{Tier: PoolRunning, Size: 1, MaxAge: 24 * time.Hour},
	{Tier: PoolRunning, Size: 2, MaxAge: 24 * time.Hour},
}

// PoolCosts are the assumptions a pool's cost and waits rest on. No
// provider sheet prices paused storage or times a claim; each default says
// what it stands on.
type PoolCosts struct {
	// SnapshotGiB is the stored size of one paused spare (memory and
	// disk): 4 GiB assumed.
	SnapshotGiB float64
	// StoragePerGiBMonth is what a GiB of paused snapshot costs per month,
	// US dollars: $0.08 assumed (AWS EBS gp3's list price as a stand-in;
	// Vercel bills a stopped sandbox's snapshot storage, E2B publishes no
	// figure).
	StoragePerGiBMonth float64
	// Pause is the running time of pausing a made spare: 4 s (E2B: about
	// 4 s per GiB of RAM, docs/providers/e2b.md; 1 GiB assumed).
	Pause time.Duration
	// Claim is what a claim adds to a new session's wait besides the
	// resume: one conditional write and the binding, 50 ms assumed.
	Claim time.Duration
}

// DefaultPoolCosts are the report's pool assumptions (PoolCosts).
var DefaultPoolCosts = PoolCosts{SnapshotGiB: 4, StoragePerGiBMonth: 0.08, Pause: 4 * time.Second, Claim: 50 * time.Millisecond}

// PoolResult is one pool on one provider over the trace's session starts.
type PoolResult struct {
	Pool     Pool
	Provider ProviderProfile
	// Starts is the trace's session starts; Hits those that found a ready
	// spare; the rest were cold creates.
	Starts, Hits int
	// Made counts spares made: the first fill, one refill per claim and
	// the replacements at MaxAge.
	Made int
	// RunningMinutes is what the spares ran (billed for compute), in
	// minutes: a running spare the whole time, a paused one while it was
	// made and paused. StorageGiBHours is paused spares' storage.
	RunningMinutes, StorageGiBHours float64
	// CostUSD prices both (Config.PricePerVCPUSecond, PoolCosts).
	CostUSD float64
	// ColdWait and PoolWait are a new session's wait without a spare
	// (ProviderProfile.ColdStart) and with one (claim, + resume to ready
	// for a paused spare); SavedSeconds is Hits × their difference.
	ColdWait, PoolWait time.Duration
	SavedSeconds       float64
}

// makeTime is how long making one spare of tier takes on p: a create and
// the app's first start, then, for a paused spare, its pause.
func (c PoolCosts) makeTime(tier PoolTier, p ProviderProfile) time.Duration {
	d := p.Create + p.CreateAppStart
	if tier == PoolPaused {
		d += c.Pause
	}
	return d
}

// runPools replays every pool of cfg on every provider over tr's session
// starts (each session's first request). A spare is taken by the first
// start that finds it ready; its refill starts at the claim and is ready
// makeTime later; a spare that reaches MaxAge is replaced by one made
// beforehand, so replacing never empties the pool. The pool is kept from
// the epoch to the last start.
func runPools(cfg Config, tr Trace) []PoolResult {
	if len(cfg.Pools) == 0 {
		return nil
	}
	starts := make([]time.Duration, len(tr.Sessions))
	for i, s := range tr.Sessions {
		starts[i] = s.Heartbeats[0]
	}
	slices.Sort(starts)
	end := starts[len(starts)-1]
	pc := cfg.PoolCosts
	var out []PoolResult
	for _, pool := range cfg.Pools {
		for _, p := range cfg.Providers {
			mk := pc.makeTime(pool.Tier, p)
			ready := make([]time.Duration, pool.Size) // when each spare is ready
			made := make([]time.Duration, pool.Size)  // when each was last made
			res := PoolResult{Pool: pool, Provider: p, Starts: len(starts), Made: pool.Size, ColdWait: p.ColdStart()}
			res.PoolWait = pc.Claim
			if pool.Tier == PoolPaused {
				res.PoolWait += p.ResumeToReady()
			}
			for _, t := range starts {
				k := -1
				for j, r := range ready {
					if r <= t && (k < 0 || r < ready[k]) {
						k = j
					}
				}
				if k < 0 {
					continue // no spare ready: a cold create
				}
				res.Hits++
				res.Made += int((t - made[k]) / pool.MaxAge) // replaced while it waited
				res.Made++                                   // the refill
				made[k], ready[k] = t, t+mk
			}
			for _, m := range made {
				res.Made += int((end - m) / pool.MaxAge)
			}
			running := time.Duration(res.Made) * mk
			if pool.Tier == PoolRunning {
				running += time.Duration(pool.Size) * end
			} else {
				res.StorageGiBHours = float64(pool.Size) * end.Hours() * pc.SnapshotGiB
			}
			res.RunningMinutes = running.Minutes()
			res.CostUSD = running.Seconds()*float64(cfg.VCPUs)*cfg.PricePerVCPUSecond +
				res.StorageGiBHours*pc.StoragePerGiBMonth/hoursPerMonth
			res.SavedSeconds = float64(res.Hits) * (res.ColdWait - res.PoolWait).Seconds()
			out = append(out, res)
		}
	}
	return out
}

// hoursPerMonth is the month storage prices are quoted for (365 × 24 / 12).
const hoursPerMonth = 730

// poolsMarkdown renders the pool rows with their assumptions.
func (r Report) poolsMarkdown(w func(string, ...any)) {
	if len(r.Pools) == 0 {
		return
	}
	c, pc := r.Config, r.Config.PoolCosts
	w("\n### Warm pools: what a pool costs and what it saves\n\n")
	w("Each pool replayed over this trace's %s session starts (each session's first request), from the epoch to the last start "+
		"(%s). A start that finds a ready spare claims it and its refill starts at once; a start that finds none is a cold "+
		"create. Spares are replaced %s after they were made, by one made beforehand. A *running* spare bills as running the "+
		"whole time; a *paused* one bills its making (create, the app's first start, the pause) and %g GiB of storage at $%g "+
		"per GiB-month. A cold start waits create + the app's first start + Sandman's readiness overhead; a claim waits %s, "+
		"plus the resume to ready for a paused spare (with the app's restart where the provider loses processes).\n\n",
		numfmt.Thousands(r.Trace.Sessions), human(r.Trace.LastStart), human(r.Pools[0].Pool.MaxAge), pc.SnapshotGiB,
		pc.StoragePerGiBMonth, fmt.Sprintf("%g s", pc.Claim.Seconds()))
	w("| tier | size | provider | starts from the pool | spares made | spare running min | storage GiB-h | pool cost (USD) | wait per start: cold → pool (s) | user wait saved (s) | cost per hour of wait saved |\n")
	w("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Pools {
		perHour := "—"
		if p.SavedSeconds > 0 {
			perHour = usd(p.CostUSD / (p.SavedSeconds / 3600))
		}
		w("| %s | %d | %s | %s of %s | %s | %s | %s | %s | %.1f → %.2f | %s | %s |\n", p.Pool.Tier, p.Pool.Size, p.Provider.Name,
			numfmt.Thousands(p.Hits), numfmt.Thousands(p.Starts), numfmt.Thousands(p.Made),
			numfmt.Thousands(int(p.RunningMinutes+0.5)), numfmt.Thousands(int(p.StorageGiBHours+0.5)), usd(p.CostUSD),
			p.ColdWait.Seconds(), p.PoolWait.Seconds(), numfmt.Thousands(int(p.SavedSeconds+0.5)), perHour)
	}
	floorCost := r.Trace.ActiveMinutes * 60 * float64(c.VCPUs) * c.PricePerVCPUSecond
	w("\nFor scale: the floor of this trace (its active time) costs %s. Assumptions and their sources: %s.\n",
		usd(floorCost), strings.Join([]string{
			"create and the app's first start per provider in the provider table above (assumed)",
			fmt.Sprintf("pause of a made spare %s (E2B: about 4 s per GiB of RAM)", human(pc.Pause)),
			fmt.Sprintf("a claim %g s (assumed; `make bench` measures create → ready from a spare)", pc.Claim.Seconds()),
			fmt.Sprintf("storage $%g per GiB-month for %g GiB (assumed: no provider sheet prices paused storage)", pc.StoragePerGiBMonth, pc.SnapshotGiB),
		}, "; "))
}
