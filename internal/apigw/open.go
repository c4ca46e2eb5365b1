package apigw

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// MaxOpenWaitSeconds bounds ?wait= of GET /v1/sessions/{id}/open: the API
// Gateway budget of 29 s less a margin (lifecycle.MaxWaitReady).
const MaxOpenWaitSeconds = int(lifecycle.MaxWaitReady / time.Second)

// openRetryAfter is the Retry-After of a 503 from an open whose session is
// still waking.
const openRetryAfter = 2 * time.Second

// ReopenParam is the query parameter the waking page adds to the link when
// it opens it again by itself (ReopenParam=1): such an open is never
// activity and wakes nothing (lifecycle.Service.Reopen, docs/WAKE.md "The
// waking page").
const ReopenParam = "reopen"

// open serves GET /v1/sessions/{id}/open and /open/{path+}, the session's
// stable link (docs/WAKE.md "Opening the link"): 302 to the preview URL
// plus path when the session is running and its app ready (or it has no
// app); on a paused session it starts the one resume of a burst
// (lifecycle.Service.Open), then answers a browser (Accept: text/html) 200
// with a waking page and any other client, after holding up to ?wait=
// seconds (0..25, default 0), 302 or 503 with Retry-After. killed, failed
// or expired, also when that happened during the hold: 410. A running
// session whose app failed, or whose sandbox has no preview URL: 409
// app_failed or no_preview at once (lifecycle.Session.OpenError). A
// browser gets each of these answers, and every error of the link, as a
// page (linkPageForError, docs/WAKE.md "What a browser sees"). Opening counts
// as activity only when the link leads somewhere, and never with
// ?reopen=1 (the waking page's own re-open).
func (h *Handler) open(ctx context.Context, r *request) (response, error) {
	id, err := r.sessionID()
	if err != nil {
		return response{}, err
	}
	wait, err := r.queryInt("wait", 0, 0, MaxOpenWaitSeconds)
	if err != nil {
		return response{}, err
	}
	browser := prefersHTML(r)
	open := h.svc.Open
	if r.event.QueryStringParameters[ReopenParam] == "1" {
		open = h.svc.Reopen
	}
	sess, err := open(ctx, r.accountID, id)
	if err != nil {
		return response{}, err // a browser gets it as a page (linkPageForError)
	}
	if sess.Opened() {
		return redirectTo(sess.PreviewURL, r.event.PathParameters["path"]), nil
	}
	if browser {
		return response{status: http.StatusOK, html: h.brand.WakingPage(wakingOf(sess, r, h.pageToken(r, id), h.wsURL))}, nil
	}
	bound := time.Duration(wait) * time.Second
	if d, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(d)-waitReadyMargin)
	}
	if bound > 0 {
		if waited, werr := h.svc.WaitOpen(ctx, r.accountID, id, bound); werr == nil {
			sess = waited
		}
	}
	if sess.Opened() {
		return redirectTo(sess.PreviewURL, r.event.PathParameters["path"]), nil
	}
	if err := sess.OpenError(); err != nil {
		return response{}, err // ended (deleted, expired) or its app failed during the hold
	}
	return response{}, &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: openRetryAfter,
		Message: "the session is " + string(sess.State) + " and waking; retry shortly"}
}

// redirectTo answers 302 to preview with path (the {path+} of the link)
// appended below it.
func redirectTo(preview, path string) response {
	loc := preview
	if path != "" {
		u, err := url.Parse(preview)
		if err == nil {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.TrimPrefix(path, "/")
			loc = u.String()
		}
	}
	return response{status: http.StatusFound, headers: map[string]string{"Location": loc}}
}

// pageToken returns the client token the waking page connects with: the
// link's own ?token=, else one minted for the page (API-key callers), else
// "" (no client channel: the page reloads the link instead).
func (h *Handler) pageToken(r *request, id string) string {
	if r.clientToken {
		return r.event.QueryStringParameters["token"]
	}
	if h.tokens == nil {
		return ""
	}
	tok, _, err := h.tokens.Mint(id, r.accountID, 0)
	if err != nil {
		return ""
	}
	return tok
}

// clientScriptURL returns the path of GET /v1/sandman.js
// (routes.ClientScriptPath) on the API the link was opened on: the link's
// path up to "/sessions/", so a stage or a base path in front of /v1 is
// kept ("/prod/v1/sessions/x/open" → "/prod/v1/sandman.js").
func clientScriptURL(link string) string {
	prefix, _, ok := strings.Cut(link, "/sessions/")
	if !ok {
		return routes.ClientScriptPath
	}
	return prefix + "/sandman.js"
}
