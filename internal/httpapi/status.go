package httpapi

import (
	"errors"
	"net/http"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// statusByCode is the one table from application error code to HTTP status
// (docs/DESIGN.md "HTTP API"). Nothing else decides a status.
var statusByCode = map[lifecycle.Code]int{
	lifecycle.CodeInvalid:       http.StatusBadRequest,
	lifecycle.CodeUnauthorized:  http.StatusUnauthorized,
	lifecycle.CodeForbidden:     http.StatusForbidden,
	lifecycle.CodeNotFound:      http.StatusNotFound,
	lifecycle.CodeConflict:      http.StatusConflict,
	lifecycle.CodeTooLarge:      http.StatusRequestEntityTooLarge,
	lifecycle.CodeGone:          http.StatusGone,
	lifecycle.CodeQuotaExceeded: http.StatusTooManyRequests,
	lifecycle.CodeUnavailable:   http.StatusServiceUnavailable,
	lifecycle.CodeInternal:      http.StatusInternalServerError,
}

// StatusFor returns the HTTP status of an application error code: invalid
// 400, unauthorized 401, forbidden 403, not_found 404, conflict 409,
// too_large 413, gone 410, quota_exceeded 429, unavailable 503, internal 500; any other code 500.
func StatusFor(code lifecycle.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorType returns the error_type Responder.Error answers err with: the
// type of the *lifecycle.Error in err's chain (lifecycle.Error.ErrorType,
// such as "not_found" or "sandbox_paused") when it is an application error,
// and "internal" for anything else. Handlers log it next to the status.
func ErrorType(err error) string {
	if le, ok := AppError(err); ok {
		return le.ErrorType()
	}
	return string(lifecycle.CodeInternal)
}

// AppError returns the *lifecycle.Error in err's chain when it is one a
// caller can act on: its code is in StatusFor's table and is not internal.
// Anything else is a bug, answered 500 with no detail: only a true result's
// Message may be shown to the caller.
func AppError(err error) (*lifecycle.Error, bool) {
	var le *lifecycle.Error
	if !errors.As(err, &le) || le.Code == lifecycle.CodeInternal {
		return nil, false
	}
	if _, ok := statusByCode[le.Code]; !ok {
		return nil, false
	}
	return le, true
}
