package apigw

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
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

// open serves GET /v1/sessions/{id}/open and /open/{path+}, the session's
// stable link (docs/WAKE.md "Opening the link"): 302 to the preview URL
// plus path when the session is running and its app ready (or it has no
// app); on a paused session it starts the one resume of a burst
// (lifecycle.Service.Open), then answers a browser (Accept: text/html) 200
// with a waking page and any other client, after holding up to ?wait=
// seconds (0..25, default 0), 302 or 503 with Retry-After. killed, failed
// or expired: 410 (an HTML page for a browser). Opening counts as activity.
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
	sess, err := h.svc.Open(ctx, r.accountID, id)
	if err != nil {
		if browser && lifecycle.IsCode(err, lifecycle.CodeGone) {
			return htmlResponse(http.StatusGone, gonePage, openPage{Message: appMessage(err)}), nil
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
	return response{}, &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: openRetryAfter,
		Message: "the session is " + string(sess.State) + " and waking; retry shortly"}
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

// appMessage returns the caller-safe sentence of an application error.
func appMessage(err error) string {
	if le, ok := httpapi.AppError(err); ok {
		return le.Message
	}
	return "the session cannot be opened"
}

// openPage is what the link's HTML pages are rendered from. Script is the
// path of the client module (clientScriptURL).
type openPage struct {
	SessionID, Link, Script, Token, WSURL, Message string
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
// served by the API at /v1/sandman.js: clientScriptURL) and reloads the link the moment the
// session is usable; the link then redirects to the preview. Without a
// channel it reloads the link every few seconds.
var wakingPage = template.Must(template.New("waking").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Waking your session…</title>
<meta name="viewport" content="width=device-width,initial-scale=1">
<style>body{font:16px system-ui,sans-serif;display:grid;place-items:center;height:100vh;margin:0;color:#333}</style>
</head><body><p id="msg">Waking your session…</p>
<script type="module">
const link = {{.Link}}, script = {{.Script}}, token = {{.Token}}, wsURL = {{.WSURL}};
const reopen = () => location.replace(link + location.search);
if (!token || !wsURL) { setTimeout(reopen, 3000); }
else {
  try {
    const { connect, isReady } = await import(script);
    const s = connect({ url: wsURL, token });
    s.addEventListener("session", (e) => {
      const st = e.detail;
      if (isReady(st)) reopen();
      else if (["killed", "failed", "expired"].includes(st?.state)) reopen();
    });
    setTimeout(reopen, 25000);
  } catch { setTimeout(reopen, 3000); }
}
</script></body></html>
`))

// gonePage is the 410 answer for a browser.
var gonePage = template.Must(template.New("gone").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Session ended</title></head>
<body><p>This session has ended: {{.Message}}.</p></body></html>
`))
