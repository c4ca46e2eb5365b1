package lifecycle

import (
	"context"
	"errors"
	"io"
	"time"
)

// What a provider needs to offer for checkpoints (docs/CHECKPOINTS.md): its
// own snapshots (Snapshotter, and Forker where it forks a live sandbox), a
// file API for Sandman's identity marker and the conformance rows (Files),
// and, where Sandman keeps the checkpoint itself, a workspace stream
// (WorkspaceArchiver). Each is optional: the service asks with As (which
// sees through provider wrappers, Wrap) and falls back to the archive path
// where a provider has no snapshots of its own.

// Keeps says what a checkpoint holds.
type Keeps string

// What a checkpoint can keep.
const (
	KeepsFilesystem       Keeps = "filesystem"        // files only: processes restart (readiness)
	KeepsFilesystemMemory Keeps = "filesystem+memory" // processes continue where they were
)

// SnapshotState is where a provider's snapshot is.
type SnapshotState string

// The provider snapshot states. A snapshot that is gone is not a state: the
// provider returns a *ProviderError of kind ErrCheckpointGone.
const (
	SnapshotSaving SnapshotState = "saving" // still being taken (Daytona captures in the background)
	SnapshotReady  SnapshotState = "ready"  // can make sandboxes
	SnapshotFailed SnapshotState = "failed" // will never be ready; Snapshot.Reason says why
)

// Snapshot is a provider's saved state of one sandbox.
type Snapshot struct {
	// Ref is the adapter's reference to the snapshot, the one
	// CreateFromSnapshot, GetSnapshot and DeleteSnapshot take: E2B's
	// snapshotID, Vercel's snap_… id, Daytona's "<source sandbox id>/<name>"
	// (its snapshot id exists only once the capture ends).
	Ref string
	// Name is the name it was taken with (SnapshotRequest.Name); "" for a
	// provider whose snapshots have no names (Vercel).
	Name            string
	SourceSandboxID string
	State           SnapshotState
	Reason          string // failed: the provider's reason
	Keeps           Keeps
	SizeBytes       int64 // 0 when the provider does not say
	CreatedAt       time.Time
	ExpiresAt       time.Time // zero: kept until deleted
}

// SnapshotRequest asks a provider to save a sandbox's state.
type SnapshotRequest struct {
	// Name is the checkpoint's id (chk_…). A provider whose snapshots carry
	// names is given it, so a snapshot whose table write was lost (a crash
	// between the two) is found again by ListSnapshots and matched to its
	// checkpoint by name, never by time. Unique per deployment.
	Name string
	// Expiration is how long the provider should keep it; 0: the provider's
	// default (SnapshotCaps.Retention).
	Expiration time.Duration
}

// SnapshotCaps is what a provider's snapshots are, from its facts sheet
// (docs/providers/*.md, "Checkpoints").
type SnapshotCaps struct {
	Keeps Keeps
	// StopsSource: taking a snapshot stops the sandbox (Vercel Sandbox): a
	// running session must be resumed after its checkpoint.
	StopsSource bool
	// SnapshotsPaused: a paused sandbox can be snapshotted without resuming
	// it (Daytona stopped, Vercel's current snapshot); false: it must run
	// (E2B answers 404 for a paused one).
	SnapshotsPaused bool
	// Retention is how long the provider keeps an unused snapshot; 0 for
	// until deleted. A checkpoint that must outlive it is an archive.
	Retention time.Duration
}

// Snapshotter is implemented by a Provider with snapshots of its own.
type Snapshotter interface {
	// SnapshotCaps describes the provider's snapshots.
	SnapshotCaps() SnapshotCaps
	// Snapshot saves sandboxID's state and returns the snapshot, saving or
	// ready. Errors: gone (the sandbox), conflict (in transition: retry
	// after a Get), transient. A transient error may hide a snapshot that
	// was taken: ListSnapshots by name before taking another.
	Snapshot(ctx context.Context, sandboxID string, req SnapshotRequest) (Snapshot, error)
	// GetSnapshot reads one snapshot. Errors: ErrCheckpointGone (deleted,
	// expired or unknown), transient.
	GetSnapshot(ctx context.Context, ref string) (Snapshot, error)
	// ListSnapshots returns the snapshots taken of sandboxID, every page.
	// Errors: transient.
	ListSnapshots(ctx context.Context, sandboxID string) ([]Snapshot, error)
	// DeleteSnapshot deletes one; deleting one that is gone succeeds.
	// Errors: conflict (sandboxes made from it still exist, E2B),
	// transient.
	DeleteSnapshot(ctx context.Context, ref string) error
	// CreateFromSnapshot makes a new sandbox holding the snapshot's state,
	// with req's template ignored where the snapshot names its own.
	// Errors: ErrCheckpointGone (the snapshot), transient.
	CreateFromSnapshot(ctx context.Context, ref string, req CreateRequest) (Sandbox, error)
}

