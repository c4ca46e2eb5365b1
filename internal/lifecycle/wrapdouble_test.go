package lifecycle_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// errDouble is every double's answer: a transient provider failure (the
// metrics count it; the limiters do not ask again).
var errDouble = lifecycle.Transientf("double", "", 0, "the double's answer")

// madeCall is one call a double received.
type madeCall struct {
	op      lifecycle.Op
	account string // lifecycle.CallAccountOf its ctx
}

// plainDouble is a Provider with no optional interface; it records its
// calls.
type plainDouble struct {
	mu    sync.Mutex
	calls []madeCall
}

func (d *plainDouble) record(ctx context.Context, op lifecycle.Op) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, madeCall{op, lifecycle.CallAccountOf(ctx)})
	return errDouble
}

func (d *plainDouble) made() []madeCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]madeCall(nil), d.calls...)
}

func (d *plainDouble) Name() string { return "double" }
func (d *plainDouble) Create(ctx context.Context, _ lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, d.record(ctx, lifecycle.OpCreate)
}
func (d *plainDouble) Get(ctx context.Context, _ string) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, d.record(ctx, lifecycle.OpGet)
}
func (d *plainDouble) List(ctx context.Context, _ lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	return lifecycle.SandboxPage{}, d.record(ctx, lifecycle.OpList)
}
func (d *plainDouble) Pause(ctx context.Context, _ string) error {
	return d.record(ctx, lifecycle.OpPause)
}
func (d *plainDouble) Resume(ctx context.Context, _ string, _ time.Duration) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, d.record(ctx, lifecycle.OpResume)
}
func (d *plainDouble) SetTimeout(ctx context.Context, _ string, _ time.Duration) error {
	return d.record(ctx, lifecycle.OpSetTimeout)
}
func (d *plainDouble) Probe(ctx context.Context, _ string) (lifecycle.Probe, error) {
	return lifecycle.Probe{}, d.record(ctx, lifecycle.OpProbe)
}
func (d *plainDouble) Kill(ctx context.Context, _ string) error {
	return d.record(ctx, lifecycle.OpKill)
}

// fullDouble is a Provider with every optional interface.
type fullDouble struct{ plainDouble }

func (d *fullDouble) SetTimeoutUntil(ctx context.Context, _ string, _ time.Duration) (time.Time, error) {
	return time.Time{}, d.record(ctx, lifecycle.OpSetTimeout)
}
func (d *fullDouble) CheckTemplate(context.Context, string) error { return nil }
func (d *fullDouble) KeepsProcesses() bool                        { return true }
func (d *fullDouble) StartCommand(ctx context.Context, _ string, _ lifecycle.Command) (lifecycle.CommandStatus, error) {
	return lifecycle.CommandStatus{}, d.record(ctx, lifecycle.OpStartCommand)
}
func (d *fullDouble) CommandStatus(ctx context.Context, _, _ string) (lifecycle.CommandStatus, error) {
	return lifecycle.CommandStatus{}, d.record(ctx, lifecycle.OpCommandStatus)
}
func (d *fullDouble) PortURL(ctx context.Context, _ string, _ int) (string, error) {
	return "", d.record(ctx, lifecycle.OpPortURL)
}
func (d *fullDouble) PortClosed(int, http.Header, []byte) bool { return false }
func (d *fullDouble) SnapshotCaps() lifecycle.SnapshotCaps {
	return lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem}
}
func (d *fullDouble) Snapshot(ctx context.Context, _ string, _ lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	return lifecycle.Snapshot{}, d.record(ctx, lifecycle.OpSnapshot)
}
func (d *fullDouble) GetSnapshot(ctx context.Context, _ string) (lifecycle.Snapshot, error) {
	return lifecycle.Snapshot{}, d.record(ctx, lifecycle.OpGetSnapshot)
}
func (d *fullDouble) ListSnapshots(ctx context.Context, _ string) ([]lifecycle.Snapshot, error) {
	return nil, d.record(ctx, lifecycle.OpListSnapshots)
}
func (d *fullDouble) DeleteSnapshot(ctx context.Context, _ string) error {
	return d.record(ctx, lifecycle.OpDeleteSnapshot)
}
func (d *fullDouble) CreateFromSnapshot(ctx context.Context, _ string, _ lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, d.record(ctx, lifecycle.OpCreateFromSnapshot)
}
func (d *fullDouble) PauseSnapshot(ctx context.Context, _ string) (lifecycle.Snapshot, bool, error) {
	return lifecycle.Snapshot{}, false, d.record(ctx, lifecycle.OpPauseSnapshot)
}
func (d *fullDouble) Fork(ctx context.Context, _ string, _ lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	return lifecycle.Sandbox{}, d.record(ctx, lifecycle.OpFork)
}
func (d *fullDouble) WriteFile(ctx context.Context, _, _ string, _ []byte) error {
	return d.record(ctx, lifecycle.OpWriteFile)
}
func (d *fullDouble) ReadFile(ctx context.Context, _, _ string) ([]byte, error) {
	return nil, d.record(ctx, lifecycle.OpReadFile)
}
func (d *fullDouble) ExportTar(ctx context.Context, _, _ string, _ []string, _ io.Writer) (int64, error) {
	return 0, d.record(ctx, lifecycle.OpExportTar)
}
func (d *fullDouble) ImportTar(ctx context.Context, _, _ string, _ io.Reader) error {
	return d.record(ctx, lifecycle.OpImportTar)
}
