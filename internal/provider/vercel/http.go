package vercel

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// maxBody bounds how much of an answer is read (a list page of 50 sandboxes
// is far below it).
const maxBody = 4 << 20

// conflictRetryAfter is the hint given with a 422 (stopping, snapshotting):
// ours, the sandbox settles within seconds.
const conflictRetryAfter = 2 * time.Second

// request is one call to the API: its Path after the base URL, its Query
// besides the team scope, and its Timeout.
type request = provhttp.Request

// reply is an answer read in full.
type reply = provhttp.Reply

// APIError is Vercel's answer to a failed call ({"error":{"code","message"}}),
// the cause inside the errors Provider returns; errors.As finds it. Code is
// Vercel's, such as "snapshot_not_found" ("" when the body had none).
type APIError = provhttp.APIError

// roundTrip makes one attempt at rq (provhttp.RoundTrip), scoped to the
// configured team. No answer (connection error, timeout, cancelled context)
// is a transient *ProviderError wrapping the cause; any answer is returned
// for the operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	return provhttp.RoundTrip(ctx, p.cfg.HTTPClient, p.prepare(rq))
}

// prepare completes rq as every call to Vercel goes: the base URL, the team
// scope in the query, JSON content, Sandman's user agent, the token (rq's
// own headers added), and maxBody.
func (p *Provider) prepare(rq request) request {
	q := maps.Clone(rq.Query)
	if q == nil {
		q = url.Values{}
	}
	switch {
	case p.cfg.TeamID != "":
		q.Set("teamId", p.cfg.TeamID)
	case p.cfg.TeamSlug != "":
		q.Set("slug", p.cfg.TeamSlug)
	}
	h := http.Header{"Content-Type": {"application/json"}, "User-Agent": {"sandman-vercel"}, "Authorization": {"Bearer " + p.cfg.Token}}
	maps.Copy(h, rq.Header)
	rq.URL, rq.Query, rq.Header, rq.MaxBody = p.base.String(), q, h, maxBody
	return rq
}

// statuses classifies Vercel's failed answers (docs/providers/vercel.md):
//   - 404 not_found about one sandbox, and 410 (snapshot_not_found: the
//     snapshot expired, the state is gone; sandbox_stopped: the session is
//     over) → lifecycle.ErrSandboxGone;
//   - 422 (sandbox_stopping, sandbox_snapshotting) →
//     lifecycle.ErrSandboxConflict;
//   - 429 and 5xx → lifecycle.ErrProviderTransient with the Retry-After;
//   - 401/403 → a plain error about the token, team or project;
//   - anything else (400 bad_request) → a plain error with Vercel's code
//     and message.
var statuses = provhttp.Classes{Gone: []int{http.StatusGone}, Conflict: []int{http.StatusUnprocessableEntity},
	Auth: map[int]string{http.StatusUnauthorized: "the Vercel token, team or project is wrong or missing",
		http.StatusForbidden: "the Vercel token, team or project is wrong or missing"}}

// statusError classifies an answer that is not a success of the operation
// (statuses). Operations handle their documented special cases first (404
// on delete, 410 sandbox_stopped on stop, 400 on a taken name).
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	return statuses.Error(op, sandboxID, r, parseAPIError(r), p.cfg.Clock.Now())
}

// parseAPIError reads {"error":{"code","message"}}, falling back to the
// start of the raw body (a proxy's HTML page).
func parseAPIError(r reply) *APIError {
	return provhttp.ParseError("vercel", r, func(b []byte) (string, string, bool) {
		var body errorBody
		err := json.Unmarshal(b, &body)
		return body.Error.Code, body.Error.Message, err == nil && (body.Error.Code != "" || body.Error.Message != "")
	})
}

// decodeError describes a success answer that is not what the API
// documents: a plain error, since retrying will not help.
func decodeError(op, sandboxID string, err error) error {
	return provhttp.DecodeError("vercel", op, sandboxID, err)
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out (provhttp.Retrier): only transient failures are retried, at most
// MaxRetries times; when the retries end, the caller sees the last error's
// RetryAfter.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	return provhttp.Retrier{Name: "vercel", MaxRetries: p.cfg.MaxRetries, Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait,
		Sleep: p.cfg.Sleep, Log: p.cfg.Logger}.Do(ctx, op, sandboxID, nil, attempt)
}
