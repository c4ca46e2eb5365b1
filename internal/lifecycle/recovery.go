package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Recovery (docs/RELIABILITY.md "Recovery"): every resume is verified by
// Sandman's identity marker, and a resume that finds the sandbox lost
// restores the session's newest ready checkpoint in place (or recreates
// it from its template, per OnLost) instead of ending it expired.

// IdentityMarkerPath is where Sandman writes its identity marker in every
// sandbox whose provider has a file API (Files): a JSON object
// {"session_id", "sandbox_id", "checkpoint_id"} written at create and
// after every restore, and read back after every resume before running
// is committed. A provider without Files gets no marker (logged); its
// resumes are trusted as before.
const IdentityMarkerPath = "/home/user/.sandman/identity.json"

// OnLost is a session's policy for a resume that finds its sandbox lost.
type OnLost string

// The on_lost policies; "" is OnLostRestore.
const (
	OnLostRestore  OnLost = "restore"  // restore the newest ready checkpoint; none: expired
	OnLostRecreate OnLost = "recreate" // a fresh sandbox from the template (reason recreated)
	OnLostExpire   OnLost = "expire"   // end expired (the behaviour before recovery)
)

// ParseOnLost returns the OnLost named by s ("" for the default).
// Errors: invalid.
func ParseOnLost(s string) (OnLost, error) {
	switch o := OnLost(s); o {
	case "", OnLostRestore, OnLostRecreate, OnLostExpire:
		return o, nil
	}
	return "", Errorf(CodeInvalid, "on_lost must be restore, recreate or expire, not %q", s)
}

// How a sandbox was lost (the first word of Session.Lost).
const (
	LostGone    = "gone"    // the provider's definitive not-found, confirmed (observe)
	LostForeign = "foreign" // the marker names another session or sandbox
	LostPartial = "partial" // the marker is missing: not the workspace Sandman wrote
)

// LostDetail is Session.Lost (and Event.Lost) read back: how the sandbox
// was lost (LostGone, LostForeign, LostPartial) and the checkpoint its
// recovery restores, with that checkpoint's age in seconds at the loss and
// its creation time; the checkpoint fields are empty for a recreate.
type LostDetail struct {
	How                 string
	CheckpointID        string
	AgeSeconds          int64
	CheckpointCreatedAt time.Time
}

// ParseLost reads a Session.Lost string ("gone checkpoint=chk_…
// age_seconds=N created_at=<RFC 3339>"); fields it does not find stay
// zero ("" gives the zero LostDetail).
func ParseLost(s string) LostDetail {
	words := strings.Fields(s)
	if len(words) == 0 {
		return LostDetail{}
	}
	d := LostDetail{How: words[0]}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "checkpoint":
			d.CheckpointID = v
		case "age_seconds":
			d.AgeSeconds, _ = strconv.ParseInt(v, 10, 64)
		case "created_at":
			d.CheckpointCreatedAt, _ = time.Parse(time.RFC3339Nano, v)
		}
	}
	return d
}

