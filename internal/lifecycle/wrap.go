package lifecycle

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A provider wrapper (the metrics of a Service, the account of a session's
// calls, internal/calllimit's limiter, internal/governor's fleet governor)
// is built with Wrap: it runs every provider call through one function,
// Around, and carries every optional interface (TimeoutReporter,
// TemplateChecker, CommandRunner, Snapshotter, PauseSnapshotter, Forker,
// Files, WorkspaceArchiver) of what it wraps, so that a capability is never
// hidden behind a wrapper and never called around it. A wrapped provider
// implements all of them as Go types; whether it really offers one is
// answered by As and Has, which ask the innermost provider (Unwrap). Every
// capability check on a Provider goes through them.

// Op names one provider call: the method, in the words of errors and logs.
type Op string

// The provider calls.
const (
	OpCreate             Op = "create"
	OpGet                Op = "get"
	OpList               Op = "list"
	OpPause              Op = "pause"
	OpResume             Op = "resume"
	OpSetTimeout         Op = "set_timeout" // SetTimeout and SetTimeoutUntil
	OpProbe              Op = "probe"
	OpKill               Op = "kill"
	OpStartCommand       Op = "start_command"
	OpCommandStatus      Op = "command_status"
	OpPortURL            Op = "port_url"
	OpSnapshot           Op = "snapshot"
	OpGetSnapshot        Op = "get_snapshot"
	OpListSnapshots      Op = "list_snapshots"
	OpDeleteSnapshot     Op = "delete_snapshot"
	OpCreateFromSnapshot Op = "create_from_snapshot"
	OpPauseSnapshot      Op = "pause_snapshot"
	OpFork               Op = "fork"
	OpWriteFile          Op = "write_file"
	OpReadFile           Op = "read_file"
	OpExportTar          Op = "export_tar"
	OpImportTar          Op = "import_tar"
)

// Class is op's call class when its ctx sets none (WithCallPriority):
// user for the calls someone waits on (create, resume, probe, the
// readiness commands, a restore's create_from_snapshot and import_tar, the
// identity marker's file calls of a create or resume), refresh for
// set_timeout, background for the rest (get, list, pause, kill, and a
// checkpoint's snapshot, archive and fork calls). The Service sets the class
// of whole jobs on their ctx (a restore or fork job: user; a save or
// delete job: background), which wins.
func (op Op) Class() CallPriority {
	switch op {
	case OpCreate, OpResume, OpProbe, OpStartCommand, OpCommandStatus, OpPortURL,
		OpCreateFromSnapshot, OpImportTar, OpWriteFile, OpReadFile:
		return PriorityUser
	case OpSetTimeout:
		return PriorityRefresh
	}
	return PriorityBackground
}

// ClassOf returns the class of a call of op made with ctx: the one ctx
// sets (WithCallPriority), else op's own (Op.Class).
func ClassOf(ctx context.Context, op Op) CallPriority {
	if p, ok := CallPriorityOf(ctx); ok {
		return p
	}
	return op.Class()
}

// Call is one provider call as a wrapper's Around sees it.
type Call struct {
	Op Op
	// SandboxID is the sandbox the call is about; "" for Create, List and
	// the calls that name a snapshot by its ref.
	SandboxID string
	// Once: the call streams (ExportTar, ImportTar) and cannot be made a
	// second time, its reader or writer being spent; an Around must not
	// retry it.
	Once bool
}

// Around is a wrapper's rule, run once for every provider call of a
// provider made by Wrap: it calls next, which makes the call on the
// provider it is given (the wrapped one, or one in its place such as a
// fallback) with the ctx it is given, at most once unless c.Once is false,
// and returns what next returned or its own error (the call not made).
// Answers that need no provider call (Name, SnapshotCaps, KeepsProcesses,
// PortClosed, CheckTemplate) do not go through it.
type Around func(ctx context.Context, c Call, next func(ctx context.Context, p Provider) error) error

// Wrap returns base with every provider call run through around. The
// result implements every optional interface; As and Has answer whether it
// offers one by asking base (it offers exactly what base offers), and a
// call of one base lacks fails without reaching around. Unwrap returns
// base. A nil around returns base.
func Wrap(base Provider, around Around) Provider {
	if around == nil {
		return base
	}
	return &wrapped{base: base, around: around}
}

// Has reports whether p offers the optional interface T: p and every
// provider it wraps (Unwrap), down to the innermost one, implement T.
func Has[T any](p Provider) bool {
	for p != nil {
		if _, ok := p.(T); !ok {
			return false
		}
		u, ok := p.(interface{ Unwrap() Provider })
		if !ok {
			return true
		}
		p = u.Unwrap()
	}
	return false
}

// As returns p as the optional interface T when p offers it (Has): the
// outermost wrapper, so that T's calls go through every wrapper's rule.
func As[T any](p Provider) (T, bool) {
	if !Has[T](p) {
		var zero T
		return zero, false
	}
	t, ok := p.(T)
	return t, ok
}

// wrapped is Wrap's Provider.
type wrapped struct {
	base   Provider
	around Around
}

var (
	_ TimeoutReporter   = (*wrapped)(nil)
	_ TemplateChecker   = (*wrapped)(nil)
	_ CommandRunner     = (*wrapped)(nil)
	_ Snapshotter       = (*wrapped)(nil)
	_ PauseSnapshotter  = (*wrapped)(nil)
	_ Forker            = (*wrapped)(nil)
	_ Files             = (*wrapped)(nil)
	_ WorkspaceArchiver = (*wrapped)(nil)
)

// Unwrap returns the wrapped provider.
func (w *wrapped) Unwrap() Provider { return w.base }

// run makes the call c through w.around: f on the provider around gives,
// as the capability C. A provider lacking C (a caller that skipped As) is
// an error naming the call, never a call.
func run[T, C any](w *wrapped, ctx context.Context, c Call, f func(ctx context.Context, p C) (T, error)) (T, error) {
	var v T
	if !Has[C](w.base) {
		return v, fmt.Errorf("%s: the %s provider does not offer it", c.Op, w.base.Name())
	}
	err := w.around(ctx, c, func(ctx context.Context, p Provider) error {
		cp, ok := As[C](p)
		if !ok {
			return fmt.Errorf("%s: the %s provider does not offer it", c.Op, p.Name())
		}
		var err error
		v, err = f(ctx, cp)
		return err
	})
	return v, err
}

// run0 is run for a call that returns only an error.
func run0[C any](w *wrapped, ctx context.Context, c Call, f func(ctx context.Context, p C) error) error {
	_, err := run(w, ctx, c, func(ctx context.Context, p C) (struct{}, error) { return struct{}{}, f(ctx, p) })
	return err
}

func (w *wrapped) Name() string { return w.base.Name() }

func (w *wrapped) Create(ctx context.Context, req CreateRequest) (Sandbox, error) {
	return run(w, ctx, Call{Op: OpCreate}, func(ctx context.Context, p Provider) (Sandbox, error) {
		return p.Create(ctx, req)
	})
}

func (w *wrapped) Get(ctx context.Context, sandboxID string) (Sandbox, error) {
	return run(w, ctx, Call{Op: OpGet, SandboxID: sandboxID}, func(ctx context.Context, p Provider) (Sandbox, error) {
		return p.Get(ctx, sandboxID)
	})
}

func (w *wrapped) List(ctx context.Context, req ListRequest) (SandboxPage, error) {
	return run(w, ctx, Call{Op: OpList}, func(ctx context.Context, p Provider) (SandboxPage, error) {
		return p.List(ctx, req)
	})
}

func (w *wrapped) Pause(ctx context.Context, sandboxID string) error {
	return run0(w, ctx, Call{Op: OpPause, SandboxID: sandboxID}, func(ctx context.Context, p Provider) error {
		return p.Pause(ctx, sandboxID)
	})
}

func (w *wrapped) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (Sandbox, error) {
	return run(w, ctx, Call{Op: OpResume, SandboxID: sandboxID}, func(ctx context.Context, p Provider) (Sandbox, error) {
		return p.Resume(ctx, sandboxID, timeout)
	})
}

func (w *wrapped) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	return run0(w, ctx, Call{Op: OpSetTimeout, SandboxID: sandboxID}, func(ctx context.Context, p Provider) error {
		return p.SetTimeout(ctx, sandboxID, timeout)
	})
}

