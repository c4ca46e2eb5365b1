package lifecycle

import (
	"context"
	"strings"
	"time"
)

// Open is what an open of a session's stable link does (docs/WAKE.md):
// it counts as activity on a running session whose link leads somewhere
// (its app ready, starting, or none, and a preview URL), and on a paused
// one it starts the one resume of a burst (on an archived one the one
// unarchive: a restore, tiers_service.go) (reason return when the session resumes
// on return and may now: mayResumeOnReturn; else request). The paused →
// resuming write is conditional, so of many concurrent opens exactly one
// wins it and starts the resume; the others re-read, find the session
// resuming and join (they return it as it is, no error, no second resume).
// With Config.ResumeJobs or ReadinessJobs the winner does not wait for the provider: it
// hands the rest of the resume to a job (openResume) and returns the
// session resuming, so the link answers at once. It returns the session as
// it then is (running, resuming, …). Errors: not_found, forbidden, gone
// (killed, failed or expired), conflict (TypeAppFailed and TypeNoPreview
// from Session.OpenError, without counting as activity; another state that
// cannot open), quota_exceeded, and (without jobs, or when the job could
// not be queued) unavailable as Resume.
func (s *Service) Open(ctx context.Context, accountID, id string) (*Session, error) {
	return s.open(ctx, accountID, id, false)
}

// Reopen is the waking page's own re-open of the link (docs/WAKE.md "The
// waking page"): as Open, but it is never activity and never wakes
// anything. A running session's deadlines stay as they are, and a paused
// one is left paused: conflict TypeSandboxPaused (a page left open must not
// keep a session running, nor resume one the app or the sweep paused).
// Errors: as Open.
func (s *Service) Reopen(ctx context.Context, accountID, id string) (*Session, error) {
	return s.open(ctx, accountID, id, true)
}

func (s *Service) open(ctx context.Context, accountID, id string, reopen bool) (*Session, error) {
	return s.retryConflicts(ctx, accountID, id, func(sess *Session) error {
		if err := sess.OpenError(); err != nil {
			return err
		}
		switch sess.State {
		case StateRunning:
			now := s.now()
			if reopen || !sess.RecordActivity(now, s.cfg.Policy.ActivityGranularity) {
				return nil
			}
			sess.UpdatedAt = now
			if err := s.commit(ctx, sess, sess.State, Guard{}); err != nil {
				return raced(err)
			}
			return nil
		case StatePaused:
			if reopen {
				return &Error{Code: CodeConflict, Type: TypeSandboxPaused,
					Message: "the session is paused; a page's automatic re-open does not wake it, open the link to wake it"}
			}
			reason := ReasonRequest
			if sess.mayResumeOnReturn(s.now()) {
				reason, sess.ReturnResumedAt = ReasonReturn, s.now()
			}
			return s.openResume(ctx, sess, reason)
		case StateArchived:
			if reopen {
				return &Error{Code: CodeConflict, Type: TypeSandboxPaused,
					Message: "the session is archived; a page's automatic re-open does not wake it, open the link to restore it"}
			}
			return s.unarchive(ctx, sess) // the waking page shows it restoring
		case StateResuming, StateProvisioning, StatePausing, StateRestoring:
			return nil // joins the move under way; the caller follows it
		}
		return Errorf(CodeConflict, "the session is %s and cannot be opened", sess.State)
	})
}

// OpenError returns why an open of sess can reach nothing, now or by
// waiting (docs/WAKE.md "Opening the link"), or nil: gone for a killed,
// failed or expired session; for a running one, conflict TypeAppFailed
// when its app failed (the readiness detail's reason as the sentence,
// Error.App with the exit code and last output lines) and conflict TypeNoPreview
// when its sandbox gave no preview URL. A held open asks it again of the
// session its hold ends on.
func (s *Session) OpenError() error {
	switch {
	case s.State.Final():
		return Errorf(CodeGone, "the session is %s and its link no longer opens anything", s.State)
	case s.State != StateRunning:
		return nil
	case s.App != nil && s.Readiness == ReadinessFailed:
		var exit *int
		if s.AppExitCode != nil {
			code := *s.AppExitCode
			exit = &code
		}
		why, output, _ := strings.Cut(s.ReadinessDetail, outputSeparator)
		return &Error{Code: CodeConflict, Type: TypeAppFailed, App: &AppFailure{ExitCode: exit, Output: output},
			Message: "the session's app failed: " + why}
	case s.PreviewURL == "":
		return &Error{Code: CodeConflict, Type: TypeNoPreview,
			Message: "the session is running but its sandbox has no preview URL, so its link has nothing to open"}
	}
	return nil
}

