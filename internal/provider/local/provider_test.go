//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

// The test binary doubles as the sandbox child and as a short-lived control
// plane, chosen by these environment variables.
const (
	envChild   = "SANDMAN_LOCALSANDBOX_CHILD"   // "1": run RunSandbox(os.Args[2:])
	envControl = "SANDMAN_LOCALSANDBOX_CONTROL" // a state dir: run controlPlane
	envServe   = "SANDMAN_LOCALSANDBOX_SERVE"   // "1": serve HTTP on $PORT (an app command)
)

// t0 is the manual clocks' start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envServe) == "1":
		serveApp()
	case os.Getenv(envChild) == "1":
		if err := RunSandbox(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(envControl) != "":
		if err := controlPlane(os.Getenv(envControl)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childCommand runs this test binary as a sandbox child.
func childCommand() (cmd, env []string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return []string{exe, "sandbox"}, []string{envChild + "=1"}
}

// controlPlane is the main of a control plane that creates a web sandbox in
// dir, writes note.txt into its files, pauses it, prints its id and exits.
func controlPlane(dir string) error {
	cmd, env := childCommand()
	p, err := New(Config{Dir: dir, Command: cmd, Env: env})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: TemplateWeb, Timeout: time.Hour, AutoPause: true,
		Metadata: map[string]string{"sandman_session_id": "sess_restart"}})
	if err != nil {
		return err
	}
	files, err := p.FilesDir(sb.ID)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(files, "note.txt"), []byte("written before the pause"), 0o644); err != nil {
		return err
	}
	if err := p.Pause(ctx, sb.ID); err != nil {
		return err
	}
	fmt.Println(sb.ID)
	return nil
}

// MustProvider returns a Provider over cfg whose children are this test
// binary; cfg.Dir defaults to a fresh temporary directory. Cleanup closes
// it and kills every sandbox left in its Dir, whatever the test did.
func MustProvider(tb testing.TB, cfg Config) *Provider {
	tb.Helper()
	if cfg.Dir == "" {
		cfg.Dir = tb.TempDir()
	}
	if cfg.Command == nil {
		cfg.Command, cfg.Env = childCommand()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
		KillSandboxes(tb, p.Dir())
		// The commands this provider started are its children: wait for
		// their reapers, whose exit files would race the removal of Dir.
		p.mu.Lock()
		var reapers []chan struct{}
		for _, r := range p.exited {
			reapers = append(reapers, r)
		}
		p.mu.Unlock()
		for _, r := range reapers {
			select {
			case <-r:
			case <-ctx.Done():
				tb.Errorf("a command's reaper did not finish: %v", ctx.Err())
				return
			}
		}
	})
	return p
}

// KillSandboxes kills the process group of every sandbox recorded in dir,
// and of each of its commands, without the provider, so no test leaves a
// process behind.
func KillSandboxes(tb testing.TB, dir string) {
	tb.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", recordName))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec record
		if json.Unmarshal(b, &rec) != nil || rec.PGID <= 1 {
			continue
		}
		if st, err := readProcStat(rec.PID); err == nil && st.StartTicks == rec.StartTicks {
			_ = syscall.Kill(-rec.PGID, syscall.SIGKILL)
		}
		// Each command runs in a process group of its own (its pid).
		for _, c := range rec.Commands {
			if st, err := readProcStat(c.PID); err == nil && st.StartTicks == c.StartTicks {
				_ = syscall.Kill(-c.PID, syscall.SIGKILL)
			}
		}
	}
}

// MustCreate creates a sandbox or fails the test.
func MustCreate(tb testing.TB, p *Provider, req lifecycle.CreateRequest) lifecycle.Sandbox {
	tb.Helper()
	sb, err := p.Create(MustContext(tb), req)
	if err != nil {
		tb.Fatalf("Create(%+v): %v", req, err)
	}
	return sb
}

// MustRecord reads a sandbox's record or fails the test.
func MustRecord(tb testing.TB, p *Provider, id string) record {
	tb.Helper()
	rec, err := p.readRecord(id)
	if err != nil {
		tb.Fatalf("read record of %s: %v", id, err)
	}
	return rec
}

// MustContext returns a context that ends with the test or after 60 seconds.
func MustContext(tb testing.TB) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// ProcState reads the state letter of pid from /proc/<pid>/stat, on its
// own (not through the provider); ok is false when there is no such process.
func ProcState(tb testing.TB, pid int) (state byte, ok bool) {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, false
	}
	if err != nil {
		tb.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0][0], true
}