func (w *wrapped) Probe(ctx context.Context, sandboxID string) (Probe, error) {
	return run(w, ctx, Call{Op: OpProbe, SandboxID: sandboxID}, func(ctx context.Context, p Provider) (Probe, error) {
		return p.Probe(ctx, sandboxID)
	})
}

func (w *wrapped) Kill(ctx context.Context, sandboxID string) error {
	return run0(w, ctx, Call{Op: OpKill, SandboxID: sandboxID}, func(ctx context.Context, p Provider) error {
		return p.Kill(ctx, sandboxID)
	})
}

// SetTimeoutUntil is TimeoutReporter's, through around.
func (w *wrapped) SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error) {
	return run(w, ctx, Call{Op: OpSetTimeout, SandboxID: sandboxID}, func(ctx context.Context, p TimeoutReporter) (time.Time, error) {
		return p.SetTimeoutUntil(ctx, sandboxID, timeout)
	})
}

// CheckTemplate is TemplateChecker's, asked directly: no provider call.
func (w *wrapped) CheckTemplate(ctx context.Context, template string) error {
	c, ok := As[TemplateChecker](w.base)
	if !ok {
		return nil // a provider that cannot say: its create will
	}
	return c.CheckTemplate(ctx, template)
}

// KeepsProcesses is CommandRunner's, answered by the wrapped provider.
func (w *wrapped) KeepsProcesses() bool {
	r, ok := As[CommandRunner](w.base)
	return ok && r.KeepsProcesses()
}

