package vercel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

const project = verceltest.DefaultProjectID

// setup starts a fake and a provider on it; change edits the provider's
// config (nil for none).
func setup(t *testing.T, opts verceltest.Config, change func(*vercel.Config)) (*verceltest.Test, *vercel.Provider) {
	t.Helper()
	f := verceltest.MustStart(t, opts)
	return f, f.MustProvider(t, change)
}

// create makes a sandbox for session id with a 10 min guard.
func create(t *testing.T, p *vercel.Provider, id string, extra map[string]string) lifecycle.Sandbox {
	t.Helper()
	md := map[string]string{lifecycle.MetadataSessionID: id, lifecycle.MetadataDeployment: "dep1"}
	for k, v := range extra {
		md[k] = v
	}
	sb, err := p.Create(context.Background(), lifecycle.CreateRequest{
		Template: "web", Timeout: 10 * time.Minute, AutoPause: true, Metadata: md})
	if err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
	return sb
}

func mustSandbox(t *testing.T, f *verceltest.Test, name string) verceltest.Sandbox {
	t.Helper()
	sb, ok := f.Sandbox(project, name)
	if !ok {
		t.Fatalf("fake has no sandbox %s", name)
	}
	return sb
}

// fetch GETs url and returns the status.
func fetch(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func kindOf(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, lifecycle.ErrSandboxGone):
		return "gone"
	case errors.Is(err, lifecycle.ErrSandboxConflict):
		return "conflict"
	case errors.Is(err, lifecycle.ErrProviderTransient):
		return "transient"
	default:
		return "plain"
	}
}

func TestNew(t *testing.T) {
	for name, cfg := range map[string]vercel.Config{
		"ErrNoToken":   {ProjectID: "prj"},
		"ErrNoProject": {Token: "t"},
		"ErrBaseURL":   {Token: "t", ProjectID: "prj", BaseURL: "vercel.com/api"},
		"ErrPorts":     {Token: "t", ProjectID: "prj", Templates: map[string]vercel.Template{"x": {Ports: make([]int, 16)}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := vercel.New(cfg); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
	p, err := vercel.New(vercel.Config{Token: "t", ProjectID: "prj"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got, want := p.Name(), "vercel"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}

func TestCreate(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_one", map[string]string{"user": "ada"})
		if got, want := sb.ID, "ses_one"; got != want {
			t.Errorf("ID = %q, want %q (the session id names the sandbox)", got, want)
		}
		if sb.State != lifecycle.SandboxRunning || sb.Template != "web" {
			t.Errorf("State, Template = %s, %s; want running, web", sb.State, sb.Template)
		}
		if got, want := sb.ExpiresAt, verceltest.Epoch.Add(10*time.Minute); !got.Equal(want) {
			t.Errorf("ExpiresAt = %s, want %s", got, want)
		}
		rec := mustSandbox(t, f, "ses_one")
		if !rec.Persistent || rec.Timeout != 10*time.Minute || !slices.Equal(rec.Ports, []int{3000}) {
			t.Errorf("fake holds persistent=%v timeout=%s ports=%v; want true, 10m, [3000]", rec.Persistent, rec.Timeout, rec.Ports)
		}
		wantTags := map[string]string{lifecycle.MetadataSessionID: "ses_one", lifecycle.MetadataDeployment: "dep1"}
		if fmt.Sprint(rec.Tags) != fmt.Sprint(wantTags) {
			t.Errorf("tags = %v, want %v (only sandman_ keys)", rec.Tags, wantTags)
		}
		se, _ := f.Session(rec.CurrentSessionID)
		if len(se.Routes) != 1 || sb.PreviewURL != se.Routes[0].URL {
			t.Errorf("PreviewURL = %q, want the route's url %v", sb.PreviewURL, se.Routes)
		}
		// The route reaches the running session; no app listens yet.
		if got := fetch(t, sb.PreviewURL); got != http.StatusBadGateway {
			t.Errorf("preview answered %d, want 502 (running, nothing listens)", got)
		}
		if got, want := f.Boots(), 1; got != want {
			t.Errorf("boots = %d, want %d", got, want)
		}
	})
	t.Run("TimeoutCappedAtPlanMaximum", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		_, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: 3 * time.Hour,
			AutoPause: true, Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_cap"}})
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if got, want := mustSandbox(t, f, "ses_cap").Timeout, verceltest.DefaultMaxSessionTimeout; got != want {
			t.Errorf("timeout = %s, want the plan maximum %s", got, want)
		}
	})
	t.Run("ErrUnknownTemplate", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		_, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "nope", Timeout: time.Minute})
		if kindOf(err) != "plain" || f.Requests(verceltest.OpCreate) != 0 {
			t.Errorf("err = %v (%s), requests %d; want a plain error and no request", err, kindOf(err), f.Requests(verceltest.OpCreate))
		}
	})
	t.Run("RandomNameWithoutSession", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, nil)
		sb, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "base", Timeout: time.Minute, AutoPause: true})
		if err != nil || len(sb.ID) != len("sandman-")+16 {
			t.Errorf("Create = %q, %v; want a sandman-<16 hex> name", sb.ID, err)
		}
	})
	t.Run("LostAnswerAdopted", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		f.Fail(verceltest.OpCreate, verceltest.Fault{Lose: true})
		sb := create(t, p, "ses_lost", nil)
		if sb.State != lifecycle.SandboxRunning || sb.PreviewURL == "" {
			t.Errorf("adopted sandbox = %+v, want running with a preview URL", sb)
		}
		if got, want := f.Requests(verceltest.OpCreate), 2; got != want {
			t.Errorf("create requests = %d, want %d", got, want)
		}
		if got, want := f.Boots(), 1; got != want {
			t.Errorf("boots = %d, want %d (one sandbox, adopted)", got, want)
		}
	})
	t.Run("ErrNameTakenByAnotherSession", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		create(t, p, "ses_taken", nil)
		_, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "web", Timeout: time.Minute, AutoPause: true,
			Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_taken", lifecycle.MetadataDeployment: "dep1"}})
		if err != nil {
			t.Fatalf("same session: %v (should adopt)", err)
		}
		// A sandbox of that name tagged with another session is not ours.
		if !f.SetTags(project, "ses_taken", map[string]string{lifecycle.MetadataSessionID: "ses_other"}) {
			t.Fatal("SetTags")
		}
		_, err = p.Create(context.Background(), lifecycle.CreateRequest{Template: "web", Timeout: time.Minute, AutoPause: true,
			Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_taken"}})
		if got := kindOf(err); got != "conflict" {
			t.Errorf("err = %v (%s), want conflict", err, got)
		}
	})
	t.Run("Err400", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
			c.Templates = map[string]vercel.Template{"odd": {VCPUs: 3}}
		})
		_, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "odd", Timeout: time.Minute,
			Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_odd"}})
		var ae *vercel.APIError
		if kindOf(err) != "plain" || !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "bad_request" {
			t.Errorf("err = %v, want a plain error carrying 400 bad_request", err)
		}
	})
}