// identityMarker is the content of IdentityMarkerPath. SandboxID is the
// generation: every restore or recreate makes a new sandbox.
type identityMarker struct {
	SessionID    string `json:"session_id"`
	SandboxID    string `json:"sandbox_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// writeMarker writes the identity marker of sess into sandboxID (made
// from checkpointID, "" for none) and sets sess.Marked when it was
// written. A provider without Files, or a failed write, leaves
// sess.Marked false (logged): the next resume is not verified.
func (s *Service) writeMarker(ctx context.Context, sess *Session, sandboxID, checkpointID string) {
	sess.Marked = false
	f, ok := As[Files](s.provider(sess))
	if !ok {
		s.log().DebugContext(ctx, "no identity marker: the provider has no file API",
			"session_id", sess.ID, "provider", s.provider(sess).Name())
		return
	}
	data, err := json.Marshal(identityMarker{SessionID: sess.ID, SandboxID: sandboxID, CheckpointID: checkpointID})
	if err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	err = f.WriteFile(pctx, sandboxID, IdentityMarkerPath, data)
	cancel()
	if err != nil {
		s.log().WarnContext(ctx, "write the identity marker; the next resume is not verified",
			"session_id", sess.ID, "sandbox_id", sandboxID, "err", err)
		return
	}
	sess.Marked = true
}

// checkMarker reads back the identity marker of a resumed sess and returns
// "" when it is Sandman's (or the session has none to check), LostForeign
// or LostPartial. Errors: the read could not say (transient, or a gone
// that observe has not confirmed): never a loss.
func (s *Service) checkMarker(ctx context.Context, sess *Session) (string, error) {
	f, ok := As[Files](s.provider(sess))
	if !sess.Marked || !ok {
		return "", nil
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	data, err := f.ReadFile(pctx, sess.SandboxID, IdentityMarkerPath)
	cancel()
	switch {
	case errors.Is(err, ErrNoFile):
		return LostPartial, nil
	case err != nil:
		return "", err
	}
	var m identityMarker
	if json.Unmarshal(data, &m) != nil || m.SessionID != sess.ID || m.SandboxID != sess.SandboxID {
		return LostForeign, nil
	}
	return "", nil
}

// recoverLost starts the recovery of resuming sess whose sandbox was lost
// (kind: LostGone, LostForeign, LostPartial) as its OnLost says: resuming
// → restoring (reason lost, Session.Lost saying how, from which checkpoint
// and its age) and a restore job, of the newest ready checkpoint or, for
// OnLostRecreate, of none (a fresh sandbox). It reports false when there
// is nothing to recover with (OnLostExpire, no ready checkpoint, no
// checkpoint jobs here): the caller ends the session expired as before.
// The write is conditional on the version read, so of one burst of
// resumes one recovery starts. Errors: the write's (a lost race: conflict).
func (s *Service) recoverLost(ctx context.Context, sess *Session, kind string) (bool, error) {
	if sess.OnLost == OnLostExpire || s.cfg.CheckpointJobs == nil {
		return false, nil
	}
	detail, checkpointID := kind, ""
	if sess.OnLost != OnLostRecreate {
		c := s.newestReady(ctx, sess)
		if c == nil {
			return false, nil
		}
		checkpointID, detail = c.ID, s.lostDetail(kind, c)
	}
	if kind == LostForeign {
		sess.SandboxID = "" // someone else's: never killed, never adopted
	}
	sess.Lost, sess.Marked = detail, false
	sess.RestoreCheckpointID, sess.RestoreFrom, sess.RestoreError = checkpointID, StatePaused, ""
	if err := s.transition(ctx, sess, StateRestoring, ReasonLost, Guard{}); err != nil {
		return true, raced(err)
	}
	s.log().WarnContext(ctx, "sandbox lost; recovering the session", "session_id", sess.ID, "lost", detail)
	if err := s.enqueueCheckpoint(ctx, CheckpointJob{Op: CheckpointOpRestore, SessionID: sess.ID, CheckpointID: checkpointID}); err != nil {
		// The lease puts the session back paused; the next resume tries again.
		s.log().WarnContext(ctx, "queue the recovery; the lease settles it", "session_id", sess.ID, "err", err)
	}
	return true, nil
}

// lostDetail is Session.Lost for a loss of kind recovered from c: the
// kind, the checkpoint, its age in seconds and when it was taken
// (ParseLost reads it back).
func (s *Service) lostDetail(kind string, c *Checkpoint) string {
	return fmt.Sprintf("%s checkpoint=%s age_seconds=%d created_at=%s", kind, c.ID, int64(s.now().Sub(c.CreatedAt)/time.Second),
		c.CreatedAt.UTC().Format(time.RFC3339Nano))
}

// archiveLost keeps paused sess, whose sandbox a reconcile found gone at
// the provider, as archived (reason lost, Session.Lost saying from which
// checkpoint) when its OnLost is restore and it has a ready checkpoint:
// its next open or resume unarchives it (a restore of the newest ready
// checkpoint, docs/CHECKPOINTS.md "Retention tiers") instead of finding it
// expired. It reports false when there is nothing to keep it with
// (OnLostExpire, OnLostRecreate, no ready checkpoint): the caller expires
// the session as before. Errors: the write's (a lost race: conflict).
func (s *Service) archiveLost(ctx context.Context, sess *Session) (bool, error) {
	if sess.OnLost == OnLostExpire || sess.OnLost == OnLostRecreate {
		return false, nil
	}
	c := s.newestReady(ctx, sess)
	if c == nil {
		return false, nil
	}
	sess.Lost, sess.Marked, sess.SandboxID = s.lostDetail(LostGone, c), false, ""
	if err := s.transition(ctx, sess, StateArchived, ReasonLost, Guard{}); err != nil {
		return false, err
	}
	s.log().WarnContext(ctx, "a paused session's sandbox is gone; kept archived on its checkpoint", "session_id", sess.ID, "lost", sess.Lost)
	return true, nil
}

// keepLost keeps sess, paused or running on a sandbox its provider
// confirmed gone, on its newest ready checkpoint instead of ending it
// expired: a paused one archived (archiveLost; its next open or resume
// unarchives it), a running one recovered in place (recoverLost, as a
// resume that finds it lost: restoring, reason lost; OnLostRecreate a
// fresh sandbox). It reports false when there is nothing to keep it with
// (the caller expires it as before). Errors: the write's.
func (s *Service) keepLost(ctx context.Context, sess *Session) (bool, error) {
	switch sess.State {
	case StatePaused:
		return s.archiveLost(ctx, sess)
	case StateRunning:
		return s.recoverLost(ctx, sess, LostGone)
	}
	return false, nil
}

// newestReady returns sess's newest checkpoint that can be restored onto
// its provider now, or nil (none, or the store could not say: logged).
func (s *Service) newestReady(ctx context.Context, sess *Session) *Checkpoint {
	cs, ok := s.cfg.Store.(CheckpointStore)
	if !ok {
		return nil
	}
	cursor := ""
	for {
		page, err := cs.ListCheckpoints(ctx, sess.ID, cursor, MaxListLimit)
		if err != nil {
			s.log().WarnContext(ctx, "list checkpoints for a recovery", "session_id", sess.ID, "err", err)
			return nil
		}
		for _, c := range page.Checkpoints {
			if c.State == CheckpointReady && c.Restorable(s.now()) == nil && s.checkProvider(sess, c) == nil {
				return c
			}
		}
		if page.Cursor == "" {
			return nil
		}
		cursor = page.Cursor
	}
}

// runRecreate is the job of a recovery with OnLostRecreate: a fresh
// sandbox from sess's template, swapped in (reason recreated).
// Errors: transient ones within the lease (the queue runs it again).
func (s *Service) runRecreate(ctx context.Context, sess *Session) error {
	sess.MarkActivity(s.now(), s.cfg.Policy.ActivityGranularity)
	req := CreateRequest{Template: sess.Template, Timeout: s.cfg.Policy.ProviderTimeout(sess, s.now()), AutoPause: true,
		Metadata: s.sandboxMetadata(sess)}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	sb, err := s.provider(sess).Create(pctx, req)
	cancel()
	if err != nil {
		if retryable(err) && s.now().Before(sess.LeaseExpiresAt) {
			return err
		}
		s.rollbackRestore(ctx, sess, "a fresh sandbox could not be made: "+userMessage(err))
		return nil
	}
	return s.swapIn(ctx, sess, sb, "", ReasonRecreated)
}

// lost is the verification of a resume that ended in state to (running,
// paused or expired, as the provider shows it): a running sandbox's marker
// is read back (checkMarker; a read that cannot say is logged and the
// sandbox adopted: a transient failure is never a loss), and an expired
// one was confirmed gone (observe). A loss starts a recovery (recoverLost)
// and reports recovering true with its error; a loss with nothing to
// recover with reports false and ErrSandboxGone (the caller records
// expired); no loss reports false, nil.
func (s *Service) lost(ctx context.Context, sess *Session, to State) (recovering bool, err error) {
	kind := ""
	switch to {
	case StateExpired:
		kind = LostGone
	case StateRunning:
		k, merr := s.checkMarker(ctx, sess)
		if merr != nil {
			s.log().WarnContext(ctx, "read the identity marker; the resume is not verified", "session_id", sess.ID, "err", merr)
		}
		kind = k
	}
	if kind == "" {
		return false, nil
	}
	if ok, rerr := s.recoverLost(ctx, sess, kind); ok {
		return true, rerr
	}
	s.log().WarnContext(ctx, "sandbox lost and nothing to recover it with; the session expires", "session_id", sess.ID, "lost", kind)
	return false, ErrSandboxGone
}
