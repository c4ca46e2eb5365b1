// Package startguardtest runs the app commands a provider's fake recorded
// as the sandbox would, with a real shell, so an adapter's tests can check
// its start guard (docs/READINESS.md "One start per boot"): how many times
// the app started, and what every command ended with.
package startguardtest

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// ExitCode is what App exits with once told to stop.
const ExitCode = 7

// App is an app command that records each start of it in the file
// "starts" of its working directory, prints "up", and serves until the
// file "stop" exists there, then exits with ExitCode.
var App = lifecycle.Command{Name: lifecycle.AppCommandName, Port: 3000,
	Line: `echo x >> starts; echo up; while [ ! -f stop ]; do sleep 0.05; done; exit 7`}

// Run starts every cmd at once in dir, each in a process group of its own
// that the test's cleanup kills, with TMPDIR=dir added to its environment
// (os.Environ when it has none), so they share one lock directory as the
// commands of one sandbox do. It returns the first line each printed; the
// rest of their output is discarded.
func Run(t *testing.T, dir string, cmds ...*exec.Cmd) []string {
	t.Helper()
	return RunIn(t, dir, dir, cmds...)
}

// RunIn is Run with TMPDIR=tmp (a directory that does not exist: no lock
// can be made).
func RunIn(t *testing.T, dir, tmp string, cmds ...*exec.Cmd) []string {
	t.Helper()
	outs := make([]*bufio.Reader, len(cmds))
	for i, cmd := range cmds {
		cmd.Dir = dir
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		outs[i] = bufio.NewReader(out)
	}
	firsts := make([]string, len(cmds))
	for i, out := range outs {
		first, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("%q printed nothing: %v", cmds[i].Args, err)
		}
		firsts[i] = first
		go func() { _, _ = io.Copy(io.Discard, out) }()
	}
	return firsts
}

// Starts returns how many times App started in dir.
func Starts(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "x")
}

// Stop tells App in dir to exit and checks that every cmd ends, within
// 10 s, with ExitCode: a follower ends with the code of the start it
// follows.
func Stop(t *testing.T, dir string, cmds ...*exec.Cmd) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		var err error
		select {
		case err = <-ch:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-ch
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitCode {
			t.Errorf("command %d ended with %v, want exit code %d (the app's)", i, err, ExitCode)
		}
	}
}