func TestPauseResume(t *testing.T) {
	t.Run("NewSessionAfterResume", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		ctx := context.Background()
		sb := create(t, p, "ses_pr", nil)
		first := mustSandbox(t, f, "ses_pr")
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		paused := mustSandbox(t, f, "ses_pr")
		if paused.Status != verceltest.StatusStopped || paused.CurrentSnapshotID == "" {
			t.Fatalf("after pause: status %s snapshot %q; want stopped with a snapshot", paused.Status, paused.CurrentSnapshotID)
		}
		if got := fetch(t, sb.PreviewURL); got != http.StatusGone {
			t.Errorf("preview of a paused sandbox answered %d, want 410", got)
		}
		f.Clock.Advance(time.Minute)
		res, err := p.Resume(ctx, sb.ID, 10*time.Minute)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		resumed := mustSandbox(t, f, "ses_pr")
		if resumed.CurrentSessionID == first.CurrentSessionID || len(resumed.SessionIDs) != 2 {
			t.Errorf("sessions %v, current %s; want a new session after resume", resumed.SessionIDs, resumed.CurrentSessionID)
		}
		se, _ := f.Session(resumed.CurrentSessionID)
		if se.SourceSnapshotID != paused.CurrentSnapshotID {
			t.Errorf("resumed from %q, want snapshot %q", se.SourceSnapshotID, paused.CurrentSnapshotID)
		}
		if res.State != lifecycle.SandboxRunning || res.PreviewURL == sb.PreviewURL || res.PreviewURL != se.Routes[0].URL {
			t.Errorf("Resume = %+v; want running with the new session's route %v", res, se.Routes)
		}
		if got := fetch(t, res.PreviewURL); got != http.StatusBadGateway {
			t.Errorf("preview after resume answered %d, want 502 (the new session runs, nothing listens)", got)
		}
		// Pause again: the stop must address the new session.
		if err := p.Pause(ctx, sb.ID); err != nil {
			t.Fatalf("second Pause: %v", err)
		}
		if se, _ := f.Session(resumed.CurrentSessionID); se.Status != verceltest.StatusStopped {
			t.Errorf("new session is %s after the second pause, want stopped", se.Status)
		}
		if got, want := f.Boots(), 2; got != want {
			t.Errorf("boots = %d, want %d", got, want)
		}
	})
	t.Run("PauseTwiceStopsOnce", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_p2", nil)
		for i := range 2 {
			if err := p.Pause(context.Background(), sb.ID); err != nil {
				t.Fatalf("Pause %d: %v", i, err)
			}
		}
		if got, want := f.Requests(verceltest.OpStop), 1; got != want {
			t.Errorf("stop requests = %d, want %d", got, want)
		}
	})
	t.Run("PauseWaitsOutStopping", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_ps", nil)
		f.SetStatus(project, sb.ID, verceltest.StatusSnapshotting)
		if err := p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		if got := mustSandbox(t, f, sb.ID).Status; got != verceltest.StatusStopped {
			t.Errorf("status = %s, want stopped", got)
		}
	})
	t.Run("ResumeRunningDoesNotBoot", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_rr", nil)
		res, err := p.Resume(context.Background(), sb.ID, 5*time.Minute)
		if err != nil || res.State != lifecycle.SandboxRunning || res.PreviewURL != sb.PreviewURL {
			t.Fatalf("Resume = %+v, %v; want running with the same URL", res, err)
		}
		if got, want := f.Boots(), 1; got != want {
			t.Errorf("boots = %d, want %d", got, want)
		}
		if got := f.Requests(verceltest.OpExtend); got != 0 {
			t.Errorf("extend requests = %d, want 0 (deadline already far enough)", got)
		}
	})
	t.Run("ResumeExtendsShortGuard", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_re", nil) // sessions default to 10 min
		if err := p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
		res, err := p.Resume(context.Background(), sb.ID, 30*time.Minute)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		if got, want := res.ExpiresAt, f.Clock.Now().Add(30*time.Minute); !got.Equal(want) {
			t.Errorf("ExpiresAt = %s, want %s", got, want)
		}
		se, _ := f.Session(mustSandbox(t, f, sb.ID).CurrentSessionID)
		if got, want := se.Timeout, 30*time.Minute; got != want {
			t.Errorf("session timeout = %s, want %s", got, want)
		}
	})
	t.Run("ErrSnapshotExpired", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.SnapshotExpiration = 24 * time.Hour })
		sb := create(t, p, "ses_exp", nil)
		if err := p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
		f.Clock.Advance(24*time.Hour + time.Second)
		_, err := p.Resume(context.Background(), sb.ID, 10*time.Minute)
		var ae *vercel.APIError
		if !errors.Is(err, lifecycle.ErrSandboxGone) || !errors.As(err, &ae) || ae.Status != 410 || ae.Code != "snapshot_not_found" {
			t.Fatalf("Resume = %v; want gone from 410 snapshot_not_found", err)
		}
		if got, want := f.Boots(), 1; got != want {
			t.Errorf("boots = %d, want %d", got, want)
		}
	})
	t.Run("ErrSnapshotDeleted", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_del", nil)
		if err := p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
		f.ExpireSnapshot(project, sb.ID)
		if _, err := p.Resume(context.Background(), sb.ID, 10*time.Minute); !errors.Is(err, lifecycle.ErrSandboxGone) {
			t.Errorf("Resume = %v, want gone", err)
		}
	})
	t.Run("ErrResumeWhileStopping", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_rs", nil)
		f.SetStatus(project, sb.ID, verceltest.StatusStopping)
		if _, err := p.Resume(context.Background(), sb.ID, time.Minute); kindOf(err) != "conflict" {
			t.Errorf("Resume = %v, want conflict (422 sandbox_stopping)", err)
		}
	})
	t.Run("ErrResumeGone", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, nil)
		if _, err := p.Resume(context.Background(), "ses_none", time.Minute); kindOf(err) != "gone" {
			t.Errorf("Resume = %v, want gone (404)", err)
		}
	})
}

