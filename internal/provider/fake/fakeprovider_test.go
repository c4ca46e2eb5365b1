package fake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// MustNew returns a fake on a manual clock set to t0.
func MustNew(tb testing.TB, opts ...func(*fake.Config)) (*fake.Provider, *lifecycle.ManualClock) {
	tb.Helper()
	clock := lifecycle.NewManualClock(t0)
	cfg := fake.Config{Clock: clock}
	for _, o := range opts {
		o(&cfg)
	}
	return fake.New(cfg), clock
}

// MustCreate creates a sandbox and kills it when the test ends.
func MustCreate(tb testing.TB, p *fake.Provider, req lifecycle.CreateRequest) lifecycle.Sandbox {
	tb.Helper()
	sb, err := p.Create(context.Background(), req)
	if err != nil {
		tb.Fatalf("create: %v", err)
	}
	tb.Cleanup(func() { _ = p.Kill(context.Background(), sb.ID) })
	return sb
}

func TestName(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		if got, want := fake.New(fake.Config{}).Name(), "fake"; got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
	})
	t.Run("ConfigName", func(t *testing.T) {
		if got, want := fake.New(fake.Config{Name: "e2b"}).Name(), "e2b"; got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
	})
}

func TestCreate(t *testing.T) {
	p, _ := MustNew(t)
	md := map[string]string{"sandman_session_id": "ses_1"}
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, Metadata: md})
	md["sandman_session_id"] = "changed"

	if got, want := sb.ID, "fake_1"; got != want {
		t.Errorf("ID = %q, want %q", got, want)
	}
	if got, want := sb.PreviewURL, "https://3000-fake_1.fake.test"; got != want {
		t.Errorf("PreviewURL = %q, want %q", got, want)
	}
	if got, want := sb.State, lifecycle.SandboxRunning; got != want {
		t.Errorf("State = %q, want %q", got, want)
	}
	if got, want := sb.ExpiresAt, t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v", got, want)
	}
	if got, want := sb.StartedAt, t0; !got.Equal(want) {
		t.Errorf("StartedAt = %v, want %v", got, want)
	}
	got, ok := p.Sandbox(sb.ID)
	if !ok {
		t.Fatalf("Sandbox(%s) not found", sb.ID)
	}
	if got, want := got.Metadata["sandman_session_id"], "ses_1"; got != want {
		t.Errorf("stored metadata = %q, want %q (the caller's map must not alias)", got, want)
	}
	if got, want := got.Template, "base"; got != want {
		t.Errorf("Template = %q, want %q", got, want)
	}
	if second := MustCreate(t, p, lifecycle.CreateRequest{}); second.ID != "fake_2" || !second.ExpiresAt.Equal(t0.Add(fake.DefaultTimeout)) {
		t.Errorf("second sandbox = %s expiring %v, want fake_2 expiring %v", second.ID, second.ExpiresAt, t0.Add(fake.DefaultTimeout))
	}
}

func TestPause(t *testing.T) {
	ctx := context.Background()
	t.Run("Running", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		now := clock.Advance(time.Second)
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("pause: %v", err)
		}
		got, _ := p.Sandbox(sb.ID)
		if got.State != lifecycle.SandboxPaused || !got.PausedAt.Equal(now) || !got.ExpiresAt.IsZero() {
			t.Errorf("after pause: state %s paused_at %v expires_at %v, want paused at %v with no expiry", got.State, got.PausedAt, got.ExpiresAt, now)
		}
	})
	t.Run("AlreadyPaused", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("first pause: %v", err)
		}
		clock.Advance(time.Minute)
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("second pause: %v, want success", err)
		}
		if got, _ := p.Sandbox(sb.ID); !got.PausedAt.Equal(t0) {
			t.Errorf("PausedAt = %v, want the first pause's %v", got.PausedAt, t0)
		}
	})
}

