package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/routes"
)

// CORS header values (docs/DESIGN.md: CORS headers on every response), from the
// API's one CORS configuration in internal/routes. In AWS, API Gateway
// replaces them with that same configuration; they matter when a function
// is called without it (tests, `make invoke`).
var (
	corsAllowHeaders  = strings.Join(routes.CORSAllowHeaders, ", ")
	corsAllowMethods  = strings.Join(routes.CORSAllowMethods, ", ")
	corsExposeHeaders = strings.Join(routes.CORSExposeHeaders, ", ")
)

// Responder builds the API Gateway HTTP API (payload 2.0) responses of
// every Sandman HTTP function: the API routes (internal/apigw) and the
// provider hooks (internal/providerhook). It is a plain value, safe for concurrent
// use; the zero value allows any origin.
type Responder struct {
	// AllowOrigin is sent as Access-Control-Allow-Origin; "" means "*".
	// Any other value also sends Vary: Origin.
	AllowOrigin string
}

// internalMessage is the sentence of every 500: the detail goes to the log.
const internalMessage = "something went wrong on our side; if it keeps happening, report request id %s"

// JSON returns a response of status whose body is body encoded as JSON
// (without HTML escaping or a trailing newline), with the headers every API
// answer carries: Content-Type: application/json; charset=utf-8 (only when
// there is a body), Cache-Control: no-store, Access-Control-Allow-Origin,
// -Allow-Headers, -Allow-Methods and -Expose-Headers (the lists of
// routes.CORSAllowHeaders, CORSAllowMethods and CORSExposeHeaders, joined
// with ", "), and Vary: Origin when the origin is not "*". headers are added
// last and win over these. A nil body sends no body.
//
// The error is non-nil only when body cannot be encoded; the response is
// then already the 500 internal envelope, and the caller logs the error.
func (r Responder) JSON(status int, body any, headers map[string]string) (events.APIGatewayV2HTTPResponse, error) {
	origin := r.AllowOrigin
	if origin == "" {
		origin = routes.CORSAnyOrigin
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{
		"Access-Control-Allow-Origin":   origin,
		"Access-Control-Allow-Headers":  corsAllowHeaders,
		"Access-Control-Allow-Methods":  corsAllowMethods,
		"Access-Control-Expose-Headers": corsExposeHeaders,
		"Cache-Control":                 "no-store",
	}}
	if origin != routes.CORSAnyOrigin {
		out.Headers["Vary"] = "Origin"
	}
	for k, v := range headers {
		out.Headers[k] = v
	}
	if body == nil {
		return out, nil
	}
	b, err := marshal(body)
	if err != nil {
		err = fmt.Errorf("encode %d response: %w", status, err)
		out.StatusCode = http.StatusInternalServerError
		// An envelope of strings always encodes.
		b, _ = marshal(api.Error{Status: "error", Error: "the response could not be encoded", ErrorType: string(lifecycle.CodeInternal)})
	}
	out.Headers["Content-Type"] = "application/json; charset=utf-8"
	out.Body = string(b)
	return out, err
}

// Error returns the error envelope {"status":"error","error":"<sentence>",
// "error_type":"<type>"} for err (with "exit_code" and "output" when it
// carries a lifecycle.AppFailure), with JSON's headers. known reports
// whether err is an application error a caller can act on: a
// *lifecycle.Error in err's chain whose code is in StatusFor's table and is
// not internal. Then the status is StatusFor(code), the sentence is its
// Message, the type is ErrorType(err), and a positive RetryAfter adds
// Retry-After in whole seconds, rounded up (at least 1). Anything else
// (known false) answers 500 internal with a generic sentence that names
// only requestID: the caller logs err, whose detail never reaches the API's
// caller.
func (r Responder) Error(err error, requestID string) (resp events.APIGatewayV2HTTPResponse, known bool) {
	le, known := AppError(err)
	if !known {
		resp, _ = r.JSON(http.StatusInternalServerError, api.Error{ // strings always encode
			Status: "error", Error: fmt.Sprintf(internalMessage, requestID), ErrorType: string(lifecycle.CodeInternal),
		}, nil)
		return resp, false
	}
	var headers map[string]string
	if le.RetryAfter > 0 {
		headers = map[string]string{"Retry-After": retryAfterSeconds(le.RetryAfter)}
	}
	body := api.Error{Status: "error", Error: le.Message, ErrorType: le.ErrorType()}
	if le.App != nil {
		body.ExitCode, body.Output = le.App.ExitCode, le.App.Output
	}
	resp, _ = r.JSON(StatusFor(le.Code), body, headers)
	return resp, true
}

// retryAfterSeconds formats d as a Retry-After value: whole seconds, rounded
// up, at least 1 (RFC 9110 section 10.2.3).
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// marshal encodes v as JSON without HTML escaping (the API is not HTML, and
// "<key>" reads better than "\u003ckey\u003e") and without the trailing
// newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
