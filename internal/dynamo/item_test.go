package dynamo

import (
	"fmt"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestTimeLayout(t *testing.T) {
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	times := []time.Time{
		base,
		base.Add(time.Nanosecond),
		base.Add(100 * time.Millisecond),
		base.Add(time.Second - time.Nanosecond),
		base.Add(time.Second),
		base.Add(10 * time.Hour),
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)), // before base in UTC
	}
	for _, a := range times {
		t.Run("RoundTrip/"+a.String(), func(t *testing.T) {
			got, err := parseTime("t", formatTime(a))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(a) || got.Location() != time.UTC {
				t.Errorf("parseTime(formatTime(%v)) = %v", a, got)
			}
		})
		for _, b := range times {
			if got, want := formatTime(a) < formatTime(b), a.Before(b); got != want {
				t.Errorf("%s < %s is %v, but %v.Before(%v) is %v", formatTime(a), formatTime(b), got, a, b, want)
			}
		}
	}
	if got, want := formatTime(time.Time{}), ""; got != want {
		t.Errorf("formatTime(zero) = %q, want %q", got, want)
	}
}

func TestShard(t *testing.T) {
	seen := map[int]int{}
	for i := range 1000 {
		id := fmt.Sprintf("ses_%026d", i)
		s := Shard(id)
		if s < 0 || s >= tabledef.Shards {
			t.Fatalf("Shard(%q) = %d, outside 0..%d", id, s, tabledef.Shards-1)
		}
		if got := Shard(id); got != s {
			t.Fatalf("Shard(%q) changed from %d to %d", id, s, got)
		}
		seen[s]++
	}
	if got, want := len(seen), tabledef.Shards; got != want {
		t.Errorf("1000 ids use %d shards, want %d", got, want)
	}
	// fnv32a("ses_1") = 0x4a856782, pinned so a change of hash is noticed
	// (existing items would sit in the wrong shard).
	if got, want := Shard("ses_1"), 0x4a856782%tabledef.Shards; got != want {
		t.Errorf("Shard(ses_1) = %d, want %d", got, want)
	}
}

func TestSessionItemIndexKeys(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 600_700_800, time.UTC)
	for _, state := range lifecycle.States {
		t.Run(string(state), func(t *testing.T) {
			s := &lifecycle.Session{
				ID: "ses_x", AccountID: "acct", Provider: "fake", SandboxID: "sbx",
				State: state, IdleTimeout: time.Minute, CreatedAt: now,
				IdleDeadline: now.Add(time.Minute), RunningSince: now, PausedAt: now, LeaseExpiresAt: now,
			}
			it := toSessionItem(s, DefaultShards)
			if got, want := it.IdleShard != nil && it.IdleDueAt != nil && it.PauseDeadline != "", state == lifecycle.StateRunning; got != want {
				t.Errorf("in idle index = %v, want %v", got, want)
			}
			if got, want := it.LeaseShard != nil && it.LeaseDueAt != nil, state.Transitional(); got != want {
				t.Errorf("in lease index = %v, want %v", got, want)
			}
			if got, want := it.PausedShard != nil && it.PausedDueAt != nil, state == lifecycle.StatePaused; got != want {
				t.Errorf("in paused index = %v, want %v", got, want)
			}
			if got, want := it.OwnerSort, "2025-01-02T03:04:05.600700800Z#ses_x"; got != want {
				t.Errorf("owner_sort = %q, want %q", got, want)
			}
			if got, want := it.SandboxKey, "fake#sbx"; got != want {
				t.Errorf("sandbox_key = %q, want %q", got, want)
			}
			if it.IdleDueAt != nil {
				if got, want := *it.IdleDueAt, now.Add(time.Minute).UnixMilli(); got != want {
					t.Errorf("idle_due_at = %d, want %d", got, want)
				}
			}
		})
	}
}
