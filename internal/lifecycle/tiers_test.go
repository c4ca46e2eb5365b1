package lifecycle

import (
	"testing"
	"time"
)

func TestNextTier(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	h := time.Hour
	for _, tc := range []struct {
		name    string
		s       Session
		wantTo  State
		wantAt  time.Time
		dormant bool
	}{
		{"paused archives first", Session{State: StatePaused, PausedAt: t0, ArchiveAfter: h, DeleteAfter: 2 * h}, StateArchived, t0.Add(h), false},
		{"paused deletes first", Session{State: StatePaused, PausedAt: t0, ArchiveAfter: 3 * h, DeleteAfter: 2 * h}, StateDeleted, t0.Add(2 * h), false},
		{"paused archive only", Session{State: StatePaused, PausedAt: t0, ArchiveAfter: h}, StateArchived, t0.Add(h), false},
		{"paused no tiers: dormancy", Session{State: StatePaused, PausedAt: t0}, "", time.Time{}, true},
		{"archived deletes from the pause", Session{State: StateArchived, PausedAt: t0, ArchiveAfter: h, DeleteAfter: 5 * h}, StateDeleted, t0.Add(5 * h), false},
		{"archived kept forever", Session{State: StateArchived, PausedAt: t0, ArchiveAfter: h}, "", time.Time{}, false},
		{"archived kill pending: at once", Session{State: StateArchived, PausedAt: t0, TierPending: true, StateChangedAt: t0.Add(h)}, StateArchived, t0.Add(h), false},
		{"deleted purge pending", Session{State: StateDeleted, TierPending: true, StateChangedAt: t0}, StateDeleted, t0, false},
		{"deleted done", Session{State: StateDeleted, PausedAt: t0, DeleteAfter: h}, "", time.Time{}, false},
		{"retry holds it back", Session{State: StatePaused, PausedAt: t0, ArchiveAfter: h, TierRetryAt: t0.Add(3 * h)}, StateArchived, t0.Add(3 * h), false},
		{"running: none", Session{State: StateRunning, ArchiveAfter: h, RunningSince: t0}, "", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, at := tc.s.NextTier()
			if to != tc.wantTo || !at.Equal(tc.wantAt) {
				t.Errorf("NextTier = %s at %v, want %s at %v", to, at, tc.wantTo, tc.wantAt)
			}
			if _, ok := tc.s.DormantDue(); ok != tc.dormant {
				t.Errorf("DormantDue in the index = %v, want %v", ok, tc.dormant)
			}
		})
	}
}

func TestTransitionKeepsPausedAtWhenArchived(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	s := &Session{State: StatePaused, PausedAt: t0, SandboxID: "sbx", PreviewURL: "https://x", TierRetryAt: t0, TierError: "x"}
	if err := s.Transition(StateArchived, ReasonArchive, t0.Add(time.Hour), DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if !s.PausedAt.Equal(t0) || s.PreviewURL != "" || !s.TierRetryAt.IsZero() || s.TierError != "" {
		t.Errorf("archived: paused_at %v preview %q retry %v error %q", s.PausedAt, s.PreviewURL, s.TierRetryAt, s.TierError)
	}
	if s.State.Final() || !StateDeleted.Final() {
		t.Error("archived must not be final, deleted must be")
	}
}

func TestResolveTiers(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	day := 24 * time.Hour
	if got := DefaultArchiveAfter(30 * day); got != 27*day {
		t.Errorf("DefaultArchiveAfter(30d) = %v, want 27d", got)
	}
	if got := DefaultArchiveAfter(4 * day); got != 2*day {
		t.Errorf("DefaultArchiveAfter(4d) = %v, want half: 2d", got)
	}
	if got := DefaultArchiveAfter(0); got != 0 {
		t.Errorf("DefaultArchiveAfter(0) = %v, want never", got)
	}
	a, del := resolveTiers(27*day, Tiers{ArchiveAfter: d(0)}, Tiers{ArchiveAfter: d(day), DeleteAfter: d(90 * day)})
	if a != 0 || del != 90*day {
		t.Errorf("session never + deployment 1d/90d = %v/%v, want 0/90d", a, del)
	}
	if a, del = resolveTiers(27*day, Tiers{}, Tiers{}); a != 27*day || del != 0 {
		t.Errorf("nothing set = %v/%v, want the provider default 27d/never", a, del)
	}
	if err := ValidTiers(Tiers{ArchiveAfter: d(time.Second)}); !IsCode(err, CodeInvalid) {
		t.Errorf("archive after 1 s: %v, want invalid", err)
	}
	if err := ValidTiers(Tiers{ArchiveAfter: d(0), DeleteAfter: d(day)}); err != nil {
		t.Errorf("never/1d: %v", err)
	}
}