func TestGuard(t *testing.T) {
	t.Run("SessionStopsAndSnapshotsAtDeadline", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_g", nil)
		f.Clock.Advance(10*time.Minute - time.Second)
		if got, err := p.Get(context.Background(), sb.ID); err != nil || got.State != lifecycle.SandboxRunning {
			t.Fatalf("Get before the deadline = %+v, %v; want running", got, err)
		}
		f.Clock.Advance(2 * time.Second)
		got, err := p.Get(context.Background(), sb.ID)
		if err != nil || got.State != lifecycle.SandboxPaused {
			t.Fatalf("Get after the deadline = %+v, %v; want paused", got, err)
		}
		if want := verceltest.Epoch.Add(10 * time.Minute); !got.PausedAt.Equal(want) {
			t.Errorf("PausedAt = %s, want the deadline %s", got.PausedAt, want)
		}
		if mustSandbox(t, f, sb.ID).CurrentSnapshotID == "" {
			t.Error("no snapshot taken at the deadline")
		}
		if _, err := p.Resume(context.Background(), sb.ID, 10*time.Minute); err != nil {
			t.Errorf("Resume after the guard fired: %v", err)
		}
	})
	t.Run("ExtendOnlyWhenNeeded", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_x", nil)
		if err := p.SetTimeout(context.Background(), sb.ID, 5*time.Minute); err != nil {
			t.Fatalf("SetTimeout shorter: %v", err)
		}
		if got := f.Requests(verceltest.OpExtend); got != 0 {
			t.Errorf("extend requests = %d, want 0 (deadline already past now+5m)", got)
		}
		f.Clock.Advance(8 * time.Minute)
		if err := p.SetTimeout(context.Background(), sb.ID, 10*time.Minute); err != nil {
			t.Fatalf("SetTimeout: %v", err)
		}
		se, _ := f.Session(mustSandbox(t, f, sb.ID).CurrentSessionID)
		if got, want := se.StartedAt.Add(se.Timeout), f.Clock.Now().Add(10*time.Minute); !got.Equal(want) {
			t.Errorf("deadline = %s, want %s", got, want)
		}
		if got, want := f.Requests(verceltest.OpExtend), 1; got != want {
			t.Errorf("extend requests = %d, want %d", got, want)
		}
	})
	t.Run("BoundedByPlanMaximum", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_max", nil)
		f.Clock.Advance(5 * time.Minute)
		if err := p.SetTimeout(context.Background(), sb.ID, 2*time.Hour); err != nil {
			t.Fatalf("SetTimeout: %v", err)
		}
		se, _ := f.Session(mustSandbox(t, f, sb.ID).CurrentSessionID)
		if got, want := se.Timeout, verceltest.DefaultMaxSessionTimeout; got != want {
			t.Errorf("session timeout = %s, want the plan maximum %s", got, want)
		}
		if err := p.SetTimeout(context.Background(), sb.ID, 2*time.Hour); err != nil {
			t.Fatalf("SetTimeout at the maximum: %v", err)
		}
		if got, want := f.Requests(verceltest.OpExtend), 1; got != want {
			t.Errorf("extend requests = %d, want %d (none past the maximum)", got, want)
		}
	})
	t.Run("ServerStricterThanConfig", func(t *testing.T) {
		// The plan's maximum is lower than configured: the 400 surfaces.
		_, p := setup(t, verceltest.Config{MaxSessionTimeout: 20 * time.Minute}, func(c *vercel.Config) {
			c.MaxSessionTimeout = time.Hour
		})
		sb := create(t, p, "ses_strict", nil)
		err := p.SetTimeout(context.Background(), sb.ID, 30*time.Minute)
		if kindOf(err) != "plain" {
			t.Errorf("SetTimeout = %v, want a plain error (400)", err)
		}
	})
	t.Run("ErrStopped", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_st", nil)
		f.Clock.Advance(11 * time.Minute)
		if err := p.SetTimeout(context.Background(), sb.ID, 10*time.Minute); kindOf(err) != "gone" {
			t.Errorf("SetTimeout on a stopped session = %v, want gone", err)
		}
	})
	t.Run("Err410FromExtend", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_410", nil)
		f.Fail(verceltest.OpExtend, verceltest.Fault{Status: 410, Code: "sandbox_stopped"})
		if err := p.SetTimeout(context.Background(), sb.ID, time.Hour); kindOf(err) != "gone" {
			t.Errorf("SetTimeout = %v, want gone (410 sandbox_stopped)", err)
		}
	})
}

