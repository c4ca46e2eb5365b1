package apigw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

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
