package lifecycle

import (
	"maps"
	"time"
)

// Session is one user session and the sandbox that backs it. Times are UTC;
// a zero time means "not set". Version starts at 1 on create and the store
// increments it on every write (docs/DESIGN.md "Session states").
type Session struct {
	ID        string            // "ses_" + 26 base32 characters
	AccountID string            // owner; from the API key that created it
	Provider  string            // provider name, e.g. "e2b", "local", "fake"
	Template  string            // provider template id
	Metadata  map[string]string // caller's labels, at most 32 keys

	SandboxID  string // provider sandbox id; "" before create and after expiry
	PreviewURL string // URL of the sandbox's preview port; "" when unknown

	State   State
	Version int64
	// Reason is why the last transition happened: ReasonRequest, ReasonIdle,
	// ReasonAway, ReasonLifetime, ReasonWebhook, ReasonReconcile, ReasonDormant,
	// ReasonReturn.
	Reason string
	// Actor is who made the last write (ActorAPI, ActorClient, ...; actor.go):
	// the service sets it on every write from the request's context.
	Actor string

	IdleTimeout time.Duration // inactivity before a pause; see Policy.IdleTimeout
	MaxLifetime time.Duration // 0: no limit; else pause at RunningSince+MaxLifetime
	// Idle is the learned idle policy's state (learnedsession.go); nil:
	// the fixed policy, the idle deadline set by IdleTimeout alone.
	Idle *IdleState
	// AwayTimeout is how long the session runs on once its last visible
	// client left; 0: presence is off (docs/DESIGN.md "Client channel").
	AwayTimeout time.Duration

	CreatedAt        time.Time
	UpdatedAt        time.Time
	LastActivityAt   time.Time // last recorded activity (heartbeat, resume, create, resumed webhook)
	IdleDeadline     time.Time // LastActivityAt + IdleTimeout + the coalescing window (MarkActivity); only moves forward
	RunningSince     time.Time // when it last became running; zero when not running
	PausedAt         time.Time // when it last became paused; zero when neither paused nor archived (tiers count from it)
	LeaseExpiresAt   time.Time // set only in transitional states
	SandboxExpiresAt time.Time // the provider-side timeout as last set or reported
	// LastProviderEventAt is the timestamp of the newest provider webhook
	// applied; older deliveries are ignored (docs/DESIGN.md "Webhooks").
	LastProviderEventAt time.Time
	// StateChangedAt is when the last transition was committed. A provider
	// webhook older than it describes a state Sandman has already moved past
	// and is not applied (docs/DESIGN.md "Webhooks": never move backwards).
	StateChangedAt time.Time
	// HoldUntil is a busy hold (docs/DESIGN.md "Client channel"): no pause for
	// idleness or absence before it (HeldIdleDeadline). Zero: none. Only
	// moves forward (Hold).
	HoldUntil time.Time

	// RunningLimit is not stored: when positive, the write of this session
	// that takes a running slot (RunningSlotDelta +1) is refused with
	// quota_exceeded if the account already holds RunningLimit slots. The
	// service sets it on creates and resumes (Config.MaxRunning).
	RunningLimit int
	// AwayDeadline is when the session pauses for absence (reason away):
	// set to now + AwayTimeout when its last visible client left, cleared
	// when one comes back and by a pause (presence.go).
	AwayDeadline time.Time
	// ResumeOnReturn: a visible client appearing while the session is
	// paused resumes it with reason return (docs/WAKE.md "Resume on
	// return"). ReturnResumedAt is when the last such resume started (zero:
	// none); there is at most one per ReturnResumeInterval.
	ResumeOnReturn  bool
	ReturnResumedAt time.Time
	// PausedOnRequest: the session's current pause was asked for through
	// the API (the running → pausing write had reason request), so the app
	// decides when it resumes and a returning client does not. Unlike
	// Reason it survives a crash the sweep settles (pausing → paused with
	// reason reconcile). Set by every transition that begins a pause (to
	// pausing, or straight to paused), cleared by one to resuming or
	// running.
	PausedOnRequest bool
	// ResumeQueued: this resuming session's provider resume was handed to
	// a background job, which finishes it (an open of the stable link
	// answers at once: docs/WAKE.md "The resume runs in the background";
	// Service.BringUp). Set only by the paused → resuming write; every
	// transition clears it.
	ResumeQueued bool

	// App is the app the sandbox serves (docs/READINESS.md); nil: none, and
	// the session has no readiness.
	App *AppSpec
	// Readiness is the app's readiness while running ("" without an app or
	// when not running); ReadinessDetail says why it failed (with the
	// command's last output lines when known); ReadyAt is when it last
	// became ready (zero otherwise).
	Readiness       Readiness
	ReadinessDetail string
	ReadyAt         time.Time
	// AppExitCode is the start command's exit code when readiness failed
	// because the command exited (nil otherwise, and whenever readiness
	// resets).
	AppExitCode *int

	// FromPool says the session took a warm pool's spare sandbox instead of
	// a cold one (docs/POOLS.md); PoolID names the pool. Both are set by the
	// claim and never change.
	FromPool bool
	PoolID   string

	// Checkpoints (docs/CHECKPOINTS.md). ForkedFrom is the session a fork
	// copied (its checkpoint: ForkCheckpointID); "" for a session that is
	// no fork. Both are set at the fork's create and never change.
	ForkedFrom       string
	ForkCheckpointID string
	// CheckpointOnPause: an automatic pause (idle, away, lifetime) also
	// records a checkpoint (trigger pause). CheckpointEvery: while running,
	// a checkpoint (trigger schedule) is due that long after the last
	// automatic one (or the start of the run), if there was activity since;
	// 0: off. CheckpointsKeep: how many automatic checkpoints are kept
	// (the older ones are deleted; manual and pinned ones stay).
	CheckpointOnPause bool
	CheckpointEvery   time.Duration
	CheckpointsKeep   int
	// NextCheckpointAt is when a scheduled checkpoint is due (running with
	// CheckpointEvery set; zero otherwise): the session is in the lease
	// index at it (LeaseDue). LastCheckpointAt is when the last automatic
	// checkpoint was asked for.
	NextCheckpointAt time.Time
	LastCheckpointAt time.Time
	// RestoreCheckpointID is the checkpoint a restore is making the
	// session's new sandbox from (set while restoring, kept after as the
	// last one asked for); RestoreFrom the state the restore started in,
	// where a failed restore leaves the session; RestoreError why the last
	// restore failed ("" after a restore that succeeded or while one runs).
	// RestoreKey is the Idempotency-Key the last restore was started with
	// ("" when none): a restore repeating it answers that restore again.
	RestoreCheckpointID string
	RestoreFrom         State
	RestoreError        string
	RestoreKey          string
	// OnLost is what a resume that finds the sandbox lost does (OnLost*;
	// "" is OnLostRestore). Marked says Sandman's identity marker
	// (IdentityMarkerPath) was written into the current sandbox, so a
	// resume reads it back; Lost describes the last loss ("gone
	// checkpoint=chk_… age_seconds=N", docs/RELIABILITY.md "Recovery").
	OnLost OnLost
	Marked bool
	Lost   string

	// Retention tiers (tiers.go, docs/CHECKPOINTS.md "Retention tiers"):
	// ArchiveAfter and DeleteAfter are how long after PausedAt a paused
	// session is archived (only a checkpoint kept) and deleted (its
	// checkpoints too); 0: never. Both are resolved at create (the
	// session's own, else the account's, else the deployment's, else the
	// provider's default) and stored. TierPending: the last tier
	// transition's provider work (kill the sandbox, delete the
	// checkpoints) is not yet confirmed done, so the sweep finds the
	// session again at once. TierRetryAt: no demotion is tried before it
	// (a checkpoint is being taken, or could not be). TierError: why the
	// last demotion could not happen ("" after one did).
	ArchiveAfter time.Duration
	DeleteAfter  time.Duration
	TierPending  bool
	TierRetryAt  time.Time
	TierError    string
	// CheckpointBytes is the summed size of the session's ready
	// checkpoints as last counted (storedbytes.go): what its usage
	// accrues as stored checkpoint (or, archived, archive) bytes.
	CheckpointBytes int64
}

