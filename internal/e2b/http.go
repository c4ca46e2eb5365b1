package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/retry"
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
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) ok() bool { return r.status >= 200 && r.status < 300 }

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

// roundTrip makes one attempt at rq. A failure to get an answer (connection
// error, timeout, cancelled context) is a transient *ProviderError that
// wraps the cause, so errors.Is(err, context.Canceled) still tells a caller
// it gave up itself. Any answer, whatever its status, is returned for the
// operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	var body io.Reader
	if rq.body != nil {
		b, err := json.Marshal(rq.body)
		if err != nil {
			return reply{}, fmt.Errorf("%s: encode request: %w", describe(rq.op, rq.sandboxID), err)
		}
		body = bytes.NewReader(b)
	}
	actx, cancel := context.WithTimeout(ctx, rq.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, rq.method, rq.url, body)
	if err != nil {
		return reply{}, fmt.Errorf("%s: build request: %w", describe(rq.op, rq.sandboxID), err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sandman-e2b")
	if rq.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rq.apiKey {
		req.Header.Set("X-API-Key", p.cfg.APIKey)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return reply{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.op, rq.sandboxID,
			fmt.Errorf("no answer from %s %s: %w", rq.method, hostOf(req), err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.op, rq.sandboxID,
			fmt.Errorf("read answer from %s: %w", hostOf(req), err))
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func hostOf(req *http.Request) string { return req.URL.Scheme + "://" + req.URL.Host }

// statusError classifies an answer that is not a success of the operation
// (providers/e2b.md): 404 gone (for a call about one sandbox), 409 conflict,
// 429 and 5xx transient with Retry-After, 401/403 a plain error about the
// API key, any other status a plain error carrying E2B's code and message.
// Operations handle their documented success cases (a 409 on pause, a 404 on
// kill) before calling it.
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	cause := parseAPIError(r)
	switch {
	case r.status == http.StatusNotFound && sandboxID != "":
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID, cause)
	case r.status == http.StatusConflict:
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, cause)
	case r.status == http.StatusTooManyRequests || r.status >= 500:
		e := lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, cause)
		e.RetryAfter = retry.ParseAfter(r.header.Get("Retry-After"), p.cfg.Clock.Now())
		return e
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return fmt.Errorf("%s: the E2B API key is wrong or missing: %w", describe(op, sandboxID), cause)
	default:
		return fmt.Errorf("%s: %w", describe(op, sandboxID), cause)
	}
}

// parseAPIError reads E2B's {"code","message"} body, falling back to the
// start of the raw body when it is something else (a proxy's HTML page).
func parseAPIError(r reply) *apiError {
	e := &apiError{Status: r.status}
	var body errorBody
	if err := json.Unmarshal(r.body, &body); err == nil && (body.Message != "" || body.Code != 0) {
		e.Code, e.Message = body.Code, body.Message
		return e
	}
	msg := strings.TrimSpace(string(r.body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	e.Message = msg
	return e
}

// decodeError describes a success answer whose body is not what the API
// documents: a plain error, since retrying will not help.
func decodeError(op, sandboxID string, err error) error {
	return fmt.Errorf("%s: decode e2b answer: %w", describe(op, sandboxID), err)
}

// describe names an operation for plain error messages: "pause sandbox x".
func describe(op, sandboxID string) string {
	if sandboxID == "" {
		return op + " sandboxes"
	}
	return op + " sandbox " + sandboxID
}

// retry runs attempt until it succeeds, fails for good, or the retries run
// out (retry.Do): only transient failures are retried, at most MaxRetries
// times, after a jittered exponential backoff (RetryBase, RetryMaxWait)
// that honours the error's RetryAfter. Callers pass only idempotent
// operations.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	return retry.Do(ctx, retry.Policy{Name: "e2b", After: lifecycle.RetryAfter,
		Retryable: func(err error, n int) bool {
			return errors.Is(err, lifecycle.ErrProviderTransient) && n < p.cfg.MaxRetries
		},
		Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait, Sleep: p.cfg.Sleep, Log: p.cfg.Logger,
	}, attempt, "op", op, "sandbox_id", sandboxID)
}
