package costsim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The retention tier rows (docs/COST.md "Retention tiers: keep paused or
// archive"): what a paused session costs to store while its user is away,
// when the provider keeps the paused sandbox until its own retention ends
// ("keep paused") against when Sandman archives it after N days (only a
// checkpoint is kept; the provider's sandbox is deleted), and what the
// archive costs the user who comes back: a restore instead of a resume.

// TierProfile is one provider's storage facts for the tier rows. Sizes are
// gigabytes (10^9 bytes), prices US dollars per GB-month (730 hours).
type TierProfile struct {
	Name string
	// PausedGB is what a paused sandbox keeps at the provider (its
	// registry's declared size, else an assumption; PausedSource says).
	PausedGB     float64
	PausedSource string
	// PausedPerGBMonth is the provider's price of a paused sandbox's
	// storage (0: not billed); PausedPriceSource says where it comes from.
	PausedPerGBMonth  float64
	PausedPriceSource string
	// Retention is how long the provider keeps a paused sandbox (0: until
	// deleted; the horizon then ends it).
	Retention time.Duration
	// CheckpointGB is the size of the checkpoint an archived session keeps;
	// CheckpointPerGBMonth its storage price and CheckpointPriceSource
	// where that comes from.
	CheckpointGB          float64
	CheckpointPerGBMonth  float64
	CheckpointPriceSource string
	// Resume and Restore are the user's wait from the request to a ready
	// app after a resume and after a restore (docs/BENCH.md).
	Resume, Restore time.Duration
}

// TierConfig is the tier rows' population: Sessions pauses, a share of
// which (NeverBack) are never resumed; the others are resumed after an
// away time drawn from a log-normal (AwayMedian, AwaySigma) by quantile, so
// the rows are the same on every run. Every session is deleted at Horizon
// after its pause (delete_after) under both policies.
type TierConfig struct {
	Sessions     int
	NeverBack    float64
	AwayMedian   time.Duration
	AwaySigma    float64
	Horizon      time.Duration
	ArchiveAfter []time.Duration
	Profiles     []TierProfile
}

// gbMonth is hours in a month, as the providers bill a GB-month.
const gbMonth = 730 * time.Hour

// DefaultTierConfig is the report's: 10,000 pauses, 30 % never resumed,
// the others back after a median of a day (σ 1.5: a tenth after more than
// about 7 days), deleted after 90 days; archive after 1, 3, 7 and 14 days.
// The away distribution is an assumption (no recorded trace spans weeks);
// the prices and sizes are docs/providers/*.md's, read 2026-11-28, where a
// sheet gives one, and labelled assumptions where it does not.
func DefaultTierConfig() TierConfig {
	const s3 = "assumed: none published; S3 Standard's list price ($0.023) stands in"
	return TierConfig{
		Sessions: 10000, NeverBack: 0.3, AwayMedian: 24 * time.Hour, AwaySigma: 1.5, Horizon: 90 * 24 * time.Hour,
		ArchiveAfter: []time.Duration{24 * time.Hour, 3 * 24 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour},
		Profiles: []TierProfile{
			{Name: "e2b", PausedGB: 10.74, PausedSource: "the Hobby disk, 10 GiB (memory not counted)",
				PausedPerGBMonth: 0, PausedPriceSource: "paused sandboxes are not billed (e2b sheet)",
				Retention: 30 * 24 * time.Hour, CheckpointGB: 1, CheckpointPerGBMonth: 0.023, CheckpointPriceSource: s3,
				Resume: 1015 * time.Millisecond, Restore: 1156 * time.Millisecond},
			{Name: "daytona", PausedGB: 3.22, PausedSource: "the default disk, 3 GiB",
				PausedPerGBMonth: 0.0004 * 730 / 3.22, PausedPriceSource: "stopped sandboxes bill disk (daytona sheet); the adapter's paused price, $0.0004 an hour for 3 GiB (no per-GB price published)",
				Retention: 0, CheckpointGB: 1, CheckpointPerGBMonth: 0.023, CheckpointPriceSource: s3,
				Resume: 3183 * time.Millisecond, Restore: 4179 * time.Millisecond},
			{Name: "vercel", PausedGB: 1, PausedSource: "assumed: a stopped sandbox is its snapshot, the checkpoint's size",
				PausedPerGBMonth: 0.08, PausedPriceSource: "$0.08 per GB-month (vercel sheet, pricing page as of 2025-11)",
				Retention: 30 * 24 * time.Hour, CheckpointGB: 1, CheckpointPerGBMonth: 0.08, CheckpointPriceSource: "$0.08 per GB-month (vercel sheet)",
				Resume: 3147 * time.Millisecond, Restore: 3775 * time.Millisecond},
		},
	}
}

// TierRow is one provider under one policy: ArchiveAfter 0 is "keep
// paused".
type TierRow struct {
	Provider     string
	ArchiveAfter time.Duration
	// PausedGBMonths and ArchivedGBMonths are the stored GB-months of the
	// population; StorageUSD their price.
	PausedGBMonths, ArchivedGBMonths, StorageUSD float64
	// Returns is how many sessions were resumed; Restores how many of them
	// came back to an archived session (a restore instead of a resume);
	// Lost how many came back to nothing (the provider's retention ended).
	Returns, Restores, Lost int
	// AddedWait is Restores × (Restore − Resume): the users' extra wait.
	AddedWait time.Duration
}

// awayTimes returns each session's time away after its pause, by
// quantile; math.Inf(1) hours for one never resumed.
func (c TierConfig) awayTimes() []time.Duration {
	out := make([]time.Duration, c.Sessions)
	for i := range out {
		u := (float64(i) + 0.5) / float64(c.Sessions)
		if u < c.NeverBack {
			out[i] = math.MaxInt64
			continue
		}
		z := math.Sqrt2 * math.Erfinv(2*(u-c.NeverBack)/(1-c.NeverBack)-1)
		out[i] = time.Duration(float64(c.AwayMedian) * math.Exp(c.AwaySigma*z))
	}
	return out
}

// RunTiers returns the rows of every profile: keep paused, then each
// ArchiveAfter.
func RunTiers(c TierConfig) []TierRow {
	away := c.awayTimes()
	var rows []TierRow
	for _, p := range c.Profiles {
		for _, after := range append([]time.Duration{0}, c.ArchiveAfter...) {
			rows = append(rows, p.row(c.Horizon, after, away))
		}
	}
	return rows
}

// row replays every away time under one policy (after 0: keep paused).
func (p TierProfile) row(horizon, after time.Duration, away []time.Duration) TierRow {
	r := TierRow{Provider: p.Name, ArchiveAfter: after}
	var paused, archived float64 // hours (a sum of durations overflows)
	for _, a := range away {
		end := min(a, horizon) // back, or deleted
		back := a <= horizon
		switch {
		case after == 0:
			keep := end
			if p.Retention > 0 && p.Retention < keep {
				keep = p.Retention
			}
			paused += keep.Hours()
			if back && p.Retention > 0 && a > p.Retention {
				r.Lost++
				back = false
			}
		case end <= after:
			paused += end.Hours()
		default:
			paused += after.Hours()
			archived += (end - after).Hours()
			if back {
				r.Restores++
			}
		}
		if back {
			r.Returns++
		}
	}
	r.PausedGBMonths = p.PausedGB * paused / gbMonth.Hours()
	r.ArchivedGBMonths = p.CheckpointGB * archived / gbMonth.Hours()
	r.StorageUSD = r.PausedGBMonths*p.PausedPerGBMonth + r.ArchivedGBMonths*p.CheckpointPerGBMonth
	r.AddedWait = time.Duration(r.Restores) * (p.Restore - p.Resume)
	return r
}

// TiersMarkdown renders the tier rows with their assumptions.
func TiersMarkdown(c TierConfig, rows []TierRow) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("## Retention tiers: keep paused or archive\n\n")
	w("%d pauses; %.0f %% never resumed, the others back after a log-normal away time (median %s, σ %.1f; an assumption), "+
		"every session deleted %d days after its pause. \"keep paused\": the provider keeps the paused sandbox until its "+
		"retention ends (a return after it finds nothing: lost); \"archive after N d\": Sandman keeps only a checkpoint from "+
		"day N, and a return after it is a restore instead of a resume.\n\n",
		c.Sessions, 100*c.NeverBack, c.AwayMedian, c.AwaySigma, int(c.Horizon/(24*time.Hour)))
	w("| provider | policy | paused GB-months | archived GB-months | storage (USD) | returns | restores | lost | added wait (h) | per restore (s) |\n")
	w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	byName := map[string]TierProfile{}
	for _, p := range c.Profiles {
		byName[p.Name] = p
	}
	for _, r := range rows {
		pol := "keep paused"
		if r.ArchiveAfter > 0 {
			pol = fmt.Sprintf("archive after %d d", int(r.ArchiveAfter/(24*time.Hour)))
		}
		p := byName[r.Provider]
		w("| %s | %s | %.1f | %.1f | %.2f | %d | %d | %d | %.2f | %.2f |\n", r.Provider, pol, r.PausedGBMonths, r.ArchivedGBMonths,
			r.StorageUSD, r.Returns, r.Restores, r.Lost, r.AddedWait.Hours(), (p.Restore - p.Resume).Seconds())
	}
	w("\nSizes and prices (GB = 10^9 bytes, a month = 730 h):\n\n")
	w("| provider | paused size (GB) | from | paused price ($/GB-month) | from | retention (d) | checkpoint (GB) | checkpoint price ($/GB-month) | from | resume → ready (s) | restore → ready (s) |\n")
	w("|---|--:|---|--:|---|--:|--:|--:|---|--:|--:|\n")
	for _, p := range c.Profiles {
		ret := "none"
		if p.Retention > 0 {
			ret = fmt.Sprint(int(p.Retention / (24 * time.Hour)))
		}
		w("| %s | %.2f | %s | %.4f | %s | %s | %.2f | %.3f | %s | %.2f | %.2f |\n", p.Name, p.PausedGB, p.PausedSource,
			p.PausedPerGBMonth, p.PausedPriceSource, ret, p.CheckpointGB, p.CheckpointPerGBMonth, p.CheckpointPriceSource,
			p.Resume.Seconds(), p.Restore.Seconds())
	}
	return b.String()
}
