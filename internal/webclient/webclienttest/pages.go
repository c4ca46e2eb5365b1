package webclienttest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/linkpage"
)

// The gallery of the stable link's pages (internal/linkpage), for the
// browser tests that render, audit and screenshot each
// (testdata/pages.test.mjs):
//
//	GET /pages/           → 200 the pages' names, a JSON array
//	GET /pages/{name}     → the page, with the status the link answers it with
//	GET /pages/logo.svg   → a logo for ?logo=1
//
// A waking page follows this server's channel (/v1/ws) with the token
// ?token= (none: no channel, and the page opens itself again after 3 s)
// and opens its own path again; ?brand= (a name), ?accent= and ?logo=1
// theme every page.

// galleryRetry is the retry link of the gallery's notices.
const galleryRetry = "/pages/retry"

// page renders one page of the gallery in brand; w is the waking page's
// channel and link, for the waking pages.
type page func(b linkpage.Brand, w linkpage.Waking) (status int, html string)

// galleryPages are the gallery's pages by name: the waking page in each
// state an open can find, and every notice.
var galleryPages = map[string]page{
	"waking-paused":     wakingIn("paused", "", true),
	"waking-restoring":  wakingIn("restoring", "", true),
	"waking-recovering": recovering(time.Date(2026, 12, 6, 17, 5, 0, 0, time.UTC)),
	"waking-starting":   wakingIn("running", "starting", true),
	"waking-no-app":     wakingIn("resuming", "", false),
	"app-failed":        notice(http.StatusConflict, linkpage.AppFailed("the start command exited with code 3 before the preview answered", "3", "$ npm run dev\n> vite\nError: Cannot find module 'vite'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)", galleryRetry)),
	"no-preview":        notice(http.StatusConflict, linkpage.NoPreview(galleryRetry)),
	"unrecoverable":     notice(http.StatusGone, linkpage.Unrecoverable(true, galleryRetry)),
	"ended":             notice(http.StatusGone, linkpage.Ended()),
	"not-signed-in":     notice(http.StatusUnauthorized, linkpage.NotSignedIn()),
	"other-session":     notice(http.StatusForbidden, linkpage.OtherSession()),
	"not-found":         notice(http.StatusNotFound, linkpage.NotFound()),
	"asleep":            notice(http.StatusConflict, linkpage.Asleep(galleryRetry)),
	"cannot-wake":       notice(http.StatusServiceUnavailable, linkpage.CannotWake(linkpage.WhyProvider, galleryRetry)),
	"cannot-wake-quota": notice(http.StatusTooManyRequests, linkpage.CannotWake(linkpage.WhyQuota, galleryRetry)),
}

// wakingIn is the waking page of a session in state with readiness, with
// an app (2 minutes to start) or without.
func wakingIn(state, readiness string, app bool) page {
	return func(b linkpage.Brand, w linkpage.Waking) (int, string) {
		w.State, w.Readiness, w.App = state, readiness, app
		if app {
			w.AppTimeout = 2 * time.Minute
		}
		return http.StatusOK, b.WakingPage(w)
	}
}

// recovering is the waking page of a lost session restoring the
// checkpoint taken at from ("Restoring your work from <time>").
func recovering(from time.Time) page {
	return func(b linkpage.Brand, w linkpage.Waking) (int, string) {
		w.State, w.App, w.AppTimeout, w.Recovery = "restoring", true, 2*time.Minute, &linkpage.Recovery{From: from}
		return http.StatusOK, b.WakingPage(w)
	}
}

// notice is the notice n, answered with status.
func notice(status int, n linkpage.Notice) page {
	return func(b linkpage.Brand, _ linkpage.Waking) (int, string) { return status, b.NoticePage(n) }
}

// galleryLogo is the logo of ?logo=1: a rounded square and a wordmark.
const galleryLogo = `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="28" viewBox="0 0 96 28"><rect width="28" height="28" rx="7" fill="#0f766e"/><path d="M8 18c3-8 9-8 12 0" stroke="#fff" stroke-width="3" fill="none" stroke-linecap="round"/><text x="36" y="20" font-family="system-ui,sans-serif" font-size="16" font-weight="700" fill="#0f766e">acme</text></svg>`

// handlePages registers the gallery's routes on mux.
func handlePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /pages/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(slices.Sorted(maps.Keys(galleryPages)))
	})
	mux.HandleFunc("GET /pages/logo.svg", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		io.WriteString(w, galleryLogo)
	})
	mux.HandleFunc("GET /pages/{name}", func(w http.ResponseWriter, r *http.Request) {
		p, ok := galleryPages[r.PathValue("name")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		logo := ""
		if q.Get("logo") == "1" {
			logo = "http://" + r.Host + "/pages/logo.svg"
		}
		b, err := linkpage.ParseBrand(q.Get("brand"), q.Get("accent"), logo)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ws := ""
		if q.Get("token") != "" {
			ws = "/v1/ws"
		}
		status, html := p(b, linkpage.Waking{Link: r.URL.Path, Script: "/sandman.js", Token: q.Get("token"), WSURL: ws})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, html)
	})
}
