package daytona_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
)

// mustSnapshot takes a snapshot named name of id and advances the clock
// until it is no longer saving.
func mustSnapshot(tb testing.TB, e *env, id, name string) lifecycle.Snapshot {
	tb.Helper()
	s, err := e.p.Snapshot(context.Background(), id, lifecycle.SnapshotRequest{Name: name})
	if err != nil {
		tb.Fatalf("Snapshot: %v", err)
	}
	for i := 0; s.State == lifecycle.SnapshotSaving && i < 100; i++ {
		e.clock.Advance(time.Second)
		if s, err = e.p.GetSnapshot(context.Background(), s.Ref); err != nil {
			tb.Fatalf("GetSnapshot: %v", err)
		}
	}
	return s
}

func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	t.Run("SavingWhileCapturingThenReady", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{SnapshotTime: 10 * time.Second})
		sb := MustCreate(t, e, nil)
		s, err := e.p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "chk_1"})
		if err != nil || s.State != lifecycle.SnapshotSaving || s.Ref != sb.ID+"/chk_1" || s.Name != "chk_1" ||
			s.SourceSandboxID != sb.ID || s.Keeps != lifecycle.KeepsFilesystem {
			t.Fatalf("Snapshot = %+v, %v", s, err)
		}
		mustState(t, e, sb.ID, daytonatest.StateSnapshotting)
		if got, err := e.p.GetSnapshot(ctx, s.Ref); err != nil || got.State != lifecycle.SnapshotSaving {
			t.Fatalf("GetSnapshot while capturing = %+v, %v; want saving (Daytona has no record yet)", got, err)
		}
		e.clock.Advance(10 * time.Second)
		got, err := e.p.GetSnapshot(ctx, s.Ref)
		if err != nil || got.State != lifecycle.SnapshotReady || got.Ref != s.Ref || got.CreatedAt.IsZero() || !got.ExpiresAt.IsZero() {
			t.Fatalf("GetSnapshot after the capture = %+v, %v; want ready, never expiring", got, err)
		}
		mustState(t, e, sb.ID, daytonatest.StateStarted)
		again, err := e.p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "chk_1"})
		if err != nil || again.State != lifecycle.SnapshotReady || e.srv.Requests(daytonatest.OpSnapshot) != 1 {
			t.Errorf("Snapshot of a name taken = %+v, %v, %d captures; want the snapshot, one capture", again, err, e.srv.Requests(daytonatest.OpSnapshot))
		}
	})
	t.Run("SilentFailureIsGoneOnceTheCaptureEnds", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{SnapshotTime: 5 * time.Second})
		sb := MustCreate(t, e, nil)
		e.srv.Edit(sb.ID, func(sb *daytonatest.Sandbox) { sb.SnapshotFault = daytonatest.SnapshotFailSilently })
		s, err := e.p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "chk_1"})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(5 * time.Second)
		if got, err := e.p.GetSnapshot(ctx, s.Ref); !isKind(err, lifecycle.ErrCheckpointGone) {
			t.Errorf("GetSnapshot after a silent failure = %+v, %v; want ErrCheckpointGone", got, err)
		}
	})
	t.Run("ErrorIsFailed", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		sb := MustCreate(t, e, nil)
		e.srv.Edit(sb.ID, func(sb *daytonatest.Sandbox) { sb.SnapshotFault = daytonatest.SnapshotFailError })
		if s := mustSnapshot(t, e, sb.ID, "chk_1"); s.State != lifecycle.SnapshotFailed || s.Reason == "" {
			t.Errorf("snapshot = %+v, want failed with a reason", s)
		}
	})
	t.Run("StoppedSandbox", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "sb-1", daytonatest.StateStopped)
		if s := mustSnapshot(t, e, "sb-1", "chk_1"); s.State != lifecycle.SnapshotReady {
			t.Errorf("snapshot of a stopped sandbox = %+v, want ready", s)
		}
		mustState(t, e, "sb-1", daytonatest.StateStopped)
	})
	t.Run("Refusals", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{SnapshotTime: time.Minute})
		MustPut(t, e, "arch", daytonatest.StateArchived)
		MustPut(t, e, "busy", daytonatest.StateStarted)
		if _, err := e.p.Snapshot(ctx, "arch", lifecycle.SnapshotRequest{Name: "chk_a"}); err == nil || isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("Snapshot of an archived sandbox = %v, want a plain error", err)
		}
		if _, err := e.p.Snapshot(ctx, "busy", lifecycle.SnapshotRequest{Name: "chk_b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.p.Snapshot(ctx, "busy", lifecycle.SnapshotRequest{Name: "chk_c"}); !isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("Snapshot while capturing = %v, want conflict", err)
		}
		if _, err := e.p.Snapshot(ctx, "gone", lifecycle.SnapshotRequest{Name: "chk_d"}); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("Snapshot of an unknown sandbox = %v, want gone", err)
		}
		if _, err := e.p.Snapshot(ctx, "busy", lifecycle.SnapshotRequest{Name: "bad/name"}); err == nil {
			t.Error("Snapshot took a name with a slash")
		}
	})
	if caps := (&daytona.Provider{}).SnapshotCaps(); caps != (lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem, SnapshotsPaused: true}) {
		t.Errorf("SnapshotCaps = %+v", caps)
	}
}

