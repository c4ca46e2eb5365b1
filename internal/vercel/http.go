package vercel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/retry"
)

// maxBody bounds how much of an answer is read (a list page of 50 sandboxes
// is far below it).
const maxBody = 4 << 20

// conflictRetryAfter is the hint given with a 422 (stopping, snapshotting):
// ours, the sandbox settles within seconds.
const conflictRetryAfter = 2 * time.Second

// request is one call to the API.
type request struct {
	op        string // the lifecycle operation, e.g. "pause"
	sandboxID string // "" for create and list
	method    string
	path      []string   // path segments after the base URL, each escaped
	query     url.Values // besides the team scope
	body      any        // JSON-encoded when non-nil
	timeout   time.Duration
}

// reply is an answer read in full.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) ok() bool { return r.status >= 200 && r.status < 300 }

// APIError is Vercel's answer to a failed call ({"error":{"code","message"}}),
// the cause inside the errors Provider returns; errors.As finds it.
type APIError struct {
	Status  int    // HTTP status
	Code    string // e.g. "snapshot_not_found"; "" when the body had none
	Message string
}

// Error gives the status, code and message.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("vercel answered %d %s: %s", e.Status, e.Code, msg)
	}
	return fmt.Sprintf("vercel answered %d: %s", e.Status, msg)
}

// roundTrip makes one attempt at rq. No answer (connection error, timeout,
// cancelled context) is a transient *ProviderError wrapping the cause; any
// answer is returned for the operation to interpret.
func (p *Provider) roundTrip(ctx context.Context, rq request) (reply, error) {
	var body io.Reader
	if rq.body != nil {
		b, err := json.Marshal(rq.body)
		if err != nil {
			return reply{}, fmt.Errorf("%s: encode request: %w", describe(rq.op, rq.sandboxID), err)
		}
		body = bytes.NewReader(b)
	}
	u := p.base.JoinPath(rq.path...)
	q := url.Values{}
	for k, v := range rq.query {
		q[k] = v
	}
	switch {
	case p.cfg.TeamID != "":
		q.Set("teamId", p.cfg.TeamID)
	case p.cfg.TeamSlug != "":
		q.Set("slug", p.cfg.TeamSlug)
	}
	u.RawQuery = q.Encode()
	actx, cancel := context.WithTimeout(ctx, rq.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, rq.method, u.String(), body)
	if err != nil {
		return reply{}, fmt.Errorf("%s: build request: %w", describe(rq.op, rq.sandboxID), err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sandman-vercel")
	req.Header.Set("Authorization", "Bearer "+p.cfg.Token)
	resp, err := p.cfg.HTTPClient.Do(req)
	if err != nil {
		return reply{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.op, rq.sandboxID,
			fmt.Errorf("no answer from %s %s://%s: %w", rq.method, u.Scheme, u.Host, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, rq.op, rq.sandboxID,
			fmt.Errorf("read answer from %s://%s: %w", u.Scheme, u.Host, err))
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// statusError classifies an answer that is not a success of the operation
// (providers/vercel-sandbox.md). Operations handle their documented special
// cases first (404 on delete, 410 sandbox_stopped on stop, 400 on a taken
// name). Then:
//   - 404 not_found about one sandbox, and 410 (snapshot_not_found: the
//     snapshot expired, the state is gone; sandbox_stopped: the session is
//     over) → lifecycle.ErrSandboxGone;
//   - 422 (sandbox_stopping, sandbox_snapshotting) →
//     lifecycle.ErrSandboxConflict;
//   - 429 and 5xx → lifecycle.ErrProviderTransient with the Retry-After;
//   - 401/403 → a plain error about the token, team or project;
//   - anything else (400 bad_request) → a plain error with Vercel's code
//     and message.
func (p *Provider) statusError(op, sandboxID string, r reply) error {
	cause := parseAPIError(r)
	switch {
	case r.status == http.StatusNotFound && sandboxID != "",
		r.status == http.StatusGone:
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID, cause)
	case r.status == http.StatusUnprocessableEntity:
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, cause)
	case r.status == http.StatusTooManyRequests || r.status >= 500:
		e := lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, cause)
		e.RetryAfter = retry.ParseAfter(r.header.Get("Retry-After"), p.cfg.Clock.Now())
		return e
	case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
		return fmt.Errorf("%s: the Vercel token, team or project is wrong or missing: %w", describe(op, sandboxID), cause)
	default:
		return fmt.Errorf("%s: %w", describe(op, sandboxID), cause)
	}
}

// parseAPIError reads {"error":{"code","message"}}, falling back to the
// start of the raw body (a proxy's HTML page).
func parseAPIError(r reply) *APIError {
	e := &APIError{Status: r.status}
	var body errorBody
	if err := json.Unmarshal(r.body, &body); err == nil && (body.Error.Code != "" || body.Error.Message != "") {
		e.Code, e.Message = body.Error.Code, body.Error.Message
		return e
	}
	msg := strings.TrimSpace(string(r.body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	e.Message = msg
	return e
}

// decodeError describes a success answer that is not what the API
// documents: a plain error, since retrying will not help.
func decodeError(op, sandboxID string, err error) error {
	return fmt.Errorf("%s: decode vercel answer: %w", describe(op, sandboxID), err)
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
// that honours the error's RetryAfter; when the retries end, the caller
// sees the last error's RetryAfter.
func (p *Provider) retry(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	return retry.Do(ctx, retry.Policy{Name: "vercel", After: lifecycle.RetryAfter,
		Retryable: func(err error, n int) bool {
			return errors.Is(err, lifecycle.ErrProviderTransient) && n < p.cfg.MaxRetries
		},
		Base: p.cfg.RetryBase, MaxWait: p.cfg.RetryMaxWait, Sleep: p.cfg.Sleep, Log: p.cfg.Logger,
	}, attempt, "op", op, "sandbox_id", sandboxID)
}