func TestProbe(t *testing.T) {
	t.Run("NeverBoots", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_pb", nil)
		if err := p.Pause(context.Background(), sb.ID); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			pr, err := p.Probe(context.Background(), sb.ID)
			if err != nil || pr.State != lifecycle.SandboxPaused {
				t.Fatalf("Probe = %+v, %v; want paused", pr, err)
			}
		}
		if got, want := f.Boots(), 1; got != want {
			t.Errorf("boots = %d, want %d", got, want)
		}
		if got := f.Requests(verceltest.OpResume); got != 0 {
			t.Errorf("resume=true requests = %d, want 0", got)
		}
		if got := mustSandbox(t, f, sb.ID).Status; got != verceltest.StatusStopped {
			t.Errorf("status = %s, want stopped", got)
		}
	})
	t.Run("Running", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_run", nil)
		pr, err := p.Probe(context.Background(), sb.ID)
		if err != nil || pr.State != lifecycle.SandboxRunning || !pr.ExpiresAt.Equal(sb.ExpiresAt) {
			t.Errorf("Probe = %+v, %v; want running until %s", pr, err, sb.ExpiresAt)
		}
	})
	t.Run("PendingIsTransient", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.MaxRetries = -1 })
		sb := create(t, p, "ses_pend", nil)
		f.SetStatus(project, sb.ID, verceltest.StatusPending)
		_, err := p.Probe(context.Background(), sb.ID)
		if kindOf(err) != "transient" || lifecycle.RetryAfter(err) == 0 {
			t.Errorf("Probe = %v, want transient with a retry-after", err)
		}
	})
	t.Run("Gone", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, nil)
		if _, err := p.Probe(context.Background(), "ses_nope"); kindOf(err) != "gone" {
			t.Errorf("Probe = %v, want gone", err)
		}
	})
	t.Run("NotPersistentIsGone", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "web", Timeout: time.Minute,
			AutoPause: false, Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_np"}})
		if err != nil {
			t.Fatal(err)
		}
		f.Clock.Advance(2 * time.Minute)
		if _, err := p.Probe(context.Background(), sb.ID); kindOf(err) != "gone" {
			t.Errorf("Probe = %v, want gone (stopped without persistence lost its state)", err)
		}
		if _, err := p.Get(context.Background(), sb.ID); kindOf(err) != "gone" {
			t.Errorf("Get = %v, want gone", err)
		}
	})
}