// WaitOpen holds until session id is running with an app that is not
// starting (ready, failed, or no app), is in a state that will not become
// running by itself, or bound (at most MaxWaitReady) has passed, re-reading
// the session every ReadyPollInterval, and returns it as it then is. It is
// what a non-browser open holds on (docs/WAKE.md "Opening the link").
// Errors: not_found, forbidden, the store's.
func (s *Service) WaitOpen(ctx context.Context, accountID, id string, bound time.Duration) (*Session, error) {
	bound = min(bound, MaxWaitReady)
	end := s.now().Add(bound)
	for round := 0; ; round++ {
		sess, err := s.owned(ctx, accountID, id)
		if err != nil {
			return nil, err
		}
		moving := sess.State == StateResuming || sess.State == StateProvisioning || sess.State == StateRestoring ||
			(sess.State == StateRunning && sess.Readiness == ReadinessStarting)
		if !moving || !s.now().Before(end) || round > int(bound/s.cfg.ReadyPollInterval) {
			return sess, nil
		}
		if err := s.sleep(ctx, min(s.cfg.ReadyPollInterval, end.Sub(s.now()))); err != nil {
			return sess, nil
		}
	}
}

// Opened reports whether an open of sess may go straight to its preview:
// running with a preview URL and an app that is ready (or no app).
func (s *Session) Opened() bool {
	return s.State == StateRunning && s.PreviewURL != "" &&
		(s.App == nil || s.Readiness == ReadinessReady || s.Readiness == "")
}

// openResume starts the resume of paused sess for an open. With
// Config.ResumeJobs (or ReadinessJobs) it commits paused → resuming marked ResumeQueued and
// queues a job for the session, whose FinishResume (or BringUp) finishes
// the resume (the provider's resume and resuming → running) in the
// background: a goroutine of the resume worker locally, a resume-queue
// message in AWS (docs/WAKE.md "The resume runs in the background"). When
// the job cannot be queued the open finishes the resume itself, as without
// jobs. A job that never runs (a crash between the write and the queue)
// leaves the session resuming until its lease ends; the sweep's reconcile
// then settles it from the provider's view, as for any resume cut short.
func (s *Service) openResume(ctx context.Context, sess *Session, reason string) error {
	jobs := s.resumeJobs()
	if jobs == nil {
		return s.resume(ctx, sess, reason)
	}
	if err := s.beginResume(ctx, sess, reason, true); err != nil {
		return err
	}
	if err := jobs.Enqueue(ctx, sess.ID); err != nil {
		s.log().WarnContext(ctx, "queue the resume job; the open resumes the session itself",
			"session_id", sess.ID, "err", err)
		return s.finishResume(ctx, sess, reason)
	}
	return nil
}

// resumeJobs returns where a handed-off resume's job goes: ResumeJobs, or
// ReadinessJobs without it (nil: no jobs, the request resumes itself).
func (s *Service) resumeJobs() ReadinessJobs {
	if s.cfg.ResumeJobs != nil {
		return s.cfg.ResumeJobs
	}
	return s.cfg.ReadinessJobs
}

// FinishResume is a resume job (Config.ResumeJobs, docs/WAKE.md "The
// resume runs in the background"): for a session resuming with its resume
// handed to a job (Session.ResumeQueued) it finishes that resume and
// returns BringUpResumed; for any other session it does nothing
// (BringUpNothing). Unlike BringUp it never waits on an app: the running
// write queues the app's own job on ReadinessJobs, so a resume job holds
// its slot for one provider resume at most. Errors: the store's.
func (s *Service) FinishResume(ctx context.Context, id string) (BringUpOutcome, error) {
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if err != nil {
		if IsCode(err, CodeNotFound) {
			return BringUpNothing, nil
		}
		return "", err
	}
	if sess.State != StateResuming || !sess.ResumeQueued {
		return BringUpNothing, nil
	}
	return s.finishQueuedResume(ctx, sess), nil
}

// finishQueuedResume finishes the resume an open handed to a job
// (openResume); FinishResume and BringUp call it only for a session they read resuming with
// ResumeQueued (a job run again after the resume finished, or one that
// finds a resume some request runs itself, does nothing). Two copies of one
// job at once (SQS delivers at least once) may both ask the provider, whose
// resume of a running sandbox changes nothing; one resuming → running write
// commits and the other finds it settled. The running write queues the
// app's own readiness job, which brings the app up. An error of the resume
// is logged: the resume recorded the state the provider showed (paused,
// expired), or left the session to its lease.
func (s *Service) finishQueuedResume(ctx context.Context, sess *Session) BringUpOutcome {
	if err := s.finishResume(ctx, sess, sess.Reason); err != nil {
		s.log().WarnContext(ctx, "queued resume failed", "session_id", sess.ID, "err", err)
		return BringUpMoved
	}
	return BringUpResumed
}
