package lifecycle

import (
	"crypto/rand"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// A checkpoint is a saved state of one session's sandbox at one moment
// (docs/CHECKPOINTS.md): the provider's own snapshot (kind snapshot) or
// Sandman's archive of the workspace folder (kind archive). It is stored
// under its session (the session's partition: listing a session's
// checkpoints is a query on its key, never a scan), is written saving
// before any work is done, and ends ready or failed. A ready one is
// expired once its retention ends and is then never offered for restore.

// CheckpointState is where a checkpoint is.
type CheckpointState string

// The checkpoint states.
const (
	CheckpointSaving  CheckpointState = "saving"  // being taken; carries a lease
	CheckpointReady   CheckpointState = "ready"   // can be restored and forked
	CheckpointFailed  CheckpointState = "failed"  // will never be ready; Reason says why
	CheckpointExpired CheckpointState = "expired" // its retention ended (or the provider lost it)
)

// checkpointTransitions is the checkpoint's transition table: saving ends
// ready or failed, ready may expire; failed and expired are final.
var checkpointTransitions = map[CheckpointState][]CheckpointState{
	CheckpointSaving:  {CheckpointReady, CheckpointFailed},
	CheckpointReady:   {CheckpointExpired},
	CheckpointFailed:  {},
	CheckpointExpired: {},
}

// Valid reports whether st is a known checkpoint state.
func (st CheckpointState) Valid() bool {
	_, ok := checkpointTransitions[st]
	return ok
}

// CanCheckpointTransition reports whether a checkpoint may move from → to.
func CanCheckpointTransition(from, to CheckpointState) bool {
	return slices.Contains(checkpointTransitions[from], to)
}

// CheckpointKind is how a checkpoint is kept.
type CheckpointKind string

// The checkpoint kinds.
const (
	KindSnapshot CheckpointKind = "snapshot" // the provider's own snapshot (Snapshotter)
	KindArchive  CheckpointKind = "archive"  // Sandman's tar + zstd of the workspace (Archives)
)

// CheckpointTrigger says who asked for a checkpoint.
type CheckpointTrigger string

// The checkpoint triggers. Pause and schedule are automatic: only they
// count against a session's CheckpointsKeep.
const (
	TriggerAPI      CheckpointTrigger = "api"      // POST …/checkpoints, or a fork of the current state
	TriggerPause    CheckpointTrigger = "pause"    // an automatic pause (Session.CheckpointOnPause)
	TriggerSchedule CheckpointTrigger = "schedule" // Session.CheckpointEvery of activity
)

// Automatic reports whether t is a trigger Sandman fired by itself
// (TriggerArchive: a demotion to archived, tiers_service.go).
func (t CheckpointTrigger) Automatic() bool {
	return t == TriggerPause || t == TriggerSchedule || t == TriggerArchive
}

// Checkpoint is one saved state of a session's sandbox. Times are UTC; a
// zero time is "not set". Version starts at 1 and the store increments it
// on every write.
type Checkpoint struct {
	ID        string // "chk_" + 26 lowercase base32hex characters, time ordered (NewCheckpointID)
	SessionID string
	AccountID string
	CreatedAt time.Time
	UpdatedAt time.Time
	Label     string            // the caller's, at most MaxCheckpointLabel characters
	Metadata  map[string]string // the caller's, the limits of a session's metadata

	Kind      CheckpointKind
	Keeps     Keeps
	SizeBytes int64 // ready: the provider's size, or the stored archive's (compressed); 0 when unknown
	State     CheckpointState
	Reason    string    // failed or expired: why
	ExpiresAt time.Time // ready: when its retention ends; zero: kept until deleted
	Pinned    bool      // never deleted by the keep count
	Trigger   CheckpointTrigger

	// Provider, Template and SourceSandboxID are the session's when the
	// checkpoint was taken: a restore or fork makes its sandbox on that
	// provider from that template (an archive), and reconcile looks for a
	// lost snapshot among that sandbox's (Snapshotter.ListSnapshots).
	Provider        string
	Template        string
	SourceSandboxID string
	// ProviderRef is the snapshot's id at the provider (kind snapshot; set
	// once the provider answered); ArchiveKey the archive's key (kind
	// archive: ArchiveKey).
	ProviderRef string
	ArchiveKey  string
	// LeaseExpiresAt is set while saving: past it the sweep resolves the
	// checkpoint (ready when the provider has its snapshot, else failed).
	LeaseExpiresAt time.Time
	Version        int64
}

// Limits of a checkpoint's caller-given fields (ours).
const (
	MaxCheckpointLabel = 128
	// DefaultCheckpointsKeep is how many automatic checkpoints a session
	// keeps when neither its create nor the deployment says.
	DefaultCheckpointsKeep = 5
	// MaxCheckpointsKeep bounds CheckpointsKeep.
	MaxCheckpointsKeep = 100
	// MinCheckpointEvery and MaxCheckpointEvery bound CheckpointEvery.
	MinCheckpointEvery = time.Minute
	MaxCheckpointEvery = 7 * 24 * time.Hour
	// CheckpointIDPrefix starts every checkpoint id, and the name of every
	// provider snapshot Sandman takes.
	CheckpointIDPrefix = "chk_"
)

// Clone returns a deep copy of c.
func (c *Checkpoint) Clone() *Checkpoint {
	d := *c
	d.Metadata = maps.Clone(c.Metadata)
	return &d
}

// ExpiredAt reports whether c's retention has ended at now: it is
// expired, or ready with an expiry at or before now.
func (c *Checkpoint) ExpiredAt(now time.Time) bool {
	return c.State == CheckpointExpired || c.State == CheckpointReady && !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)
}

