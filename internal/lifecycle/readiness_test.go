package lifecycle_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// jobLog is a lifecycle.ReadinessJobs that records the jobs asked for.
type jobLog struct {
	mu  sync.Mutex
	ids []string
}

func (j *jobLog) Enqueue(_ context.Context, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ids = append(j.ids, id)
	return nil
}

func (j *jobLog) count(id string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, x := range j.ids {
		if x == id {
			n++
		}
	}
	return n
}

// readyEnv is a service whose fake provider runs commands that listen after
// boot, whose probes reach the fake's in-memory preview, and whose sleeps
// advance the clock.
func readyEnv(t *testing.T, fc fake.Config, edit ...func(*lifecycle.Config)) (*env, *jobLog) {
	t.Helper()
	jobs := &jobLog{}
	e := newEnv(t, append([]func(*lifecycle.Config){func(c *lifecycle.Config) {
		fc.Clock = c.Clock
		p := fake.New(fc)
		c.Provider = p
		c.ReadinessJobs = jobs
		c.ReadyHTTP = &http.Client{Transport: p.Preview()}
		c.Sleep = func(ctx context.Context, d time.Duration) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			c.Clock.(*lifecycle.ManualClock).Advance(d)
			return nil
		}
	}}, edit...)...)
	e.fake = e.svc.Config().Provider.(*fake.Provider)
	return e, jobs
}

func appInput(line string, timeoutS int64) *lifecycle.AppInput {
	port := 3000
	return &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeoutS}
}

func readinessEvents(evs []lifecycle.Event, id string) []string {
	var out []string
	for _, ev := range evs {
		if ev.SessionID == id && ev.IsReadiness() {
			out = append(out, ev.DetailType()+" "+ev.EventID)
		}
	}
	return out
}

func TestCreateWithAppStartsReadinessAndQueuesAJob(t *testing.T) {
	e, jobs := readyEnv(t, fake.Config{})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	if sess.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("readiness after create = %q, want starting", sess.Readiness)
	}
	if got, want := sess.PreviewURL, "https://3000-"+sess.SandboxID+".fake.test"; got != want {
		t.Errorf("preview_url = %q, want the app port's %q", got, want)
	}
	if n := jobs.count(sess.ID); n != 1 {
		t.Errorf("readiness jobs queued = %d, want 1", n)
	}
	plain := e.mustCreate(t, lifecycle.CreateInput{})
	if plain.Readiness != "" || jobs.count(plain.ID) != 0 {
		t.Errorf("a session without an app has readiness %q and %d jobs, want none", plain.Readiness, jobs.count(plain.ID))
	}
}

func TestCreateRefusesABadAppSpec(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{})
	port, bigPort, cmd, empty, badPath := 3000, 70000, "npm start", "  ", "health"
	var zero, huge int64 = 0, 1801
	cases := map[string]struct {
		in   lifecycle.AppInput
		want string
	}{
		"no port":          {lifecycle.AppInput{StartCommand: &cmd}, "app.port"},
		"port too big":     {lifecycle.AppInput{Port: &bigPort, StartCommand: &cmd}, "app.port"},
		"no command":       {lifecycle.AppInput{Port: &port}, "app.start_command"},
		"blank command":    {lifecycle.AppInput{Port: &port, StartCommand: &empty}, "app.start_command"},
		"relative path":    {lifecycle.AppInput{Port: &port, StartCommand: &cmd, ReadyPath: &badPath}, "app.ready_path"},
		"zero timeout":     {lifecycle.AppInput{Port: &port, StartCommand: &cmd, ReadyTimeoutSeconds: &zero}, "app.ready_timeout_seconds"},
		"timeout too long": {lifecycle.AppInput{Port: &port, StartCommand: &cmd, ReadyTimeoutSeconds: &huge}, "app.ready_timeout_seconds"},
		"bad env name":     {lifecycle.AppInput{Port: &port, StartCommand: &cmd, Env: map[string]string{"1X": "y"}}, "app.env"},
		"too large in all": {lifecycle.AppInput{Port: &port, StartCommand: &cmd, Env: map[string]string{
			"A": strings.Repeat("a", 4000), "B": strings.Repeat("b", 4000), "C": strings.Repeat("c", 400)}}, "at most 8192"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base", App: &c.in})
			if !lifecycle.IsCode(err, lifecycle.CodeInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("create = %v, want invalid naming %s", err, c.want)
			}
		})
	}
}

