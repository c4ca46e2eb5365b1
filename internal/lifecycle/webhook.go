package lifecycle

import (
	"context"
	"fmt"
)

// WebhookOutcome says what applying a provider event did.
type WebhookOutcome string

// The webhook outcomes.
const (
	WebhookApplied        WebhookOutcome = "applied"         // the session changed
	WebhookRecorded       WebhookOutcome = "recorded"        // newer, but nothing to change beyond its timestamp
	WebhookStale          WebhookOutcome = "stale"           // not newer than the last applied event: ignored
	WebhookDuplicate      WebhookOutcome = "duplicate"       // this event id was seen before
	WebhookUnknownSandbox WebhookOutcome = "unknown_sandbox" // no session holds this sandbox
	// WebhookDeferred: the session is in a transitional state; the operation
	// under way (create, pause, resume) records the outcome itself. The event
	// is not claimed, and the webhook asks the provider to deliver it again
	// (503); if the operation died, the sweep reconciles the expired lease.
	WebhookDeferred WebhookOutcome = "deferred"
)

// ApplyProviderEvent applies one verified provider webhook (docs/DESIGN.md
// "Webhooks"). The event is applied only when its timestamp is newer than the
// session's LastProviderEventAt, so late or repeated deliveries never move a
// session backwards; the write is conditional like any other and records its
// transition. The event id is then claimed for WebhookDedupeTTL: a delivery
// whose id was claimed before reports WebhookDuplicate. Claiming after the
// write (not before) means a delivery that failed half way is applied by the
// provider's retry instead of being swallowed as a duplicate; the timestamp
// rule makes the re-application a no-op.
//
// A paused or resumed event older than the session's last committed
// transition (StateChangedAt) is stale too: it describes a state Sandman has
// moved past. This compares the provider's clock with ours; skew of a few
// seconds at worst leaves a disagreement the sweep's provider-list check
// repairs.
//
// A timestamp more than MaxProviderClockSkew ahead of Sandman's clock is
// clamped to now (see clampEventTime), so no event can poison the order.
//
// Rules: paused → paused; resumed → running and counts as activity (traffic
// woke it); killed → expired (a session we killed stays killed), except
// where a checkpoint keeps the work (killedKept); updated →
// records the new provider timeout; created → recorded. A session in a
// transitional state (provisioning, pausing, resuming) is left to the
// operation under way (WebhookDeferred); a final one records nothing.
// Errors: from the store only (the caller answers 5xx so the provider retries).
func (s *Service) ApplyProviderEvent(ctx context.Context, ev ProviderEvent) (WebhookOutcome, error) {
	ev = s.clampEventTime(ctx, ev)
	outcome, err := s.applyProviderEvent(ctx, ev)
	if err != nil {
		return "", err
	}
	if outcome == WebhookUnknownSandbox || outcome == WebhookDeferred {
		// Not claimed: a deferred event is to be delivered again (the
		// webhook answers 503) once the operation under way has settled.
		return outcome, nil
	}
	claimed, _, err := s.cfg.Store.Claim(ctx, "webhook#"+ev.Provider+"#"+ev.ID, string(ev.Type), s.cfg.WebhookDedupeTTL, s.now())
	if err != nil {
		return "", fmt.Errorf("record webhook event %s: %w", ev.ID, err)
	}
	if !claimed {
		return WebhookDuplicate, nil
	}
	return outcome, nil
}

func (s *Service) applyProviderEvent(ctx context.Context, ev ProviderEvent) (WebhookOutcome, error) {
	var err error
	for attempt := 0; attempt < maxConflictRetries; attempt++ {
		var sess *Session
		sess, err = s.cfg.Store.FindBySandbox(ctx, ev.Provider, ev.SandboxID)
		if IsCode(err, CodeNotFound) {
			return WebhookUnknownSandbox, nil
		}
		if err != nil {
			return "", err
		}
		if !ev.Timestamp.After(sess.LastProviderEventAt) {
			return WebhookStale, nil
		}
		var outcome WebhookOutcome
		if outcome, err = s.applyTo(ctx, sess, ev); err == nil || !IsCode(err, CodeConflict) {
			return outcome, err
		}
	}
	return "", err
}

// applyTo applies ev to sess with one conditional write.
func (s *Service) applyTo(ctx context.Context, sess *Session, ev ProviderEvent) (WebhookOutcome, error) {
	if sess.State.Final() {
		return WebhookRecorded, nil
	}
	if sess.State.Transitional() {
		// Writing here would bump the version under the operation in flight
		// and make its own settling write fail; it records the result, with
		// its own reason (idle, request), a moment later.
		return WebhookDeferred, nil
	}
	if (ev.Type == ProviderEventPaused || ev.Type == ProviderEventResumed) && ev.Timestamp.Before(sess.StateChangedAt) {
		// It describes a state Sandman has moved past since (a late paused
		// after our own resume): applying it would move the session back.
		return WebhookStale, nil
	}
	from := sess.State
	now := s.now()
	sess.LastProviderEventAt = ev.Timestamp
	sess.UpdatedAt = now
	var to State
	switch ev.Type {
	case ProviderEventPaused:
		to = StatePaused
	case ProviderEventResumed:
		to = StateRunning
		sess.MarkActivity(now, s.cfg.Policy.ActivityGranularity)
	case ProviderEventKilled:
		if kept, outcome, err := s.killedKept(ctx, sess); kept || err != nil {
			return outcome, err
		}
		to = StateExpired
	case ProviderEventUpdated:
		if ev.Timeout > 0 && from == StateRunning { // a paused sandbox has no timeout running
			sess.SandboxExpiresAt = ev.Timestamp.Add(ev.Timeout)
		}
	}
	if to != "" && to != from && CanTransition(from, to) {
		if err := sess.Transition(to, ReasonWebhook, now, s.cfg.Policy); err != nil {
			return "", err
		}
		// The change happened at the provider when the event says.
		sess.StateChangedAt = ev.Timestamp
		if err := s.commit(ctx, sess, from, Guard{}); err != nil {
			return "", err
		}
		return WebhookApplied, nil
	}
	if err := s.commit(ctx, sess, from, Guard{}); err != nil {
		return "", err
	}
	return WebhookRecorded, nil
}

// killedKept applies a killed event to sess where a checkpoint keeps the
// user's work instead of ending it expired (docs/RELIABILITY.md "Recovery":
// never expired while a checkpoint exists): an archived session's sandbox
// is meant to be gone (its demotion killed it), so the event is only
// recorded; a paused or running one is kept on its newest ready checkpoint
// as a reconcile that found it gone keeps it (keepLost: archived while
// paused, recovered in place while running). It reports false when nothing
// keeps it (the caller expires it). Errors: the write's (a conflict is
// retried by the caller on a fresh read).
func (s *Service) killedKept(ctx context.Context, sess *Session) (bool, WebhookOutcome, error) {
	from := sess.State
	if from == StateArchived {
		return true, WebhookRecorded, s.commit(ctx, sess, from, Guard{})
	}
	kept, err := s.keepLost(ctx, sess)
	if err != nil {
		return true, "", err
	}
	if !kept {
		return false, "", nil
	}
	return true, WebhookApplied, nil
}
