package local

import (
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestARemovedFolderEndsTheSandboxsProcesses: a sandbox whose folder is
// removed behind the provider's back (a paused web sandbox, a running one
// with an app command) is gone for every call at once, and the next Tick
// ends its processes (the sandbox's group and its commands), closes its
// preview front, and leaves every other sandbox as it was; a Kill of it
// succeeds.
func TestARemovedFolderEndsTheSandboxsProcesses(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	paused := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateWeb})
	running := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	kept := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	if _, err := p.StartCommand(ctx, running.ID, appCommand(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx, paused.ID); err != nil {
		t.Fatal(err)
	}
	var groups []int
	for _, id := range []string{paused.ID, running.ID} {
		rec := MustRecord(t, p, id)
		groups = append(groups, rec.PGID)
		for _, c := range rec.Commands {
			groups = append(groups, c.PID)
		}
		if err := os.RemoveAll(p.sandboxDir(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Get(ctx, id); !errors.Is(err, lifecycle.ErrSandboxGone) {
			t.Errorf("Get of %s after its folder was removed: %v, want ErrSandboxGone", id, err)
		}
		if _, err := p.Resume(ctx, id, time.Minute); !errors.Is(err, lifecycle.ErrSandboxGone) {
			t.Errorf("Resume of %s after its folder was removed: %v, want ErrSandboxGone", id, err)
		}
	}
	if len(groups) != 3 {
		t.Fatalf("process groups %v, want the two sandboxes' and the command's", groups)
	}

	if err := p.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, g := range groups {
		for len(LiveGroupMembers(t, g)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("process group %d still lives 10 s after the Tick: %v", g, LiveGroupMembers(t, g))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if resp, err := http.Get(paused.PreviewURL); err == nil {
		resp.Body.Close()
		t.Errorf("the removed sandbox's preview front still answers %d", resp.StatusCode)
	}
	if sb, err := p.Get(ctx, kept.ID); err != nil || sb.State != lifecycle.SandboxRunning {
		t.Errorf("the other sandbox after the Tick = %+v, %v; want running", sb, err)
	}
	if err := p.Kill(ctx, paused.ID); err != nil {
		t.Errorf("Kill of a removed sandbox: %v, want success", err)
	}
}