// LiveGroupMembers lists the processes of group pgid that are not zombies,
// scanning all of /proc.
func LiveGroupMembers(tb testing.TB, pgid int) []int {
	tb.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		tb.Fatal(err)
	}
	var pids []int
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// HTTPGet GETs url with a client timeout and returns the body of a 200.
func HTTPGet(url string, timeout time.Duration) (string, error) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return string(b), nil
}

func TestWebSandbox(t *testing.T) {
	clock := lifecycle.NewManualClock(t0)
	p := MustProvider(t, Config{Clock: clock})
	ctx := MustContext(t)

	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateWeb, Timeout: 10 * time.Minute, AutoPause: true,
		Metadata: map[string]string{"sandman_session_id": "sess_1"}})
	if !validID(sb.ID) || sb.State != lifecycle.SandboxRunning || !strings.HasPrefix(sb.PreviewURL, "http://127.0.0.1:") {
		t.Fatalf("Create = %+v, want a running lsb_ sandbox with a loopback preview URL", sb)
	}
	if got, want := sb.ExpiresAt, t0.Add(10*time.Minute); !got.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", got, want)
	}
	rec := MustRecord(t, p, sb.ID)
	if got, want := rec.PGID, rec.PID; got != want {
		t.Errorf("pgid = %d, want the pid %d (own session and group)", got, want)
	}
	body, err := HTTPGet(sb.PreviewURL, 5*time.Second)
	if err != nil {
		t.Fatalf("GET preview after create: %v", err)
	}
	if !strings.Contains(body, sb.ID) {
		t.Errorf("index.html = %q, want it to name %s", body, sb.ID)
	}
	files, err := p.FilesDir(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "note.txt"), []byte("kept across pause"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Pause: the process is stopped and the preview's front answers 502.
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if got, _ := ProcState(t, rec.PID); got != 'T' {
		t.Errorf("process state after Pause = %c, want T", got)
	}
	if _, err := HTTPGet(sb.PreviewURL, time.Second); err == nil || !strings.Contains(err.Error(), "status 502") {
		t.Errorf("GET paused preview: %v, want the front's 502", err)
	}
	got, err := p.Get(ctx, sb.ID)
	if err != nil {
		t.Fatalf("Get paused: %v", err)
	}
	if got.State != lifecycle.SandboxPaused || !got.PausedAt.Equal(t0) || !got.ExpiresAt.IsZero() {
		t.Errorf("Get paused = %+v, want paused at %v with no expiry", got, t0)
	}
	if got, want := got.Metadata["sandman_session_id"], "sess_1"; got != want {
		t.Errorf("metadata sandman_session_id = %q, want %q", got, want)
	}
	if pr, err := p.Probe(ctx, sb.ID); err != nil || pr.State != lifecycle.SandboxPaused {
		t.Errorf("Probe paused = %+v, %v; want paused", pr, err)
	}
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Errorf("Pause of a paused sandbox: %v, want success", err)
	}

	// Resume: it answers again with its files intact.
	now := clock.Advance(time.Minute)
	res, err := p.Resume(ctx, sb.ID, 5*time.Minute)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if res.State != lifecycle.SandboxRunning || res.PreviewURL != sb.PreviewURL || !res.ExpiresAt.Equal(now.Add(5*time.Minute)) {
		t.Errorf("Resume = %+v, want running at %s until %v", res, sb.PreviewURL, now.Add(5*time.Minute))
	}
	if got, _ := ProcState(t, rec.PID); got == 'T' {
		t.Error("process state after Resume = T, want running")
	}
	if got, err := HTTPGet(res.PreviewURL+"note.txt", 5*time.Second); err != nil || got != "kept across pause" {
		t.Errorf("GET note.txt after Resume = %q, %v; want the file written before the pause", got, err)
	}
	if pr, err := p.Probe(ctx, sb.ID); err != nil || pr.State != lifecycle.SandboxRunning || !pr.ExpiresAt.Equal(res.ExpiresAt) {
		t.Errorf("Probe running = %+v, %v; want running until %v", pr, err, res.ExpiresAt)
	}

	// Kill: no process, no group, no directory.
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, ok := ProcState(t, rec.PID); ok {
		t.Errorf("process %d still in /proc after Kill", rec.PID)
	}
	if got := LiveGroupMembers(t, rec.PGID); len(got) != 0 {
		t.Errorf("process group %d still has %v after Kill", rec.PGID, got)
	}
	if _, err := os.Stat(p.sandboxDir(sb.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sandbox directory after Kill: %v, want it removed", err)
	}
	if _, err := p.Get(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Get after Kill: %v, want ErrSandboxGone", err)
	}
	if _, err := HTTPGet(sb.PreviewURL, time.Second); err == nil {
		t.Error("the preview answered after Kill")
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Errorf("Kill of a killed sandbox: %v, want success", err)
	}
}

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { KillSandboxes(t, dir) })
	ctx := MustContext(t)

	// A control plane in another process creates and pauses a sandbox, then
	// exits: its sandbox must stay paused (not get SIGHUP and SIGCONT as an
	// orphaned process group would) and be found by the next one.
	exe, _ := childCommand()
	cmd := exec.CommandContext(ctx, exe[0])
	cmd.Env = append(os.Environ(), envControl+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("control plane: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("control plane: %v", err)
	}
	id := strings.TrimSpace(string(out))

	p := MustProvider(t, Config{Dir: dir})
	rec := MustRecord(t, p, id)
	if got, _ := ProcState(t, rec.PID); got != 'T' {
		t.Fatalf("process state after the control plane exited = %c, want T", got)
	}
	sb, err := p.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get after restart: %v", err)
	}
	if got, want := sb.State, lifecycle.SandboxPaused; got != want {
		t.Errorf("State after restart = %s, want %s", got, want)
	}
	if got, want := sb.Metadata["sandman_session_id"], "sess_restart"; got != want {
		t.Errorf("metadata after restart = %q, want %q", got, want)
	}
	page, err := p.List(ctx, lifecycle.ListRequest{})
	if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != id {
		t.Errorf("List after restart = %+v, %v; want only %s", page, err, id)
	}

	res, err := p.Resume(ctx, id, time.Minute)
	if err != nil {
		t.Fatalf("Resume after restart: %v", err)
	}
	if got, err := HTTPGet(res.PreviewURL+"note.txt", 5*time.Second); err != nil || got != "written before the pause" {
		t.Errorf("GET note.txt after restart and Resume = %q, %v", got, err)
	}

	// Not this process's child: Kill waits until it is gone from /proc or
	// a zombie for its new parent to reap.
	if err := p.Kill(ctx, id); err != nil {
		t.Fatalf("Kill after restart: %v", err)
	}
	if st, ok := ProcState(t, rec.PID); ok && st != 'Z' {
		t.Errorf("process state after Kill = %c, want gone or a zombie", st)
	}
	if got := LiveGroupMembers(t, rec.PGID); len(got) != 0 {
		t.Errorf("process group %d still has %v after Kill", rec.PGID, got)
	}
	if _, err := os.Stat(p.sandboxDir(id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("sandbox directory after Kill: %v, want it removed", err)
	}
}

