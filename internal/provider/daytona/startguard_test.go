package daytona_test

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard/startguardtest"
)

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

// runLines runs the session's recorded exec lines with a real sh, at once,
// in dir (startguardtest.Run), and returns them with their first lines.
func runLines(t *testing.T, dir string, lines []string) ([]*exec.Cmd, []string) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(lines))
	for i, line := range lines {
		cmds[i] = exec.Command("sh", "-c", line)
	}
	return cmds, startguardtest.Run(t, dir, cmds...)
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
			_, err := e.p.StartCommand(t.Context(), sb.ID, startguardtest.App)
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
	if n := startguardtest.Starts(t, dir); n != 1 {
		t.Fatalf("the app started %d times, want once (first lines %q)", n, firsts)
	}
	startguardtest.Stop(t, dir, cmds...)
}

// Daytona's stop and start restarts the container: its processes are
// gone, its /tmp may survive with the start guard's lock in it. The start
// after the resume must run the app again, not follow the dead one.
func TestAStartAfterStopAndStartRunsTheAppAgain(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	if _, err := e.p.StartCommand(t.Context(), sb.ID, startguardtest.App); err != nil {
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
	if _, err := e.p.StartCommand(t.Context(), sb.ID, startguardtest.App); err != nil {
		t.Fatal(err)
	}
	_, firsts := runLines(t, dir, e.srv.Commands(sb.ID, lifecycle.AppCommandName))
	if firsts[0] != "up\n" {
		t.Errorf("the start after the restart printed %q, want the app's own \"up\"", firsts[0])
	}
	if n := startguardtest.Starts(t, dir); n != 2 {
		t.Fatalf("the app started %d times, want twice (once per container boot)", n)
	}
}