func TestResume(t *testing.T) {
	ctx := context.Background()
	t.Run("Paused", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("pause: %v", err)
		}
		now := clock.Advance(time.Hour)
		got, err := p.Resume(ctx, sb.ID, 10*time.Minute)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if got.State != lifecycle.SandboxRunning || !got.ExpiresAt.Equal(now.Add(10*time.Minute)) || !got.PausedAt.IsZero() {
			t.Errorf("resumed: state %s expires_at %v paused_at %v, want running until %v", got.State, got.ExpiresAt, got.PausedAt, now.Add(10*time.Minute))
		}
		if got, want := got.PreviewURL, fake.PreviewURL(sb.ID); got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
	})
	t.Run("RunningExtends", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Minute})
		now := clock.Advance(30 * time.Second)
		got, err := p.Resume(ctx, sb.ID, 5*time.Minute)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if want := now.Add(5 * time.Minute); !got.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt = %v, want %v", got.ExpiresAt, want)
		}
	})
	t.Run("RunningNeverShortens", func(t *testing.T) {
		p, _ := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Hour})
		got, err := p.Resume(ctx, sb.ID, time.Minute)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if want := t0.Add(time.Hour); !got.ExpiresAt.Equal(want) {
			t.Errorf("ExpiresAt = %v, want %v (connect only extends)", got.ExpiresAt, want)
		}
	})
}

func TestSetTimeout(t *testing.T) {
	ctx := context.Background()
	p, clock := MustNew(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Hour})
	now := clock.Advance(time.Minute)
	if err := p.SetTimeout(ctx, sb.ID, 2*time.Minute); err != nil {
		t.Fatalf("set timeout: %v", err)
	}
	probe, err := p.Probe(ctx, sb.ID)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if got, want := probe.ExpiresAt, now.Add(2*time.Minute); !got.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v (set timeout may shorten)", got, want)
	}
}

func TestProbe(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Minute})
	t.Run("Running", func(t *testing.T) {
		got, err := p.Probe(ctx, sb.ID)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		if got.State != lifecycle.SandboxRunning || !got.ExpiresAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("probe = %+v, want running until %v", got, t0.Add(time.Minute))
		}
	})
	t.Run("PausedStaysPaused", func(t *testing.T) {
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("pause: %v", err)
		}
		got, err := p.Probe(ctx, sb.ID)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		if got.State != lifecycle.SandboxPaused || !got.ExpiresAt.IsZero() {
			t.Errorf("probe = %+v, want paused without expiry", got)
		}
		if now, _ := p.Sandbox(sb.ID); now.State != lifecycle.SandboxPaused {
			t.Errorf("after probe state = %s, want paused (a probe never wakes it)", now.State)
		}
	})
}

func TestKill(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{})
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if _, ok := p.Sandbox(sb.ID); ok {
		t.Errorf("Sandbox(%s) exists after kill", sb.ID)
	}
	t.Run("Gone", func(t *testing.T) {
		if err := p.Kill(ctx, sb.ID); err != nil {
			t.Errorf("kill of a killed sandbox: %v, want success", err)
		}
		if err := p.Kill(ctx, "fake_999"); err != nil {
			t.Errorf("kill of an unknown sandbox: %v, want success", err)
		}
	})
}

func TestGone(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	killed := MustCreate(t, p, lifecycle.CreateRequest{})
	if err := p.Kill(ctx, killed.ID); err != nil {
		t.Fatalf("kill: %v", err)
	}
	forgotten := MustCreate(t, p, lifecycle.CreateRequest{})
	if !p.Forget(forgotten.ID) {
		t.Fatalf("Forget(%s) = false, want true", forgotten.ID)
	}
	calls := map[fake.Op]func(id string) error{
		fake.OpGet:        func(id string) error { _, err := p.Get(ctx, id); return err },
		fake.OpPause:      func(id string) error { return p.Pause(ctx, id) },
		fake.OpResume:     func(id string) error { _, err := p.Resume(ctx, id, time.Minute); return err },
		fake.OpSetTimeout: func(id string) error { return p.SetTimeout(ctx, id, time.Minute) },
		fake.OpProbe:      func(id string) error { _, err := p.Probe(ctx, id); return err },
	}
	for op, call := range calls {
		for name, id := range map[string]string{"Unknown": "fake_999", "Killed": killed.ID, "Forgotten": forgotten.ID} {
			t.Run(string(op)+"/"+name, func(t *testing.T) {
				err := call(id)
				if !errors.Is(err, lifecycle.ErrSandboxGone) {
					t.Fatalf("%s(%s) = %v, want ErrSandboxGone", op, id, err)
				}
				var pe *lifecycle.ProviderError
				if !errors.As(err, &pe) || pe.Op != string(op) || pe.SandboxID != id {
					t.Errorf("error = %#v, want a *ProviderError for op %s sandbox %s", err, op, id)
				}
			})
		}
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	t.Run("AutoPause", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Minute, AutoPause: true})
		clock.Advance(59 * time.Second)
		if got, _ := p.Get(ctx, sb.ID); got.State != lifecycle.SandboxRunning {
			t.Fatalf("before the timeout state = %s, want running", got.State)
		}
		clock.Advance(time.Hour)
		got, err := p.Get(ctx, sb.ID)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if got.State != lifecycle.SandboxPaused || !got.PausedAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("after the timeout: state %s paused_at %v, want paused at %v", got.State, got.PausedAt, t0.Add(time.Minute))
		}
	})
	t.Run("Killed", func(t *testing.T) {
		p, clock := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Minute})
		clock.Advance(time.Minute)
		if _, err := p.Probe(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
			t.Errorf("probe after the timeout = %v, want ErrSandboxGone", err)
		}
	})
}

