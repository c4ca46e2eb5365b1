package apigw

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
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
// browser gets each of these answers as a short HTML page. Opening counts
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
	browser := wantsHTML(r)
	open := h.svc.Open
	if r.event.QueryStringParameters[ReopenParam] == "1" {
		open = h.svc.Reopen
	}
	sess, err := open(ctx, r.accountID, id)
	if err != nil {
		if page, ok := openErrorPage(r, err); ok && browser {
			return page, nil
		}
		return response{}, err
	}
	if sess.Opened() {
		return redirectTo(sess.PreviewURL, r.event.PathParameters["path"]), nil
	}
	if browser {
		return htmlResponse(http.StatusOK, wakingPage, openPage{
			SessionID: id, Link: r.path(), Script: clientScriptURL(r.path()), Token: h.pageToken(r, id), WSURL: h.wsURL,
		}), nil
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

// openErrorPage returns a browser's page for an open's error when it has
// one: 410 for a session that ended, 409 for an app that failed, a sandbox
// with no preview, or a paused session a page's re-open left paused (with
// the link to click to wake it).
func openErrorPage(r *request, err error) (response, bool) {
	le, ok := httpapi.AppError(err)
	if !ok {
		return response{}, false
	}
	p := openPage{Message: le.Message}
	switch {
	case le.Code == lifecycle.CodeGone:
		p.Title = "Session ended"
		return htmlResponse(http.StatusGone, noticePage, p), true
	case le.Type == lifecycle.TypeAppFailed:
		p.Title = "The app failed"
		if le.App != nil {
			p.Output = le.App.Output
			if le.App.ExitCode != nil {
				p.ExitCode = strconv.Itoa(*le.App.ExitCode)
			}
		}
	case le.Type == lifecycle.TypeNoPreview:
		p.Title = "Nothing to open"
	case le.Type == lifecycle.TypeSandboxPaused:
		p.Title = "Session paused"
		p.Link = linkWithoutReopen(r)
	default:
		return response{}, false
	}
	return htmlResponse(http.StatusConflict, noticePage, p), true
}

// linkWithoutReopen returns the link as it was opened (its path and query,
// the token kept) without ReopenParam: a user's open of it wakes the
// session.
func linkWithoutReopen(r *request) string {
	q := url.Values{}
	for k, v := range r.event.QueryStringParameters {
		if k != ReopenParam {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return r.path()
	}
	return r.path() + "?" + q.Encode()
}

// wantsHTML reports whether the request's Accept names text/html, as a
// browser's navigation does.
func wantsHTML(r *request) bool {
	accept, _ := r.header("Accept")
	return strings.Contains(strings.ToLower(accept), "text/html")
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

// openPage is what the link's HTML pages are rendered from. Script is the
// path of the client module (clientScriptURL); Title, Message, ExitCode
// and Output are a notice page's (noticePage), and Link its link to click
// ("" for none).
type openPage struct {
	SessionID, Link, Script, Token, WSURL string
	Title, Message, ExitCode, Output      string
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

// htmlResponse renders page with data as the body of a text/html answer.
func htmlResponse(status int, page *template.Template, data openPage) response {
	var b strings.Builder
	if err := page.Execute(&b, data); err != nil {
		b.Reset()
		fmt.Fprintf(&b, "<!doctype html><title>Sandman</title><p>%s</p>", template.HTMLEscapeString(data.Message))
	}
	return response{status: status, html: b.String()}
}

// wakingPage follows the session over the client channel (sandman.js,
// served by the API at /v1/sandman.js: clientScriptURL) and opens the link
// again the moment the session is usable, or its app failed, or it ended;
// the link then redirects to the preview or answers why not. Without a
// channel it opens the link again every few seconds. Each of its own
// re-opens carries ReopenParam, so none counts as activity.
var wakingPage = template.Must(template.New("waking").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Waking your session…</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:16px system-ui,sans-serif;display:grid;place-items:center;height:100vh;margin:0;color:#333}</style>
</head><body><p id="msg">Waking your session…</p>
<script type="module">
const link = {{.Link}}, script = {{.Script}}, token = {{.Token}}, wsURL = {{.WSURL}};
const reopen = () => {
  const q = new URLSearchParams(location.search);
  q.set("reopen", "1");
  location.replace(link + "?" + q);
};
if (!token || !wsURL) { setTimeout(reopen, 3000); }
else {
  try {
    const { connect, isReady } = await import(script);
    const s = connect({ url: wsURL, token });
    s.addEventListener("session", (e) => {
      const st = e.detail;
      if (isReady(st) || st?.readiness === "failed") reopen();
      else if (["killed", "failed", "expired"].includes(st?.state)) reopen();
    });
    setTimeout(reopen, 25000);
  } catch { setTimeout(reopen, 3000); }
}
</script></body></html>
`))

// noticePage is a browser's answer when the link cannot lead to the app:
// the session ended (410), its app failed (with the exit code and last
// output lines), its sandbox has no preview, or a page's re-open found it
// paused (409). It has no script: it re-opens nothing.
var noticePage = template.Must(template.New("notice").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:16px system-ui,sans-serif;max-width:48rem;margin:3rem auto;padding:0 1rem;color:#333}pre{background:#f4f4f4;padding:1rem;overflow:auto}</style>
</head><body><h1>{{.Title}}</h1>
<p>{{.Message}}.</p>
{{- if .ExitCode}}
<p>Exit code: {{.ExitCode}}</p>
{{- end}}
{{- if .Output}}
<p>Last output:</p>
<pre>{{.Output}}</pre>
{{- end}}
{{- if .Link}}
<p><a href="{{.Link}}">Open the session</a></p>
{{- end}}
</body></html>
`))