func TestKill(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_k", nil)
	if err := p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := p.Kill(context.Background(), sb.ID); err != nil {
			t.Fatalf("Kill %d: %v (404 is success)", i, err)
		}
	}
	if _, ok := f.Sandbox(project, sb.ID); ok {
		t.Error("sandbox still there")
	}
	if _, err := p.Get(context.Background(), sb.ID); kindOf(err) != "gone" {
		t.Errorf("Get after kill = %v, want gone", err)
	}
}

func TestList(t *testing.T) {
	t.Run("PagesAcrossCursor", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		for i := range 7 {
			create(t, p, fmt.Sprintf("ses_l%d", i), nil)
			f.Clock.Advance(time.Second)
		}
		other := f.MustProvider(t, nil)
		if _, err := other.Create(context.Background(), lifecycle.CreateRequest{Template: "web", Timeout: time.Minute, AutoPause: true,
			Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_o", lifecycle.MetadataDeployment: "dep2"}}); err != nil {
			t.Fatal(err)
		}
		var names []string
		var sizes []int
		token := ""
		for {
			page, err := p.List(context.Background(), lifecycle.ListRequest{
				Metadata: map[string]string{lifecycle.MetadataDeployment: "dep1"}, Limit: 3, PageToken: token})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			sizes = append(sizes, len(page.Sandboxes))
			for _, sb := range page.Sandboxes {
				names = append(names, sb.ID)
			}
			if token = page.NextToken; token == "" {
				break
			}
		}
		want := []string{"ses_l6", "ses_l5", "ses_l4", "ses_l3", "ses_l2", "ses_l1", "ses_l0"}
		if !slices.Equal(names, want) || !slices.Equal(sizes, []int{3, 3, 1}) {
			t.Errorf("listed %v in pages %v; want %v in pages [3 3 1]", names, sizes, want)
		}
	})
	t.Run("StatesAndSecondTagFilteredHere", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		for i := range 6 {
			sb := create(t, p, fmt.Sprintf("ses_s%d", i), nil)
			f.Clock.Advance(time.Second)
			if i < 2 {
				if err := p.Pause(context.Background(), sb.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Newest first, 2 per API page: the paused ones are on the third
		// page, which List reaches by itself.
		page, err := p.List(context.Background(), lifecycle.ListRequest{
			States: []lifecycle.SandboxState{lifecycle.SandboxPaused}, Limit: 2,
			Metadata: map[string]string{lifecycle.MetadataDeployment: "dep1"}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(page.Sandboxes) != 2 || page.Sandboxes[0].State != lifecycle.SandboxPaused || page.NextToken != "" {
			t.Errorf("List = %+v; want the 2 paused sandboxes and no next page", page)
		}
		if got, want := f.Requests(verceltest.OpList), 3; got != want {
			t.Errorf("list requests = %d, want %d", got, want)
		}
		page, err = p.List(context.Background(), lifecycle.ListRequest{Metadata: map[string]string{
			lifecycle.MetadataDeployment: "dep1", lifecycle.MetadataSessionID: "ses_s4"}})
		if err != nil || len(page.Sandboxes) != 1 || page.Sandboxes[0].ID != "ses_s4" ||
			page.Sandboxes[0].Metadata[lifecycle.MetadataSessionID] != "ses_s4" {
			t.Errorf("List by session = %+v, %v; want ses_s4 with its tags", page, err)
		}
	})
	t.Run("ErrUnknownState", func(t *testing.T) {
		_, p := setup(t, verceltest.Config{}, nil)
		if _, err := p.List(context.Background(), lifecycle.ListRequest{States: []lifecycle.SandboxState{"zombie"}}); err == nil {
			t.Error("List succeeded")
		}
	})
}

// TestStatusMapping drives every operation into every status the sheet
// names and checks the error's kind.
func TestStatusMapping(t *testing.T) {
	type opCase struct {
		op   verceltest.Op // the request the fault hits
		call func(p *vercel.Provider, id string) error
	}
	ops := map[string]opCase{
		"get":   {verceltest.OpGet, func(p *vercel.Provider, id string) error { _, err := p.Get(context.Background(), id); return err }},
		"probe": {verceltest.OpGet, func(p *vercel.Provider, id string) error { _, err := p.Probe(context.Background(), id); return err }},
		"pause": {verceltest.OpStop, func(p *vercel.Provider, id string) error { return p.Pause(context.Background(), id) }},
		"resume": {verceltest.OpResume, func(p *vercel.Provider, id string) error {
			_, err := p.Resume(context.Background(), id, time.Minute)
			return err
		}},
		"extend": {verceltest.OpExtend, func(p *vercel.Provider, id string) error { return p.SetTimeout(context.Background(), id, time.Hour) }},
		"kill":   {verceltest.OpDelete, func(p *vercel.Provider, id string) error { return p.Kill(context.Background(), id) }},
		"list": {verceltest.OpList, func(p *vercel.Provider, _ string) error {
			_, err := p.List(context.Background(), lifecycle.ListRequest{})
			return err
		}},
		"create": {verceltest.OpCreate, func(p *vercel.Provider, _ string) error {
			_, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "web", Timeout: time.Minute, AutoPause: true})
			return err
		}},
	}
	faults := []struct {
		name  string
		fault verceltest.Fault
		want  map[string]string // op → kind; missing: the default
		def   string
	}{
		{"400", verceltest.Fault{Status: 400, Code: "bad_request"}, nil, "plain"},
		{"401", verceltest.Fault{Status: 401, Code: "unauthorized"}, nil, "plain"},
		{"403", verceltest.Fault{Status: 403, Code: "forbidden"}, nil, "plain"},
		{"404", verceltest.Fault{Status: 404, Code: "not_found"}, map[string]string{"kill": "nil", "list": "plain", "create": "plain"}, "gone"},
		{"410SnapshotNotFound", verceltest.Fault{Status: 410, Code: "snapshot_not_found"}, nil, "gone"},
		{"410SandboxStopped", verceltest.Fault{Status: 410, Code: "sandbox_stopped"}, map[string]string{"pause": "nil"}, "gone"},
		{"422Stopping", verceltest.Fault{Status: 422, Code: "sandbox_stopping"}, nil, "conflict"},
		{"422Snapshotting", verceltest.Fault{Status: 422, Code: "sandbox_snapshotting"}, nil, "conflict"},
		{"429", verceltest.Fault{Status: 429, RetryAfter: "1"}, nil, "transient"},
		{"500", verceltest.Fault{Status: 500}, nil, "transient"},
		{"502", verceltest.Fault{Status: 502}, nil, "transient"},
		{"503", verceltest.Fault{Status: 503}, nil, "transient"},
		{"Drop", verceltest.Fault{Drop: true}, nil, "transient"},
	}
	for _, fc := range faults {
		for name, oc := range ops {
			t.Run(fc.name+"/"+name, func(t *testing.T) {
				f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.MaxRetries = -1 })
				sb := create(t, p, "ses_map", nil)
				if name == "resume" {
					if err := p.Pause(context.Background(), sb.ID); err != nil {
						t.Fatal(err)
					}
				}
				f.Fail(oc.op, fc.fault)
				if fc.fault.Drop {
					// Go's transport retries an idempotent request once when a
					// reused connection closes without an answer.
					f.Fail(oc.op, fc.fault)
				}
				want := fc.def
				if w, ok := fc.want[name]; ok {
					want = w
				}
				err := oc.call(p, sb.ID)
				if got := kindOf(err); got != want {
					t.Errorf("%s after %s = %v (%s), want %s", name, fc.name, err, got, want)
				}
				if got := f.Requests(oc.op); got == 0 {
					t.Errorf("the fault was never hit (no %s request)", oc.op)
				}
			})
		}
	}
}