// Transition reasons, carried on the session and in lifecycle events.
const (
	ReasonRequest   = "request"   // an API call asked for it
	ReasonIdle      = "idle"      // the sweep found the idle deadline passed
	ReasonAway      = "away"      // the away deadline passed: no visible client left (docs/DESIGN.md "Client channel")
	ReasonLifetime  = "lifetime"  // the max lifetime passed (docs/DESIGN.md "Activity and idle")
	ReasonWebhook   = "webhook"   // a provider webhook reported it
	ReasonReconcile = "reconcile" // the sweep or a probe found the provider disagreeing
	ReasonDormant   = "dormant"   // the sweep retired a session paused for too long (ours)
	ReasonReturn    = "return"    // a visible client came back to a paused session (docs/WAKE.md "Resume on return")
	// ReasonRestore: a restore from a checkpoint began (→ restoring) or
	// finished (restoring → running with the new sandbox).
	ReasonRestore = "restore"
	// ReasonRestoreFailed: a restore failed and the session is back as it
	// was (restoring → running or paused); Session.RestoreError says why.
	ReasonRestoreFailed = "restore_failed"
	// ReasonLost: a resume found the sandbox lost (gone, foreign or
	// partial: docs/RELIABILITY.md "Recovery") and the session is being
	// recovered (resuming → restoring); Session.Lost says how.
	ReasonLost = "lost"
	// ReasonRecreated: a lost session with on_lost recreate got a fresh
	// sandbox from its template (restoring → running).
	ReasonRecreated = "recreated"
	// ReasonArchive: the sweep archived a paused session past its
	// archive deadline (paused → archived: a ready checkpoint holds its
	// work, the provider's sandbox is deleted).
	ReasonArchive = "archive"
	// ReasonUnarchive: a resume or open of an archived session restores
	// its newest ready checkpoint (archived → restoring → running).
	ReasonUnarchive = "unarchive"
	// ReasonRetention: the sweep deleted a session past its delete
	// deadline (paused or archived → deleted, its checkpoints removed).
	ReasonRetention = "retention"
)

