package apigw_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// withOpenPath turns an open fixture into one of the link with a trailing
// path, as API Gateway's greedy {path+} passes it.
func withOpenPath(path string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		ev.RouteKey = "GET /v1/sessions/{id}/open/{path+}"
		ev.RequestContext.RouteKey = ev.RouteKey
		ev.PathParameters["path"] = path
		ev.RawPath += "/" + path
		ev.RequestContext.HTTP.Path += "/" + path
	}
}

// TestOpenLink: the stable link of a running session redirects to its
// preview (with the link's path), takes a client token in ?token=, refuses
// another session's token (403) and no credentials (401); a paused session
// wakes (a browser gets the waking page, another client a 503 with
// Retry-After or, holding, the redirect); a killed one answers 410.
func TestOpenLink(t *testing.T) {
	t.Parallel()
	h, tokens := MustTokenHarness(t)
	s := h.mustCreate(t)
	other := h.mustCreate(t)
	tok, _, err := tokens.Mint(s.ID, s.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	otherTok, _, err := tokens.Mint(other.ID, other.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RunningRedirects", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID)))
		wantStatus(t, r, http.StatusFound)
		if r.headers["Location"] != str(s.PreviewURL) {
			t.Errorf("Location = %q, want the preview %q", r.headers["Location"], str(s.PreviewURL))
		}
	})
	t.Run("PathPassedOn", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withOpenPath("docs/index.html")))
		wantStatus(t, r, http.StatusFound)
		if want := str(s.PreviewURL) + "/docs/index.html"; r.headers["Location"] != want {
			t.Errorf("Location = %q, want %q", r.headers["Location"], want)
		}
	})
	t.Run("TokenInQuery", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", tok)))
		wantStatus(t, r, http.StatusFound)
	})
	t.Run("ErrOtherSessionsToken", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", otherTok)))
		wantError(t, r, http.StatusForbidden, "forbidden")
	})
	t.Run("ErrNoCredentials", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey("")))
		wantError(t, r, http.StatusUnauthorized, "unauthorized")
	})
	t.Run("ErrWaitBounds", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withQuery("wait", "26")))
		wantError(t, r, http.StatusBadRequest, "invalid", "wait")
	})
	t.Run("PausedBrowserGetsWakingPage", func(t *testing.T) {
		p := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(p.ID))), http.StatusOK)
		// The fake resumes at once, so the open that wakes it may redirect
		// straight away; either way a browser is never sent an error.
		r := h.invoke(t, MustEvent(t, "open.json", withID(p.ID), withHeader("accept", "text/html")))
		if r.status != http.StatusFound && r.status != http.StatusOK {
			t.Fatalf("status %d, want the preview or the waking page", r.status)
		}
		if r.status == http.StatusOK && !strings.Contains(r.body, `"/v1/sandman.js"`) {
			t.Errorf("waking page does not follow the session: %s", r.body)
		}
		if got := h.mustSession(t, p.ID); got.State != "running" {
			t.Errorf("state after an open = %s, want running", got.State)
		}
	})
	t.Run("KilledIsGone", func(t *testing.T) {
		k := h.mustCreate(t)
		wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(k.ID))), http.StatusOK)
		wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(k.ID))), http.StatusGone, "gone")
		r := h.invoke(t, MustEvent(t, "open.json", withID(k.ID), withHeader("accept", "text/html")))
		wantStatus(t, r, http.StatusGone)
		if !strings.Contains(r.headers["Content-Type"], "text/html") {
			t.Errorf("Content-Type %q for a browser, want text/html", r.headers["Content-Type"])
		}
	})
}