func TestTemplateAppIsTheDefaultAndTheSessionsFieldsWin(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{}, func(c *lifecycle.Config) {
		c.TemplateApps = map[string]*lifecycle.AppSpec{"node": {Port: 5173, StartCommand: "npm run dev",
			Env: map[string]string{"A": "1", "B": "1"}, ReadyPath: "/", ReadyTimeout: time.Minute}}
	})
	def := e.mustCreate(t, lifecycle.CreateInput{Template: "node"})
	if def.App == nil || def.App.Port != 5173 || def.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("create of the template without app: app %+v readiness %q, want the template's", def.App, def.Readiness)
	}
	port := 8080
	own := e.mustCreate(t, lifecycle.CreateInput{Template: "node", App: &lifecycle.AppInput{Port: &port, Env: map[string]string{"B": "2"}}})
	if own.App.Port != 8080 || own.App.StartCommand != "npm run dev" || own.App.Env["A"] != "1" || own.App.Env["B"] != "2" {
		t.Errorf("merged app = %+v, want port 8080, the template's command, env A=1 B=2", own.App)
	}
}

func TestBringUpStartsTheCommandAndRecordsReady(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{BootDelay: 3 * time.Second})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	out, err := e.svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("BringUp = %q, %v; want ready", out, err)
	}
	got := e.mustGet(t, sess.ID)
	if got.Readiness != lifecycle.ReadinessReady || got.ReadyAt.Before(svcT0.Add(3*time.Second)) {
		t.Errorf("readiness %q ready_at %v, want ready no earlier than the boot delay", got.Readiness, got.ReadyAt)
	}
	if e.fake.StartCalls() != 1 {
		t.Errorf("commands started = %d, want 1", e.fake.StartCalls())
	}
	want := []string{"Session Ready " + lifecycle.EventID(sess.ID, got.Version)}
	if evs := readinessEvents(e.events.events, sess.ID); strings.Join(evs, ",") != strings.Join(want, ",") {
		t.Errorf("readiness events = %v, want %v", evs, want)
	}
	if out, _ := e.svc.BringUp(t.Context(), sess.ID); out != lifecycle.BringUpNothing {
		t.Errorf("a second job on a ready session = %q, want nothing", out)
	}
}

// TestBringUpProbesAStartedAppAtTheProbeBackoff: once the app command has
// started, the next probe comes after the probe backoff (100 ms), not the
// wait of a start the provider refused (1 s).
func TestBringUpProbesAStartedAppAtTheProbeBackoff(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{BootDelay: 50 * time.Millisecond})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	start := e.mustGet(t, sess.ID).StateChangedAt
	if out, err := e.svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("BringUp = %q, %v; want ready", out, err)
	}
	if got := e.mustGet(t, sess.ID).ReadyAt.Sub(start); got != 100*time.Millisecond {
		t.Errorf("ready %v after the start, want 100 ms (the first probe found it booting, the second after the probe backoff)", got)
	}
}

func TestBringUpFailsWhenTheCommandExits(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("exit 3", 60)})
	out, err := e.svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpFailed {
		t.Fatalf("BringUp = %q, %v; want failed", out, err)
	}
	got := e.mustGet(t, sess.ID)
	if got.Readiness != lifecycle.ReadinessFailed || !strings.Contains(got.ReadinessDetail, "code 3") ||
		!strings.Contains(got.ReadinessDetail, "exit 3") {
		t.Errorf("readiness %q detail %q, want failed with the exit code and the output", got.Readiness, got.ReadinessDetail)
	}
	if evs := readinessEvents(e.events.events, sess.ID); len(evs) != 1 || !strings.HasPrefix(evs[0], "Session Not Ready ") {
		t.Errorf("readiness events = %v, want one Session Not Ready", evs)
	}
}

func TestBringUpFailsAfterTheReadyTimeout(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("sleep 1000 --no-listen", 5)})
	out, err := e.svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpFailed {
		t.Fatalf("BringUp = %q, %v; want failed", out, err)
	}
	got := e.mustGet(t, sess.ID)
	if !strings.Contains(got.ReadinessDetail, "within 5 s") || !strings.Contains(got.ReadinessDetail, "nothing listens") {
		t.Errorf("detail %q, want the timeout and the provider's port-closed answer", got.ReadinessDetail)
	}
	if at := e.clock.Now(); at.Before(svcT0.Add(5 * time.Second)) {
		t.Errorf("failed at %v, before the 5 s timeout", at)
	}
}

