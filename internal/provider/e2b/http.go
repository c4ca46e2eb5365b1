package e2b

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// maxBody bounds how much of an answer is read (ours: a list page of 100
// sandboxes with metadata is far below it).
const maxBody = 4 << 20

// request is one HTTP call to E2B: its URL, timeout and any header of its
// own (apiKey for the control API; the envd token for a sandbox).
type request = provhttp.Request

// reply is an answer read in full.
type reply = provhttp.Reply

// apiKey is the header of a control API call: X-API-Key, never sent to a
// sandbox.
func (p *Provider) apiKey() http.Header { return http.Header{"X-API-Key": {p.cfg.APIKey}} }

// roundTrip makes one attempt at rq (provhttp.RoundTrip) with Sandman's
// user agent: a failure to get an answer is a transient *ProviderError,
// any answer is returned for the operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	h := http.Header{"User-Agent": {"sandman-e2b"}}
	maps.Copy(h, rq.Header)
	rq.Header, rq.MaxBody = h, maxBody
	return provhttp.RoundTrip(ctx, p.cfg.HTTPClient, rq)
}

// statuses classifies E2B's failed answers (docs/providers/e2b.md): 404
// gone (for a call about one sandbox), 409 conflict, 429 and 5xx transient
// with Retry-After, 401/403 a plain error about the API key, any other
// status a plain error carrying E2B's message.
var statuses = provhttp.Classes{Conflict: []int{http.StatusConflict},
	Auth: map[int]string{http.StatusUnauthorized: "the E2B API key is wrong or missing", http.StatusForbidden: "the E2B API key is wrong or missing"}}

// statusError classifies an answer that is not a success of the operation
// (statuses). Operations handle their documented success cases (a 409 on
// pause, a 404 on kill) before calling it.
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	return statuses.Error(op, sandboxID, r, parseAPIError(r), p.cfg.Clock.Now())
}

// parseAPIError reads E2B's {"code","message"} body, falling back to the
// start of the raw body when it is something else (a proxy's HTML page).
// E2B's numeric code repeats the status, so the error keeps only the
// message.
func parseAPIError(r reply) *provhttp.APIError {
	return provhttp.ParseError("e2b", r, func(b []byte) (string, string, bool) {
		var body errorBody
		err := json.Unmarshal(b, &body)
		return "", body.Message, err == nil && (body.Message != "" || body.Code != 0)
	})
}

// decodeError describes a success answer whose body is not what the API
// documents: a plain error, since retrying will not help.
func decodeError(op, sandboxID string, err error) error {
	return provhttp.DecodeError("e2b", op, sandboxID, err)
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out (provhttp.Retrier): only transient failures are retried, at most
// MaxRetries times. Callers pass only idempotent operations.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	return provhttp.Retrier{Name: "e2b", MaxRetries: p.cfg.MaxRetries, Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait,
		Sleep: p.cfg.Sleep, Log: p.cfg.Logger}.Do(ctx, op, sandboxID, nil, attempt)
}
