package vercel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard/startguardtest"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// TestACrashBeforeTheTagStartsOneServer: a process that dies after
// Vercel started the command but before the tag recording it was written
// leaves a command no other process can find, so the redelivered job
// starts the command again. Both starts must run the app once: the
// commands the fake received are run here with a real sh, concurrently,
// as Vercel would run them in the session's VM (sh is the image's shell);
// the app's line appends to a file each time it starts.
func TestACrashBeforeTheTagStartsOneServer(t *testing.T) {
	f, p := setup(t, verceltest.Config{BootDelay: time.Minute}, nil)
	sb := create(t, p, "ses_crash", nil)
	line := startguardtest.App.Line

	// The first process starts the command; its tag write hangs and the
	// process dies there (its context ends).
	f.Fail(verceltest.OpUpdate, verceltest.Fault{Hang: true})
	updates := f.Requests(verceltest.OpUpdate)
	ctx, die := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = p.StartCommand(ctx, sb.ID, appCommand(line))
	}()
	for f.Requests(verceltest.OpUpdate) == updates {
		select {
		case <-done:
			t.Fatal("StartCommand returned before writing the tag")
		case <-time.After(time.Millisecond):
		}
	}
	die()
	<-done
	if tag := mustSandbox(t, f, sb.ID).Tags["sandman-cmd-"+lifecycle.AppCommandName]; tag != "" {
		t.Fatalf("the command's tag %q was written; the crash must come before it", tag)
	}

	// The redelivered job runs in another process.
	other := f.MustProvider(t, nil)
	if _, err := other.StartCommand(t.Context(), sb.ID, appCommand(line)); err != nil {
		t.Fatalf("StartCommand after the crash: %v", err)
	}
	cmds := f.Commands(mustSandbox(t, f, sb.ID).CurrentSessionID)
	if len(cmds) != 2 {
		t.Fatalf("the session holds %d commands, want 2 (nothing finds the first)", len(cmds))
	}

	// Run both as the VM would, at once, in one /tmp.
	dir := t.TempDir()
	procs, firsts := runAll(t, dir, dir, cmds)
	t.Logf("first lines: %q", firsts)
	if n := startguardtest.Starts(t, dir); n != 1 {
		t.Fatalf("the app started %d times, want once", n)
	}

	// The app ends: both commands end with its exit code, so the status
	// of whichever the tag records reads as the app's.
	startguardtest.Stop(t, dir, procs...)
}

// runAll runs the commands the fake received with a real sh, all at once,
// in dir with TMPDIR=tmp (startguardtest.RunIn), and returns them with
// the first line each printed.
func runAll(t *testing.T, dir, tmp string, cmds []verceltest.CommandJSON) ([]*exec.Cmd, []string) {
	t.Helper()
	procs := make([]*exec.Cmd, len(cmds))
	for i, c := range cmds {
		procs[i] = exec.Command(c.Name, c.Args...)
		procs[i].Env = append(os.Environ(), "PORT=3000")
	}
	return procs, startguardtest.RunIn(t, dir, tmp, procs...)
}

// TestStartGuardRunsTheLineWhenNoLockCanBeMade: with no writable temporary
// directory the guard cannot lock, and runs the line rather than nothing.
func TestStartGuardRunsTheLineWhenNoLockCanBeMade(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_nolock", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand(`echo up; exit 4`)); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	cmds := f.Commands(mustSandbox(t, f, sb.ID).CurrentSessionID)
	dir := t.TempDir()
	procs, firsts := runAll(t, dir, filepath.Join(dir, "missing"), cmds)
	if firsts[0] != "up\n" {
		t.Errorf("first line = %q, want the line's own \"up\"", firsts[0])
	}
	var ee *exec.ExitError
	if err := waitTimeout(procs[0], 10*time.Second); !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("the command ended with %v, want the line's exit code 4", err)
	}
}

func waitTimeout(cmd *exec.Cmd, d time.Duration) error {
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return <-ch
	}
}