// HasSnapshot reports whether the session's sandbox is held as a paused
// snapshot that a resume can continue.
func (s *Session) HasSnapshot() bool {
	return s.SandboxID != "" && (s.State == StatePaused || s.State == StateResuming)
}

// LifetimeDeadline returns RunningSince + MaxLifetime, or the zero time when
// there is no max lifetime or the session is not running.
func (s *Session) LifetimeDeadline() time.Time {
	if s.MaxLifetime <= 0 || s.RunningSince.IsZero() {
		return time.Time{}
	}
	return s.RunningSince.Add(s.MaxLifetime)
}

// HeldIdleDeadline returns the idle deadline held back by a busy hold: the
// later of IdleDeadline and HoldUntil.
func (s *Session) HeldIdleDeadline() time.Time {
	if s.HoldUntil.After(s.IdleDeadline) {
		return s.HoldUntil
	}
	return s.IdleDeadline
}

// PauseDeadline returns when a running session is due to be paused: the
// earliest of the held idle deadline (HeldIdleDeadline), LifetimeDeadline
// and the held away deadline (HeldAwayDeadline). This is the idle index's
// sort key and what pause timers are armed for; every deadline rule goes
// through it.
func (s *Session) PauseDeadline() time.Time {
	d := s.HeldIdleDeadline()
	if l := s.LifetimeDeadline(); !l.IsZero() && (d.IsZero() || l.Before(d)) {
		d = l
	}
	if a := s.HeldAwayDeadline(); !a.IsZero() && (d.IsZero() || a.Before(d)) {
		d = a
	}
	return d
}

// HeldAwayDeadline returns the away deadline pushed back by a busy hold: a
// session held busy is not paused for absence before HoldUntil (docs/DESIGN.md
// "Client channel", busy hold). Zero when no client left.
func (s *Session) HeldAwayDeadline() time.Time {
	if s.AwayDeadline.IsZero() {
		return time.Time{}
	}
	if s.HoldUntil.After(s.AwayDeadline) {
		return s.HoldUntil
	}
	return s.AwayDeadline
}

// PauseReason returns the reason of a pause at the pause deadline:
// ReasonAway when the away deadline comes first (docs/DESIGN.md "Client
// channel"), else ReasonLifetime when the max lifetime comes before the idle
// deadline, else ReasonIdle.
func (s *Session) PauseReason() string {
	if a := s.HeldAwayDeadline(); !a.IsZero() && a.Equal(s.PauseDeadline()) {
		return ReasonAway
	}
	if l, d := s.LifetimeDeadline(), s.HeldIdleDeadline(); !l.IsZero() && (d.IsZero() || l.Before(d)) {
		return ReasonLifetime
	}
	return ReasonIdle
}

