package lifecycle_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestNewCheckpointIDSortsByTime(t *testing.T) {
	var ids []string
	for i := range 50 {
		id := lifecycle.NewCheckpointID(t0.Add(time.Duration(i) * time.Millisecond))
		if !lifecycle.ValidCheckpointID(id) {
			t.Fatalf("NewCheckpointID = %q, not valid", id)
		}
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("ids of later times do not sort later: %v", ids)
	}
	a, b := lifecycle.NewCheckpointID(t0), lifecycle.NewCheckpointID(t0)
	if a == b || a[:14] != b[:14] {
		t.Errorf("two ids of one millisecond = %q, %q: want the same time part and different random parts", a, b)
	}
	for _, bad := range []string{"", "chk_", "ses_0123456789abcdefghijklmnop", "chk_0123456789abcdefghijklmnoW",
		"chk_0123456789abcdefghijklmnopq", "chk_0123456789abcdefghijklmnoz"} {
		if lifecycle.ValidCheckpointID(bad) {
			t.Errorf("ValidCheckpointID(%q) = true", bad)
		}
	}
}

func TestCheckpointTransitions(t *testing.T) {
	allowed := map[[2]lifecycle.CheckpointState]bool{
		{lifecycle.CheckpointSaving, lifecycle.CheckpointReady}:   true,
		{lifecycle.CheckpointSaving, lifecycle.CheckpointFailed}:  true,
		{lifecycle.CheckpointReady, lifecycle.CheckpointExpired}:  true,
		{lifecycle.CheckpointFailed, lifecycle.CheckpointExpired}: false,
	}
	states := []lifecycle.CheckpointState{lifecycle.CheckpointSaving, lifecycle.CheckpointReady, lifecycle.CheckpointFailed, lifecycle.CheckpointExpired}
	for _, from := range states {
		for _, to := range states {
			if got, want := lifecycle.CanCheckpointTransition(from, to), allowed[[2]lifecycle.CheckpointState{from, to}]; got != want {
				t.Errorf("CanCheckpointTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	c := &lifecycle.Checkpoint{State: lifecycle.CheckpointSaving, LeaseExpiresAt: t0.Add(time.Minute)}
	if err := c.Settle(lifecycle.CheckpointFailed, "the sandbox is gone", t0); err != nil {
		t.Fatal(err)
	}
	if c.State != lifecycle.CheckpointFailed || c.Reason != "the sandbox is gone" || !c.LeaseExpiresAt.IsZero() || !c.UpdatedAt.Equal(t0) {
		t.Errorf("settled = %+v, want failed with its reason, no lease, updated now", c)
	}
	if err := c.Settle(lifecycle.CheckpointReady, "", t0); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("failed → ready = %v, want conflict", err)
	}
}

// TestCheckpointRestorable: only a ready checkpoint within its retention
// restores; the others are refused with a conflict whose error type says
// why, and an expired one is never offered (it reads expired).
func TestCheckpointRestorable(t *testing.T) {
	ready := &lifecycle.Checkpoint{ID: "chk_a", State: lifecycle.CheckpointReady, ExpiresAt: t0.Add(time.Hour)}
	if err := ready.Restorable(t0); err != nil {
		t.Errorf("ready within its retention: %v", err)
	}
	if got := ready.AsOf(t0); got != ready {
		t.Error("AsOf within the retention copied the checkpoint")
	}
	for _, tc := range []struct {
		name string
		c    *lifecycle.Checkpoint
		want string
	}{
		{"PastRetention", ready, lifecycle.TypeCheckpointExpired},
		{"Expired", &lifecycle.Checkpoint{ID: "chk_b", State: lifecycle.CheckpointExpired}, lifecycle.TypeCheckpointExpired},
		{"Failed", &lifecycle.Checkpoint{ID: "chk_c", State: lifecycle.CheckpointFailed, Reason: "the sandbox is gone"}, lifecycle.TypeCheckpointFailed},
		{"Saving", &lifecycle.Checkpoint{ID: "chk_d", State: lifecycle.CheckpointSaving}, lifecycle.TypeCheckpointSaving},
	} {
		err := tc.c.Restorable(t0.Add(2 * time.Hour))
		if !lifecycle.IsCode(err, lifecycle.CodeConflict) || errorType(err) != tc.want {
			t.Errorf("%s: Restorable = %v (type %q), want conflict %s", tc.name, err, errorType(err), tc.want)
		}
	}
	if got := ready.AsOf(t0.Add(2 * time.Hour)); got.State != lifecycle.CheckpointExpired || ready.State != lifecycle.CheckpointReady {
		t.Errorf("AsOf past the retention = %s (original %s), want an expired copy", got.State, ready.State)
	}
	if err := (&lifecycle.Checkpoint{ID: "chk_e", State: lifecycle.CheckpointFailed, Reason: "disk full"}).Restorable(t0); !strings.Contains(err.Error(), "disk full") {
		t.Errorf("a failed checkpoint's refusal = %q, want its reason", err)
	}
}

// TestPruneCheckpoints: the automatic checkpoints beyond the keep count
// go, newest kept; manual, pinned and saving ones never do; failed and
// expired automatic ones always do.
func TestPruneCheckpoints(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	mk := func(id string, m int, trigger lifecycle.CheckpointTrigger, state lifecycle.CheckpointState) *lifecycle.Checkpoint {
		return &lifecycle.Checkpoint{ID: id, CreatedAt: at(m), Trigger: trigger, State: state}
	}
	pinned := mk("p", 1, lifecycle.TriggerPause, lifecycle.CheckpointReady)
	pinned.Pinned = true
	expiring := mk("x", 9, lifecycle.TriggerSchedule, lifecycle.CheckpointReady)
	expiring.ExpiresAt = at(10)
	list := []*lifecycle.Checkpoint{
		mk("a1", 2, lifecycle.TriggerPause, lifecycle.CheckpointReady),
		mk("a2", 3, lifecycle.TriggerSchedule, lifecycle.CheckpointReady),
		mk("a3", 4, lifecycle.TriggerPause, lifecycle.CheckpointReady),
		mk("a4", 5, lifecycle.TriggerSchedule, lifecycle.CheckpointReady),
		mk("f", 6, lifecycle.TriggerPause, lifecycle.CheckpointFailed),
		mk("s", 7, lifecycle.TriggerPause, lifecycle.CheckpointSaving),
		mk("m", 0, lifecycle.TriggerAPI, lifecycle.CheckpointReady),
		pinned, expiring,
	}
	var got []string
	for _, c := range lifecycle.PruneCheckpoints(list, 2, at(20)) {
		got = append(got, c.ID)
	}
	slices.Sort(got)
	if want := []string{"a1", "a2", "f", "x"}; !slices.Equal(got, want) {
		t.Errorf("pruned %v, want %v (keep the two newest ready automatic ones: a4, a3)", got, want)
	}
	if got := lifecycle.PruneCheckpoints(list[:4], 0, at(20)); len(got) != 3 {
		t.Errorf("keep 0 pruned %d of 4, want 3 (at least one is kept)", len(got))
	}
}

func TestArchiveKey(t *testing.T) {
	if got, want := lifecycle.ArchiveKey("acct_1", "ses_abc", "chk_0123"), "acct_1/ses_abc/chk_0123.tar.zst"; got != want {
		t.Errorf("ArchiveKey = %q, want %q", got, want)
	}
}