// ProcEnviron reads the environment of pid from /proc/<pid>/environ, on its
// own (not through the provider), as a map of name to value.
func ProcEnviron(tb testing.TB, pid int) map[string]string {
	tb.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		tb.Fatalf("read /proc/%d/environ: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			tb.Errorf("the environment of %d has %s twice", pid, k)
		}
		env[k] = v
	}
	return env
}

// TestChildEnvironment: a sandbox child gets only the allow-listed variables
// of the control plane and Config.Env, never the control plane's secrets.
// Not parallel: it sets this process's environment.
func TestChildEnvironment(t *testing.T) {
	secrets := []string{"SANDMAN_WEBHOOK_SECRET", "SANDMAN_PROVIDER_API_KEY", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}
	for _, k := range secrets {
		t.Setenv(k, "secret-"+k)
	}
	t.Setenv("TZ", "UTC")
	t.Setenv("LANG", "en_US.UTF-8")
	cmd, env := childCommand()
	p := MustProvider(t, Config{Command: cmd, Env: append(env, "LANG=C.UTF-8", "SANDBOX_ONLY=1")})
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	got := ProcEnviron(t, MustRecord(t, p, sb.ID).PID)

	for _, k := range secrets {
		if v, ok := got[k]; ok {
			t.Errorf("the child has %s=%q, want it absent", k, v)
		}
	}
	want := map[string]string{
		envChild:       "1",       // Config.Env: the test binary runs as the child
		"SANDBOX_ONLY": "1",       // Config.Env
		"TZ":           "UTC",     // allow-listed, from this process
		"LANG":         "C.UTF-8", // Config.Env wins over this process's
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} { // allow-listed, when set
		if v, ok := os.LookupEnv(k); ok {
			want[k] = v
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("the child's environment = %v, want exactly %v", got, want)
	}
}

func TestGoneWhenKilledOutside(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	rec := MustRecord(t, p, sb.ID)
	p.mu.Lock()
	exited := p.exited[rec.PID]
	p.mu.Unlock()
	if exited == nil {
		t.Fatal("the provider does not track its child")
	}

	if err := syscall.Kill(rec.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		t.Fatal("the child was not reaped")
	}

	if _, err := p.Get(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Get: %v, want ErrSandboxGone", err)
	}
	if _, err := p.Probe(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Probe: %v, want ErrSandboxGone", err)
	}
	if err := p.Pause(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Pause: %v, want ErrSandboxGone", err)
	}
	if _, err := p.Resume(ctx, sb.ID, time.Minute); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Resume: %v, want ErrSandboxGone", err)
	}
	if err := p.SetTimeout(ctx, sb.ID, time.Minute); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("SetTimeout: %v, want ErrSandboxGone", err)
	}
	if page, err := p.List(ctx, lifecycle.ListRequest{}); err != nil || len(page.Sandboxes) != 0 {
		t.Errorf("List = %+v, %v; want no sandboxes", page, err)
	}
	if err := p.EnforceTimeouts(ctx, time.Now()); err != nil {
		t.Errorf("EnforceTimeouts: %v", err)
	}
	if _, err := os.Stat(p.sandboxDir(sb.ID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("directory of a dead sandbox after EnforceTimeouts: %v, want it removed", err)
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Errorf("Kill of a gone sandbox: %v, want success", err)
	}
}

