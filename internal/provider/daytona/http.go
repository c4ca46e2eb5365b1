package daytona

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// maxBody bounds how much of an answer is read (ours: a list page of 200
// sandboxes is far below it).
const maxBody = 8 << 20

// request is one HTTP call to Daytona: its Path (and Query) after the base
// URL, or after URL when set (the sandbox's toolbox), and any header of its
// own.
type request = provhttp.Request

// reply is an answer read in full.
type reply = provhttp.Reply

// roundTrip makes one attempt at rq (provhttp.RoundTrip). No answer at all
// (connection error, timeout, cancelled context) is a transient
// *ProviderError wrapping the cause; any answer is returned for the
// operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	return provhttp.RoundTrip(ctx, p.cfg.HTTPClient, p.prepare(rq))
}

// prepare completes rq as every call to Daytona goes: the base URL unless
// rq names one (the toolbox), an empty query, Sandman's user agent and
// source, the API key and organization, RequestTimeout unless rq sets its
// own, and maxBody.
func (p *Provider) prepare(rq request) request {
	if rq.URL == "" {
		rq.URL = p.base.String()
	}
	if rq.Query == nil {
		rq.Query = url.Values{} // no query, as Daytona's own calls send
	}
	h := http.Header{"User-Agent": {"sandman-daytona"}, "X-Daytona-Source": {"sandman"}, "Authorization": {"Bearer " + p.cfg.APIKey}}
	if p.cfg.OrganizationID != "" {
		h.Set("X-Daytona-Organization-ID", p.cfg.OrganizationID)
	}
	for k, v := range rq.Header {
		h[k] = v
	}
	rq.Header, rq.Timeout, rq.MaxBody = h, cmp.Or(rq.Timeout, p.cfg.RequestTimeout), maxBody
	return rq
}

// call makes one attempt at rq and decodes a 2xx answer into out (when
// non-nil); any other status is classified by statusError.
func (p *Provider) call(ctx context.Context, rq request, out any) error {
	r, err := p.roundTrip(ctx, rq)
	if err != nil {
		return err
	}
	if !r.OK() {
		return p.statusError(rq.Op, rq.SandboxID, r)
	}
	if out != nil {
		if err := json.Unmarshal(r.Body, out); err != nil {
			return provhttp.DecodeError("daytona", rq.Op, rq.SandboxID, err)
		}
	}
	return nil
}

// statuses classifies Daytona's failed answers (docs/providers/daytona.md):
// 404 gone (for a call about one sandbox), 409 conflict, 429 and 5xx
// transient with the Retry-After Daytona sent (RetryAfterOf), 401/403 a
// plain error about the key or the organization, any other status (400,
// 422) a plain error carrying Daytona's message.
var statuses = provhttp.Classes{Conflict: []int{http.StatusConflict}, RetryAfter: RetryAfterOf,
	Auth: map[int]string{http.StatusUnauthorized: "the Daytona API key is wrong or missing",
		http.StatusForbidden: "Daytona refused the organization (suspended, or region not allowed)"}}

// statusError classifies an answer that is not a success of the operation
// (statuses). The *provhttp.APIError is the cause in every case, so
// callers can read its status (statusOf).
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	return statuses.Error(op, sandboxID, r, parseAPIError(r), p.cfg.Clock.Now())
}

// statusOf returns the HTTP status inside err, or 0.
func statusOf(err error) int { return provhttp.StatusOf(err) }

// parseAPIError reads Daytona's error body ({"statusCode","error",
// "message"}), falling back to the start of the raw body.
func parseAPIError(r reply) *provhttp.APIError {
	return provhttp.ParseError("daytona", r, func(b []byte) (string, string, bool) {
		var body errorBody
		if err := json.Unmarshal(b, &body); err != nil {
			return "", "", false
		}
		msg := ""
		switch m := body.Message.(type) {
		case string:
			msg = m
		case []any:
			parts := make([]string, 0, len(m))
			for _, v := range m {
				parts = append(parts, fmt.Sprint(v))
			}
			msg = strings.Join(parts, ", ")
		}
		msg = cmp.Or(msg, body.Error)
		return "", msg, msg != ""
	})
}

// RetryAfterOf reads how long Daytona asks a client to wait: the largest
// of the suffixed Retry-After-<bucket> headers (sent on 429, one per
// throttled bucket: authenticated, sandbox-create, sandbox-lifecycle) and
// the plain Retry-After (sent only when failed authentications are
// throttled), each delay-seconds or an HTTP date relative to now
// (docs/providers/daytona.md "REST API"). It returns 0 when there is none or
// none is valid; values over 24 h are ignored.
func RetryAfterOf(h http.Header, now time.Time) time.Duration {
	var best time.Duration
	for k, vs := range h {
		if !strings.EqualFold(k, "Retry-After") && !strings.HasPrefix(strings.ToLower(k), "retry-after-") {
			continue
		}
		for _, v := range vs {
			if d := retry.ParseAfter(v, now); d > best {
				best = d
			}
		}
	}
	return best
}

// retry runs attempt until it succeeds, fails for good or the retries run
// out (provhttp.Retrier): transient failures are retried up to MaxRetries
// times, conflicts (409) up to conflicts times. Callers pass only
// idempotent operations.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, conflicts int, attempt func(ctx context.Context) error) error {
	transient, conflict := 0, 0
	retryable := func(err error, _ int) bool {
		switch {
		case errors.Is(err, lifecycle.ErrProviderTransient) && transient < p.cfg.MaxRetries:
			transient++
		case errors.Is(err, lifecycle.ErrSandboxConflict) && conflict < conflicts:
			conflict++
		default:
			return false
		}
		return true
	}
	return provhttp.Retrier{Name: "daytona", Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait,
		Sleep: p.cfg.Sleep, Log: p.cfg.Logger}.Do(ctx, op, sandboxID, retryable, attempt)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
