package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The fault rows (docs/RELIABILITY.md "Recovery"): each sandbox fault a
// fake takes (fakekit.Injector, Env.Inject) is classified by the adapter
// as the provider's sheet says. A definitive loss: a deleted sandbox is
// ErrSandboxGone, an expired snapshot ErrCheckpointGone; a foreign or
// partial workspace is no error at all, only the identity marker tells.
// Transient: a failing, slow snapshot or a slow restore is never read as a
// loss (ErrProviderTransient, or still saving), so it never starts a
// recovery.

func faultRows() []Behaviour {
	return []Behaviour{
		{Name: "FaultGoneIsDefinitive", Needs: "Inject", Run: faultGone},
		{Name: "FaultForeignShowsAnotherMarker", Needs: "InjectFiles", Run: faultForeign},
		{Name: "FaultPartialHasNoMarker", Needs: "InjectFiles", Run: faultPartial},
		{Name: "FaultSnapshotExpiredIsGone", Needs: "InjectSnapshots", Run: faultSnapshotExpired},
		{Name: "FaultSnapshotFailIsNoLoss", Needs: "InjectSnapshots", Run: faultSnapshotFail},
		{Name: "FaultSnapshotSlowIsTransient", Needs: "InjectSnapshots", Run: faultSnapshotSlow},
		{Name: "FaultRestoreSlowIsTransient", Needs: "InjectSnapshots", Run: faultRestoreSlow},
		// A provider whose checkpoints are archives: the snapshot faults
		// hit its exports, restore_slow its imports.
		{Name: "FaultExportFailIsNoLoss", Needs: "InjectArchives", Run: faultExportFail},
		{Name: "FaultExportSlowIsTransient", Needs: "InjectArchives", Run: faultExportSlow},
		{Name: "FaultImportSlowIsTransient", Needs: "InjectArchives", Run: faultImportSlow},
	}
}

// markerPath is lifecycle.IdentityMarkerPath.
const markerPath = lifecycle.IdentityMarkerPath

func mustInject(t *testing.T, e Env, id string, f fakekit.SandboxFault, delay time.Duration) {
	t.Helper()
	if err := e.Inject(id, f, delay); err != nil {
		t.Fatalf("Inject %s on %s: %v", f, id, err)
	}
}

// mustMark writes an identity marker of session ses_mine into id.
func mustMark(t *testing.T, e Env, id string) {
	t.Helper()
	data := []byte(`{"session_id":"ses_mine","sandbox_id":"` + id + `"}`)
	if err := files(e).WriteFile(ctx(t), id, markerPath, data); err != nil {
		t.Fatalf("write the marker: %v", err)
	}
}

// wantTransient fails unless err is nil or transient, never a loss.
func wantTransient(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case errors.Is(err, lifecycle.ErrSandboxGone), errors.Is(err, lifecycle.ErrCheckpointGone):
		t.Errorf("%s: %v, a definitive loss; want transient", what, err)
	case err != nil && !errors.Is(err, lifecycle.ErrProviderTransient):
		t.Errorf("%s: %v, want ErrProviderTransient", what, err)
	}
}

func faultGone(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustInject(t, e, sb.ID, fakekit.FaultGone, 0)
	if _, err := e.Provider.Get(ctx(t), sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Get of a sandbox deleted behind our back: %v, want ErrSandboxGone", err)
	}
	if _, err := e.Provider.Resume(ctx(t), sb.ID, time.Minute); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Resume of a sandbox deleted behind our back: %v, want ErrSandboxGone", err)
	}
	if err := e.Provider.Kill(ctx(t), sb.ID); err != nil {
		t.Errorf("Kill of a gone sandbox: %v, want nil", err)
	}
}

func faultForeign(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustMark(t, e, sb.ID)
	mustInject(t, e, sb.ID, fakekit.FaultForeign, 0)
	data, err := files(e).ReadFile(ctx(t), sb.ID, markerPath)
	var m struct {
		SessionID string `json:"session_id"`
	}
	if err != nil || json.Unmarshal(data, &m) != nil || m.SessionID == "ses_mine" || m.SessionID == "" {
		t.Errorf("the marker behind a foreign id = %q, %v; want another session's", data, err)
	}
	if got, err := e.Provider.Get(ctx(t), sb.ID); err != nil || got.ID != sb.ID {
		t.Errorf("Get of the foreign sandbox = %+v, %v; want it answered (only the marker tells)", got, err)
	}
}