// TestOpenWhileResumingServesTheWakingPage: a browser opening the link of a
// session another open is waking gets the waking page at once, which
// imports the client module from the API (GET /v1/sandman.js) and follows
// the session; a client that does not hold gets 503 with Retry-After.
func TestOpenWhileResumingServesTheWakingPage(t *testing.T) {
	t.Parallel()
	h, tokens := MustTokenHarness(t)
	s := h.mustCreate(t)
	tok, _, err := tokens.Mint(s.ID, s.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), http.StatusOK)
	release := make(chan struct{})
	atProvider := make(chan struct{}, 1)
	h.prov.SetOnCall(func(op fake.Op, _ string) {
		if op == fake.OpResume {
			atProvider <- struct{}{}
			<-release
		}
	})
	first := make(chan result, 1)
	go func() { first <- h.invoke(t, MustEvent(t, "open.json", withID(s.ID))) }()
	<-atProvider // the first open holds the resume at the provider

	r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", tok), withHeader("accept", "text/html")))
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.body, `"/v1/sandman.js"`) || !strings.Contains(r.body, tok) {
		t.Errorf("the waking page does not import /v1/sandman.js with the link's token: %s", r.body)
	}
	if !strings.Contains(r.headers["Content-Type"], "text/html") {
		t.Errorf("Content-Type %q, want text/html", r.headers["Content-Type"])
	}
	wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID))), http.StatusServiceUnavailable, "unavailable")

	close(release)
	h.prov.SetOnCall(nil)
	if got := <-first; got.status != http.StatusFound && got.status != http.StatusServiceUnavailable {
		t.Errorf("the waking open answered %d, want 302 or 503", got.status)
	}
	if got := h.mustSession(t, s.ID); got.State != "running" {
		t.Errorf("state %s after the resume, want running", got.State)
	}
}

// mustFailedApp creates a session whose app command exits with code 3 and
// runs its readiness job: running, readiness failed.
func (h *harness) mustFailedApp(t *testing.T) *lifecycle.Session {
	t.Helper()
	s := h.mustCreate(t, withBody(`{"template":"base","app":{"port":3000,"start_command":"exit 3"}}`))
	cfg := h.svc.Config()
	cfg.ReadyHTTP = &http.Client{Transport: h.prov.Preview()}
	if out, err := lifecycle.NewService(cfg).BringUp(t.Context(), s.ID); err != nil || out != lifecycle.BringUpFailed {
		t.Fatalf("readiness job: %q, %v; want failed", out, err)
	}
	return h.mustSession(t, s.ID)
}

// TestAFailedAppsLinkEndsTheWaitAndIsNotActivity: the link of a running
// session whose app failed answers at once, an API client 409 app_failed
// with the exit code and last output lines (held or not), a browser a page
// saying so (no waking page, which would re-open it for ever). Twenty
// opens over ten minutes, by a user and by the page's own re-open, move no
// deadline and write nothing.
func TestAFailedAppsLinkEndsTheWaitAndIsNotActivity(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	before := h.mustFailedApp(t)
	for i := range 20 {
		h.clock.Advance(30 * time.Second)
		switch i % 4 {
		case 0, 1: // an API client, then one that holds
			ev := MustEvent(t, "open.json", withID(before.ID))
			if i%4 == 1 {
				ev = MustEvent(t, "open.json", withID(before.ID), withQuery("wait", "5"))
			}
			e := wantError(t, h.invoke(t, ev), http.StatusConflict, lifecycle.TypeAppFailed, "app failed", "exited with code 3")
			if e.ExitCode == nil || *e.ExitCode != 3 || !strings.Contains(e.Output, "exit 3") {
				t.Fatalf("exit_code %v, output %q; want 3 and the command's last output", e.ExitCode, e.Output)
			}
		case 2, 3: // a browser, then the page's own re-open
			ev := MustEvent(t, "open.json", withID(before.ID), withHeader("accept", "text/html"))
			if i%4 == 3 {
				ev = MustEvent(t, "open.json", withID(before.ID), withHeader("accept", "text/html"), withQuery(apigw.ReopenParam, "1"))
			}
			r := h.invoke(t, ev)
			wantStatus(t, r, http.StatusConflict)
			if !strings.Contains(r.headers["Content-Type"], "text/html") || !strings.Contains(r.body, "exited with code 3") ||
				!strings.Contains(r.body, "exit 3") || strings.Contains(r.body, "<script") {
				t.Fatalf("browser page %q: want a page with the exit code and the output, and no script", r.body)
			}
		}
	}
	after := h.mustSession(t, before.ID)
	if !after.IdleDeadline.Equal(before.IdleDeadline) || !after.PauseDeadline().Equal(before.PauseDeadline()) ||
		after.Version != before.Version {
		t.Errorf("after 20 opens over 10 min: idle deadline %v → %v, pause deadline %v → %v, version %d → %d; want none moved",
			before.IdleDeadline, after.IdleDeadline, before.PauseDeadline(), after.PauseDeadline(), before.Version, after.Version)
	}
}