// AsOf returns c as it reads at now: a ready checkpoint past its expiry
// reads expired (the store is brought up to date lazily, by the write
// that next touches it).
func (c *Checkpoint) AsOf(now time.Time) *Checkpoint {
	if c.State != CheckpointReady || !c.ExpiredAt(now) {
		return c
	}
	d := c.Clone()
	d.State, d.Reason = CheckpointExpired, "its retention ended"
	return d
}

// Error types of checkpoint refusals (docs/CHECKPOINTS.md "Errors"),
// sent as error_type with code conflict (409).
const (
	TypeCheckpointSaving  = "checkpoint_saving"  // not ready yet: retry once checkpoint.ready came
	TypeCheckpointFailed  = "checkpoint_failed"  // it never became ready
	TypeCheckpointExpired = "checkpoint_expired" // its retention ended, or the provider no longer has it
)

// Restorable returns nil when c can be restored or forked at now, else a
// conflict naming why: TypeCheckpointSaving (retry after a moment),
// TypeCheckpointFailed or TypeCheckpointExpired (never).
func (c *Checkpoint) Restorable(now time.Time) error {
	switch {
	case c.ExpiredAt(now):
		return &Error{Code: CodeConflict, Type: TypeCheckpointExpired,
			Message: "checkpoint " + c.ID + " is expired and can no longer be restored"}
	case c.State == CheckpointFailed:
		why := ""
		if c.Reason != "" {
			why = ": " + c.Reason
		}
		return &Error{Code: CodeConflict, Type: TypeCheckpointFailed,
			Message: "checkpoint " + c.ID + " failed and can never be restored" + why}
	case c.State == CheckpointSaving:
		return &Error{Code: CodeConflict, Type: TypeCheckpointSaving, RetryAfter: 2 * time.Second,
			Message: "checkpoint " + c.ID + " is still saving; retry once it is ready"}
	}
	return nil
}

// Settle moves a saving c to to (ready or failed) at now with reason (the
// failure's; "" for ready), clearing its lease. Errors: conflict when the
// transition table refuses it.
func (c *Checkpoint) Settle(to CheckpointState, reason string, now time.Time) error {
	if !CanCheckpointTransition(c.State, to) {
		return Errorf(CodeConflict, "a %s checkpoint cannot become %s", c.State, to)
	}
	c.State, c.Reason, c.UpdatedAt, c.LeaseExpiresAt = to, reason, now, time.Time{}
	return nil
}