func (w *wrapped) StartCommand(ctx context.Context, sandboxID string, cmd Command) (CommandStatus, error) {
	return run(w, ctx, Call{Op: OpStartCommand, SandboxID: sandboxID}, func(ctx context.Context, p CommandRunner) (CommandStatus, error) {
		return p.StartCommand(ctx, sandboxID, cmd)
	})
}

func (w *wrapped) CommandStatus(ctx context.Context, sandboxID, name string) (CommandStatus, error) {
	return run(w, ctx, Call{Op: OpCommandStatus, SandboxID: sandboxID}, func(ctx context.Context, p CommandRunner) (CommandStatus, error) {
		return p.CommandStatus(ctx, sandboxID, name)
	})
}

func (w *wrapped) PortURL(ctx context.Context, sandboxID string, port int) (string, error) {
	return run(w, ctx, Call{Op: OpPortURL, SandboxID: sandboxID}, func(ctx context.Context, p CommandRunner) (string, error) {
		return p.PortURL(ctx, sandboxID, port)
	})
}

// PortClosed is CommandRunner's, answered by the wrapped provider.
func (w *wrapped) PortClosed(status int, header http.Header, body []byte) bool {
	r, ok := As[CommandRunner](w.base)
	return ok && r.PortClosed(status, header, body)
}

// SnapshotCaps is Snapshotter's, answered by the wrapped provider.
func (w *wrapped) SnapshotCaps() SnapshotCaps {
	sn, ok := As[Snapshotter](w.base)
	if !ok {
		return SnapshotCaps{}
	}
	return sn.SnapshotCaps()
}

