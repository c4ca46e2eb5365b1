package provhttp

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// APIError is a provider's answer to a failed call, the cause inside the
// errors an adapter returns; errors.As finds it.
type APIError struct {
	// Provider names the provider in Error: "e2b", "daytona", "vercel".
	Provider string
	// Status is the HTTP status.
	Status int
	// Code is the error code the body carried, such as Vercel's
	// "snapshot_not_found"; "" when it had none (or the provider's codes
	// say nothing the status does not).
	Code string
	// Message is the body's message, or the start of a body that is not
	// the provider's JSON (Snippet).
	Message string
}

// Error gives the provider, the status, the code when there is one, and the
// message (the status text when there is none): "vercel answered 410
// snapshot_not_found: …".
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" {
		return fmt.Sprintf("%s answered %d %s: %s", e.Provider, e.Status, e.Code, msg)
	}
	return fmt.Sprintf("%s answered %d: %s", e.Provider, e.Status, msg)
}

// ParseError reads the error answer r of provider: read returns the code
// and message of the provider's own error body (ok false when the body is
// not one, or carries neither), and otherwise the message is the start of
// the raw body (a proxy's HTML page).
func ParseError(provider string, r Reply, read func(body []byte) (code, message string, ok bool)) *APIError {
	e := &APIError{Provider: provider, Status: r.Status}
	if code, msg, ok := read(r.Body); ok {
		e.Code, e.Message = code, msg
		return e
	}
	e.Message = Snippet(r.Body)
	return e
}

// StatusOf returns the HTTP status of the *APIError inside err, or 0.
func StatusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// Classes says which lifecycle error each status of a provider's failed
// answers is (docs/providers/<name>.md).
type Classes struct {
	// Gone are the statuses that mean the sandbox is gone, besides a 404
	// about one sandbox (always gone): Vercel's 410.
	Gone []int
	// Conflict are the statuses of a sandbox busy with another change:
	// E2B's and Daytona's 409, Vercel's 422.
	Conflict []int
	// Auth gives the sentence of a refused credential, by status (401,
	// 403): "the E2B API key is wrong or missing".
	Auth map[int]string
	// RetryAfter reads how long a 429 or 5xx asks the caller to wait, at
	// now. Default: the Retry-After header (retry.ParseAfter).
	RetryAfter func(h http.Header, now time.Time) time.Duration
}

// Error classifies the answer r, which is not a success of operation op on
// sandboxID ("" for create and list), with cause (ParseError's) inside:
//   - a 404 about one sandbox, or a Gone status → lifecycle.ErrSandboxGone;
//   - a Conflict status → lifecycle.ErrSandboxConflict;
//   - 429 and 5xx → lifecycle.ErrProviderTransient, Refused on a 429 (not
//     processed, RFC 6585), with the RetryAfter the answer asks for at now;
//   - a status with an Auth sentence → a plain error giving it;
//   - any other status → a plain error carrying cause.
//
// Operations handle their documented special cases before calling it.
func (c Classes) Error(op, sandboxID string, r Reply, cause error, now time.Time) error {
	switch {
	case r.Status == http.StatusNotFound && sandboxID != "", slices.Contains(c.Gone, r.Status):
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID, cause)
	case slices.Contains(c.Conflict, r.Status):
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, cause)
	case r.Status == http.StatusTooManyRequests || r.Status >= 500:
		e := lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, cause)
		e.Refused = r.Status == http.StatusTooManyRequests
		if c.RetryAfter != nil {
			e.RetryAfter = c.RetryAfter(r.Header, now)
		} else {
			e.RetryAfter = retry.ParseAfter(r.Header.Get("Retry-After"), now)
		}
		return e
	case c.Auth[r.Status] != "":
		return fmt.Errorf("%s: %s: %w", Describe(op, sandboxID), c.Auth[r.Status], cause)
	default:
		return fmt.Errorf("%s: %w", Describe(op, sandboxID), cause)
	}
}

// DecodeError describes a success answer of provider whose body is not what
// the API documents: a plain error, since retrying will not help.
func DecodeError(provider, op, sandboxID string, err error) error {
	return fmt.Errorf("%s: decode %s answer: %w", Describe(op, sandboxID), provider, err)
}