func TestResumeResetsReadinessToStarting(t *testing.T) {
	for _, c := range []struct {
		name       string
		drop       bool
		wantStarts int
	}{{"ProviderKeepsProcesses", false, 1}, {"ProviderLosesProcesses", true, 2}} {
		t.Run(c.name, func(t *testing.T) {
			e, jobs := readyEnv(t, fake.Config{DropProcesses: c.drop, BootDelay: time.Second})
			sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
			if out, err := e.svc.BringUp(t.Context(), sess.ID); out != lifecycle.BringUpReady {
				t.Fatalf("first BringUp = %q, %v", out, err)
			}
			if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
				t.Fatal(err)
			}
			if got := e.mustGet(t, sess.ID); got.Readiness != "" {
				t.Errorf("paused session has readiness %q, want none", got.Readiness)
			}
			resumed, err := e.svc.Resume(t.Context(), acct, sess.ID)
			if err != nil {
				t.Fatal(err)
			}
			if resumed.Readiness != lifecycle.ReadinessStarting || !resumed.ReadyAt.IsZero() {
				t.Fatalf("after resume readiness %q ready_at %v, want starting and none", resumed.Readiness, resumed.ReadyAt)
			}
			if n := jobs.count(sess.ID); n != 2 {
				t.Errorf("jobs queued = %d, want 2 (create and resume)", n)
			}
			if out, err := e.svc.BringUp(t.Context(), sess.ID); out != lifecycle.BringUpReady {
				t.Fatalf("BringUp after resume = %q, %v", out, err)
			}
			if got := e.fake.StartCalls(); got != c.wantStarts {
				t.Errorf("commands started = %d, want %d", got, c.wantStarts)
			}
			if evs := readinessEvents(e.events.events, sess.ID); len(evs) != 2 {
				t.Errorf("readiness events = %v, want Session Ready twice", evs)
			}
		})
	}
}

func TestBringUpRedeliveredAfterACrashStartsOneServer(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{BootDelay: 2 * time.Second})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	// The first job dies at its first wait: after it started the command,
	// before it recorded ready.
	ctx, cancel := context.WithCancel(t.Context())
	cfg := e.svc.Config()
	cfg.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	dying := lifecycle.NewService(cfg)
	if out, err := dying.BringUp(ctx, sess.ID); err == nil {
		t.Fatalf("the crashing job returned %q without an error", out)
	}
	if e.fake.StartCalls() != 1 || e.mustGet(t, sess.ID).Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("after the crash: %d starts, readiness %q; want 1 and starting", e.fake.StartCalls(), e.mustGet(t, sess.ID).Readiness)
	}
	out, err := e.svc.BringUp(t.Context(), sess.ID) // the redelivery
	if err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("redelivered BringUp = %q, %v; want ready", out, err)
	}
	if n := e.fake.StartCalls(); n != 1 {
		t.Errorf("servers started = %d, want 1", n)
	}
}

func TestBringUpNeverProbesAPausedSandbox(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	out, err := e.svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpNothing {
		t.Fatalf("BringUp of a paused session = %q, %v; want nothing", out, err)
	}
	if n := e.fake.PreviewHits(); n != 0 {
		t.Errorf("preview probed %d times while paused", n)
	}
	if st := e.sandboxState(sess.SandboxID); st != lifecycle.SandboxPaused {
		t.Errorf("sandbox is %s, want still paused", st)
	}
}

func TestWaitReadyHoldsUntilReadyOrTheBound(t *testing.T) {
	e, _ := readyEnv(t, fake.Config{})
	sess := e.mustCreate(t, lifecycle.CreateInput{App: appInput("npm run dev", 60)})
	got, err := e.svc.WaitReady(t.Context(), acct, sess.ID, time.Hour)
	if err != nil || got.Readiness != lifecycle.ReadinessStarting {
		t.Fatalf("WaitReady on a starting session = %+v, %v", got, err)
	}
	if held := e.clock.Now().Sub(svcT0); held != lifecycle.MaxWaitReady {
		t.Errorf("held %v, want the %v bound", held, lifecycle.MaxWaitReady)
	}
	if _, err := e.svc.BringUp(t.Context(), sess.ID); err != nil {
		t.Fatal(err)
	}
	before := e.clock.Now()
	if got, _ := e.svc.WaitReady(t.Context(), acct, sess.ID, time.Hour); got.Readiness != lifecycle.ReadinessReady || !e.clock.Now().Equal(before) {
		t.Errorf("WaitReady on a ready session: readiness %q, held %v; want ready at once", got.Readiness, e.clock.Now().Sub(before))
	}
}