func faultPartial(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	mustMark(t, e, sb.ID)
	mustWrite(t, e, sb.ID, "work.txt", "mine")
	mustInject(t, e, sb.ID, fakekit.FaultPartial, 0)
	if data, err := files(e).ReadFile(ctx(t), sb.ID, markerPath); !errors.Is(err, lifecycle.ErrNoFile) {
		t.Errorf("the marker of a partial workspace = %q, %v; want ErrNoFile", data, err)
	}
	wantFile(t, e, sb.ID, "work.txt", "")
	if _, err := e.Provider.Get(ctx(t), sb.ID); err != nil {
		t.Errorf("Get of a partial sandbox: %v, want it answered", err)
	}
}

func faultSnapshotExpired(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	snap := mustSnapshot(t, e, src.ID, checkpointName(t))
	mustInject(t, e, src.ID, fakekit.FaultSnapshotExpired, 0)
	_, err := snapshots(e).CreateFromSnapshot(ctx(t), snap.Ref, lifecycle.CreateRequest{Template: e.Template, Timeout: time.Minute})
	if !isGone(err) {
		t.Errorf("CreateFromSnapshot of an expired snapshot: %v, want ErrCheckpointGone", err)
	}
}

func faultSnapshotFail(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	mustInject(t, e, src.ID, fakekit.FaultSnapshotFail, 0)
	snap, err := snapshots(e).Snapshot(ctx(t), src.ID, lifecycle.SnapshotRequest{Name: checkpointName(t)})
	for i := 0; err == nil && snap.State == lifecycle.SnapshotSaving && i < 600; i++ {
		if e.Advance != nil {
			e.Advance(time.Second)
		}
		snap, err = snapshots(e).GetSnapshot(ctx(t), snap.Ref)
	}
	switch {
	case err == nil && snap.State == lifecycle.SnapshotReady:
		t.Errorf("a failing snapshot is ready: %+v", snap)
	case err != nil && errors.Is(err, lifecycle.ErrSandboxGone):
		// E2B kills the source of a failed snapshot (its sheet): the loss
		// is the sandbox's, which the next resume reads as gone.
	case err != nil && errors.Is(err, lifecycle.ErrCheckpointGone):
		// The failed snapshot was never kept: gone is what it is.
	}
}

func faultSnapshotSlow(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	mustInject(t, e, src.ID, fakekit.FaultSnapshotSlow, time.Hour)
	c, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	snap, err := snapshots(e).Snapshot(c, src.ID, lifecycle.SnapshotRequest{Name: checkpointName(t)})
	wantTransient(t, "a slow snapshot", err)
	if err == nil && snap.State == lifecycle.SnapshotReady {
		t.Errorf("a snapshot an hour slow is ready at once: %+v", snap)
	}
}

func faultRestoreSlow(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	snap := mustSnapshot(t, e, src.ID, checkpointName(t))
	mustInject(t, e, src.ID, fakekit.FaultRestoreSlow, time.Hour)
	c, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	_, err := snapshots(e).CreateFromSnapshot(c, snap.Ref, lifecycle.CreateRequest{Template: e.Template, Timeout: time.Minute})
	wantTransient(t, "a slow restore", err)
}

func faultExportFail(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	mustWrite(t, e, src.ID, "work.txt", "mine")
	mustInject(t, e, src.ID, fakekit.FaultSnapshotFail, 0)
	_, err := archiver(e).ExportTar(ctx(t), src.ID, workDir, nil, io.Discard)
	if err == nil || errors.Is(err, lifecycle.ErrSandboxGone) || errors.Is(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("a failing export: %v, want an error that is no loss", err)
	}
}

func faultExportSlow(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	mustInject(t, e, src.ID, fakekit.FaultSnapshotSlow, time.Hour)
	c, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	_, err := archiver(e).ExportTar(c, src.ID, workDir, nil, io.Discard)
	if err == nil {
		t.Fatal("an export an hour slow ended at once")
	}
	wantTransient(t, "a slow export", err)
}

func faultImportSlow(t *testing.T, e Env) {
	src := mustCreate(t, e, 10*time.Minute, nil)
	mustWrite(t, e, src.ID, "work.txt", "mine")
	var tar bytes.Buffer
	if _, err := archiver(e).ExportTar(ctx(t), src.ID, workDir, nil, &tar); err != nil {
		t.Fatal(err)
	}
	mustInject(t, e, src.ID, fakekit.FaultRestoreSlow, time.Hour)
	dst := mustCreate(t, e, 10*time.Minute, nil)
	c, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	err := archiver(e).ImportTar(c, dst.ID, workDir, &tar)
	if err == nil {
		t.Fatal("an import an hour slow ended at once")
	}
	wantTransient(t, "a slow import", err)
}