// checkpointIDAlphabet is base32hex in lowercase: its characters sort as
// their values do, so ids sort by time as strings.
const checkpointIDAlphabet = "0123456789abcdefghijklmnopqrstuv"

// NewCheckpointID returns "chk_" followed by 10 characters of now (epoch
// milliseconds, 50 bits, base32hex, most significant first) and 16 random
// ones (80 bits of crypto/rand): ids sort by creation time as strings, so a
// session's checkpoints list newest first by their key.
func NewCheckpointID(now time.Time) string {
	var b [26]byte
	ms := uint64(max(now.UnixMilli(), 0))
	for i := 9; i >= 0; i-- {
		b[i] = checkpointIDAlphabet[ms&31]
		ms >>= 5
	}
	var r [10]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	bits, n, j := uint64(0), 0, 10
	for _, x := range r {
		bits, n = bits<<8|uint64(x), n+8
		for n >= 5 {
			n -= 5
			b[j] = checkpointIDAlphabet[(bits>>n)&31]
			j++
		}
	}
	return CheckpointIDPrefix + string(b[:])
}

// ValidCheckpointID reports whether id has the form NewCheckpointID gives:
// "chk_" then 26 of 0-9 and a-v.
func ValidCheckpointID(id string) bool {
	rest, ok := strings.CutPrefix(id, CheckpointIDPrefix)
	if !ok || len(rest) != 26 {
		return false
	}
	for _, r := range rest {
		if (r < '0' || r > '9') && (r < 'a' || r > 'v') {
			return false
		}
	}
	return true
}

// ArchiveKey returns the key of a checkpoint's archive in Archives:
// "<account>/<session>/<checkpoint>.tar.zst", internal/archive's Key, so
// one session's archives share a prefix.
func ArchiveKey(accountID, sessionID, checkpointID string) string {
	return accountID + "/" + sessionID + "/" + checkpointID + archiveKeySuffix
}

// archiveKeySuffix ends every ArchiveKey.
const archiveKeySuffix = ".tar.zst"

// CheckpointInput is a validated-at-the-edge POST …/checkpoints.
type CheckpointInput struct {
	Label    string
	Metadata map[string]string
	Pin      bool
	// IdempotencyKey, when set, makes a repeated request answer the
	// checkpoint of the first one.
	IdempotencyKey string
}

// validCheckpointInput checks the caller's fields of a checkpoint.
// Errors: invalid naming the field.
func validCheckpointInput(in CheckpointInput) error {
	if !utf8.ValidString(in.Label) || utf8.RuneCountInString(in.Label) > MaxCheckpointLabel {
		return Errorf(CodeInvalid, "label must be valid UTF-8 of at most %d characters", MaxCheckpointLabel)
	}
	if len(in.IdempotencyKey) > maxIdempotencyKey {
		return Errorf(CodeInvalid, "Idempotency-Key must be at most %d characters", maxIdempotencyKey)
	}
	return validateMetadata(in.Metadata)
}

// PruneCheckpoints returns the checkpoints of one session that its keep
// count deletes (docs/CHECKPOINTS.md "Automatic checkpoints"): of the
// automatic (pause, schedule) ones that are not pinned and not saving, the
// ready ones beyond the newest keep, and every failed or expired one.
// Manual (api) and pinned checkpoints are never chosen. list may be in any
// order; keep < 1 counts as 1.
func PruneCheckpoints(list []*Checkpoint, keep int, now time.Time) []*Checkpoint {
	keep = max(keep, 1)
	auto := make([]*Checkpoint, 0, len(list))
	for _, c := range list {
		if c.Trigger.Automatic() && !c.Pinned && c.State != CheckpointSaving {
			auto = append(auto, c)
		}
	}
	slices.SortFunc(auto, func(a, b *Checkpoint) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	var out []*Checkpoint
	kept := 0
	for _, c := range auto {
		if c.State == CheckpointReady && !c.ExpiredAt(now) && kept < keep {
			kept++
			continue
		}
		out = append(out, c)
	}
	return out
}