func TestList(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	var ids []string
	for i := range 5 {
		sb := MustCreate(t, p, lifecycle.CreateRequest{Metadata: map[string]string{"team": fmt.Sprint(i % 2)}})
		ids = append(ids, sb.ID)
	}
	if err := p.Pause(ctx, ids[1]); err != nil {
		t.Fatalf("pause: %v", err)
	}
	if err := p.Kill(ctx, ids[4]); err != nil {
		t.Fatalf("kill: %v", err)
	}

	t.Run("Pages", func(t *testing.T) {
		var got []string
		req := lifecycle.ListRequest{Limit: 3}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			page, err := p.List(ctx, req)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(page.Sandboxes) > 3 {
				t.Fatalf("page of %d, want at most 3", len(page.Sandboxes))
			}
			for _, sb := range page.Sandboxes {
				got = append(got, sb.ID)
			}
			if page.NextToken == "" {
				break
			}
			req.PageToken = page.NextToken
		}
		if got, want := fmt.Sprint(got), fmt.Sprint(ids[:4]); got != want {
			t.Errorf("listed %s, want %s", got, want)
		}
	})
	t.Run("States", func(t *testing.T) {
		page, err := p.List(ctx, lifecycle.ListRequest{States: []lifecycle.SandboxState{lifecycle.SandboxPaused}})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != ids[1] {
			t.Errorf("paused = %+v, want only %s", page.Sandboxes, ids[1])
		}
	})
	t.Run("Metadata", func(t *testing.T) {
		page, err := p.List(ctx, lifecycle.ListRequest{Metadata: map[string]string{"team": "0"}})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var got []string
		for _, sb := range page.Sandboxes {
			got = append(got, sb.ID)
		}
		if got, want := fmt.Sprint(got), fmt.Sprint([]string{ids[0], ids[2]}); got != want {
			t.Errorf("team 0 = %s, want %s", got, want)
		}
	})
	t.Run("BadToken", func(t *testing.T) {
		if _, err := p.List(ctx, lifecycle.ListRequest{PageToken: "nonsense"}); err == nil {
			t.Error("list with a foreign token succeeded, want an error")
		}
	})
}

func TestSetStateAndForget(t *testing.T) {
	p, clock := MustNew(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{Timeout: time.Minute})
	now := clock.Advance(10 * time.Second)
	if !p.SetState(sb.ID, lifecycle.SandboxPaused) {
		t.Fatal("SetState(paused) = false, want true")
	}
	if got, _ := p.Sandbox(sb.ID); got.State != lifecycle.SandboxPaused || !got.PausedAt.Equal(now) {
		t.Errorf("state %s paused_at %v, want paused at %v", got.State, got.PausedAt, now)
	}
	now = clock.Advance(10 * time.Second)
	if !p.SetState(sb.ID, lifecycle.SandboxRunning) {
		t.Fatal("SetState(running) = false, want true")
	}
	if got, _ := p.Sandbox(sb.ID); got.State != lifecycle.SandboxRunning || !got.ExpiresAt.Equal(now.Add(time.Minute)) {
		t.Errorf("state %s expires_at %v, want running until %v", got.State, got.ExpiresAt, now.Add(time.Minute))
	}
	if got := p.Calls(fake.OpPause) + p.Calls(fake.OpResume); got != 0 {
		t.Errorf("SetState counted %d calls, want 0", got)
	}
	if !p.Forget(sb.ID) {
		t.Error("Forget = false, want true")
	}
	if p.Forget(sb.ID) || p.SetState(sb.ID, lifecycle.SandboxPaused) {
		t.Error("Forget or SetState of a forgotten sandbox = true, want false")
	}
	if got := p.Sandboxes(); len(got) != 0 {
		t.Errorf("Sandboxes() = %+v, want none", got)
	}
}

func TestFault(t *testing.T) {
	ctx := context.Background()
	t.Run("RateOne", func(t *testing.T) {
		p, _ := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		p.SetFault(fake.OpPause, fake.Fault{Rate: 1, RetryAfter: 3 * time.Second})
		err := p.Pause(ctx, sb.ID)
		if !errors.Is(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("pause = %v, want ErrProviderTransient", err)
		}
		if got, want := lifecycle.RetryAfter(err), 3*time.Second; got != want {
			t.Errorf("RetryAfter = %v, want %v", got, want)
		}
		if got, _ := p.Sandbox(sb.ID); got.State != lifecycle.SandboxRunning {
			t.Errorf("state after a failed pause = %s, want running (a failed call changes nothing)", got.State)
		}
		if _, err := p.Get(ctx, sb.ID); err != nil {
			t.Errorf("get with a pause fault: %v, want success (faults are per operation)", err)
		}
		p.SetFault(fake.OpPause, fake.Fault{})
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Errorf("pause after clearing the fault: %v", err)
		}
	})
	t.Run("Kind", func(t *testing.T) {
		p, _ := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		p.SetFault(fake.OpResume, fake.Fault{Kind: lifecycle.ErrSandboxConflict, Rate: 1})
		if _, err := p.Resume(ctx, sb.ID, time.Minute); !errors.Is(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("resume = %v, want ErrSandboxConflict", err)
		}
	})
	t.Run("Applied", func(t *testing.T) {
		p, _ := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		p.SetFault(fake.OpPause, fake.Fault{Rate: 1, Applied: true})
		if err := p.Pause(ctx, sb.ID); !errors.Is(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("pause = %v, want ErrProviderTransient", err)
		}
		if got, _ := p.Sandbox(sb.ID); got.State != lifecycle.SandboxPaused {
			t.Errorf("state = %s, want paused (the pause took effect, its answer was lost)", got.State)
		}
	})
	t.Run("SeededRateIsReproducible", func(t *testing.T) {
		pattern := func(seed uint64) string {
			p, _ := MustNew(t, func(c *fake.Config) { c.Seed = seed })
			p.SetFault(fake.OpGet, fake.Fault{Kind: lifecycle.ErrSandboxGone, Rate: 0.3})
			sb := MustCreate(t, p, lifecycle.CreateRequest{})
			out := make([]byte, 200)
			for i := range out {
				out[i] = '.'
				if _, err := p.Get(ctx, sb.ID); errors.Is(err, lifecycle.ErrSandboxGone) {
					out[i] = 'x'
				}
			}
			return string(out)
		}
		a, b := pattern(7), pattern(7)
		if a != b {
			t.Errorf("same seed, different failures:\n%s\n%s", a, b)
		}
		if a == pattern(8) {
			t.Errorf("seeds 7 and 8 fail the same calls: %s", a)
		}
		fails := 0
		for _, c := range a {
			if c == 'x' {
				fails++
			}
		}
		if fails < 30 || fails > 90 {
			t.Errorf("%d of 200 calls failed at rate 0.3, want about 60", fails)
		}
	})
	t.Run("FailNext", func(t *testing.T) {
		p, _ := MustNew(t)
		p.FailNext(fake.OpCreate, nil)
		p.FailNext(fake.OpCreate, lifecycle.ErrSandboxConflict)
		if _, err := p.Create(ctx, lifecycle.CreateRequest{}); !errors.Is(err, lifecycle.ErrProviderTransient) {
			t.Errorf("first create = %v, want ErrProviderTransient", err)
		}
		if _, err := p.Create(ctx, lifecycle.CreateRequest{}); !errors.Is(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("second create = %v, want ErrSandboxConflict", err)
		}
		sb, err := p.Create(ctx, lifecycle.CreateRequest{})
		if err != nil {
			t.Fatalf("third create: %v, want success", err)
		}
		if got, want := sb.ID, "fake_1"; got != want {
			t.Errorf("ID = %q, want %q (failed creates make nothing)", got, want)
		}
	})
	t.Run("Delay", func(t *testing.T) {
		var slept []time.Duration
		var mu sync.Mutex
		p, _ := MustNew(t, func(c *fake.Config) {
			c.Sleep = func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				slept = append(slept, d)
				return nil
			}
		})
		p.SetFault(fake.OpList, fake.Fault{Delay: 250 * time.Millisecond})
		for range 2 {
			if _, err := p.List(ctx, lifecycle.ListRequest{}); err != nil {
				t.Fatalf("list: %v", err)
			}
		}
		if _, err := p.Get(ctx, "fake_9"); !errors.Is(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("get = %v, want ErrSandboxGone", err)
		}
		if got, want := fmt.Sprint(slept), "[250ms 250ms]"; got != want {
			t.Errorf("slept %s, want %s", got, want)
		}
	})
	t.Run("DelayHonoursContext", func(t *testing.T) {
		p, _ := MustNew(t)
		sb := MustCreate(t, p, lifecycle.CreateRequest{})
		p.SetFault(fake.OpPause, fake.Fault{Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		p.SetOnCall(func(fake.Op, string) { cancel() })
		err := p.Pause(ctx, sb.ID)
		if !errors.Is(err, lifecycle.ErrProviderTransient) || !errors.Is(err, context.Canceled) {
			t.Errorf("pause = %v, want transient wrapping context.Canceled", err)
		}
		if got, _ := p.Sandbox(sb.ID); got.State != lifecycle.SandboxRunning {
			t.Errorf("state = %s, want running", got.State)
		}
	})
	t.Run("DelayCutShort", func(t *testing.T) {
		p, _ := MustNew(t)
		p.SetFault(fake.OpList, fake.Fault{Delay: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		p.SetOnCall(func(fake.Op, string) {
			go cancel() // cancelled while the call waits out its delay
		})
		go func() {
			_, err := p.List(ctx, lifecycle.ListRequest{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("list = %v, want context.Canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a cancelled call kept waiting out its delay")
		}
	})
}

func TestOnCall(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	sb := MustCreate(t, p, lifecycle.CreateRequest{})
	var seen []string
	p.SetOnCall(func(op fake.Op, id string) {
		seen = append(seen, string(op)+" "+id)
		if op == fake.OpPause {
			// Between the caller's decision and its pause, the sandbox
			// vanishes; the hook may call the fake without deadlocking.
			if _, err := p.Get(ctx, id); err != nil {
				t.Errorf("get inside the hook: %v", err)
			}
			p.Forget(id)
		}
	})
	if err := p.Pause(ctx, sb.ID); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Errorf("pause = %v, want ErrSandboxGone (the hook ran first)", err)
	}
	if got, want := fmt.Sprint(seen), fmt.Sprintf("[pause %[1]s get %[1]s]", sb.ID); got != want {
		t.Errorf("hook saw %s, want %s", got, want)
	}
}

func TestCallsConcurrent(t *testing.T) {
	ctx := context.Background()
	p, _ := MustNew(t)
	p.SetFault(fake.OpPause, fake.Fault{Rate: 0.5})
	const workers, each = 8, 50
	ids := make([]string, workers)
	for i := range ids {
		ids[i] = MustCreate(t, p, lifecycle.CreateRequest{}).ID
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				_ = p.Pause(ctx, ids[w])
				_, _ = p.Resume(ctx, ids[w], time.Minute)
				_, _ = p.Get(ctx, ids[(w+1)%workers])
				_, _ = p.List(ctx, lifecycle.ListRequest{Limit: 2})
			}
		})
	}
	wg.Wait()
	for _, op := range []fake.Op{fake.OpPause, fake.OpResume, fake.OpGet, fake.OpList} {
		if got, want := p.Calls(op), workers*each; got != want {
			t.Errorf("Calls(%s) = %d, want %d", op, got, want)
		}
	}
	for _, id := range ids {
		if got, want := p.CallsFor(fake.OpPause, id), each; got != want {
			t.Errorf("CallsFor(pause, %s) = %d, want %d", id, got, want)
		}
		if got, want := p.CallsFor(fake.OpGet, id), each; got != want {
			t.Errorf("CallsFor(get, %s) = %d, want %d", id, got, want)
		}
	}
	if got, want := p.CallsFor(fake.OpList, ""), workers*each; got != want {
		t.Errorf("CallsFor(list, \"\") = %d, want %d", got, want)
	}
	p.ResetCalls()
	if got := p.Calls(fake.OpPause); got != 0 {
		t.Errorf("Calls(pause) after ResetCalls = %d, want 0", got)
	}
}

func BenchmarkPauseResume(b *testing.B) {
	ctx := context.Background()
	p, _ := MustNew(b)
	sb := MustCreate(b, p, lifecycle.CreateRequest{})
	for b.Loop() {
		if err := p.Pause(ctx, sb.ID); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Resume(ctx, sb.ID, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