func TestListSnapshotsEveryPage(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	other := MustCreate(t, e, nil)
	for i := range 101 {
		mustSnapshot(t, e, sb.ID, fmt.Sprintf("chk_%03d", i))
	}
	mustSnapshot(t, e, other.ID, "chk_other")
	list, err := e.p.ListSnapshots(context.Background(), sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 101 || list[100].Ref != sb.ID+"/chk_100" || list[0].State != lifecycle.SnapshotReady {
		t.Fatalf("ListSnapshots = %d snapshots (last %+v), want 101", len(list), list[len(list)-1])
	}
	if got := e.srv.Requests(daytonatest.OpListSnapshots); got != 2 {
		t.Errorf("list requests = %d, want 2 pages", got)
	}
}

func TestDeleteSnapshot(t *testing.T) {
	ctx := context.Background()
	e := MustEnv(t, daytonatest.Config{SnapshotTime: time.Minute})
	sb := MustCreate(t, e, nil)
	s, err := e.p.Snapshot(ctx, sb.ID, lifecycle.SnapshotRequest{Name: "chk_1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.p.DeleteSnapshot(ctx, s.Ref); !isKind(err, lifecycle.ErrSandboxConflict) {
		t.Fatalf("DeleteSnapshot while capturing = %v, want conflict", err)
	}
	e.clock.Advance(time.Minute)
	for i := range 2 {
		if err := e.p.DeleteSnapshot(ctx, s.Ref); err != nil {
			t.Fatalf("DeleteSnapshot #%d = %v", i+1, err)
		}
	}
	if got := e.srv.Requests(daytonatest.OpDeleteSnapshot); got != 1 {
		t.Errorf("DELETE requests = %d, want 1 (by id, after reading the name)", got)
	}
	if _, err := e.p.GetSnapshot(ctx, s.Ref); !isKind(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("GetSnapshot after delete = %v, want ErrCheckpointGone", err)
	}
	// Deleted behind the adapter's back.
	s2 := mustSnapshot(t, e, sb.ID, "chk_2")
	e.srv.DropSnapshot("chk_2")
	if _, err := e.p.GetSnapshot(ctx, s2.Ref); !isKind(err, lifecycle.ErrCheckpointGone) {
		t.Errorf("GetSnapshot of a dropped snapshot = %v, want ErrCheckpointGone", err)
	}
	if err := e.p.DeleteSnapshot(ctx, s2.Ref); err != nil {
		t.Errorf("DeleteSnapshot of a dropped snapshot = %v", err)
	}
}

func TestCreateFromSnapshot(t *testing.T) {
	ctx := context.Background()
	req := lifecycle.CreateRequest{Template: "web", Timeout: 10 * time.Minute, AutoPause: true,
		Metadata: map[string]string{"sandman_session_id": "sess_2"}}
	t.Run("FilesLabelsAndPort", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{}, func(c *daytona.Config) { c.PreviewPorts = map[string]int{"web": 5173} })
		src := MustCreate(t, e, map[string]string{"sandman_session_id": "sess_1"})
		if err := e.p.WriteFile(ctx, src.ID, "/home/user/app/a.txt", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		s := mustSnapshot(t, e, src.ID, "chk_1")
		sb, err := e.p.CreateFromSnapshot(ctx, s.Ref, req)
		if err != nil {
			t.Fatal(err)
		}
		if sb.Template != "web" || sb.Metadata["sandman_session_id"] != "sess_2" || sb.Metadata[daytona.TemplateLabel] != "" ||
			!strings.Contains(sb.PreviewURL, "https://5173-") {
			t.Errorf("sandbox = %+v; want template web, its labels without %s, port 5173", sb, daytona.TemplateLabel)
		}
		if got, err := e.p.ReadFile(ctx, sb.ID, "/home/user/app/a.txt"); err != nil || string(got) != "v1" {
			t.Errorf("the file in the new sandbox = %q, %v", got, err)
		}
		if err := e.p.Pause(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		resumed, err := e.p.Resume(ctx, sb.ID, 10*time.Minute)
		if err != nil || resumed.Template != "web" || !strings.Contains(resumed.PreviewURL, "https://5173-") {
			t.Errorf("resumed = %+v, %v; want the template's port still", resumed, err)
		}
	})
	t.Run("SeenStartedSoonAfter", func(t *testing.T) {
		// A create of 1.5 s is read every 100 ms at first, then every
		// tenth of the time waited: it is seen started within 150 ms of
		// starting, never a whole PollInterval late.
		e := MustEnv(t, daytonatest.Config{CreateTime: 1500 * time.Millisecond})
		src := MustCreate(t, e, nil)
		s := mustSnapshot(t, e, src.ID, "chk_1")
		before := len(e.waits())
		begun := e.clock.Now()
		if _, err := e.p.CreateFromSnapshot(ctx, s.Ref, req); err != nil {
			t.Fatal(err)
		}
		waits := e.waits()[before:]
		if len(waits) == 0 || waits[0] != 100*time.Millisecond {
			t.Fatalf("waits = %v, want the first of 100 ms", waits)
		}
		for i, w := range waits {
			if w < 100*time.Millisecond || w > daytona.DefaultPollInterval || i > 0 && w < waits[i-1] {
				t.Errorf("waits = %v: want each between 100 ms and %s, never shorter than the one before", waits, daytona.DefaultPollInterval)
				break
			}
		}
		if took := e.clock.Now().Sub(begun); took < 1500*time.Millisecond || took > 1650*time.Millisecond {
			t.Errorf("the create was seen started after %s, want within 150 ms of its 1.5 s", took)
		}
	})
	t.Run("LongWaitsReadOncePerInterval", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{CreateTime: time.Minute})
		src := MustCreate(t, e, nil)
		s := mustSnapshot(t, e, src.ID, "chk_1")
		before := len(e.waits())
		if _, err := e.p.CreateFromSnapshot(ctx, s.Ref, req); err != nil {
			t.Fatal(err)
		}
		waits := e.waits()[before:]
		if last := waits[len(waits)-1]; last != daytona.DefaultPollInterval {
			t.Errorf("the last wait = %s, want the cap %s", last, daytona.DefaultPollInterval)
		}
		if len(waits) > 100 {
			t.Errorf("%d reads for a create of 1 min, want at most 100", len(waits))
		}
	})
	t.Run("DeactivatedIsActivatedFirst", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{ActivateTime: 30 * time.Second})
		src := MustCreate(t, e, nil)
		s := mustSnapshot(t, e, src.ID, "chk_1")
		e.clock.Advance(daytonatest.DefaultDeactivation)
		if got, err := e.p.GetSnapshot(ctx, s.Ref); err != nil || got.State != lifecycle.SnapshotReady {
			t.Fatalf("a deactivated snapshot = %+v, %v; want ready (it is kept)", got, err)
		}
		if _, err := e.p.CreateFromSnapshot(ctx, s.Ref, req); err != nil {
			t.Fatalf("CreateFromSnapshot of a deactivated snapshot = %v", err)
		}
		if got := e.srv.Requests(daytonatest.OpActivate); got != 1 {
			t.Errorf("activations = %d, want 1", got)
		}
	})
	t.Run("ErrCheckpointGone", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		src := MustCreate(t, e, nil)
		e.srv.Edit(src.ID, func(sb *daytonatest.Sandbox) { sb.SnapshotFault = daytonatest.SnapshotFailError })
		failed := mustSnapshot(t, e, src.ID, "chk_failed")
		for name, ref := range map[string]string{"Unknown": src.ID + "/chk_never", "Failed": failed.Ref} {
			if _, err := e.p.CreateFromSnapshot(ctx, ref, req); !isKind(err, lifecycle.ErrCheckpointGone) {
				t.Errorf("%s: CreateFromSnapshot = %v, want ErrCheckpointGone", name, err)
			}
		}
		if got := e.srv.Requests(daytonatest.OpCreate); got != 1 {
			t.Errorf("creates = %d, want only the source's", got)
		}
	})
	t.Run("StillSavingIsTransient", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{SnapshotTime: time.Hour})
		src := MustCreate(t, e, nil)
		e.srv.Edit(src.ID, func(sb *daytonatest.Sandbox) { sb.SnapshotTime = time.Minute })
		s, err := e.p.Snapshot(ctx, src.ID, lifecycle.SnapshotRequest{Name: "chk_1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.p.CreateFromSnapshot(ctx, s.Ref, req); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("CreateFromSnapshot while capturing = %v, want transient", err)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.p.CreateFromSnapshot(ctx, s.Ref, req); err != nil {
			t.Errorf("CreateFromSnapshot after a slow capture = %v", err)
		}
	})
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	req := lifecycle.CreateRequest{Template: "base", Timeout: 20 * time.Minute, AutoPause: false,
		Metadata: map[string]string{"sandman_session_id": "sess_fork"}}
	t.Run("LabelsFilesAndIntervals", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{Class: "linux-vm", ForkTime: 5 * time.Second})
		src := MustCreate(t, e, map[string]string{"sandman_session_id": "sess_src", "team": "a"})
		if err := e.p.WriteFile(ctx, src.ID, "/home/user/app/a.txt", []byte("v1")); err != nil {
			t.Fatal(err)
		}
		fork, err := e.p.Fork(ctx, src.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if fork.ID == src.ID || fork.State != lifecycle.SandboxRunning || fork.Metadata["sandman_session_id"] != "sess_fork" ||
			fork.Metadata["team"] != "" || fork.PreviewURL == "" {
			t.Errorf("fork = %+v; want a running sandbox with the request's labels only", fork)
		}
		stored := mustState(t, e, fork.ID, daytonatest.StateStarted)
		if stored.AutoStop != 20 || stored.AutoDelete != 0 {
			t.Errorf("fork's intervals = stop %d, delete %d; want 20 and 0 (no auto-pause)", stored.AutoStop, stored.AutoDelete)
		}
		mustState(t, e, src.ID, daytonatest.StateStarted)
		if got, err := e.p.ReadFile(ctx, fork.ID, "/home/user/app/a.txt"); err != nil || string(got) != "v1" {
			t.Errorf("the file in the fork = %q, %v", got, err)
		}
	})
	t.Run("Refusals", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{})
		MustPut(t, e, "box", daytonatest.StateStarted)
		MustPut(t, e, "vm", daytonatest.StateStopped, func(sb *daytonatest.Sandbox) { sb.Class = "linux-vm" })
		if _, err := e.p.Fork(ctx, "box", req); err == nil || isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("Fork of a container = %v, want a plain error (422)", err)
		}
		if _, err := e.p.Fork(ctx, "vm", req); !isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("Fork of a stopped sandbox = %v, want conflict", err)
		}
		if _, err := e.p.Fork(ctx, "nope", req); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("Fork of an unknown sandbox = %v, want gone", err)
		}
	})
	t.Run("UnlabelledForkIsDeleted", func(t *testing.T) {
		e := MustEnv(t, daytonatest.Config{Class: "linux-vm"}, func(c *daytona.Config) { c.MaxRetries = -1 })
		src := MustCreate(t, e, nil)
		e.srv.Fail(daytonatest.OpLabels, daytonatest.Fault{Status: 503})
		if _, err := e.p.Fork(ctx, src.ID, req); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("Fork = %v, want the labels' transient error", err)
		}
		if _, ok := e.srv.Sandbox(idOf(2)); ok {
			t.Error("the fork still labelled as its source was kept")
		}
	})
}