func (w *wrapped) Snapshot(ctx context.Context, sandboxID string, req SnapshotRequest) (Snapshot, error) {
	return run(w, ctx, Call{Op: OpSnapshot, SandboxID: sandboxID}, func(ctx context.Context, p Snapshotter) (Snapshot, error) {
		return p.Snapshot(ctx, sandboxID, req)
	})
}

func (w *wrapped) GetSnapshot(ctx context.Context, ref string) (Snapshot, error) {
	return run(w, ctx, Call{Op: OpGetSnapshot}, func(ctx context.Context, p Snapshotter) (Snapshot, error) {
		return p.GetSnapshot(ctx, ref)
	})
}

func (w *wrapped) ListSnapshots(ctx context.Context, sandboxID string) ([]Snapshot, error) {
	return run(w, ctx, Call{Op: OpListSnapshots, SandboxID: sandboxID}, func(ctx context.Context, p Snapshotter) ([]Snapshot, error) {
		return p.ListSnapshots(ctx, sandboxID)
	})
}

func (w *wrapped) DeleteSnapshot(ctx context.Context, ref string) error {
	return run0(w, ctx, Call{Op: OpDeleteSnapshot}, func(ctx context.Context, p Snapshotter) error {
		return p.DeleteSnapshot(ctx, ref)
	})
}

func (w *wrapped) CreateFromSnapshot(ctx context.Context, ref string, req CreateRequest) (Sandbox, error) {
	return run(w, ctx, Call{Op: OpCreateFromSnapshot}, func(ctx context.Context, p Snapshotter) (Sandbox, error) {
		return p.CreateFromSnapshot(ctx, ref, req)
	})
}

// PauseSnapshot is PauseSnapshotter's, through around.
func (w *wrapped) PauseSnapshot(ctx context.Context, sandboxID string) (Snapshot, bool, error) {
	type found struct {
		snap Snapshot
		ok   bool
	}
	f, err := run(w, ctx, Call{Op: OpPauseSnapshot, SandboxID: sandboxID}, func(ctx context.Context, p PauseSnapshotter) (found, error) {
		snap, ok, err := p.PauseSnapshot(ctx, sandboxID)
		return found{snap, ok}, err
	})
	return f.snap, f.ok, err
}

// Fork is Forker's, through around.
func (w *wrapped) Fork(ctx context.Context, sandboxID string, req CreateRequest) (Sandbox, error) {
	return run(w, ctx, Call{Op: OpFork, SandboxID: sandboxID}, func(ctx context.Context, p Forker) (Sandbox, error) {
		return p.Fork(ctx, sandboxID, req)
	})
}

func (w *wrapped) WriteFile(ctx context.Context, sandboxID, path string, data []byte) error {
	return run0(w, ctx, Call{Op: OpWriteFile, SandboxID: sandboxID}, func(ctx context.Context, p Files) error {
		return p.WriteFile(ctx, sandboxID, path, data)
	})
}

func (w *wrapped) ReadFile(ctx context.Context, sandboxID, path string) ([]byte, error) {
	return run(w, ctx, Call{Op: OpReadFile, SandboxID: sandboxID}, func(ctx context.Context, p Files) ([]byte, error) {
		return p.ReadFile(ctx, sandboxID, path)
	})
}

func (w *wrapped) ExportTar(ctx context.Context, sandboxID, dir string, excludes []string, out io.Writer) (int64, error) {
	return run(w, ctx, Call{Op: OpExportTar, SandboxID: sandboxID, Once: true}, func(ctx context.Context, p WorkspaceArchiver) (int64, error) {
		return p.ExportTar(ctx, sandboxID, dir, excludes, out)
	})
}

func (w *wrapped) ImportTar(ctx context.Context, sandboxID, dir string, r io.Reader) error {
	return run0(w, ctx, Call{Op: OpImportTar, SandboxID: sandboxID, Once: true}, func(ctx context.Context, p WorkspaceArchiver) error {
		return p.ImportTar(ctx, sandboxID, dir, r)
	})
}