// PauseSnapshotter is implemented by a Snapshotter whose pause is itself a
// snapshot (Vercel Sandbox: a stop saves the filesystem as a snapshot).
// A checkpoint on pause (Session.CheckpointOnPause) of such a provider
// records the snapshot its pause made instead of taking a second one.
type PauseSnapshotter interface {
	// PauseSnapshot returns the snapshot the last pause of sandboxID made
	// (ok false when it made none: the checkpoint then takes its own).
	// Errors: gone (the sandbox), transient.
	PauseSnapshot(ctx context.Context, sandboxID string) (snap Snapshot, ok bool, err error)
}

// Forker is implemented by a Provider that copies a running sandbox's live
// state into a new sandbox in one call (E2B, Daytona). Errors: gone,
// conflict (the source is paused or in transition), transient.
type Forker interface {
	Fork(ctx context.Context, sandboxID string, req CreateRequest) (Sandbox, error)
}

// Files is implemented by a Provider that reads and writes files in its
// sandboxes (through its command API): Sandman's identity marker
// (docs/RELIABILITY.md) and the conformance rows use it. Paths are
// absolute in the sandbox.
type Files interface {
	// WriteFile writes data to path, making its folders. Errors: gone,
	// transient.
	WriteFile(ctx context.Context, sandboxID, path string, data []byte) error
	// ReadFile reads path whole. Errors: ErrNoFile (wrapped) when it does
	// not exist, gone, transient.
	ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error)
}

// WorkspaceArchiver is implemented by a Provider that streams a sandbox's
// folder out and in as an uncompressed tar (internal/archive's format):
// the archive path of a checkpoint.
type WorkspaceArchiver interface {
	// ExportTar writes a tar of dir, leaving out the exclude patterns, to
	// w and returns the bytes written. Errors: gone, transient, other.
	ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error)
	// ImportTar unpacks the tar stream r into dir, which it makes.
	// Errors: gone, transient, other (an unsafe member).
	ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error
}

var (
	// ErrCheckpointGone is the kind of a *ProviderError for a snapshot or
	// archive that no longer exists: the provider's documented answer for
	// a deleted or expired snapshot (docs/providers/*.md "gone" tables).
	// It is definitive: retrying will not bring it back.
	ErrCheckpointGone = errors.New("checkpoint is gone")
	// ErrNoFile is returned (wrapped) by Files.ReadFile for a path that does
	// not exist.
	ErrNoFile = errors.New("no such file")
)

// ArchiveReader opens Sandman's copies of workspaces (Archives) without
// writing or deleting them: what a process that only restores needs.
type ArchiveReader interface {
	// Open returns the uncompressed tar stream stored under key; the
	// caller closes it. Errors: a *ProviderError of kind ErrCheckpointGone
	// when nothing is stored there, the store's.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Archives keeps Sandman's own copies of workspaces: internal/archive
// compresses the tar stream with zstd and keeps it in a Store (a folder
// locally, S3 in AWS). Keys are ArchiveKey's: "<account>/<session>/<checkpoint>.tar.zst".
type Archives interface {
	ArchiveReader
	// Save stores the uncompressed tar stream r under key, replacing
	// nothing visible until it is whole, and returns the stored
	// (compressed) size in bytes. Errors: r's, ctx's, the store's.
	Save(ctx context.Context, key string, r io.Reader) (int64, error)
	// Delete removes key's object; a missing one is no error.
	Delete(ctx context.Context, key string) error
}