func TestEnforceTimeouts(t *testing.T) {
	hooks := MustHookServer(t)
	clock := lifecycle.NewManualClock(t0)
	p := MustProvider(t, Config{Clock: clock, WebhookURL: hooks.URL, WebhookSecret: "s"})
	ctx := MustContext(t)

	pausing := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute, AutoPause: true})
	killing := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute})
	pausingRec, killingRec := MustRecord(t, p, pausing.ID), MustRecord(t, p, killing.ID)
	if err := p.SetTimeout(ctx, pausing.ID, 2*time.Minute); err != nil {
		t.Fatalf("SetTimeout: %v", err)
	}

	// At one minute only the sandbox without AutoPause expires: killed.
	if err := p.EnforceTimeouts(ctx, clock.Advance(time.Minute)); err != nil {
		t.Fatalf("EnforceTimeouts at 1m: %v", err)
	}
	if _, err := p.Get(ctx, killing.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Get of the expired sandbox without AutoPause: %v, want ErrSandboxGone", err)
	}
	if got := LiveGroupMembers(t, killingRec.PGID); len(got) != 0 {
		t.Errorf("process group of the expired sandbox still has %v", got)
	}
	if got, _ := ProcState(t, pausingRec.PID); got == 'T' {
		t.Error("the sandbox whose timeout was extended was paused at 1m")
	}

	// At two minutes the extended one expires: paused, not killed.
	if err := p.EnforceTimeouts(ctx, clock.Advance(time.Minute)); err != nil {
		t.Fatalf("EnforceTimeouts at 2m: %v", err)
	}
	if got, _ := ProcState(t, pausingRec.PID); got != 'T' {
		t.Errorf("process state of the expired AutoPause sandbox = %c, want T", got)
	}
	sb, err := p.Get(ctx, pausing.ID)
	if err != nil || sb.State != lifecycle.SandboxPaused || !sb.PausedAt.Equal(clock.Now()) {
		t.Errorf("Get of the expired AutoPause sandbox = %+v, %v; want paused at %v", sb, err, clock.Now())
	}
	// A paused sandbox is not timed: a later tick leaves it alone.
	if err := p.EnforceTimeouts(ctx, clock.Advance(time.Hour)); err != nil {
		t.Fatalf("EnforceTimeouts at 1h2m: %v", err)
	}
	if _, err := p.Get(ctx, pausing.ID); err != nil {
		t.Errorf("Get of the paused sandbox after another tick: %v", err)
	}

	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, d := range hooks.Deliveries() {
		var ev e2bhook.Body
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Fatal(err)
		}
		reasons[ev.SandboxID+" "+ev.Type] = ev.EventData.KillReason
	}
	if got, ok := reasons[killing.ID+" "+e2bhook.TypeKilled]; !ok || got != e2bhook.KillTimeout {
		t.Errorf("killed webhook of the expired sandbox: kill_reason %q (sent %v), want %q", got, ok, e2bhook.KillTimeout)
	}
	if _, ok := reasons[pausing.ID+" "+e2bhook.TypePaused]; !ok {
		t.Errorf("no paused webhook for the expired AutoPause sandbox; got %v", slices.Collect(maps.Keys(reasons)))
	}
}

