package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Inject switches the sandbox fault f on sandbox id, for tests
// (fakekit.Injector; docs/providers/local.md "Faults"):
//   - gone: the sandbox's folder is removed behind Sandman's back (its
//     process killed first): the provider's gone from then on;
//   - foreign: its files become another session's (only a foreign
//     identity marker);
//   - partial: its identity marker and workspace folder are removed;
//   - snapshot_fail: its workspace exports (an archive checkpoint's save)
//     fail with a plain error, until Clear;
//   - snapshot_slow: its exports are held delay on the wall's clock first;
//   - restore_slow: every import (an archive restore or fork: the archive
//     names no source) is held delay first, while it is on.
//
// snapshot_expired is not played: the local provider keeps no snapshots,
// its checkpoints are Sandman's archives, which expire in the archive
// store. Errors: no such sandbox, a fault not played.
func (p *Provider) Inject(id string, f fakekit.SandboxFault, delay time.Duration) error {
	if _, err := os.Stat(p.sandboxDir(id)); !validID(id) || err != nil {
		return fakekit.NoSandbox(id)
	}
	files := filepath.Join(p.sandboxDir(id), filesName)
	marker, workspace := filepath.Join(files, fakekit.MarkerPath), filepath.Join(files, fakekit.WorkspaceDir)
	switch f {
	case fakekit.FaultGone:
		if err := p.Kill(context.Background(), id); err != nil {
			return err
		}
		return os.RemoveAll(p.sandboxDir(id))
	case fakekit.FaultForeign:
		if err := os.RemoveAll(workspace); err != nil {
			return err
		}
		return os.WriteFile(marker, []byte(fakekit.ForeignMarker), 0o644)
	case fakekit.FaultPartial:
		return errors.Join(os.RemoveAll(marker), os.RemoveAll(workspace))
	case fakekit.FaultSnapshotFail, fakekit.FaultSnapshotSlow, fakekit.FaultRestoreSlow:
		p.switches.Set(id, f, delay)
		return nil
	}
	return fakekit.UnknownFault(f)
}

// Clear switches the standing faults of sandbox id off.
func (p *Provider) Clear(id string) { p.switches.Clear(id) }

// exportFault plays the snapshot faults of sandbox id on an export: an
// error for snapshot_fail, a wait for snapshot_slow (transient when ctx
// ends first).
func (p *Provider) exportFault(ctx context.Context, id string) error {
	if _, fail := p.switches.On(id, fakekit.FaultSnapshotFail); fail {
		return fmt.Errorf("export sandbox %s: the injected snapshot_fail fault", id)
	}
	if d, ok := p.switches.On(id, fakekit.FaultSnapshotSlow); ok {
		return p.wait(ctx, opExport, id, d)
	}
	return nil
}

// importFault plays restore_slow, on while any sandbox has it, on an
// import into id.
func (p *Provider) importFault(ctx context.Context, id string) error {
	if d, ok := p.switches.Any(fakekit.FaultRestoreSlow); ok {
		return p.wait(ctx, opImport, id, d)
	}
	return nil
}

// wait waits d, or until ctx ends (transient).
func (p *Provider) wait(ctx context.Context, op, id string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return p.transient(op, id, ctx.Err())
	case <-t.C:
		return nil
	}
}

var _ fakekit.Injector = (*Provider)(nil)
