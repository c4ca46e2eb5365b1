package sweep

import (
	"context"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// tiers is phase 4b: the retention tiers (lifecycle.Service.ApplyTier,
// docs/CHECKPOINTS.md "Retention tiers"). Every session of the tier index
// due by now is archived (once a ready checkpoint holds its work),
// deleted, or has the provider work of an earlier demotion finished.
func (r *run) tiers(ctx context.Context) {
	if r.outOfTime(ctx) {
		r.incomplete()
		return
	}
	if err := r.eachDue(ctx, lifecycle.IndexTier, r.now, &r.sum.TierDue, r.tier); err != nil {
		r.sw.log.ErrorContext(ctx, "retention tiers", "err", err)
		r.incomplete()
	}
}

// tier applies one session's due tier transition.
func (r *run) tier(ctx context.Context, found *lifecycle.Session) {
	if !r.begin(ctx) {
		return
	}
	out, err := r.sw.svc.ApplyTier(ctx, found.ID)
	if err != nil {
		r.sw.log.WarnContext(ctx, "retention tier failed; a later run retries", "session_id", found.ID, "err", err)
		r.add(&r.sum.TierFailed, 1)
	}
	switch out {
	case lifecycle.TierArchived:
		r.add(&r.sum.Archived, 1)
	case lifecycle.TierDeleted:
		r.add(&r.sum.Deleted, 1)
	case lifecycle.TierWaiting, lifecycle.TierKept:
		r.add(&r.sum.TierHeld, 1)
	}
}