func TestRunPausesExpired(t *testing.T) {
	hooks := MustHookServer(t)
	clock := lifecycle.NewManualClock(t0)
	p := MustProvider(t, Config{Clock: clock, WebhookURL: hooks.URL, WebhookSecret: "s", TickInterval: 10 * time.Millisecond})
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Minute, AutoPause: true})
	clock.Advance(time.Minute + time.Second)

	ctx, cancel := context.WithCancel(MustContext(t))
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	for paused := false; !paused; {
		select {
		case ev := <-hooks.events:
			paused = ev.Type == e2bhook.TypePaused && ev.SandboxID == sb.ID
		case <-deadline:
			t.Fatal("Run did not pause the expired sandbox")
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run = %v, want nil after its context ends", err)
	}
	if got, _ := ProcState(t, MustRecord(t, p, sb.ID).PID); got != 'T' {
		t.Errorf("process state after Run paused it = %c, want T", got)
	}
}

func TestWebhooks(t *testing.T) {
	const secret = "whsec_local"
	hooks := MustHookServer(t)
	clock := lifecycle.NewManualClock(t0)
	p := MustProvider(t, Config{Clock: clock, WebhookURL: hooks.URL, WebhookSecret: secret})
	ctx := MustContext(t)
	md := map[string]string{"sandman_session_id": "sess_hook", "app": "demo"}

	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Timeout: time.Hour, Metadata: md})
	pausedAt := clock.Advance(90 * time.Second)
	// Concurrent pauses: all succeed, one pauses, so one paused event.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := p.Pause(ctx, sb.ID); err != nil {
				t.Errorf("Pause: %v", err)
			}
		})
	}
	wg.Wait()
	resumedAt := clock.Advance(time.Minute)
	if _, err := p.Resume(ctx, sb.ID, time.Hour); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	killedAt := clock.Advance(30 * time.Second)
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}

	wantAt := map[string]time.Time{e2bhook.TypeCreated: t0, e2bhook.TypePaused: pausedAt, e2bhook.TypeResumed: resumedAt, e2bhook.TypeKilled: killedAt}
	wantKeys := []string{"event_category", "event_data", "event_label", "id", "sandbox_build_id", "sandbox_execution_id",
		"sandbox_id", "sandbox_team_id", "sandbox_template_id", "timestamp", "type", "version"}
	// E2B's event_label of each type (docs/providers/e2b.md).
	wantLabel := map[string]string{e2bhook.TypeCreated: "create", e2bhook.TypePaused: "pause", e2bhook.TypeResumed: "resume", e2bhook.TypeKilled: "kill"}
	byType := map[string]e2bhook.Body{}
	eventIDs := map[string]bool{}
	for _, d := range hooks.Deliveries() {
		if got, want := d.Header.Get("e2b-signature"), e2bSignature(secret, d.Body); got != want {
			t.Errorf("e2b-signature = %q, want %q (sha256 of secret+body)", got, want)
		}
		for h, want := range map[string]string{"e2b-signature-version": "v1", "e2b-webhook-id": DefaultWebhookID, "Content-Type": "application/json"} {
			if got := d.Header.Get(h); got != want {
				t.Errorf("header %s = %q, want %q", h, got, want)
			}
		}
		if d.Header.Get("e2b-delivery-id") == "" {
			t.Error("no e2b-delivery-id header")
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(d.Body, &raw); err != nil {
			t.Fatalf("body %s: %v", d.Body, err)
		}
		if got := slices.Sorted(maps.Keys(raw)); !slices.Equal(got, wantKeys) {
			t.Errorf("body fields = %v, want %v", got, wantKeys)
		}
		var ev e2bhook.Body
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Fatal(err)
		}
		if _, dup := byType[ev.Type]; dup {
			t.Errorf("two %s events", ev.Type)
		}
		byType[ev.Type] = ev
		eventIDs[ev.ID] = true
		ts, err := time.Parse(time.RFC3339, ev.Timestamp)
		if err != nil || !ts.Equal(wantAt[ev.Type]) {
			t.Errorf("%s timestamp = %q, want %v", ev.Type, ev.Timestamp, wantAt[ev.Type])
		}
		if ev.Version != "v2" || ev.EventCategory != "lifecycle" || ev.EventLabel != wantLabel[ev.Type] ||
			ev.SandboxID != sb.ID || ev.SandboxTemplateID != TemplateBase || ev.SandboxTeamID != DefaultTeamID ||
			ev.SandboxExecutionID == "" || ev.SandboxBuildID == "" {
			t.Errorf("%s event = %+v", ev.Type, ev)
		}
		if !maps.Equal(ev.EventData.SandboxMetadata, md) {
			t.Errorf("%s sandbox_metadata = %v, want %v", ev.Type, ev.EventData.SandboxMetadata, md)
		}
	}
	if got, want := slices.Sorted(maps.Keys(byType)), []string{e2bhook.TypeCreated, e2bhook.TypeKilled, e2bhook.TypePaused, e2bhook.TypeResumed}; !slices.Equal(got, want) {
		t.Fatalf("event types = %v, want %v", got, want)
	}
	if got, want := len(eventIDs), 4; got != want {
		t.Errorf("distinct event ids = %d, want %d", got, want)
	}
	if ex := byType[e2bhook.TypePaused].EventData.Execution; ex == nil || ex.ExecutionTime != 90_000 {
		t.Errorf("paused execution = %+v, want execution_time 90000 ms", ex)
	}
	if ex := byType[e2bhook.TypeKilled].EventData.Execution; ex == nil || ex.ExecutionTime != 30_000 {
		t.Errorf("killed execution = %+v, want execution_time 30000 ms (since the resume)", ex)
	}
	if got, want := byType[e2bhook.TypeKilled].EventData.KillReason, e2bhook.KillRequest; got != want {
		t.Errorf("kill_reason = %q, want %q", got, want)
	}
	if byType[e2bhook.TypeCreated].EventData.Execution != nil || byType[e2bhook.TypeCreated].EventData.KillReason != "" {
		t.Errorf("created event_data = %+v, want only sandbox_metadata", byType[e2bhook.TypeCreated].EventData)
	}
	if byType[e2bhook.TypeResumed].SandboxExecutionID == byType[e2bhook.TypeCreated].SandboxExecutionID {
		t.Error("resume kept the execution id, want a new execution")
	}
}