// Due reports whether a running session should be paused at now.
func (s *Session) Due(now time.Time) bool {
	d := s.PauseDeadline()
	return s.State == StateRunning && !d.IsZero() && !d.After(now)
}

// Hold records a busy hold of d from now: HoldUntil becomes now + d unless
// it is already later. It reports whether HoldUntil moved.
func (s *Session) Hold(now time.Time, d time.Duration) bool {
	if until := now.Add(d); until.After(s.HoldUntil) {
		s.HoldUntil = until
		return true
	}
	return false
}

// RecordActivity records a heartbeat at now, coalesced by granularity
// (docs/DESIGN.md "Activity and idle"): when the last recorded activity is
// within granularity of now it returns false and changes nothing; otherwise
// it records the activity as MarkActivity(now, granularity) and returns true.
func (s *Session) RecordActivity(now time.Time, granularity time.Duration) bool {
	if !s.LastActivityAt.IsZero() && now.Sub(s.LastActivityAt) < granularity {
		return false
	}
	s.MarkActivity(now, granularity)
	return true
}

// MarkActivity records activity at now whatever the coalescing (a create, a
// resume, a provider resumed webhook): LastActivityAt becomes now and
// IdleDeadline now + IdleTimeout (or the learned plan's shorter
// PauseAfter, learnedsession.go) + window, neither ever moving backwards.
//
// window is the heartbeat coalescing window (Policy.ActivityGranularity).
// A heartbeat within window of LastActivityAt is answered without a write,
// so the user's real last activity may lie up to window after the recorded
// one; counting the window into the deadline means a session never pauses
// for idleness before its real last activity + IdleTimeout. The price is a
// pause at most window late when the coalesced heartbeats stop
// (docs/CAPACITY.md "No pause before the idle timeout").
func (s *Session) MarkActivity(now time.Time, window time.Duration) {
	if now.After(s.LastActivityAt) {
		s.LastActivityAt = now
	}
	if d := now.Add(s.idleTimeout() + window); d.After(s.IdleDeadline) {
		s.IdleDeadline = d
	}
}

// Transition moves s to state to at now for reason, keeping the timestamps
// that belong to each state: a lease for transitional states, RunningSince for
// running, PausedAt for paused; expiry clears the sandbox fields, and every
// final state the preview URL and the provider-side expiry. It does not
// touch Version (the store owns it). Errors: CodeConflict when the
// transition table does not allow it.
func (s *Session) Transition(to State, reason string, now time.Time, p Policy) error {
	if err := CheckTransition(s.State, to); err != nil {
		return err
	}
	s.resetReadiness(to) // reads the state left
	s.ResumeQueued = false
	s.TierPending, s.TierRetryAt, s.TierError = false, time.Time{}, ""
	switch {
	case to == StatePausing, to == StatePaused && s.State != StatePausing: // a pause begins (a webhook's goes straight to paused)
		s.PausedOnRequest = reason == ReasonRequest
	case to == StateResuming, to == StateRunning:
		s.PausedOnRequest = false
	}
	s.State, s.Reason, s.UpdatedAt, s.StateChangedAt = to, reason, now, now
	s.LeaseExpiresAt, s.NextCheckpointAt = time.Time{}, time.Time{}
	if to == StateRunning && s.CheckpointEvery > 0 {
		s.NextCheckpointAt = now.Add(s.CheckpointEvery) // a run's schedule starts with it
	}
	if to.Transitional() {
		s.LeaseExpiresAt = now.Add(p.LeaseDuration)
	}
	switch to {
	case StateRunning:
		if s.RunningSince.IsZero() {
			s.RunningSince = now
		}
		s.PausedAt = time.Time{}
	case StatePaused:
		if s.PausedAt.IsZero() {
			s.PausedAt = now
		}
		// A paused sandbox has no provider-side timeout running, and no
		// away deadline: absence cannot pause it twice.
		s.RunningSince, s.SandboxExpiresAt, s.AwayDeadline = time.Time{}, time.Time{}, time.Time{}
	case StatePausing, StateResuming, StateRestoring:
		// keep RunningSince/PausedAt: a rollback restores the state as it was
	case StateArchived:
		// PausedAt stays: the delete deadline counts from it (tiers.go).
		s.RunningSince, s.SandboxExpiresAt, s.AwayDeadline, s.PreviewURL = time.Time{}, time.Time{}, time.Time{}, ""
	default:
		s.RunningSince, s.PausedAt = time.Time{}, time.Time{}
	}
	if to == StateExpired {
		s.SandboxID, s.PreviewURL, s.SandboxExpiresAt = "", "", time.Time{}
	}
	if to.Final() {
		// A final session advertises no URL and no expiry: its
		// sandbox is dead or dying. A killed session keeps its SandboxID for
		// the record.
		s.PreviewURL, s.SandboxExpiresAt, s.AwayDeadline = "", time.Time{}, time.Time{}
	}
	return nil
}

