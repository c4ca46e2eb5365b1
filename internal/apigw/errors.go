package apigw

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// statusByCode is the one table from application error code to HTTP status
// (STYLE.md rule 4; DESIGN.md "HTTP API"). Nothing else decides a status.
var statusByCode = map[lifecycle.Code]int{
	lifecycle.CodeInvalid:      http.StatusBadRequest,
	lifecycle.CodeUnauthorized: http.StatusUnauthorized,
	lifecycle.CodeForbidden:    http.StatusForbidden,
	lifecycle.CodeNotFound:     http.StatusNotFound,
	lifecycle.CodeConflict:     http.StatusConflict,
	lifecycle.CodeTooLarge:     http.StatusRequestEntityTooLarge,
	lifecycle.CodeUnavailable:  http.StatusServiceUnavailable,
	lifecycle.CodeInternal:     http.StatusInternalServerError,
}

// StatusFor returns the HTTP status of an application error code: invalid
// 400, unauthorized 401, forbidden 403, not_found 404, conflict 409,
// too_large 413, unavailable 503, internal 500; any other code 500.
func StatusFor(code lifecycle.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the error envelope of DESIGN.md ("HTTP API").
type errorBody struct {
	Status    string `json:"status"`     // always "error"
	Error     string `json:"error"`      // a human sentence
	ErrorType string `json:"error_type"` // the code, or a more specific type such as sandbox_paused
}

// internalMessage is the sentence of every 500: the detail goes to the log.
const internalMessage = "something went wrong on our side; if it keeps happening, report request id %s"

// mapError turns err into the error response and reports whether it is an
// application error (one a caller can act on) rather than a bug.
func mapError(err error, requestID string) (response, bool) {
	var le *lifecycle.Error
	if errors.As(err, &le) && le.Code != lifecycle.CodeInternal {
		if status, ok := statusByCode[le.Code]; ok {
			resp := response{status: status, body: errorBody{Status: "error", Error: le.Message, ErrorType: le.ErrorType()}}
			if le.RetryAfter > 0 {
				resp.headers = map[string]string{"Retry-After": retryAfterSeconds(le.RetryAfter)}
			}
			return resp, true
		}
	}
	return response{status: http.StatusInternalServerError, body: errorBody{
		Status: "error", Error: fmt.Sprintf(internalMessage, requestID), ErrorType: string(lifecycle.CodeInternal),
	}}, false
}

// retryAfterSeconds formats d as a Retry-After value: whole seconds, rounded
// up, at least 1 (RFC 9110 section 10.2.3).
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// invalidf returns a CodeInvalid *lifecycle.Error; the message names the
// field at fault.
func invalidf(format string, args ...any) error {
	return lifecycle.Errorf(lifecycle.CodeInvalid, format, args...)
}

// unauthorizedf returns a CodeUnauthorized *lifecycle.Error.
func unauthorizedf(format string, args ...any) error {
	return lifecycle.Errorf(lifecycle.CodeUnauthorized, format, args...)
}