func TestList(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	var ids []string
	for _, group := range []string{"a", "a", "b"} {
		ids = append(ids, MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase, Metadata: map[string]string{"group": group}}).ID)
	}
	groupB := ids[2]
	if err := p.Pause(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	pausedID := ids[0]
	slices.Sort(ids)

	listIDs := func(t *testing.T, req lifecycle.ListRequest) []string {
		t.Helper()
		var got []string
		for pages := 0; ; pages++ {
			if pages > 3 {
				t.Fatal("too many pages")
			}
			page, err := p.List(ctx, req)
			if err != nil {
				t.Fatalf("List(%+v): %v", req, err)
			}
			if req.Limit > 0 && len(page.Sandboxes) > req.Limit {
				t.Fatalf("page of %d, limit %d", len(page.Sandboxes), req.Limit)
			}
			for _, sb := range page.Sandboxes {
				got = append(got, sb.ID)
			}
			if page.NextToken == "" {
				return got
			}
			req.PageToken = page.NextToken
		}
	}
	tests := []struct {
		name string
		req  lifecycle.ListRequest
		want []string
	}{
		{"All", lifecycle.ListRequest{}, ids},
		{"Paged", lifecycle.ListRequest{Limit: 2}, ids},
		{"PageOfOne", lifecycle.ListRequest{Limit: 1}, ids},
		{"Paused", lifecycle.ListRequest{States: []lifecycle.SandboxState{lifecycle.SandboxPaused}}, []string{pausedID}},
		{"Metadata", lifecycle.ListRequest{Metadata: map[string]string{"group": "b"}}, []string{groupB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listIDs(t, tt.req); !slices.Equal(got, tt.want) {
				t.Errorf("ids = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("ExactPageHasNoNextToken", func(t *testing.T) {
		page, err := p.List(ctx, lifecycle.ListRequest{Limit: 3})
		if err != nil || len(page.Sandboxes) != 3 || page.NextToken != "" {
			t.Errorf("List(limit 3) = %d sandboxes, token %q, %v; want 3 and no token", len(page.Sandboxes), page.NextToken, err)
		}
	})
	t.Run("ErrInvalidToken", func(t *testing.T) {
		if _, err := p.List(ctx, lifecycle.ListRequest{PageToken: "../x"}); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
			t.Errorf("List with a bad token: %v, want invalid", err)
		}
	})
}

func TestProbe(t *testing.T) {
	p := MustProvider(t, Config{ProbeTimeout: time.Second})
	ctx := MustContext(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateWeb})
	pr, err := p.Probe(ctx, sb.ID)
	if err != nil || pr.State != lifecycle.SandboxRunning || !pr.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Fatalf("Probe = %+v, %v; want running until %v", pr, err, sb.ExpiresAt)
	}

	// Point the record at a port nobody listens on: running, not answering.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := MustRecord(t, p, sb.ID)
	rec.Port = ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	if err := p.writeRecord(rec); err != nil {
		t.Fatal(err)
	}
	_, err = p.Probe(ctx, sb.ID)
	if !errors.Is(err, lifecycle.ErrProviderTransient) {
		t.Errorf("Probe of a running sandbox that does not answer: %v, want ErrProviderTransient", err)
	}
	if got, want := lifecycle.RetryAfter(err), time.Second; got != want {
		t.Errorf("RetryAfter = %v, want %v", got, want)
	}

	// A paused one is probed without HTTP, so the dead port does not matter.
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if pr, err := p.Probe(ctx, sb.ID); err != nil || pr.State != lifecycle.SandboxPaused {
		t.Errorf("Probe paused = %+v, %v; want paused", pr, err)
	}
}

