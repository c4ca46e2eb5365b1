package daytona_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
)

// guardApp records each start of the app in the file starts, prints "up",
// and serves until the file stop exists, then exits with code 7.
var guardApp = lifecycle.Command{Name: lifecycle.AppCommandName, Port: 3000,
	Line: `echo x >> starts; echo up; while [ ! -f stop ]; do sleep 0.05; done; exit 7`}

// sessionBarrier holds each answer to a read of the app's toolbox session
// until `together` reads were answered: jobs that all looked before any
// of them started.
type sessionBarrier struct {
	next     http.RoundTripper
	together int

	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (sb *sessionBarrier) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := sb.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/process/session/"+lifecycle.AppCommandName) {
		return resp, err
	}
	sb.mu.Lock()
	if sb.all == nil {
		sb.all = make(chan struct{})
	}
	if sb.arrived++; sb.arrived == sb.together {
		close(sb.all)
	}
	all := sb.all
	sb.mu.Unlock()
	select {
	case <-all:
		return resp, nil
	case <-r.Context().Done():
		resp.Body.Close()
		return nil, r.Context().Err()
	}
}

func withSessionBarrier(together int) func(*daytona.Config) {
	return func(c *daytona.Config) {
		next := http.DefaultTransport
		if c.HTTPClient != nil && c.HTTPClient.Transport != nil {
			next = c.HTTPClient.Transport
		}
		c.HTTPClient = &http.Client{Transport: &sessionBarrier{next: next, together: together}}
	}
}

// runLines runs command lines the toolbox was asked to execute with a real
// sh, as the session's shell would in the sandbox's one container: in dir,
// TMPDIR=dir, each in its own process group. It returns them once each
// printed its first line.
func runLines(t *testing.T, dir string, lines []string) ([]*exec.Cmd, []string) {
	t.Helper()
	var cmds []*exec.Cmd
	var firsts []string
	for _, line := range lines {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TMPDIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		br := bufio.NewReader(out)
		first, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("%q printed nothing: %v", line, err)
		}
		go func() { _, _ = io.Copy(io.Discard, br) }()
		cmds, firsts = append(cmds, cmd), append(firsts, first)
	}
	return cmds, firsts
}

func appStarts(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "x")
}

// makeEmptySession makes the app's toolbox session as a start that died
// before its exec leaves it.
func makeEmptySession(t *testing.T, e *env, sandboxID string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/toolbox/"+sandboxID+"/process/session",
		strings.NewReader(`{"sessionId":"`+lifecycle.AppCommandName+`"}`))
	req.Header.Set("Authorization", "Bearer "+e.srv.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("make session = %d, want 201", resp.StatusCode)
	}
}

// A start that died between making the session and its exec leaves it
// empty; two jobs redelivered at once both find it empty and both exec
// into it. The app must still start once, and both commands end with its
// exit code.
func TestTwoStartsIntoAnEmptySessionRunTheAppOnce(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{}, withSessionBarrier(2))
	sb := MustCreate(t, e, nil)
	makeEmptySession(t, e, sb.ID)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			_, err := e.p.StartCommand(t.Context(), sb.ID, guardApp)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("StartCommand: %v", err)
		}
	}
	lines := e.srv.Commands(sb.ID, lifecycle.AppCommandName)
	if len(lines) != 2 {
		t.Fatalf("the session holds %d commands, want 2 (both jobs found it empty)", len(lines))
	}
	dir := t.TempDir()
	cmds, firsts := runLines(t, dir, lines)
	if n := appStarts(t, dir); n != 1 {
		t.Fatalf("the app started %d times, want once (first lines %q)", n, firsts)
	}
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range cmds {
		err := waitTimeout(cmd, 10*time.Second)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("command %d ended with %v, want exit code 7 (the app's)", i, err)
		}
	}
}

// Daytona's stop and start restarts the container: its processes are
// gone, its /tmp may survive with the start guard's lock in it. The start
// after the resume must run the app again, not follow the dead one.
func TestAStartAfterStopAndStartRunsTheAppAgain(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	if _, err := e.p.StartCommand(t.Context(), sb.ID, guardApp); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, _ := runLines(t, dir, e.srv.Commands(sb.ID, lifecycle.AppCommandName))
	if err := e.p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	// The stop kills the container's processes without an exit code.
	if err := syscall.Kill(-first[0].Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first[0].Wait()
	if _, err := e.p.Resume(context.Background(), sb.ID, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.StartCommand(t.Context(), sb.ID, guardApp); err != nil {
		t.Fatal(err)
	}
	_, firsts := runLines(t, dir, e.srv.Commands(sb.ID, lifecycle.AppCommandName))
	if firsts[0] != "up\n" {
		t.Errorf("the start after the restart printed %q, want the app's own \"up\"", firsts[0])
	}
	if n := appStarts(t, dir); n != 2 {
		t.Fatalf("the app started %d times, want twice (once per container boot)", n)
	}
}

func waitTimeout(cmd *exec.Cmd, d time.Duration) error {
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-ch
	}
}
