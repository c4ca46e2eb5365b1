package e2b_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/e2b"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/providertest"
)

// ctx is the context of the fact tests; the fake answers at once.
var ctx = context.Background()

// TestConformance runs the provider conformance suite against the fake E2B.
func TestConformance(t *testing.T) {
	ops := map[providertest.Op]e2btest.Op{
		providertest.OpCreate: e2btest.OpCreate, providertest.OpGet: e2btest.OpGet,
		providertest.OpList: e2btest.OpList, providertest.OpPause: e2btest.OpPause,
		providertest.OpResume: e2btest.OpConnect, providertest.OpSetTimeout: e2btest.OpTimeout,
		providertest.OpKill: e2btest.OpKill,
	}
	providertest.Run(t, providertest.Harness{New: func(tb testing.TB) providertest.Env {
		srv := e2btest.NewServer(tb)
		srv.SetBootDelay(2 * time.Second)
		p, _ := MustProvider(tb, srv, func(c *e2b.Config) { c.AutoResume = true })
		return providertest.Env{
			BootDelay: 2 * time.Second,
			Provider:  p,
			Template:  "base",
			Now:       srv.Clock.Now,
			Advance:   func(d time.Duration) { srv.Clock.Advance(d) },
			Fail: func(op providertest.Op, retryAfter time.Duration) func() {
				return srv.FailAll(ops[op], e2btest.Fault{Status: 429,
					RetryAfter: strconv.Itoa(int(retryAfter / time.Second))})
			},
			WakeRequests: srv.ProxyRequests,
			RunLengthCap: e2btest.MaxRunLength,
			Inject:       srv.Inject,
		}
	}})
}

// The tests below each check one fact of docs/providers/e2b.md "Checked against
// the real spec"; each failed on the adapter before it followed the fact.

func TestFactCreateAndConnectUseV2Routes(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resume(ctx, sb.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := srv.DeprecatedRequests(); got != 0 {
		t.Errorf("requests to deprecated routes = %d, want 0", got)
	}
	if got := srv.UnknownFields(); len(got) != 0 {
		t.Errorf("fields E2B would ignore: %v", got)
	}
}

func TestFactPause409WhileKillingIsConflict(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour),
		func(sb *e2btest.Sandbox) { sb.Transition = e2btest.Killing })
	err := p.Pause(ctx, "sbx")
	if err == nil {
		t.Fatal("Pause of a sandbox being killed succeeded; E2B's 409 there does not mean paused")
	}
	if !errors.Is(err, lifecycle.ErrSandboxGone) && !errors.Is(err, lifecycle.ErrSandboxConflict) {
		t.Errorf("err = %v, want gone or conflict", err)
	}
}

func TestFactPause409WhilePausingIsSuccess(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour),
		func(sb *e2btest.Sandbox) { sb.Transition = e2btest.Pausing })
	if err := p.Pause(ctx, "sbx"); err != nil {
		t.Errorf("Pause of a pausing sandbox: %v, want success", err)
	}
}

func TestFactResumeRecordsCappedExpiry(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	start := srv.Clock.Now().Add(-50 * time.Minute)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(5*time.Minute),
		func(sb *e2btest.Sandbox) { sb.StartedAt = start })
	sb, err := p.Resume(ctx, "sbx", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(e2btest.MaxRunLength); !sb.ExpiresAt.Equal(want) {
		t.Errorf("ExpiresAt = %v, want %v (E2B capped it at start + 1 h)", sb.ExpiresAt, want)
	}
}

func TestFactResumeRunningKeepsLaterExpiry(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	end := srv.Clock.Now().Add(40 * time.Minute)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, end)
	sb, err := p.Resume(ctx, "sbx", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !sb.ExpiresAt.Equal(end) {
		t.Errorf("ExpiresAt = %v, want %v (connect only extends)", sb.ExpiresAt, end)
	}
}

func TestFactSetTimeoutUntilReportsCappedExpiry(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	start := srv.Clock.Now().Add(-50 * time.Minute)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(5*time.Minute),
		func(sb *e2btest.Sandbox) { sb.StartedAt = start })
	got, err := p.SetTimeoutUntil(ctx, "sbx", 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := start.Add(e2btest.MaxRunLength); !got.Equal(want) {
		t.Errorf("expiry = %v, want %v", got, want)
	}
}

func TestFactSetTimeout409IsTransient(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv, noRetries)
	MustPut(t, srv, "sbx", lifecycle.SandboxRunning, srv.Clock.Now().Add(time.Hour),
		func(sb *e2btest.Sandbox) { sb.Transition = e2btest.Pausing })
	err := p.SetTimeout(ctx, "sbx", 10*time.Minute)
	if !isKind(err, lifecycle.ErrProviderTransient) {
		t.Errorf("err = %v, want transient", err)
	}
}

func TestFactMetadataFilterEncoding(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv)
	values := []string{"x&y=z", "a+b", "50%", "k=v", "a b", "%2B", "plain"}
	ids := map[string]string{}
	for _, v := range values {
		sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute,
			Metadata: map[string]string{"note": v}})
		if err != nil {
			t.Fatal(err)
		}
		ids[v] = sb.ID
	}
	for _, v := range values {
		page, err := p.List(ctx, lifecycle.ListRequest{Metadata: map[string]string{"note": v}})
		if err != nil {
			t.Errorf("List note=%q: %v", v, err)
			continue
		}
		if len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != ids[v] {
			var got []string
			for _, sb := range page.Sandboxes {
				got = append(got, sb.ID)
			}
			t.Errorf("List note=%q = %v, want only %s", v, got, ids[v])
		}
	}
	if got, want := e2b.MetadataFilter(map[string]string{"note": "x&y=z"}), "note%3Dx%2526y%253Dz"; got != want {
		t.Errorf("MetadataFilter = %q, want %q (query-encoded once more on the wire)", got, want)
	}
}

func TestFactListPreviewURLKeepsCreateDomain(t *testing.T) {
	srv := e2btest.NewServer(t)
	p, _ := MustProvider(t, srv, func(c *e2b.Config) { c.Domain = "configured.example" })
	sb, err := p.Create(ctx, lifecycle.CreateRequest{Template: "base", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	page, err := p.List(ctx, lifecycle.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sandboxes) != 1 {
		t.Fatalf("list = %v", page.Sandboxes)
	}
	want := "https://3000-" + sb.ID + "." + e2btest.Domain
	if got := page.Sandboxes[0].PreviewURL; got != want || sb.PreviewURL != want {
		t.Errorf("preview URL from list %q, from create %q; want %q (list items carry no domain)", got, sb.PreviewURL, want)
	}
}
