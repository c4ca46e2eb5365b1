package e2b_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard/startguardtest"
)

// listTransport stands between the adapter and the fake's envd: each
// process list's answer waits at a barrier until `together` lists were
// answered (two jobs looking at once, before either starts), and with empty set answers that no process runs
// (E2B after a resume, e2b-dev/E2B#1031).
type listTransport struct {
	next     http.RoundTripper
	together int
	empty    bool

	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (lt *listTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/process.Process/List") {
		return lt.next.RoundTrip(r)
	}
	resp, err := lt.next.RoundTrip(r)
	if err == nil && lt.together > 1 {
		lt.mu.Lock()
		if lt.all == nil {
			lt.all = make(chan struct{})
		}
		if lt.arrived++; lt.arrived == lt.together {
			close(lt.all)
		}
		all := lt.all
		lt.mu.Unlock()
		select {
		case <-all:
		case <-r.Context().Done():
			resp.Body.Close()
			return nil, r.Context().Err()
		}
	}
	if err != nil || !lt.empty {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader([]byte(`{"processes":[]}`)))
	resp.ContentLength = -1
	return resp, nil
}

func withListTransport(lt *listTransport) func(*e2b.Config) {
	return func(c *e2b.Config) {
		if c.HTTPClient == nil {
			c.HTTPClient = &http.Client{}
		}
		client := *c.HTTPClient
		lt.next = client.Transport
		if lt.next == nil {
			lt.next = http.DefaultTransport
		}
		client.Transport = lt
		c.HTTPClient = &client
	}
}

// runProcesses runs envd's recorded processes with a real bash, at once,
// in dir (startguardtest.Run), and returns them with their first lines.
func runProcesses(t *testing.T, dir string, procs []e2btest.Process) ([]*exec.Cmd, []string) {
	t.Helper()
	cmds := make([]*exec.Cmd, len(procs))
	for i, pr := range procs {
		cmds[i] = exec.Command("bash", pr.Args...)
		cmds[i].Env = os.Environ()
		for k, v := range pr.Envs {
			cmds[i].Env = append(cmds[i].Env, k+"="+v)
		}
	}
	return cmds, startguardtest.Run(t, dir, cmds...)
}

// Two readiness jobs for one session at once both list no app process
// (looking and starting are two envd calls) and both start it: the app
// must still start once.
func TestTwoStartsAtOnceRunTheAppOnce(t *testing.T) {
	srv := e2btest.NewServer(t)
	srv.SetBootDelay(time.Hour)
	p, _ := MustProvider(t, srv, noRetries, withListTransport(&listTransport{together: 2}))
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			_, err := p.StartCommand(t.Context(), "sbx", startguardtest.App)
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
	procs := srv.Processes("sbx")
	if len(procs) != 2 {
		t.Fatalf("envd holds %d processes, want 2 (both jobs found none)", len(procs))
	}
	dir := t.TempDir()
	cmds, firsts := runProcesses(t, dir, procs)
	if n := startguardtest.Starts(t, dir); n != 1 {
		t.Fatalf("the app started %d times, want once (first lines %q)", n, firsts)
	}
	startguardtest.Stop(t, dir, cmds...)
}

// After a resume E2B may list no process while the kept server still
// boots (e2b-dev/E2B#1031), so the readiness job starts the app again:
// the second start must follow the kept server, not start another.
func TestAStartAfterAResumeThatListsNothingFollowsTheKeptServer(t *testing.T) {
	srv := e2btest.NewServer(t)
	srv.SetBootDelay(time.Hour)
	lt := &listTransport{}
	p, _ := MustProvider(t, srv, noRetries, withListTransport(lt))
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
	if _, err := p.StartCommand(t.Context(), "sbx", startguardtest.App); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first, _ := runProcesses(t, dir, srv.Processes("sbx"))
	if err := p.Pause(t.Context(), "sbx"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resume(t.Context(), "sbx", time.Hour); err != nil {
		t.Fatal(err)
	}
	lt.empty = true
	if _, err := p.StartCommand(t.Context(), "sbx", startguardtest.App); err != nil {
		t.Fatal(err)
	}
	procs := srv.Processes("sbx")
	if len(procs) != 2 {
		t.Fatalf("envd holds %d processes, want 2 (the kept one and the second start)", len(procs))
	}
	second, firsts := runProcesses(t, dir, procs[1:])
	if n := startguardtest.Starts(t, dir); n != 1 {
		t.Fatalf("the app started %d times, want once (the second printed %q)", n, firsts)
	}
	startguardtest.Stop(t, dir, append(first, second...)...)
}
