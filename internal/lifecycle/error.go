package lifecycle

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an application error. The HTTP edge maps each code to one
// status (see the table in internal/apigw); nothing else decides a status.
type Code string

// The application error codes ().
const (
	CodeInvalid      Code = "invalid"      // 400: bad input; the message names the field
	CodeUnauthorized Code = "unauthorized" // 401: no key, a bad key, or a bad signature
	CodeForbidden    Code = "forbidden"    // 403: the session belongs to another account
	CodeNotFound     Code = "not_found"    // 404: no such session
	CodeConflict     Code = "conflict"     // 409: the state or version does not allow it
	CodeTooLarge     Code = "too_large"    // 413: the request body is over the limit
	// CodeGone is 410: the session's link opens nothing any more (killed,
	// failed or expired; docs/WAKE.md).
	CodeGone Code = "gone"
	// CodeQuotaExceeded is 429: the account is at its max_running limit
	// (docs/DESIGN.md "Operators"; see quota.go).
	CodeQuotaExceeded Code = "quota_exceeded"
	CodeUnavailable   Code = "unavailable" // 503: the provider is in trouble
	CodeInternal      Code = "internal"    // 500: a bug; the detail goes to the log only
)

// Error types that are more specific than their code. They are sent as
// error_type in the error envelope of docs/DESIGN.md ("HTTP API").
const (
	TypeSandboxPaused      = "sandbox_paused"      // 409: heartbeat on a paused session
	TypeSandboxExpired     = "sandbox_expired"     // 503: the provider says the sandbox is gone
	TypeSandboxUnreachable = "sandbox_unreachable" // 503: transient provider failure
	TypeQuotaExceeded      = "quota_exceeded"      // 429: the account is at its max_running limit
	// TypeAppFailed is 409: an open of a running session whose app failed
	// (readiness failed); Error.App carries the exit code and last output
	// lines (docs/WAKE.md "Opening the link").
	TypeAppFailed = "app_failed"
	// TypeNoPreview is 409: an open of a running session whose sandbox gave
	// no preview URL (docs/WAKE.md "Opening the link").
	TypeNoPreview = "no_preview"
)

// AppFailure is what an error of TypeAppFailed carries besides its
// sentence: the start command's exit code when it exited (nil when it did
// not, or the provider keeps none), and its last output lines ("" when the
// provider keeps none).
type AppFailure struct {
	ExitCode *int
	Output   string
}

// Error is Sandman's one application error type. Message is a human sentence
// safe to show a caller; Type is the envelope's error_type (defaults to the
// code); RetryAfter, when positive, becomes a Retry-After header; App, set
// for TypeAppFailed only, is shown with the sentence; Err is the wrapped
// cause and is never shown to a caller.
type Error struct {
	Code       Code
	Type       string
	Message    string
	RetryAfter time.Duration
	App        *AppFailure
	Err        error
}

// Error returns the message and, when present, the wrapped cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorType returns Type, or the code when Type is empty.
func (e *Error) ErrorType() string {
	if e.Type != "" {
		return e.Type
	}
	return string(e.Code)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err's code (see ErrorCode) is code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }
