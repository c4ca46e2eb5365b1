package e2b_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
)

// sleeps records the waits the provider asked for instead of sleeping.
type sleeps struct {
	mu   sync.Mutex
	d    []time.Duration
	hook func(n int) // runs before returning, with the 0-based wait number
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	n := len(s.d) - 1
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// MustProvider returns a Provider aimed at srv whose waits are recorded in
// the returned sleeps; edits adjust the config first.
func MustProvider(tb testing.TB, srv *e2btest.Server, edits ...func(*e2b.Config)) (*e2b.Provider, *sleeps) {
	tb.Helper()
	sl := &sleeps{}
	cfg := srv.Config()
	cfg.Sleep = sl.sleep
	for _, edit := range edits {
		edit(&cfg)
	}
	p, err := e2b.New(cfg)
	if err != nil {
		tb.Fatalf("new provider: %v", err)
	}
	return p, sl
}

// MustPut seeds srv with a sandbox of id in state st whose endAt is end.
func MustPut(tb testing.TB, srv *e2btest.Server, id string, st lifecycle.SandboxState, end time.Time, edits ...func(*e2btest.Sandbox)) e2btest.Sandbox {
	tb.Helper()
	sb := e2btest.Sandbox{
		ID: id, TemplateID: "base", State: st, StartedAt: srv.Clock.Now().Add(-time.Minute),
		EndAt: end, Timeout: 10 * time.Minute, Metadata: map[string]string{"k": "v"},
	}
	for _, edit := range edits {
		edit(&sb)
	}
	srv.Put(sb)
	return sb
}

func noRetries(c *e2b.Config) { c.MaxRetries = -1 }

// isKind reports whether err is a *ProviderError of kind.
func isKind(err, kind error) bool {
	var pe *lifecycle.ProviderError
	return errors.As(err, &pe) && errors.Is(err, kind)
}

func isProviderError(err error) bool {
	var pe *lifecycle.ProviderError
	return errors.As(err, &pe)
}

func TestNew(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		p, err := e2b.New(e2b.Config{APIKey: "e2b_x"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Name(), "e2b"; got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
		if got, want := p.PreviewURL("abc", ""), "https://3000-abc.e2b.app"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
	})
	t.Run("PreviewPortAndDomain", func(t *testing.T) {
		p, err := e2b.New(e2b.Config{APIKey: "e2b_x", PreviewPort: 8080, Domain: "example.dev"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.PreviewURL("abc", ""), "https://8080-abc.example.dev"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
		if got, want := p.PreviewURL("abc", "other.app"), "https://8080-abc.other.app"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
	})
	t.Run("ErrMissingKey", func(t *testing.T) {
		_, err := e2b.New(e2b.Config{})
		if err == nil || !strings.Contains(err.Error(), "API key is missing") {
			t.Errorf("err = %v, want a missing API key error", err)
		}
	})
	t.Run("ErrBadBaseURL", func(t *testing.T) {
		_, err := e2b.New(e2b.Config{APIKey: "k", BaseURL: "api.e2b.app"})
		if err == nil {
			t.Error("err = nil, want an error for a relative base url")
		}
	})
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		now := srv.Clock.Now()
		md := map[string]string{lifecycle.MetadataSessionID: "ses_1", "team": "a"}
		got, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: 10 * time.Minute, AutoPause: true, Metadata: md})
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == "" || got.State != lifecycle.SandboxRunning || got.Template != "base" {
			t.Errorf("sandbox = %+v, want a running base sandbox", got)
		}
		if got, want := got.StartedAt, now; !got.Equal(want) {
			t.Errorf("StartedAt = %v, want %v", got, want)
		}
		if got, want := got.ExpiresAt, now.Add(10*time.Minute); !got.Equal(want) {
			t.Errorf("ExpiresAt = %v, want %v", got, want)
		}
		if got, want := got.PreviewURL, "https://3000-"+got.ID+".e2b.test"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
		if got, want := got.Metadata["team"], "a"; got != want {
			t.Errorf("Metadata[team] = %q, want %q", got, want)
		}
		sb, ok := srv.Sandbox(got.ID)
		if !ok {
			t.Fatalf("sandbox %s not on the server", got.ID)
		}
		if got, want := sb.TemplateID, "base"; got != want {
			t.Errorf("server templateID = %q, want %q", got, want)
		}
		if got, want := sb.Timeout, 10*time.Minute; got != want {
			t.Errorf("server timeout = %v, want %v", got, want)
		}
		// v2 create is always secure (docs/providers/e2b.md).
		if !sb.AutoPause || sb.AutoResume || !sb.Secure {
			t.Errorf("server flags autoPause=%v autoResume=%v secure=%v, want true false true", sb.AutoPause, sb.AutoResume, sb.Secure)
		}
		if got, want := sb.Metadata[lifecycle.MetadataSessionID], "ses_1"; got != want {
			t.Errorf("server metadata = %q, want %q", got, want)
		}
	})
	t.Run("TimeoutRoundedUpToSeconds", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		got, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := srv.Sandbox(got.ID)
		if got, want := sb.Timeout, 2*time.Second; got != want {
			t.Errorf("server timeout = %v, want %v", got, want)
		}
	})
	t.Run("SecureAndAutoResume", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure, c.AutoResume = true, true })
		got, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		sb, _ := srv.Sandbox(got.ID)
		if !sb.Secure || !sb.AutoResume {
			t.Errorf("server secure=%v autoResume=%v, want both true", sb.Secure, sb.AutoResume)
		}
	})
	t.Run("ErrMissingTemplate", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		_, err := p.Create(ctx, lifecycle.CreateRequest{Timeout: time.Minute})
		if err == nil || isProviderError(err) {
			t.Errorf("err = %v, want a plain error", err)
		}
		if got, want := srv.Requests(e2btest.OpCreate), 0; got != want {
			t.Errorf("create requests = %d, want %d", got, want)
		}
	})
	t.Run("ErrAbovePlanMaximum", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		_, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: 2 * time.Hour})
		if err == nil || isProviderError(err) {
			t.Fatalf("err = %v, want a plain error", err)
		}
		if !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "Timeout cannot be greater than 1 hours") {
			t.Errorf("err = %q, want E2B's status and message", err)
		}
	})
	t.Run("ErrBadKey", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.APIKey = "e2b_wrong" })
		_, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base"})
		if err == nil || isProviderError(err) || !strings.Contains(err.Error(), "E2B API key is wrong or missing") {
			t.Errorf("err = %v, want a plain API key error", err)
		}
	})
	for _, tc := range []struct {
		name  string
		fault e2btest.Fault
	}{
		{"503", e2btest.Fault{Status: http.StatusServiceUnavailable}},
		{"429", e2btest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1"}},
		{"ConnectionDropped", e2btest.Fault{Drop: true}},
	} {
		f := tc.fault
		t.Run("NotRetried/"+tc.name, func(t *testing.T) {
			srv := e2btest.NewServer(t)
			p, sl := MustProvider(t, srv)
			srv.Fail(e2btest.OpCreate, f)
			_, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base"})
			if !isKind(err, lifecycle.ErrProviderTransient) {
				t.Errorf("err = %v, want transient", err)
			}
			if got, want := srv.Requests(e2btest.OpCreate), 1; got != want {
				t.Errorf("create requests = %d, want %d", got, want)
			}
			if got := len(sl.waits()); got != 0 {
				t.Errorf("waits = %d, want 0", got)
			}
		})
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	t.Run("Running", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		end := srv.Clock.Now().Add(7 * time.Minute)
		seed := MustPut(t, srv, "sbxrun", lifecycle.SandboxRunning, end)
		got, err := p.Get(ctx, "sbxrun")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.State, lifecycle.SandboxRunning; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if got, want := got.ExpiresAt, end; !got.Equal(want) {
			t.Errorf("ExpiresAt = %v, want %v", got, want)
		}
		if !got.PausedAt.IsZero() {
			t.Errorf("PausedAt = %v, want zero", got.PausedAt)
		}
		if got, want := got.StartedAt, seed.StartedAt; !got.Equal(want) {
			t.Errorf("StartedAt = %v, want %v", got, want)
		}
		if got, want := got.PreviewURL, "https://3000-sbxrun.e2b.test"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
		if got, want := got.Metadata["k"], "v"; got != want {
			t.Errorf("Metadata[k] = %q, want %q", got, want)
		}
	})
	t.Run("Paused", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		pausedAt := srv.Clock.Now().Add(-time.Hour)
		MustPut(t, srv, "sbxpaused", lifecycle.SandboxPaused, pausedAt)
		got, err := p.Get(ctx, "sbxpaused")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.State, lifecycle.SandboxPaused; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if got, want := got.PausedAt, pausedAt; !got.Equal(want) {
			t.Errorf("PausedAt = %v, want %v", got, want)
		}
		if !got.ExpiresAt.IsZero() || got.PreviewURL != "" {
			t.Errorf("ExpiresAt = %v, PreviewURL = %q, want zero and empty", got.ExpiresAt, got.PreviewURL)
		}
	})
	t.Run("TimedOutWithAutoPause", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if err != nil {
			t.Fatal(err)
		}
		srv.Clock.Advance(2 * time.Minute)
		got, err := p.Get(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != lifecycle.SandboxPaused || !got.PausedAt.Equal(sb.ExpiresAt) {
			t.Errorf("got %s paused at %v, want paused at %v", got.State, got.PausedAt, sb.ExpiresAt)
		}
	})
	t.Run("TimedOutIsGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		srv.Clock.Advance(time.Minute)
		if _, err := p.Get(ctx, sb.ID); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("err = %v, want gone", err)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		_, err := p.Get(ctx, "nosuch")
		if !isKind(err, lifecycle.ErrSandboxGone) {
			t.Fatalf("err = %v, want gone", err)
		}
		if !strings.Contains(err.Error(), `sandbox "nosuch" not found`) {
			t.Errorf("err = %q, want E2B's message", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), 1; got != want {
			t.Errorf("get requests = %d, want %d (gone is not retried)", got, want)
		}
		if got := len(sl.waits()); got != 0 {
			t.Errorf("waits = %d, want 0", got)
		}
	})
	t.Run("ErrInvalidID", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		for _, id := range []string{"", "../sandboxes", "a/b", "a.b", "a?b"} {
			if _, err := p.Get(ctx, id); err == nil || isProviderError(err) {
				t.Errorf("Get(%q) err = %v, want a plain error", id, err)
			}
		}
		if got, want := srv.Requests(e2btest.OpGet), 0; got != want {
			t.Errorf("get requests = %d, want %d", got, want)
		}
	})
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	t.Run("TransientThenSuccess", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusServiceUnavailable})
		if _, err := p.Get(ctx, "sbx"); err != nil {
			t.Fatalf("err = %v, want the retry to succeed", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), 2; got != want {
			t.Errorf("get requests = %d, want %d", got, want)
		}
		w := sl.waits()
		if len(w) != 1 || w[0] < e2b.DefaultRetryBase/2 || w[0] > e2b.DefaultRetryBase {
			t.Errorf("waits = %v, want one in [%v, %v]", w, e2b.DefaultRetryBase/2, e2b.DefaultRetryBase)
		}
	})
	t.Run("ExponentialUntilExhausted", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		for range 10 {
			srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusBadGateway})
		}
		_, err := p.Get(ctx, "sbx")
		if !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), e2b.DefaultMaxRetries+1; got != want {
			t.Errorf("get requests = %d, want %d", got, want)
		}
		w := sl.waits()
		if got, want := len(w), e2b.DefaultMaxRetries; got != want {
			t.Fatalf("waits = %v, want %d of them", w, want)
		}
		for n, d := range w {
			ceil := e2b.DefaultRetryBase << n
			if d < ceil/2 || d > ceil {
				t.Errorf("wait %d = %v, want in [%v, %v]", n, d, ceil/2, ceil)
			}
		}
	})
	t.Run("CappedAtRetryMaxWait", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv, func(c *e2b.Config) {
			c.MaxRetries, c.RetryBase, c.RetryMaxWait = 6, time.Second, 3*time.Second
		})
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		for range 6 {
			srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusInternalServerError})
		}
		if _, err := p.Get(ctx, "sbx"); err != nil {
			t.Fatalf("err = %v, want the seventh attempt to succeed", err)
		}
		for n, d := range sl.waits() {
			if d > 3*time.Second {
				t.Errorf("wait %d = %v, want at most 3s", n, d)
			}
		}
	})
	t.Run("HonoursRetryAfterSeconds", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "2"})
		if _, err := p.Get(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if w := sl.waits(); len(w) != 1 || w[0] != 2*time.Second {
			t.Errorf("waits = %v, want [2s]", w)
		}
	})
	t.Run("HonoursRetryAfterDate", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		at := srv.Clock.Now().Add(3 * time.Second).Format(http.TimeFormat)
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: at})
		if _, err := p.Get(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if w := sl.waits(); len(w) != 1 || w[0] != 3*time.Second {
			t.Errorf("waits = %v, want [3s]", w)
		}
	})
	t.Run("RetryAfterBeyondCapReturnedNotWaited", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "60"})
		_, err := p.Get(ctx, "sbx")
		if !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
		if got, want := lifecycle.RetryAfter(err), time.Minute; got != want {
			t.Errorf("RetryAfter = %v, want %v", got, want)
		}
		if got, want := srv.Requests(e2btest.OpGet), 1; got != want {
			t.Errorf("get requests = %d, want %d", got, want)
		}
		if !lifecycle.Refused(err) {
			t.Errorf("a 429 on the only attempt: Refused false, want true (not processed)")
		}
		if got := len(sl.waits()); got != 0 {
			t.Errorf("waits = %d, want 0", got)
		}
	})
	t.Run("RefusedOnlyWhenEveryAttemptWas", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		// A 503 (its outcome unknown), then a 429 with a wait beyond the cap.
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"},
			e2btest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "60"})
		_, err := p.Get(ctx, "sbx")
		if !isKind(err, lifecycle.ErrProviderTransient) {
			t.Fatalf("err = %v, want transient", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), 2; got != want {
			t.Fatalf("get requests = %d, want %d", got, want)
		}
		if lifecycle.Refused(err) {
			t.Error("Refused after a 503 then a 429, want false: the 503's attempt may have acted")
		}
	})
	t.Run("NoRetryPastDeadline", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusTooManyRequests, RetryAfter: "4"})
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, err := p.Get(dctx, "sbx"); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want transient", err)
		}
		if got := len(sl.waits()); got != 0 {
			t.Errorf("waits = %d, want 0: a 4s wait cannot fit a 1s deadline", got)
		}
	})
	t.Run("NegativeMaxRetriesDisables", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, noRetries)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Status: http.StatusServiceUnavailable})
		if _, err := p.Get(ctx, "sbx"); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want transient", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), 1; got != want {
			t.Errorf("get requests = %d, want %d", got, want)
		}
	})
}

func TestErrorMapping(t *testing.T) {
	ctx := context.Background()
	type check func(t *testing.T, err error)
	plain := func(substr string) check {
		return func(t *testing.T, err error) {
			t.Helper()
			if err == nil || isProviderError(err) {
				t.Fatalf("err = %v, want a plain error", err)
			}
			if !strings.Contains(err.Error(), substr) {
				t.Errorf("err = %q, want it to contain %q", err, substr)
			}
		}
	}
	kind := func(k error, retryAfter time.Duration) check {
		return func(t *testing.T, err error) {
			t.Helper()
			if !isKind(err, k) {
				t.Fatalf("err = %v, want kind %v", err, k)
			}
			if got, want := lifecycle.RetryAfter(err), retryAfter; got != want {
				t.Errorf("RetryAfter = %v, want %v", got, want)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		fault e2btest.Fault
		check check
	}{
		{"400", e2btest.Fault{Status: 400, Message: "bad input"}, plain("e2b answered 400: bad input")},
		{"401", e2btest.Fault{Status: 401}, plain("E2B API key is wrong or missing")},
		{"403", e2btest.Fault{Status: 403}, plain("E2B API key is wrong or missing")},
		{"404", e2btest.Fault{Status: 404}, kind(lifecycle.ErrSandboxGone, 0)},
		{"409", e2btest.Fault{Status: 409}, kind(lifecycle.ErrSandboxConflict, 0)},
		{"422", e2btest.Fault{Status: 422, Message: "odd"}, plain("e2b answered 422: odd")},
		{"429", e2btest.Fault{Status: 429, RetryAfter: "3"}, kind(lifecycle.ErrProviderTransient, 3*time.Second)},
		{"500", e2btest.Fault{Status: 500}, kind(lifecycle.ErrProviderTransient, 0)},
		{"502", e2btest.Fault{Status: 502}, kind(lifecycle.ErrProviderTransient, 0)},
		{"503", e2btest.Fault{Status: 503, RetryAfter: "1"}, kind(lifecycle.ErrProviderTransient, time.Second)},
		{"504", e2btest.Fault{Status: 504}, kind(lifecycle.ErrProviderTransient, 0)},
		{"ConnectionDropped", e2btest.Fault{Drop: true}, kind(lifecycle.ErrProviderTransient, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := e2btest.NewServer(t)
			p, _ := MustProvider(t, srv, noRetries)
			MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
			srv.Fail(e2btest.OpGet, tc.fault)
			_, err := p.Get(ctx, "sbx")
			tc.check(t, err)
		})
	}
	t.Run("AttemptTimeout", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, noRetries, func(c *e2b.Config) { c.RequestTimeout = time.Millisecond })
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Hang: true})
		_, err := p.Get(ctx, "sbx")
		if !isKind(err, lifecycle.ErrProviderTransient) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want transient wrapping a deadline", err)
		}
	})
	t.Run("NotFoundOnListIsPlain", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, noRetries)
		srv.Fail(e2btest.OpList, e2btest.Fault{Status: 404})
		_, err := p.List(ctx, lifecycle.ListRequest{})
		plain("e2b answered 404")(t, err)
	})
}

func TestList(t *testing.T) {
	ctx := context.Background()
	// seed creates five sandboxes in order: team a running, a paused, b, a
	// running, b.
	seed := func(t *testing.T, srv *e2btest.Server) []string {
		t.Helper()
		end := srv.Clock.Now().Add(time.Hour)
		ids := []string{"sbx1", "sbx2", "sbx3", "sbx4", "sbx5"}
		teams := []string{"a", "a", "b", "a", "b"}
		for i, id := range ids {
			st := lifecycle.SandboxRunning
			if id == "sbx2" {
				st = lifecycle.SandboxPaused
			}
			MustPut(t, srv, id, st, end, func(sb *e2btest.Sandbox) {
				sb.Metadata = map[string]string{"team": teams[i], "x": "y&z=w"}
			})
		}
		return ids
	}
	collect := func(t *testing.T, p *e2b.Provider, req lifecycle.ListRequest) (ids []string, pages int) {
		t.Helper()
		for {
			page, err := p.List(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, sb := range page.Sandboxes {
				ids = append(ids, sb.ID)
			}
			if page.NextToken == "" {
				return ids, pages
			}
			req.PageToken = page.NextToken
		}
	}
	t.Run("PagesByToken", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		seed(t, srv)
		ids, pages := collect(t, p, lifecycle.ListRequest{Metadata: map[string]string{"team": "a"}, Limit: 2})
		if got, want := strings.Join(ids, ","), "sbx4,sbx2,sbx1"; got != want { // newest first
			t.Errorf("ids = %s, want %s", got, want)
		}
		if got, want := pages, 2; got != want {
			t.Errorf("pages = %d, want %d", got, want)
		}
	})
	t.Run("AllDefault", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		seed(t, srv)
		page, err := p.List(ctx, lifecycle.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Sandboxes), 5; got != want {
			t.Errorf("sandboxes = %d, want %d", got, want)
		}
		if page.NextToken != "" {
			t.Errorf("NextToken = %q, want none", page.NextToken)
		}
		if got, want := page.Sandboxes[3].ID, "sbx2"; got != want { // newest first
			t.Errorf("fourth sandbox = %q, want %q", got, want)
		}
		if got, want := page.Sandboxes[3].State, lifecycle.SandboxPaused; got != want {
			t.Errorf("sbx2 state = %q, want %q", got, want)
		}
	})
	t.Run("StateAndMetadataWithSpecialCharacters", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		seed(t, srv)
		ids, _ := collect(t, p, lifecycle.ListRequest{
			States:   []lifecycle.SandboxState{lifecycle.SandboxRunning},
			Metadata: map[string]string{"team": "a", "x": "y&z=w"},
		})
		if got, want := strings.Join(ids, ","), "sbx4,sbx1"; got != want {
			t.Errorf("ids = %s, want %s", got, want)
		}
	})
	t.Run("ErrForeignToken", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		_, err := p.List(ctx, lifecycle.ListRequest{PageToken: "bogus"})
		if err == nil || isProviderError(err) || !strings.Contains(err.Error(), "invalid next token") {
			t.Errorf("err = %v, want a plain error with E2B's message", err)
		}
	})
	t.Run("ErrUnknownState", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		_, err := p.List(ctx, lifecycle.ListRequest{States: []lifecycle.SandboxState{"killed"}})
		if err == nil || isProviderError(err) {
			t.Errorf("err = %v, want a plain error", err)
		}
		if got, want := srv.Requests(e2btest.OpList), 0; got != want {
			t.Errorf("list requests = %d, want %d", got, want)
		}
	})
	t.Run("RetriesTransient", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		seed(t, srv)
		srv.Fail(e2btest.OpList, e2btest.Fault{Status: 503})
		page, err := p.List(ctx, lifecycle.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(page.Sandboxes), 5; got != want {
			t.Errorf("sandboxes = %d, want %d", got, want)
		}
		if got, want := srv.Requests(e2btest.OpList), 2; got != want {
			t.Errorf("list requests = %d, want %d", got, want)
		}
	})
}

func TestPause(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		if err := p.Pause(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		sb, _ := srv.Sandbox("sbx")
		if got, want := sb.State, lifecycle.SandboxPaused; got != want {
			t.Errorf("server state = %q, want %q", got, want)
		}
		got, err := p.Get(ctx, "sbx")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.PausedAt, srv.Clock.Now(); !got.Equal(want) {
			t.Errorf("PausedAt = %v, want %v", got, want)
		}
	})
	t.Run("AlreadyPausedIsSuccess", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now())
		if err := p.Pause(ctx, "sbx"); err != nil {
			t.Errorf("err = %v, want nil for E2B's 409", err)
		}
		if got, want := srv.Requests(e2btest.OpPause), 1; got != want {
			t.Errorf("pause requests = %d, want %d", got, want)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if err := p.Pause(ctx, "nosuch"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("err = %v, want gone", err)
		}
	})
	t.Run("RetriesTransient", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpPause, e2btest.Fault{Status: 500, Message: "snapshot failed"})
		if err := p.Pause(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if got, want := srv.Requests(e2btest.OpPause), 2; got != want {
			t.Errorf("pause requests = %d, want %d", got, want)
		}
		if sb, _ := srv.Sandbox("sbx"); sb.State != lifecycle.SandboxPaused {
			t.Errorf("server state = %q, want paused", sb.State)
		}
	})
}

func TestResume(t *testing.T) {
	ctx := context.Background()
	t.Run("Paused", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now().Add(-time.Hour))
		got, err := p.Resume(ctx, "sbx", 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := srv.Clock.Now().Add(5 * time.Minute)
		if got.State != lifecycle.SandboxRunning || !got.ExpiresAt.Equal(want) {
			t.Errorf("got %s until %v, want running until %v", got.State, got.ExpiresAt, want)
		}
		if got, want := got.PreviewURL, "https://3000-sbx.e2b.test"; got != want {
			t.Errorf("PreviewURL = %q, want %q", got, want)
		}
		sb, _ := srv.Sandbox("sbx")
		if sb.State != lifecycle.SandboxRunning || !sb.EndAt.Equal(want) {
			t.Errorf("server %s until %v, want running until %v", sb.State, sb.EndAt, want)
		}
	})
	t.Run("RunningOnlyExtended", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		end := srv.Clock.Now().Add(30 * time.Minute)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, end)
		got, err := p.Resume(ctx, "sbx", 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != lifecycle.SandboxRunning {
			t.Errorf("State = %q, want running", got.State)
		}
		sb, _ := srv.Sandbox("sbx")
		if got, want := sb.EndAt, end; !got.Equal(want) {
			t.Errorf("server endAt = %v, want %v (connect never shortens)", got, want)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if _, err := p.Resume(ctx, "nosuch", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("err = %v, want gone", err)
		}
	})
	t.Run("ErrConflictNotRetried", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now())
		srv.Fail(e2btest.OpConnect, e2btest.Fault{Status: 409, Message: "sandbox is being killed"})
		if _, err := p.Resume(ctx, "sbx", time.Minute); !isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("err = %v, want conflict", err)
		}
		if got, want := srv.Requests(e2btest.OpConnect), 1; got != want {
			t.Errorf("connect requests = %d, want %d", got, want)
		}
	})
	for _, status := range []int{503, 504} {
		t.Run(fmt.Sprintf("TransientNotRetried/%d", status), func(t *testing.T) {
			srv := e2btest.NewServer(t)
			p, sl := MustProvider(t, srv)
			MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now())
			srv.Fail(e2btest.OpConnect, e2btest.Fault{Status: status})
			if _, err := p.Resume(ctx, "sbx", time.Minute); !isKind(err, lifecycle.ErrProviderTransient) {
				t.Errorf("err = %v, want transient", err)
			}
			if got, want := srv.Requests(e2btest.OpConnect), 1; got != want {
				t.Errorf("connect requests = %d, want %d", got, want)
			}
			if got := len(sl.waits()); got != 0 {
				t.Errorf("waits = %d, want 0", got)
			}
		})
	}
	t.Run("ErrShortTimeout", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if _, err := p.Resume(ctx, "sbx", 500*time.Millisecond); err == nil || isProviderError(err) {
			t.Errorf("err = %v, want a plain error", err)
		}
		if got, want := srv.Requests(e2btest.OpConnect), 0; got != want {
			t.Errorf("connect requests = %d, want %d", got, want)
		}
	})
}

func TestSetTimeout(t *testing.T) {
	ctx := context.Background()
	t.Run("Shortens", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(30*time.Minute))
		if err := p.SetTimeout(ctx, "sbx", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		sb, _ := srv.Sandbox("sbx")
		if got, want := sb.EndAt, srv.Clock.Now().Add(2*time.Minute); !got.Equal(want) {
			t.Errorf("server endAt = %v, want %v", got, want)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if err := p.SetTimeout(ctx, "nosuch", time.Minute); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("err = %v, want gone", err)
		}
	})
	t.Run("RetriesTransient", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Minute))
		srv.Fail(e2btest.OpTimeout, e2btest.Fault{Status: 429, RetryAfter: "1"})
		if err := p.SetTimeout(ctx, "sbx", 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		if got, want := srv.Requests(e2btest.OpTimeout), 2; got != want {
			t.Errorf("timeout requests = %d, want %d", got, want)
		}
	})
	t.Run("AbovePlanMaximumIsCapped", func(t *testing.T) {
		// E2B caps silently at the last start + the plan maximum.
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		sb := MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Minute))
		got, err := p.SetTimeoutUntil(ctx, "sbx", 25*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if want := sb.StartedAt.Add(e2btest.MaxRunLength); !got.Equal(want) {
			t.Errorf("expiry = %v, want %v (capped)", got, want)
		}
	})
	t.Run("ErrShortTimeout", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if err := p.SetTimeout(ctx, "sbx", 0); err == nil || isProviderError(err) {
			t.Errorf("err = %v, want a plain error", err)
		}
	})
}

func TestProbe(t *testing.T) {
	ctx := context.Background()
	t.Run("Running", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		end := srv.Clock.Now().Add(20 * time.Minute)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, end)
		got, err := p.Probe(ctx, "sbx")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != lifecycle.SandboxRunning || !got.ExpiresAt.Equal(end) {
			t.Errorf("probe = %+v, want running until %v", got, end)
		}
		if got, want := srv.Requests(e2btest.OpHealth), 1; got != want {
			t.Errorf("health requests = %d, want %d", got, want)
		}
		if got := srv.ProxyKeyLeaks(); got != 0 {
			t.Errorf("proxy saw the API key %d times, want 0", got)
		}
	})
	t.Run("PausedNeverTouchesProxy", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now(), func(sb *e2btest.Sandbox) { sb.AutoResume = true })
		got, err := p.Probe(ctx, "sbx")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.State, lifecycle.SandboxPaused; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if got := srv.ProxyRequests(); got != 0 {
			t.Errorf("proxy requests = %d, want 0", got)
		}
		if sb, _ := srv.Sandbox("sbx"); sb.State != lifecycle.SandboxPaused {
			t.Errorf("server state = %q, want still paused", sb.State)
		}
	})
	t.Run("ProxyWouldWakeIt", func(t *testing.T) {
		// The hazard PausedNeverTouchesProxy guards against is real in
		// the fake: a request through the proxy wakes an auto-resume sandbox.
		srv := e2btest.NewServer(t)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now(), func(sb *e2btest.Sandbox) { sb.AutoResume = true })
		resp, err := http.Get(srv.EnvdURL("sbx", "") + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusNoContent; got != want {
			t.Errorf("status = %d, want %d", got, want)
		}
		if sb, _ := srv.Sandbox("sbx"); sb.State != lifecycle.SandboxRunning {
			t.Errorf("server state = %q, want woken to running", sb.State)
		}
	})
	t.Run("ErrGone", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if _, err := p.Probe(ctx, "nosuch"); !isKind(err, lifecycle.ErrSandboxGone) {
			t.Errorf("err = %v, want gone", err)
		}
		if got := srv.ProxyRequests(); got != 0 {
			t.Errorf("proxy requests = %d, want 0", got)
		}
	})
	t.Run("NotAnswering", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		for range e2b.DefaultMaxRetries + 1 {
			srv.Fail(e2btest.OpHealth, e2btest.Fault{Status: http.StatusBadGateway})
		}
		_, err := p.Probe(ctx, "sbx")
		if !isKind(err, lifecycle.ErrProviderTransient) || !strings.Contains(err.Error(), "envd does not answer") {
			t.Errorf("err = %v, want transient: running but not answering", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), e2b.DefaultMaxRetries+1; got != want {
			t.Errorf("get requests = %d, want %d: each retry starts at the control API", got, want)
		}
	})
	t.Run("ConnectionError", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, noRetries)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpHealth, e2btest.Fault{Drop: true})
		if _, err := p.Probe(ctx, "sbx"); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want transient", err)
		}
	})
	t.Run("RetryRechecksStateFirst", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, sl := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Minute), func(sb *e2btest.Sandbox) {
			sb.AutoPause, sb.AutoResume = true, true
		})
		srv.Fail(e2btest.OpHealth, e2btest.Fault{Status: http.StatusBadGateway})
		// While the probe backs off, the sandbox reaches its timeout and
		// pauses itself; the retry must see that and not wake it.
		sl.hook = func(int) { srv.Clock.Advance(2 * time.Minute) }
		got, err := p.Probe(ctx, "sbx")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.State, lifecycle.SandboxPaused; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if got, want := srv.ProxyRequests(), 1; got != want {
			t.Errorf("proxy requests = %d, want %d", got, want)
		}
		if sb, _ := srv.Sandbox("sbx"); sb.State != lifecycle.SandboxPaused {
			t.Errorf("server state = %q, want still paused", sb.State)
		}
	})
	t.Run("SecureWithToken", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure = true })
		sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Probe(ctx, sb.ID); err != nil {
			t.Fatal(err)
		}
		if got := srv.RefusedTokens(); got != 0 {
			t.Errorf("refused tokens = %d, want 0", got)
		}
	})
	t.Run("SecureTokenLearnedFromConnect", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure = true })
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now(), func(sb *e2btest.Sandbox) {
			sb.Secure, sb.AccessToken = true, "tok"
		})
		if _, err := p.Resume(ctx, "sbx", time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Probe(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if got := srv.RefusedTokens(); got != 0 {
			t.Errorf("refused tokens = %d, want 0", got)
		}
	})
	t.Run("SecureWithoutToken", func(t *testing.T) {
		// A fresh Provider (a new Lambda invocation) does not know the
		// token; envd's /health needs none.
		srv := e2btest.NewServer(t)
		creator, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure = true })
		sb, err := creator.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		fresh, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure = true })
		got, err := fresh.Probe(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got.State, lifecycle.SandboxRunning; got != want {
			t.Errorf("State = %q, want %q", got, want)
		}
		if got, want := srv.RefusedTokens(), 0; got != want {
			t.Errorf("refused tokens = %d, want %d", got, want)
		}
	})
}

func TestKill(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxPaused, srv.Clock.Now())
		if err := p.Kill(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if _, ok := srv.Sandbox("sbx"); ok {
			t.Error("sandbox still on the server")
		}
	})
	t.Run("AlreadyGoneIsSuccess", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		if err := p.Kill(ctx, "nosuch"); err != nil {
			t.Errorf("err = %v, want nil for E2B's 404", err)
		}
	})
	t.Run("RetriesTransient", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpKill, e2btest.Fault{Status: 500}, e2btest.Fault{Drop: true})
		if err := p.Kill(ctx, "sbx"); err != nil {
			t.Fatal(err)
		}
		if got, want := srv.Requests(e2btest.OpKill), 3; got != want {
			t.Errorf("kill requests = %d, want %d", got, want)
		}
		if _, ok := srv.Sandbox("sbx"); ok {
			t.Error("sandbox still on the server")
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		srv.Fail(e2btest.OpKill, e2btest.Fault{Status: 409})
		if err := p.Kill(ctx, "sbx"); !isKind(err, lifecycle.ErrSandboxConflict) {
			t.Errorf("err = %v, want conflict", err)
		}
	})
}

func TestContextCancellation(t *testing.T) {
	t.Run("WhileWaitingForAnswer", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpGet, e2btest.Fault{Hang: true})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := p.Get(ctx, "sbx")
			errc <- err
		}()
		<-srv.Hanging()
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) || !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want transient wrapping context.Canceled", err)
		}
		if got, want := srv.Requests(e2btest.OpGet), 1; got != want {
			t.Errorf("get requests = %d, want %d (no retry after cancel)", got, want)
		}
	})
	t.Run("BeforeCall", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		p, _ := MustProvider(t, srv)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Kill(ctx, "sbx"); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if got, want := srv.Requests(e2btest.OpKill), 0; got != want {
			t.Errorf("kill requests = %d, want %d", got, want)
		}
	})
	t.Run("DuringBackoff", func(t *testing.T) {
		srv := e2btest.NewServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p, sl := MustProvider(t, srv)
		sl.hook = func(int) { cancel() }
		MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour))
		srv.Fail(e2btest.OpPause, e2btest.Fault{Status: 503})
		if err := p.Pause(ctx, "sbx"); !isKind(err, lifecycle.ErrProviderTransient) {
			t.Errorf("err = %v, want the transient failure", err)
		}
		if got, want := srv.Requests(e2btest.OpPause), 1; got != want {
			t.Errorf("pause requests = %d, want %d", got, want)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Secure = true })
	ctx := context.Background()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- func() error {
				sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true,
					Metadata: map[string]string{"n": fmt.Sprint(i)}})
				if err != nil {
					return err
				}
				if _, err := p.Probe(ctx, sb.ID); err != nil {
					return err
				}
				if err := p.Pause(ctx, sb.ID); err != nil {
					return err
				}
				if _, err := p.Resume(ctx, sb.ID, time.Minute); err != nil {
					return err
				}
				if _, err := p.List(ctx, lifecycle.ListRequest{Metadata: map[string]string{"n": fmt.Sprint(i)}}); err != nil {
					return err
				}
				return p.Kill(ctx, sb.ID)
			}()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Error(err)
		}
	}
	if got := srv.RefusedTokens(); got != 0 {
		t.Errorf("refused tokens = %d, want 0", got)
	}
	page, err := p.List(ctx, lifecycle.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(page.Sandboxes); got != 0 {
		t.Errorf("sandboxes left = %d, want 0", got)
	}
}
