package costsim

import (
	"math"
	"testing"
	"time"
)

// TestTierRows: the rows conserve stored time (with equal sizes, paused
// plus archived GB-months do not depend on N), restores fall as N grows,
// keep paused loses the returns past a provider's retention and none
// without one, dollars are GB-months × price, and 90-day sums do not
// overflow.
func TestTierRows(t *testing.T) {
	c := DefaultTierConfig()
	rows := RunTiers(c)
	if len(rows) != len(c.Profiles)*(1+len(c.ArchiveAfter)) {
		t.Fatalf("%d rows", len(rows))
	}
	by := map[string][]TierRow{}
	for _, r := range rows {
		if r.PausedGBMonths < 0 || r.ArchivedGBMonths < 0 || r.StorageUSD < 0 {
			t.Errorf("negative row %+v", r)
		}
		by[r.Provider] = append(by[r.Provider], r)
	}
	for _, p := range c.Profiles {
		rs := by[p.Name]
		keep := rs[0]
		if keep.ArchiveAfter != 0 || keep.Restores != 0 || keep.ArchivedGBMonths != 0 {
			t.Errorf("%s keep paused = %+v", p.Name, keep)
		}
		if (p.Retention > 0) != (keep.Lost > 0) {
			t.Errorf("%s (retention %s) keep paused lost %d returns", p.Name, p.Retention, keep.Lost)
		}
		for i, r := range rs {
			if want := r.PausedGBMonths*p.PausedPerGBMonth + r.ArchivedGBMonths*p.CheckpointPerGBMonth; math.Abs(r.StorageUSD-want) > 1e-9 {
				t.Errorf("%s row %d: $%.4f, want %.4f", p.Name, i, r.StorageUSD, want)
			}
			if i == 0 {
				continue
			}
			if r.Lost != 0 || r.Returns != keep.Returns+keep.Lost {
				t.Errorf("%s archive after %s: %d returns, %d lost; want every return kept", p.Name, r.ArchiveAfter, r.Returns, r.Lost)
			}
			if want := time.Duration(r.Restores) * (p.Restore - p.Resume); r.AddedWait != want {
				t.Errorf("%s: added wait %s, want %s", p.Name, r.AddedWait, want)
			}
			if i > 1 && r.Restores >= rs[i-1].Restores {
				t.Errorf("%s: %d restores after %s, not fewer than %d after %s", p.Name, r.Restores, r.ArchiveAfter, rs[i-1].Restores, rs[i-1].ArchiveAfter)
			}
		}
	}
	// Vercel's paused sandbox and checkpoint have the same size: every
	// N stores the same GB-months, all of them to the horizon.
	v := by["vercel"]
	for _, r := range v[1:] {
		if got, want := r.PausedGBMonths+r.ArchivedGBMonths, v[1].PausedGBMonths+v[1].ArchivedGBMonths; math.Abs(got-want) > 1e-6 {
			t.Errorf("vercel after %s stores %.3f GB-months, want %.3f", r.ArchiveAfter, got, want)
		}
	}
	// 30 % never back: each stores to the horizon (90 d) under archive.
	if got, min := v[1].PausedGBMonths+v[1].ArchivedGBMonths, 0.3*float64(c.Sessions)*90*24/730; got < min {
		t.Errorf("vercel stores %.1f GB-months, less than the never-resumed alone (%.1f)", got, min)
	}
}