// ReadinessRequeueAfter is how long a running session's app may stay
// starting after the session became running before the sweep re-queues its
// readiness job (docs/READINESS.md "Crash safety"): the commit that made it
// starting may have died before the job was queued, or the queue may have
// lost it. A job still at work meanwhile is harmless to repeat: a job looks
// for the app command before it starts one.
const ReadinessRequeueAfter = time.Minute

// ResumeRequeueAfter is how long a resume handed to a job (ResumeQueued,
// docs/WAKE.md "The resume runs in the background") may stay resuming
// before the sweep queues its job again: the job may be lost. It is longer
// than a job at work can take with the default settings (two provider
// resumes of at most 30 s each, a backoff, a look at the provider after a
// failure), so a job still under way is seldom joined by a second; one
// that is changes nothing (one resuming → running write commits).
const ResumeRequeueAfter = 2 * time.Minute

// LeaseDue returns when the session is due in the lease index
// (IndexLease), and whether the index holds it at all (a running session
// with a scheduled checkpoint, NextCheckpointAt, is due at it at the
// latest: the sweep takes the checkpoint): a transitional
// session at LeaseExpiresAt (its lease expired: the sweep reconciles it),
// but a resuming one whose resume was handed to a job (ResumeQueued) at
// StateChangedAt plus ResumeRequeueAfter when that comes first (the job
// may be lost: the sweep re-queues it until the lease expires), and a
// running session whose app is starting at StateChangedAt plus
// ReadinessRequeueAfter (its readiness job may be lost: the sweep re-queues
// it). Both stores key the index by this.
func (s *Session) LeaseDue() (time.Time, bool) {
	switch {
	case s.State == StateResuming && s.ResumeQueued && !s.StateChangedAt.IsZero() && !s.LeaseExpiresAt.IsZero():
		return minTime(s.LeaseExpiresAt, s.StateChangedAt.Add(ResumeRequeueAfter)), true
	case s.State.Transitional():
		return s.LeaseExpiresAt, !s.LeaseExpiresAt.IsZero()
	case s.State == StateRunning && s.App != nil && s.Readiness == ReadinessStarting && !s.StateChangedAt.IsZero():
		due := s.StateChangedAt.Add(ReadinessRequeueAfter)
		if !s.NextCheckpointAt.IsZero() {
			due = minTime(due, s.NextCheckpointAt)
		}
		return due, true
	case s.State == StateRunning && !s.NextCheckpointAt.IsZero():
		return s.NextCheckpointAt, true
	}
	return time.Time{}, false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// resetReadiness applies the readiness rules of a transition to to
// (docs/READINESS.md "Readiness"): a session with an app becomes starting
// whenever it becomes running from provisioning or resuming (a cold or warm
// start alike: the app must answer again), keeps its readiness through
// pausing (a pause rolled back returns it as it was) and resuming, and has
// none in any other state.
func (s *Session) resetReadiness(to State) {
	switch {
	case to == StateRunning && s.App != nil && s.State != StatePausing:
		s.Readiness, s.ReadinessDetail, s.ReadyAt, s.AppExitCode = ReadinessStarting, "", time.Time{}, nil
	case to == StateRunning && s.App != nil && s.Readiness == "":
		s.Readiness = ReadinessStarting
	case to == StatePausing, to == StateResuming, to == StateRunning:
	default:
		s.Readiness, s.ReadinessDetail, s.ReadyAt, s.AppExitCode = "", "", time.Time{}, nil
	}
}

// Clone returns a deep copy of s.
func (s *Session) Clone() *Session {
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	c.App = s.App.Clone()
	if s.Idle != nil {
		idle := *s.Idle
		c.Idle = &idle
	}
	if s.AppExitCode != nil {
		code := *s.AppExitCode
		c.AppExitCode = &code
	}
	return &c
}
