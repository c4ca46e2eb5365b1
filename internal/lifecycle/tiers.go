package lifecycle

import (
	"context"
	"time"
)

// Retention tiers (docs/CHECKPOINTS.md "Retention tiers"): running →
// paused (the provider keeps the sandbox) → archived (only a ready
// checkpoint is kept; the provider's sandbox is deleted) → deleted (the
// checkpoints too). A paused session is archived at PausedAt +
// ArchiveAfter and deleted at PausedAt + DeleteAfter, whichever comes
// first; an archived one is deleted at PausedAt + DeleteAfter. The sweep
// finds them through the tier index (IndexTier) and demotes them
// (tiers_service.go); a resume or open of an archived session restores
// its newest ready checkpoint (reason unarchive).

// Tiers are the retention settings of a session, an account or a
// deployment: how long after its pause a session is archived and
// deleted. A nil pointer is "not set here" (the next level decides); a
// zero duration is "never".
type Tiers struct {
	ArchiveAfter *time.Duration
	DeleteAfter  *time.Duration
}

// Limits of the tier settings (ours). The floor keeps a demotion from
// racing the pause that made the session paused; the ceiling is ten
// years.
const (
	MinTierAfter = time.Minute
	MaxTierAfter = 10 * 365 * 24 * time.Hour
)

// TierMargin is how long before a provider's own retention of a paused
// sandbox ends the default archive deadline falls (DefaultArchiveAfter):
// time for a checkpoint to be taken, and for the sweep to retry a few
// times, before the provider deletes the sandbox by itself.
const TierMargin = 3 * 24 * time.Hour

// DefaultArchiveAfter returns the archive deadline a session gets when
// nothing else sets one, from how long its provider keeps a paused
// sandbox (retention; 0: the provider keeps it as long as Sandman
// wants, and the session is never archived by default): retention less
// TierMargin, but never less than half the retention.
func DefaultArchiveAfter(retention time.Duration) time.Duration {
	if retention <= 0 {
		return 0
	}
	return max(retention-TierMargin, retention/2)
}

// ValidTiers checks a session's or a deployment's tier settings.
// Errors: invalid naming the field.
func ValidTiers(t Tiers) error {
	check := func(name string, d *time.Duration) error {
		if d == nil || *d == 0 {
			return nil
		}
		if *d < MinTierAfter || *d > MaxTierAfter {
			return Errorf(CodeInvalid, "%s must be 0 (never) or between %d and %d seconds", name,
				int64(MinTierAfter/time.Second), int64(MaxTierAfter/time.Second))
		}
		return nil
	}
	if err := check("archive_after_seconds", t.ArchiveAfter); err != nil {
		return err
	}
	return check("delete_after_seconds", t.DeleteAfter)
}

// Per-account tiers. There is no account record: an account exists
// through its API keys, so its tier settings live on them (APIKey.Tiers),
// as its running limit does (APIKey.MaxRunning). The HTTP edge puts the
// authenticating key's settings on the request's context
// (WithAccountTiers); a create or a fork made with it resolves each
// deadline session > key (account) > deployment > the provider's default
// (resolveTiers). Keys of one account may say different things: each
// session follows the key it was created with. A session's deadlines are
// fixed at its create, so a key minted with new settings changes the
// sessions created with it from then on, not those that exist.

type accountTiersKey struct{}

// WithAccountTiers returns ctx carrying t, the account's tier settings
// for the creates and forks made with ctx; a t that sets nothing returns
// ctx unchanged.
func WithAccountTiers(ctx context.Context, t Tiers) context.Context {
	if t.ArchiveAfter == nil && t.DeleteAfter == nil {
		return ctx
	}
	return context.WithValue(ctx, accountTiersKey{}, t)
}

// accountTiers returns the tier settings WithAccountTiers put on ctx (the
// zero Tiers, which sets nothing, when none).
func accountTiers(ctx context.Context) Tiers {
	t, _ := ctx.Value(accountTiersKey{}).(Tiers)
	return t
}

// resolveTiers returns the archive and delete durations of a new session:
// each from the first of levels that sets it (the session's, the
// account's, the deployment's), else archiveDefault and never.
func resolveTiers(archiveDefault time.Duration, levels ...Tiers) (archive, del time.Duration) {
	archive = archiveDefault
	for i := len(levels) - 1; i >= 0; i-- {
		if d := levels[i].ArchiveAfter; d != nil {
			archive = *d
		}
		if d := levels[i].DeleteAfter; d != nil {
			del = *d
		}
	}
	return archive, del
}

// NextTier returns the next tier transition the sweep owes s and when:
// a paused session becomes archived at PausedAt + ArchiveAfter or deleted
// at PausedAt + DeleteAfter, whichever comes first; an archived one
// deleted at PausedAt + DeleteAfter; an archived or deleted one whose
// provider work is pending (TierPending) is due again at once
// (StateChangedAt). Never before TierRetryAt. "" and the zero time:
// nothing is due (no tier set, or another state). Both stores key the
// tier index (IndexTier) by it.
func (s *Session) NextTier() (State, time.Time) {
	var to State
	var at time.Time
	switch {
	case s.TierPending && (s.State == StateArchived || s.State == StateDeleted):
		to, at = s.State, s.StateChangedAt
	case s.PausedAt.IsZero():
	case s.State == StatePaused || s.State == StateArchived:
		if s.DeleteAfter > 0 {
			to, at = StateDeleted, s.PausedAt.Add(s.DeleteAfter)
		}
		if a := s.PausedAt.Add(s.ArchiveAfter); s.State == StatePaused && s.ArchiveAfter > 0 && (to == "" || a.Before(at)) {
			to, at = StateArchived, a
		}
	}
	if to != "" && s.TierRetryAt.After(at) {
		at = s.TierRetryAt
	}
	return to, at
}

// DormantDue returns when a paused session with no tier deadline is due
// in the dormancy index (IndexPaused: at PausedAt), and whether it is in
// it: a session with a tier deadline is demoted by its tiers instead.
func (s *Session) DormantDue() (time.Time, bool) {
	if to, _ := s.NextTier(); to != "" || s.State != StatePaused || s.PausedAt.IsZero() {
		return time.Time{}, false
	}
	return s.PausedAt, true
}