func TestRetry(t *testing.T) {
	t.Run("429HonoursRetryAfter", func(t *testing.T) {
		var mu sync.Mutex
		var waits []time.Duration
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
			c.Sleep = func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				return ctx.Err()
			}
		})
		sb := create(t, p, "ses_429", nil)
		f.Fail(verceltest.OpGet, verceltest.Fault{Status: 429, RetryAfter: "7"}, verceltest.Fault{Status: 503})
		got, err := p.Get(context.Background(), sb.ID)
		if err != nil || got.State != lifecycle.SandboxRunning {
			t.Fatalf("Get = %+v, %v; want running after two retries", got, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(waits) != 2 || waits[0] < 7*time.Second || waits[1] > 800*time.Millisecond {
			t.Errorf("waits = %v; want ≥ 7s (Retry-After) then a backoff ≤ 800ms", waits)
		}
	})
	t.Run("RetryAfterBeyondMaxWaitIsReturned", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_ra", nil)
		f.Fail(verceltest.OpGet, verceltest.Fault{Status: 429, RetryAfter: "60"})
		before := f.Requests(verceltest.OpGet)
		_, err := p.Get(context.Background(), sb.ID)
		if kindOf(err) != "transient" || lifecycle.RetryAfter(err) != time.Minute {
			t.Errorf("Get = %v (retry after %s), want transient with 1m", err, lifecycle.RetryAfter(err))
		}
		if got := f.Requests(verceltest.OpGet) - before; got != 1 {
			t.Errorf("get requests = %d, want 1 (no retry past RetryMaxWait)", got)
		}
	})
	t.Run("5xxRetriedTwice", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, nil)
		sb := create(t, p, "ses_5xx", nil)
		f.Fail(verceltest.OpDelete, verceltest.Fault{Status: 500}, verceltest.Fault{Status: 502}, verceltest.Fault{Status: 503})
		before := f.Requests(verceltest.OpDelete)
		if err := p.Kill(context.Background(), sb.ID); kindOf(err) != "transient" {
			t.Errorf("Kill = %v, want transient after the retries", err)
		}
		if got := f.Requests(verceltest.OpDelete) - before; got != 3 {
			t.Errorf("delete requests = %d, want 3", got)
		}
		if err := p.Kill(context.Background(), sb.ID); err != nil {
			t.Errorf("Kill once the faults are over: %v", err)
		}
	})
	t.Run("StopHangsPastStopTimeout", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
			c.StopTimeout = 50 * time.Millisecond
			c.MaxRetries = -1
		})
		sb := create(t, p, "ses_hang", nil)
		f.Fail(verceltest.OpStop, verceltest.Fault{Hang: true})
		if err := p.Pause(context.Background(), sb.ID); kindOf(err) != "transient" {
			t.Errorf("Pause = %v, want transient", err)
		}
	})
}