// TestALinkWithNoPreviewSaysSo: a running session whose sandbox gave no
// preview URL answers 409 no_preview at once instead of a wait that never
// ends, and an open of it is no activity.
func TestALinkWithNoPreviewSaysSo(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustSession(t, h.mustCreate(t).ID)
	s.PreviewURL = ""
	if err := h.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	before := h.mustSession(t, s.ID)
	h.clock.Advance(time.Minute)
	wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withQuery("wait", "5"))), http.StatusConflict, lifecycle.TypeNoPreview, "no preview URL")
	r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withHeader("accept", "text/html")))
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(r.body, "no preview address") || strings.Contains(r.body, "<script") {
		t.Errorf("browser page %q: want the reason and no script", r.body)
	}
	if after := h.mustSession(t, s.ID); !after.IdleDeadline.Equal(before.IdleDeadline) {
		t.Errorf("idle deadline moved from %v to %v", before.IdleDeadline, after.IdleDeadline)
	}
}

// TestAWakingPagesOwnReopenIsNotActivity: the waking page re-opens the link
// with ?reopen=1; such an open of a session whose app is starting moves no
// deadline (a user's open does), and of a paused session wakes nothing: 409
// sandbox_paused, a browser a page whose link (without reopen, the token
// kept) a user can click to wake it.
func TestAWakingPagesOwnReopenIsNotActivity(t *testing.T) {
	t.Parallel()
	h, tokens := MustTokenHarness(t)
	s := h.mustCreate(t, withBody(appBody)) // no readiness jobs: its app stays starting
	browser := withHeader("accept", "text/html")
	page := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser))
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(page.body, `q.set("`+apigw.ReopenParam+`", "1")`) {
		t.Fatalf("the waking page does not mark its re-open with %s=1: %s", apigw.ReopenParam, page.body)
	}

	before := h.mustSession(t, s.ID)
	for range 10 {
		h.clock.Advance(25 * time.Second)
		wantStatus(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser, withQuery(apigw.ReopenParam, "1"))), http.StatusOK)
	}
	if got := h.mustSession(t, s.ID); !got.IdleDeadline.Equal(before.IdleDeadline) || got.Version != before.Version {
		t.Errorf("10 re-opens over 250 s: idle deadline %v → %v, version %d → %d; want neither moved",
			before.IdleDeadline, got.IdleDeadline, before.Version, got.Version)
	}
	wantStatus(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser)), http.StatusOK)
	if got := h.mustSession(t, s.ID); !got.IdleDeadline.After(before.IdleDeadline) {
		t.Errorf("a user's open left the idle deadline at %v, want it moved", got.IdleDeadline)
	}

	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), http.StatusOK)
	resumes := h.prov.Calls(fake.OpResume)
	tok, _, err := tokens.Mint(s.ID, s.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withQuery(apigw.ReopenParam, "1"), withQuery("wait", "5"))),
		http.StatusConflict, lifecycle.TypeSandboxPaused)
	r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", tok), withQuery(apigw.ReopenParam, "1"), browser))
	wantStatus(t, r, http.StatusConflict)
	if want := `href="/v1/sessions/` + s.ID + `/open?token=`; !strings.Contains(r.body, want) || strings.Contains(r.body, apigw.ReopenParam+"=") {
		t.Errorf("paused page %q: want a link to the open with its token and without %s", r.body, apigw.ReopenParam)
	}
	if got := h.mustSession(t, s.ID); got.State != lifecycle.StatePaused || h.prov.Calls(fake.OpResume) != resumes {
		t.Errorf("after re-opens of the paused session: %s, %d resumes; want paused, none", got.State, h.prov.Calls(fake.OpResume)-resumes)
	}
}

// TestAHeldOpenOfASessionDeletedDuringTheHoldIsGone: a client holding on
// the link (?wait=) of a session whose app is starting is answered 410
// gone when the session is deleted during the hold, as for an open of a
// deleted session, not 503 "waking".
func TestAHeldOpenOfASessionDeletedDuringTheHoldIsGone(t *testing.T) {
	t.Parallel()
	var h *harness
	var held string
	var deleteOnce sync.Once
	h = MustHarness(t, func(o *apigw.Config) {
		cfg := o.Service.Config()
		cfg.Sleep = func(ctx context.Context, _ time.Duration) error {
			deleteOnce.Do(func() {
				wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(held))), http.StatusOK)
			})
			return ctx.Err()
		}
		o.Service = lifecycle.NewService(cfg)
	})
	held = h.mustCreate(t, withBody(appBody)).ID // its app stays starting: an open holds
	wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(held), withQuery("wait", "10"))), http.StatusGone, "gone", "killed")
	if got := h.mustSession(t, held); got.State != lifecycle.StateKilled {
		t.Errorf("state %s, want killed", got.State)
	}
}