func TestInvalidInput(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	id := newID()
	tests := []struct {
		name string
		call func() error
	}{
		{"UnknownTemplate", func() error {
			_, err := p.Create(ctx, lifecycle.CreateRequest{Template: "python"})
			return err
		}},
		{"TimeoutAboveMax", func() error {
			_, err := p.Create(ctx, lifecycle.CreateRequest{Template: TemplateBase, Timeout: 25 * time.Hour})
			return err
		}},
		{"NegativeTimeout", func() error {
			_, err := p.Create(ctx, lifecycle.CreateRequest{Template: TemplateBase, Timeout: -time.Second})
			return err
		}},
		{"ResumeTimeoutAboveMax", func() error { _, err := p.Resume(ctx, id, 25*time.Hour); return err }},
		{"SetTimeoutZero", func() error { return p.SetTimeout(ctx, id, 0) }},
		{"NegativeLimit", func() error { _, err := p.List(ctx, lifecycle.ListRequest{Limit: -1}); return err }},
		{"UnknownState", func() error {
			_, err := p.List(ctx, lifecycle.ListRequest{States: []lifecycle.SandboxState{"killed"}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("error = %v, want code invalid", err)
			}
		})
	}
	entries, err := os.ReadDir(p.Dir())
	if err != nil || len(entries) != 0 {
		t.Errorf("state folder after invalid calls = %d entries, %v; want empty", len(entries), err)
	}
	if _, err := p.Get(ctx, "lsb_../../etc"); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("Get of a malformed id: %v, want ErrSandboxGone", err)
	}
}

func TestCreateChildFails(t *testing.T) {
	// /bin/false exits at once: a web sandbox never serves, so Create fails
	// and leaves nothing behind.
	p := MustProvider(t, Config{Command: []string{"/bin/false"}})
	if _, err := p.Create(MustContext(t), lifecycle.CreateRequest{Template: TemplateWeb}); err == nil {
		t.Fatal("Create with a child that exits succeeded")
	}
	entries, err := os.ReadDir(p.Dir())
	if err != nil || len(entries) != 0 {
		t.Errorf("state folder after a failed Create = %d entries, %v; want empty", len(entries), err)
	}
}
