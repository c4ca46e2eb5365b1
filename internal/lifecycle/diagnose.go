package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Diagnose (docs/DESIGN.md "Operators"): the split truth about one session in
// one place, read-only. It reads the table, asks the provider through
// Provider.Get (the control API: never wakes a paused sandbox), probes the
// preview URL only when both say running, and ends in one verdict sentence.
// It writes nothing, so it is not activity.

// PreviewProber checks whether a preview URL answers: it returns the HTTP
// status, or an error when nothing answered within ctx's deadline.
type PreviewProber func(ctx context.Context, url string) (int, error)

// DefaultPreviewTimeout bounds the preview probe of Diagnose.
const DefaultPreviewTimeout = 3 * time.Second

// HTTPPreviewProber is the default PreviewProber: a GET of url with
// client's transport (http.DefaultClient when nil), bounded by ctx.
func HTTPPreviewProber(client *http.Client) PreviewProber {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context, url string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("preview request: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("preview get: %w", err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
}

// ProviderView is the provider's live view of a session's sandbox.
type ProviderView struct {
	Checked bool         // false: no sandbox to ask about
	State   SandboxState // "running" or "paused" when found
	Gone    bool         // the provider says the sandbox does not exist
	Error   string       // the provider did not answer (transient); "" otherwise
}

// PreviewView is the preview probe's outcome.
type PreviewView struct {
	Checked  bool   // probed only when the table and the provider say running
	Answered bool   // an HTTP answer below 500 came back
	Status   int    // the HTTP status; 0 when nothing answered
	Error    string // why nothing (or a 5xx) answered
}

// Diagnosis is Diagnose's answer.
type Diagnosis struct {
	Session      *Session // the table's view
	LeaseExpired bool     // a transitional state whose lease ran out
	Provider     ProviderView
	Preview      PreviewView
	// Agree is true when the table, the provider and the preview tell the
	// same story; Verdict says so, or what disagrees and what reconciles it.
	Agree   bool
	Verdict string
	// Events are the session's last lifecycle events, newest first (at
	// most DiagnoseEvents), as the publisher recorded them (UsageStore);
	// empty when the store keeps none.
	Events []Event
}

// Diagnose returns the operator's view of session id of accountID. probe
// checks the preview (nil: HTTPPreviewProber(nil)), bounded by
// DefaultPreviewTimeout; the provider read is bounded by ProbeTimeout.
// The session's last events come from the store when it is a UsageStore.
// Errors: not_found, forbidden, the store's. Provider and preview failures
// are part of the diagnosis, not errors.
func (s *Service) Diagnose(ctx context.Context, accountID, id string, probe PreviewProber) (*Diagnosis, error) {
	sess, err := s.owned(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if probe == nil {
		probe = HTTPPreviewProber(nil)
	}
	now := s.now()
	d := &Diagnosis{Session: sess}
	d.LeaseExpired = sess.State.Transitional() && !sess.LeaseExpiresAt.IsZero() && !now.Before(sess.LeaseExpiresAt)
	if sess.SandboxID != "" {
		d.Provider.Checked = true
		// An operator waits on this read: a user call in the provider's
		// call limiter, not the background Get of the sweep.
		pctx, cancel := context.WithTimeout(WithCallPriority(ctx, PriorityUser), s.cfg.ProbeTimeout)
		sb, gerr := s.provider(sess).Get(pctx, sess.SandboxID)
		cancel()
		switch {
		case gerr == nil:
			d.Provider.State = sb.State
		case errors.Is(gerr, ErrSandboxGone):
			d.Provider.Gone = true
		default:
			d.Provider.Error = gerr.Error()
		}
	}
	if sess.State == StateRunning && d.Provider.State == SandboxRunning && sess.PreviewURL != "" {
		d.Preview.Checked = true
		pctx, cancel := context.WithTimeout(ctx, DefaultPreviewTimeout)
		code, perr := probe(pctx, sess.PreviewURL)
		cancel()
		d.Preview.Status = code
		switch {
		case perr != nil:
			d.Preview.Error = perr.Error()
		case code >= 500:
			d.Preview.Error = fmt.Sprintf("the preview answered HTTP %d", code)
		default:
			d.Preview.Answered = true
		}
	}
	if us, ok := s.cfg.Store.(UsageStore); ok {
		page, err := us.SessionEvents(ctx, EventQuery{SessionID: sess.ID, Limit: DiagnoseEvents, Now: s.now()})
		if err != nil {
			return nil, fmt.Errorf("diagnose session %s: recent events: %w", sess.ID, err)
		}
		d.Events = page.Events
	}
	d.Agree, d.Verdict = verdict(d)
	return d, nil
}

// The verdict sentences (docs/OPERATIONS.md "Diagnose" lists them).
const (
	VerdictAgreeRunning       = "the table and the provider agree: the session is running and its preview answers"
	VerdictAgreePaused        = "the table and the provider agree: the session is paused"
	VerdictAgreeNoPreview     = "the table and the provider agree: the session is running (it has no preview URL to probe)"
	VerdictFinal              = "the session is %s and holds no sandbox: nothing to compare"
	VerdictNoSandbox          = "the session is %s and has no sandbox yet: nothing to compare"
	VerdictProviderError      = "the provider did not answer (%s): the views cannot be compared now; diagnose again later"
	VerdictLeaseExpired       = "the session is still %s but its lease ran out at %s: the next sweep reconciles it by asking the provider (which says %s)"
	VerdictRunningPaused      = "the table says running, the provider says paused: the next sweep records the pause"
	VerdictPausedRunning      = "the table says paused, the provider says running: the next sweep records it running (it was resumed outside Sandman)"
	VerdictGone               = "the table says %s, the provider says the sandbox is gone: the next sweep (or a reconnect) marks the session expired"
	VerdictPreviewNotAnswered = "the table and the provider agree the session is running, but its preview does not answer (%s): the app inside the sandbox is not serving; Sandman does not reconcile this, restart the app or delete the session"
	VerdictTransitional       = "the session is %s within its lease (until %s); the provider says %s: the operation under way settles it"
)

func verdict(d *Diagnosis) (bool, string) {
	sess, p := d.Session, d.Provider
	providerSays := string(p.State)
	if p.Gone {
		providerSays = "gone"
	}
	switch {
	case sess.State.Final() && sess.SandboxID == "":
		return true, fmt.Sprintf(VerdictFinal, sess.State)
	case !p.Checked:
		return true, fmt.Sprintf(VerdictNoSandbox, sess.State)
	case p.Error != "":
		return false, fmt.Sprintf(VerdictProviderError, p.Error)
	case d.LeaseExpired:
		return false, fmt.Sprintf(VerdictLeaseExpired, sess.State, sess.LeaseExpiresAt.Format(time.RFC3339), providerSays)
	case sess.State.Transitional():
		return true, fmt.Sprintf(VerdictTransitional, sess.State, sess.LeaseExpiresAt.Format(time.RFC3339), providerSays)
	case p.Gone:
		return false, fmt.Sprintf(VerdictGone, sess.State)
	case sess.State == StateRunning && p.State == SandboxPaused:
		return false, VerdictRunningPaused
	case sess.State == StatePaused && p.State == SandboxRunning:
		return false, VerdictPausedRunning
	case sess.State == StateRunning && d.Preview.Checked && !d.Preview.Answered:
		return false, fmt.Sprintf(VerdictPreviewNotAnswered, d.Preview.Error)
	case sess.State == StateRunning && !d.Preview.Checked:
		return true, VerdictAgreeNoPreview
	case sess.State == StateRunning:
		return true, VerdictAgreeRunning
	case sess.State == StatePaused:
		return true, VerdictAgreePaused
	}
	return false, fmt.Sprintf("the table says %s, the provider says %s: the next sweep reconciles it", sess.State, providerSays)
}