func TestScoping(t *testing.T) {
	t.Run("ErrWrongTeam", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.TeamID = "team_other" })
		_, err := p.Get(context.Background(), "ses_x")
		if kindOf(err) != "plain" || f.Refused() != 1 {
			t.Errorf("Get = %v (%s), refused %d; want a plain error, 1 refusal", err, kindOf(err), f.Refused())
		}
	})
	t.Run("ErrWrongToken", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.Token = "nope" })
		if err := p.Kill(context.Background(), "ses_x"); kindOf(err) != "plain" || f.Refused() != 1 {
			t.Errorf("Kill = %v, refused %d; want a plain error, 1 refusal", err, f.Refused())
		}
	})
	t.Run("ProjectsAreSeparate", func(t *testing.T) {
		f, p := setup(t, verceltest.Config{ProjectIDs: []string{"prj_a", "prj_b"}}, nil)
		sb := create(t, p, "ses_a", nil)
		q := f.MustProvider(t, func(c *vercel.Config) { c.ProjectID = "prj_b" })
		if _, err := q.Get(context.Background(), sb.ID); kindOf(err) != "gone" {
			t.Errorf("Get from another project = %v, want gone (404)", err)
		}
		page, err := q.List(context.Background(), lifecycle.ListRequest{})
		if err != nil || len(page.Sandboxes) != 0 {
			t.Errorf("List of the other project = %+v, %v; want empty", page, err)
		}
		if _, ok := f.Sandbox("prj_a", sb.ID); !ok {
			t.Error("sandbox not in prj_a")
		}
	})
}

func TestCreateLegacyRuntime(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
		c.Templates = map[string]vercel.Template{"node": {Runtime: "node24", PreviewPort: 8080, VCPUs: 4}}
	})
	sb, err := p.Create(context.Background(), lifecycle.CreateRequest{Template: "node", Timeout: time.Minute, AutoPause: true,
		Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_node"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := mustSandbox(t, f, "ses_node")
	if rec.Runtime != "node24" || rec.Image != "" || !slices.Equal(rec.Ports, []int{8080}) {
		t.Errorf("fake holds runtime %q image %q ports %v; want node24, no image, [8080]", rec.Runtime, rec.Image, rec.Ports)
	}
	if got, err := p.Get(context.Background(), sb.ID); err != nil || got.Template != "node" || got.PreviewURL != sb.PreviewURL {
		t.Errorf("Get = %+v, %v; want template node and the 8080 route %s", got, err, sb.PreviewURL)
	}
}

// TestConcurrent races pauses, resumes, probes and timeout refreshes on one
// sandbox (run with -race): every call ends in a classified outcome and the
// fake ends in a state the calls can explain.
func TestConcurrent(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_race", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 80)
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			var err error
			switch i % 4 {
			case 0:
				err = p.Pause(ctx, sb.ID)
			case 1:
				_, err = p.Resume(ctx, sb.ID, 10*time.Minute)
			case 2:
				_, err = p.Probe(ctx, sb.ID)
			case 3:
				err = p.SetTimeout(ctx, sb.ID, 20*time.Minute)
				if errors.Is(err, lifecycle.ErrSandboxGone) {
					err = nil // stopped by a concurrent pause: what the service reconciles
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("call failed: %v", err)
		}
	}
	rec := mustSandbox(t, f, sb.ID)
	if got, want := f.Boots(), len(rec.SessionIDs); got != want {
		t.Errorf("boots = %d, sessions = %d; want one session per boot", got, want)
	}
	if rec.Status != verceltest.StatusRunning && rec.Status != verceltest.StatusStopped {
		t.Errorf("final status %s, want running or stopped", rec.Status)
	}
	for _, id := range rec.SessionIDs {
		if se, _ := f.Session(id); se.Status != verceltest.StatusStopped && id != rec.CurrentSessionID {
			t.Errorf("old session %s is %s; only the current session may run", id, se.Status)
		}
	}
}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*vercel.Config)
		want   string
	}{
		"OK":             {nil, "nil"},
		"ErrProject":     {func(c *vercel.Config) { c.ProjectID = "prj_other" }, "plain"},
		"ErrTeam":        {func(c *vercel.Config) { c.TeamID = "team_other" }, "plain"},
		"ErrToken":       {func(c *vercel.Config) { c.Token = "nope" }, "plain"},
		"ErrUnavailable": {func(c *vercel.Config) { c.MaxRetries = -1 }, "transient"},
	} {
		t.Run(name, func(t *testing.T) {
			f, p := setup(t, verceltest.Config{}, tc.change)
			if tc.want == "transient" {
				f.Fail(verceltest.OpList, verceltest.Fault{Status: 503})
			}
			if got := kindOf(p.Check(context.Background())); got != tc.want {
				t.Errorf("Check = %s, want %s", got, tc.want)
			}
		})
	}
}

// recorder records every request a provider sends.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func TestScopeOnEveryCall(t *testing.T) {
	rec := &recorder{}
	_, p := setup(t, verceltest.Config{}, func(c *vercel.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	ctx := context.Background()
	sb := create(t, p, "ses_scope", nil)
	steps := []error{p.Pause(ctx, sb.ID)}
	_, err := p.Resume(ctx, sb.ID, time.Minute)
	steps = append(steps, err, p.SetTimeout(ctx, sb.ID, time.Hour))
	_, err = p.List(ctx, lifecycle.ListRequest{})
	steps = append(steps, err, p.Check(ctx), p.Kill(ctx, sb.ID))
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) < 8 {
		t.Fatalf("only %d requests recorded", len(rec.reqs))
	}
	for _, r := range rec.reqs {
		q := r.URL.Query()
		if got := q.Get("teamId"); got != verceltest.DefaultTeamID {
			t.Errorf("%s %s: teamId %q, want %q", r.Method, r.URL.Path, got, verceltest.DefaultTeamID)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+verceltest.DefaultToken {
			t.Errorf("%s %s: Authorization %q", r.Method, r.URL.Path, got)
		}
		switch {
		case r.URL.Path == "/v2/sandboxes":
			if q.Get("project") != project {
				t.Errorf("list without project: %s", r.URL)
			}
		case strings.HasPrefix(r.URL.Path, "/v2/sandboxes/sessions/"):
		case strings.HasPrefix(r.URL.Path, "/v2/sandboxes/"):
			if q.Get("projectId") != project {
				t.Errorf("%s %s without projectId", r.Method, r.URL)
			}
		}
	}
}

func TestTeamSlug(t *testing.T) {
	rec := &recorder{}
	_, p := setup(t, verceltest.Config{}, func(c *vercel.Config) {
		c.HTTPClient = &http.Client{Transport: rec}
		c.TeamID, c.TeamSlug = "", "my-team"
	})
	_ = p.Check(context.Background()) // the fake serves teamId only: refused
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if q := rec.reqs[0].URL.Query(); q.Get("slug") != "my-team" || q.Has("teamId") {
		t.Errorf("query %v, want slug=my-team and no teamId", q)
	}
}

func TestListErrBadCursor(t *testing.T) {
	_, p := setup(t, verceltest.Config{}, nil)
	_, err := p.List(context.Background(), lifecycle.ListRequest{PageToken: "not-a-cursor"})
	var ae *vercel.APIError
	if kindOf(err) != "plain" || !errors.As(err, &ae) || ae.Status != 400 {
		t.Errorf("List = %v, want a plain 400", err)
	}
}
