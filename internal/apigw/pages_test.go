package apigw_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/linkpage"
)

// browserAccept is Chromium's Accept on a navigation.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"

// wantPage checks r is a page (text/html) with status and every one of
// contains in its body.
func wantPage(tb testing.TB, r result, status int, contains ...string) {
	tb.Helper()
	wantStatus(tb, r, status)
	if ct := r.headers["Content-Type"]; !strings.HasPrefix(ct, "text/html") {
		tb.Fatalf("Content-Type %q, want a page (text/html); body %s", ct, r.body)
	}
	for _, c := range contains {
		if !strings.Contains(r.body, c) {
			tb.Errorf("page lacks %q: %s", c, r.body)
		}
	}
}

// TestTheLinksErrorsArePagesForBrowsersAndEnvelopesForClients: every error
// of the stable link is a page for a browser (an Accept that prefers
// text/html) with the error's status and headers, and the JSON envelope
// for any other client (no Accept, */*, application/json, or JSON
// preferred over HTML): a missing or expired token (401, with
// WWW-Authenticate), another session's token (403), no such session (404).
func TestTheLinksErrorsArePagesForBrowsersAndEnvelopesForClients(t *testing.T) {
	t.Parallel()
	h, tokens := MustTokenHarness(t)
	s := h.mustCreate(t)
	other := h.mustCreate(t)
	otherTok, _, err := tokens.Mint(other.ID, other.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		ev     func(accept string) result
		status int
		errTyp string
		page   string
	}{
		{"ErrNoCredentials", func(a string) result {
			return h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withHeader("accept", a)))
		}, http.StatusUnauthorized, "unauthorized", "not signed in"},
		{"ErrBadToken", func(a string) result {
			return h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", "sct_nope"), withHeader("accept", a)))
		}, http.StatusUnauthorized, "unauthorized", "not signed in"},
		{"ErrOtherSessionsToken", func(a string) result {
			return h.invoke(t, MustEvent(t, "open.json", withID(s.ID), withKey(""), withQuery("token", otherTok), withHeader("accept", a)))
		}, http.StatusForbidden, "forbidden", "for another preview"},
		{"ErrNoSuchSession", func(a string) result {
			return h.invoke(t, MustEvent(t, "open.json", withID("ses_"+strings.Repeat("a", 26)), withHeader("accept", a)))
		}, http.StatusNotFound, "not_found", "no preview at this link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, accept := range []string{browserAccept, "text/html", "application/json;q=0.5, text/html"} {
				r := c.ev(accept)
				wantPage(t, r, c.status, c.page, "Open the preview again from the app")
				if strings.Contains(r.body, "<script") {
					t.Errorf("Accept %q: an error page runs no script", accept)
				}
				if c.status == http.StatusUnauthorized && r.headers["WWW-Authenticate"] == "" {
					t.Errorf("Accept %q: a 401 page lost WWW-Authenticate", accept)
				}
			}
			for _, accept := range []string{"", "*/*", "application/json", "application/json, text/html;q=0.9", "text/html;q=0"} {
				wantError(t, c.ev(accept), c.status, c.errTyp)
			}
		})
	}
}

// TestAGoneLinksPageSaysWhy: a killed session's link is a page saying the
// session ended, with nothing to retry; an expired one's says it
// cannot be recovered and offers a retry; both answer 410.
func TestAGoneLinksPageSaysWhy(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	browser := withHeader("accept", browserAccept)
	killed := h.mustCreate(t)
	wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(killed.ID))), http.StatusOK)
	r := h.invoke(t, MustEvent(t, "open.json", withID(killed.ID), browser))
	wantPage(t, r, http.StatusGone, "This session has ended", "start a new session")
	if strings.Contains(r.body, `class="button"`) {
		t.Errorf("an ended session's page offers a retry: %s", r.body)
	}
	s := h.mustSession(t, h.mustCreate(t).ID)
	s.State = lifecycle.StateExpired
	if err := h.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
		t.Fatal(err)
	}
	r = h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser))
	wantPage(t, r, http.StatusGone, "can&#39;t be recovered", "the provider no longer has it",
		`class="button" href="/v1/sessions/`+s.ID+`/open"`, "Try again")
	wantError(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID))), http.StatusGone, "gone")
}

// TestAnErrorPageKeepsItsStatus: an open refused because the account is
// at its running limit answers a browser 429 with a page that says so and
// offers a retry.
func TestAnErrorPageKeepsItsStatus(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	h.withMaxRunning(t, 1)
	first := h.mustCreate(t)
	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(first.ID))), http.StatusOK)
	h.mustCreate(t)
	r := h.invoke(t, MustEvent(t, "open.json", withID(first.ID), withHeader("accept", browserAccept)))
	wantPage(t, r, http.StatusTooManyRequests, "can&#39;t wake right now", "Too many previews", "Try again")
}

// TestTheLinksPagesWearTheBrand: the waking page and the notices carry the
// deployment's brand (Config.Brand): its name in the title and the
// header, its logo, its accent.
func TestTheLinksPagesWearTheBrand(t *testing.T) {
	t.Parallel()
	brand, err := linkpage.ParseBrand("Acme Cloud", "#0F766E", "https://cdn.acme.test/logo.svg")
	if err != nil {
		t.Fatal(err)
	}
	h := MustHarness(t, func(o *apigw.Config) { o.Brand = brand })
	s := h.mustCreate(t, withBody(appBody)) // no readiness jobs: its app stays starting
	browser := withHeader("accept", browserAccept)
	r := h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser))
	wantPage(t, r, http.StatusOK, "<title>Waking up the preview · Acme Cloud</title>", `src="https://cdn.acme.test/logo.svg"`,
		"--accent: #0f766e", `aria-current="step"`, "Start the app", `role="status"`)
	wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(s.ID))), http.StatusOK)
	wantPage(t, h.invoke(t, MustEvent(t, "open.json", withID(s.ID), browser)), http.StatusGone, "· Acme Cloud</title>", "Acme Cloud</span>")
}
