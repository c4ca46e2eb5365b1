package apigw

import (
	"context"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/linkpage"
)

// The pages a browser sees on the stable link (docs/WAKE.md "What a
// browser sees"), rendered by internal/linkpage in the deployment's
// Brand (Config.Brand): the waking page (open.go), and one page for every
// error the link answers, with the error's own status and headers.

// wakingOf returns the waking page's data for sess, opened on r's path
// with the client token token (docs/WAKE.md "The waking page").
func wakingOf(sess *lifecycle.Session, r *request, token, wsURL string) linkpage.Waking {
	w := linkpage.Waking{Link: r.path(), Script: clientScriptURL(r.path()), Token: token, WSURL: wsURL,
		State: string(sess.State), Readiness: string(sess.Readiness), App: sess.App != nil}
	if sess.App != nil {
		w.AppTimeout = sess.App.ReadyTimeout
	}
	if sess.State == lifecycle.StateRestoring && sess.Reason == lifecycle.ReasonLost {
		w.Recovery = &linkpage.Recovery{From: lifecycle.ParseLost(sess.Lost).CheckpointCreatedAt}
	}
	return w
}

// linkPageForError turns out, the error answer of the stable link to a
// browser (prefersHTML), into its page: the status, Retry-After and
// WWW-Authenticate stay; the body becomes the page. A 410 reads the
// session to tell an ended one (killed) from one that could not be
// recovered (failed, expired).
func (h *Handler) linkPageForError(ctx context.Context, r *request, err error, out *events.APIGatewayV2HTTPResponse) {
	n := h.noticeFor(ctx, r, err)
	out.Body = h.brand.NoticePage(n)
	out.Headers["Content-Type"] = "text/html; charset=utf-8"
}

// noticeFor returns the notice a browser sees for an error of the link.
func (h *Handler) noticeFor(ctx context.Context, r *request, err error) linkpage.Notice {
	retry := linkWithoutReopen(r)
	le, ok := httpapi.AppError(err)
	if !ok {
		return linkpage.CannotWake(linkpage.WhyInternal, retry)
	}
	switch {
	case le.Code == lifecycle.CodeUnauthorized:
		return linkpage.NotSignedIn()
	case le.Code == lifecycle.CodeForbidden:
		return linkpage.OtherSession()
	case le.Code == lifecycle.CodeNotFound:
		return linkpage.NotFound()
	case le.Code == lifecycle.CodeGone:
		return h.goneNotice(ctx, r, retry)
	case le.Type == lifecycle.TypeAppFailed:
		var exit, output string
		if le.App != nil {
			output = le.App.Output
			if le.App.ExitCode != nil {
				exit = strconv.Itoa(*le.App.ExitCode)
			}
		}
		return linkpage.AppFailed(strings.TrimPrefix(le.Message, "the session's app failed: "), exit, output, retry)
	case le.Type == lifecycle.TypeNoPreview:
		return linkpage.NoPreview(retry)
	case le.Type == lifecycle.TypeSandboxPaused:
		return linkpage.Asleep(retry)
	case le.Code == lifecycle.CodeQuotaExceeded:
		return linkpage.CannotWake(linkpage.WhyQuota, retry)
	case le.Code == lifecycle.CodeUnavailable:
		return linkpage.CannotWake(linkpage.WhyProvider, retry)
	}
	return linkpage.CannotWake(le.Message, retry)
}

// goneNotice is the notice of a 410: the session ended (killed: nothing to
// retry), or nothing could be recovered (failed, expired). It reads the
// session to know which; a read that fails shows the first.
func (h *Handler) goneNotice(ctx context.Context, r *request, retry string) linkpage.Notice {
	id, err := r.sessionID()
	if err != nil {
		return linkpage.Ended()
	}
	sess, err := h.svc.Get(ctx, r.accountID, id)
	if err != nil {
		return linkpage.Ended()
	}
	switch sess.State {
	case lifecycle.StateExpired, lifecycle.StateFailed:
		return linkpage.Unrecoverable(sess.State == lifecycle.StateExpired, retry)
	}
	return linkpage.Ended()
}

// linkWithoutReopen returns the link as it was opened (its path and query,
// the token kept) without ReopenParam: a person's open of it wakes the
// session (the notices' retry).
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

// prefersHTML reports whether the request's Accept header asks for a page
// rather than JSON: text/html (or text/*) is named with a weight above
// zero and at least that of application/json (a browser's navigation
// names text/html first, and JSON only through */*; fetch and curl send
// */* and get JSON). Ties go to the one named first.
func prefersHTML(r *request) bool {
	accept, _ := r.header("Accept")
	return prefersHTMLAccept(accept)
}

// prefersHTMLAccept is prefersHTML on an Accept header's value.
func prefersHTMLAccept(accept string) bool {
	html, json := -1.0, -1.0 // weights; -1: not named
	htmlAt, jsonAt := -1, -1 // positions of the ranges that gave them
	for i, part := range strings.Split(accept, ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		switch media {
		case "text/html":
			html, htmlAt = q, i
		case "text/*":
			if html < 0 {
				html, htmlAt = q, i
			}
		case "application/json", "application/*", "*/*":
			if media == "application/json" || json < 0 {
				json, jsonAt = q, i
			}
		}
	}
	if html <= 0 {
		return false
	}
	return html > json || (html == json && htmlAt < jsonAt)
}
