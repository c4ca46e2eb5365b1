package localstack

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/local"
)

// runLockName is the state folder's lock file (lockStateDir).
const runLockName = "run.lock"

// errStateDirBusy is the error of StopCommand and ResetCommand (and of a
// second Run) while a local stack runs on the state folder.
var errStateDirBusy = errors.New("a sandman run is using the state folder (stop it with Ctrl-C first)")

// killTries bounds the kills of one sandbox by Reset: a kill can race its
// commands' exit files (the directory is not empty yet), and the next try
// finds the processes gone.
const killTries = 10

// StopCommand is `sandman stop` (make stop): every running sandbox of the
// state folder (SANDMAN_STATE_DIR, default .sandman; its sandboxes in
// SANDMAN_LOCAL_DIR, default <state dir>/sandboxes) is paused as an idle
// pause pauses it (SIGSTOP to its process group), and the DynamoDB Local a
// killed stack left behind is stopped. Nothing is removed: sessions,
// sandboxes and their files stay, and the next `make run` resumes them as
// usual (a session the table still says is running is recorded paused when
// it is next probed). It prints how many sandboxes it paused on w.
// Errors: a stack running on the folder (nothing is touched then), a pause
// that failed.
func StopCommand(ctx context.Context, args []string, w io.Writer) error {
	if err := flag.NewFlagSet("stop", flag.ContinueOnError).Parse(args); err != nil {
		return err
	}
	n, err := Stop(ctx, os.Getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "stopped %d sandbox(es); their data is kept (make run picks them up)\n", n)
	return nil
}

// ResetCommand is `sandman reset` (make reset): Reset, reported on w.
func ResetCommand(ctx context.Context, args []string, w io.Writer) error {
	if err := flag.NewFlagSet("reset", flag.ContinueOnError).Parse(args); err != nil {
		return err
	}
	n, dir, err := Reset(ctx, os.Getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "killed %d sandbox(es) and removed %s\n", n, dir)
	return nil
}

// stateDirs returns the state folder and the local provider's sandbox
// folder that getenv names, as Run resolves them.
func stateDirs(getenv func(string) string) (state, sandboxes string) {
	state = getenv(EnvStateDir)
	if state == "" {
		state = DefaultStateDir
	}
	sandboxes = getenv(local.EnvDir)
	if sandboxes == "" {
		sandboxes = filepath.Join(state, "sandboxes")
	}
	return state, sandboxes
}

// Stop pauses every running sandbox of the state folder getenv names and
// stops a DynamoDB Local left there (StopCommand). It returns how many
// sandboxes it paused. Errors: errStateDirBusy while a stack runs on the
// folder; the first pause that failed (the others are still tried).
func Stop(ctx context.Context, getenv func(string) string) (int, error) {
	state, sandboxes := stateDirs(getenv)
	if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	release, err := lockStateDir(state)
	if err != nil {
		return 0, err
	}
	defer release()
	stopLeftDynamoDBLocal(state)
	p, err := existingProvider(sandboxes)
	if p == nil || err != nil {
		return 0, err
	}
	defer func() { _ = p.Close(context.WithoutCancel(ctx)) }() // closes its preview fronts
	stopped := 0
	var first error
	for token := ""; ; {
		page, err := p.List(ctx, lifecycle.ListRequest{States: []lifecycle.SandboxState{lifecycle.SandboxRunning}, PageToken: token})
		if err != nil {
			return stopped, err
		}
		for _, sb := range page.Sandboxes {
			if err := p.Pause(ctx, sb.ID); err != nil && !errors.Is(err, lifecycle.ErrSandboxGone) {
				if first == nil {
					first = fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
				}
				continue
			}
			stopped++
		}
		if token = page.NextToken; token == "" {
			return stopped, first
		}
	}
}

// Reset kills every sandbox of the state folder getenv names (their
// background commands included), stops its DynamoDB Local, and removes the
// folder, and the sandbox folder when SANDMAN_LOCAL_DIR put it elsewhere:
// sessions, keys, events and data are gone, the next `make run` starts
// empty. It returns how many sandbox folders it killed and the folder it
// removed. Errors: errStateDirBusy while a stack runs on the folder
// (nothing is touched then); a kill that failed (the folder is then kept,
// so a second reset can finish).
func Reset(ctx context.Context, getenv func(string) string) (int, string, error) {
	state, sandboxes := stateDirs(getenv)
	if _, err := os.Stat(state); errors.Is(err, fs.ErrNotExist) {
		return 0, state, nil
	}
	release, err := lockStateDir(state)
	if err != nil {
		return 0, state, err
	}
	defer release()
	stopLeftDynamoDBLocal(state)
	p, err := existingProvider(sandboxes)
	if err != nil {
		return 0, state, err
	}
	killed := 0
	if p != nil {
		defer func() { _ = p.Close(context.WithoutCancel(ctx)) }() // closes its preview fronts
		entries, err := os.ReadDir(sandboxes)
		if err != nil {
			return 0, state, err
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if err := killWithRetries(ctx, p, e.Name()); err != nil {
				return killed, state, fmt.Errorf("reset: kill sandbox %s: %w", e.Name(), err)
			}
			killed++
		}
	}
	for _, dir := range []string{sandboxes, state} {
		if err := os.RemoveAll(dir); err != nil {
			return killed, state, fmt.Errorf("reset: %w", err)
		}
	}
	return killed, state, nil
}

// killWithRetries kills sandbox id, trying again a few times when the kill
// fails (killTries).
func killWithRetries(ctx context.Context, p *local.Provider, id string) error {
	var err error
	for range killTries {
		if err = p.Kill(ctx, id); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	return err
}

// existingProvider returns a local provider over the sandbox folder dir,
// nil when there is no such folder.
func existingProvider(dir string) (*local.Provider, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return local.New(local.Config{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
}

// stopLeftDynamoDBLocal stops the DynamoDB Local whose pidfile is in the
// state folder (a stack killed hard leaves it running); a no-op when none
// runs or the script is not found.
func stopLeftDynamoDBLocal(state string) {
	script, err := findScript("scripts/dynamodb-local.sh")
	if err != nil {
		return
	}
	abs, err := filepath.Abs(state)
	if err != nil {
		return
	}
	_ = (&DynamoDBLocal{script: script, pidfile: filepath.Join(abs, "dynamodb-local.pid")}).Stop()
}
