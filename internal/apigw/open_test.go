package apigw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
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
