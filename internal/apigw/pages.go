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

// The advice of the notices that send the person back to whoever gave
// them the link.
const (
	adviceNewSession = "To keep working, start a new session from the app that gave you this link."
	adviceAskAgain   = "Open the preview again from the app that gave you this link: it hands out a fresh link."
)

// noticeFor returns the notice a browser sees for an error of the link.
func (h *Handler) noticeFor(ctx context.Context, r *request, err error) linkpage.Notice {
	retry := linkWithoutReopen(r)
	le, ok := httpapi.AppError(err)
	if !ok {
		return linkpage.Notice{Kind: linkpage.KindRetryable, Title: "Something went wrong",
			Sentence: "The preview could not be opened because of an error on our side.",
			Advice:   "Try again in a few seconds.", Action: retry, ActionLabel: "Try again"}
	}
	switch {
	case le.Code == lifecycle.CodeUnauthorized:
		return linkpage.Notice{Kind: linkpage.KindSignIn, Title: "You're not signed in to this preview",
			Sentence: "This link carries no access token, or its token has expired.", Advice: adviceAskAgain}
	case le.Code == lifecycle.CodeForbidden:
		return linkpage.Notice{Kind: linkpage.KindSignIn, Title: "This link is for another preview",
			Sentence: "Its access token belongs to a different session than the one it opens.", Advice: adviceAskAgain}
	case le.Code == lifecycle.CodeNotFound:
		return linkpage.Notice{Kind: linkpage.KindNotFound, Title: "There's no preview at this link",
			Sentence: "The session this link names does not exist.", Advice: adviceAskAgain}
	case le.Code == lifecycle.CodeGone:
		return h.goneNotice(ctx, r, retry)
	case le.Type == lifecycle.TypeAppFailed:
		n := linkpage.Notice{Kind: linkpage.KindFailed, Title: "The app didn't start",
			Sentence: linkpage.Sentence(strings.TrimPrefix(le.Message, "the session's app failed: ")),
			Advice:   "Try again; if it keeps failing, tell whoever shared this link that the app needs a fix.",
			Action:   retry, ActionLabel: "Try again"}
		if le.App != nil {
			n.Output = le.App.Output
			if le.App.ExitCode != nil {
				n.ExitCode = strconv.Itoa(*le.App.ExitCode)
			}
		}
		return n
	case le.Type == lifecycle.TypeNoPreview:
		return linkpage.Notice{Kind: linkpage.KindFailed, Title: "There's nothing to show",
			Sentence: "The sandbox is running but gave no preview address to open.",
			Advice:   "Try again; if it keeps happening, tell whoever shared this link.", Action: retry, ActionLabel: "Try again"}
	case le.Type == lifecycle.TypeSandboxPaused:
		return linkpage.Notice{Kind: linkpage.KindPaused, Title: "This preview is asleep",
			Sentence: "It went to sleep while this page waited, so that it costs nothing while nobody uses it.",
			Advice:   "Wake it up to go on where you left off.", Action: retry, ActionLabel: "Wake it up"}
	case le.Code == lifecycle.CodeQuotaExceeded:
		return linkpage.Notice{Kind: linkpage.KindRetryable, Title: "The preview can't wake right now",
			Sentence: "Too many previews of this account are running at once.",
			Advice:   "Try again once another preview has gone to sleep.", Action: retry, ActionLabel: "Try again"}
	case le.Code == lifecycle.CodeUnavailable:
		return linkpage.Notice{Kind: linkpage.KindRetryable, Title: "The preview can't wake right now",
			Sentence: "The sandbox's provider did not answer in time.",
			Advice:   "Try again in a few seconds.", Action: retry, ActionLabel: "Try again"}
	}
	return linkpage.Notice{Kind: linkpage.KindRetryable, Title: "The preview can't be opened",
		Sentence: linkpage.Sentence(le.Message), Advice: "Try again in a few seconds.", Action: retry, ActionLabel: "Try again"}
}

// goneNotice is the notice of a 410: the session ended (killed: nothing to
// retry), or nothing could be recovered (failed, expired). It reads the
// session to know which; a read that fails shows the first.
func (h *Handler) goneNotice(ctx context.Context, r *request, retry string) linkpage.Notice {
	ended := linkpage.Notice{Kind: linkpage.KindEnded, Title: "This session has ended",
		Sentence: "It was closed, so this link no longer opens anything.", Advice: adviceNewSession}
	id, err := r.sessionID()
	if err != nil {
		return ended
	}
	sess, err := h.svc.Get(ctx, r.accountID, id)
	if err != nil {
		return ended
	}
	switch sess.State {
	case lifecycle.StateExpired:
		return linkpage.Notice{Kind: linkpage.KindFailed, Title: "This preview can't be recovered",
			Sentence: "Its sandbox is gone: the provider no longer has it.", Advice: adviceNewSession,
			Action: retry, ActionLabel: "Try again"}
	case lifecycle.StateFailed:
		return linkpage.Notice{Kind: linkpage.KindFailed, Title: "This preview can't be recovered",
			Sentence: "Its sandbox could not be started.", Advice: adviceNewSession,
			Action: retry, ActionLabel: "Try again"}
	}
	return ended
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
