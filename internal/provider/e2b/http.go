package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// maxBody bounds how much of an answer is read (ours: a list page of 100
// sandboxes with metadata is far below it).
const maxBody = 4 << 20

// request is one HTTP call to E2B.
type request struct {
	op        string // the lifecycle operation, e.g. "pause"
	sandboxID string // "" for create and list
	method    string
	url       string
	body      any               // JSON-encoded when non-nil
	header    map[string]string // extra headers
	timeout   time.Duration     // per attempt
	apiKey    bool              // send X-API-Key (control API only, never a sandbox)
}

// reply is an answer read in full.
type reply = provhttp.Reply

// apiError is E2B's answer to a failed call, the cause inside the errors
// Provider returns.
type apiError struct {
	Status  int
	Code    int
	Message string
}

func (e *apiError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("e2b answered %d: %s", e.Status, msg)
}

// roundTrip makes one attempt at rq (provhttp.RoundTrip): a failure to get
// an answer is a transient *ProviderError, any answer is returned for the
// operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	h := http.Header{"User-Agent": {"sandman-e2b"}}
	if rq.apiKey {
		h.Set("X-API-Key", p.cfg.APIKey)
	}
	for k, v := range rq.header {
		h.Set(k, v)
	}
	return provhttp.RoundTrip(ctx, p.cfg.HTTPClient, provhttp.Request{Op: rq.op, SandboxID: rq.sandboxID,
		Method: rq.method, URL: rq.url, Body: rq.body, Header: h, Timeout: rq.timeout, MaxBody: maxBody})
}

// statusError classifies an answer that is not a success of the operation
// (docs/providers/e2b.md): 404 gone (for a call about one sandbox), 409 conflict,
// 429 and 5xx transient with Retry-After, 401/403 a plain error about the
// API key, any other status a plain error carrying E2B's code and message.
// Operations handle their documented success cases (a 409 on pause, a 404 on
// kill) before calling it.
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	cause := parseAPIError(r)
	switch {
	case r.Status == http.StatusNotFound && sandboxID != "":
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID, cause)
	case r.Status == http.StatusConflict:
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, cause)
	case r.Status == http.StatusTooManyRequests || r.Status >= 500:
		e := lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, cause)
		e.Refused = r.Status == http.StatusTooManyRequests // not processed (RFC 6585)
		e.RetryAfter = retry.ParseAfter(r.Header.Get("Retry-After"), p.cfg.Clock.Now())
		return e
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		return fmt.Errorf("%s: the E2B API key is wrong or missing: %w", provhttp.Describe(op, sandboxID), cause)
	default:
		return fmt.Errorf("%s: %w", provhttp.Describe(op, sandboxID), cause)
	}
}

// parseAPIError reads E2B's {"code","message"} body, falling back to the
// start of the raw body when it is something else (a proxy's HTML page).
func parseAPIError(r reply) *apiError {
	e := &apiError{Status: r.Status}
	var body errorBody
	if err := json.Unmarshal(r.Body, &body); err == nil && (body.Message != "" || body.Code != 0) {
		e.Code, e.Message = body.Code, body.Message
		return e
	}
	e.Message = provhttp.Snippet(r.Body)
	return e
}

// decodeError describes a success answer whose body is not what the API
// documents: a plain error, since retrying will not help.
func decodeError(op, sandboxID string, err error) error {
	return fmt.Errorf("%s: decode e2b answer: %w", provhttp.Describe(op, sandboxID), err)
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out (retry.Do): only transient failures are retried, at most MaxRetries
// times, after a jittered exponential backoff (RetryBase, RetryMaxWait)
// that honours the error's RetryAfter. Callers pass only idempotent
// operations.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	return retry.Do(ctx, retry.Policy{Name: "e2b", Settle: lifecycle.SettleRefused, After: lifecycle.RetryAfter,
		Retryable: func(err error, n int) bool {
			return errors.Is(err, lifecycle.ErrProviderTransient) && n < p.cfg.MaxRetries
		},
		Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait, Sleep: p.cfg.Sleep, Log: p.cfg.Logger,
	}, attempt, "op", op, "sandbox_id", sandboxID)
}
