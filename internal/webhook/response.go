package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TODO(apigw): this file is a minimal shim until internal/apigw exports its
// response encoding (today a method of apigw.Handler, apigw/handler.go
// encode and apigw/errors.go mapError). Wanted from apigw, e.g.:
//
//	type Responder struct{ AllowOrigin string }
//	func (Responder) JSON(status int, body any, headers map[string]string) events.APIGatewayV2HTTPResponse
//	func (Responder) Error(err error, requestID string) (resp events.APIGatewayV2HTTPResponse, known bool)
//
// Until then the status table is apigw.StatusFor and the headers and
// sentences below copy apigw's.

// CORS and caching headers, as apigw sends them on every answer.
const (
	corsAllowHeaders  = "Authorization, x-api-key, Content-Type, Idempotency-Key"
	corsAllowMethods  = "GET, POST, DELETE, OPTIONS"
	corsExposeHeaders = "Retry-After, Location, Idempotent-Replayed"
)

// errorBody is the API's error envelope (DESIGN.md "HTTP API").
type errorBody struct {
	Status    string `json:"status"`     // always "error"
	Error     string `json:"error"`      // a human sentence
	ErrorType string `json:"error_type"` // the code
}

// internalMessage is the sentence of every 500, as apigw words it.
const internalMessage = "something went wrong on our side; if it keeps happening, report request id %s"

// errorResponse answers err in the envelope: a *lifecycle.Error with its
// code's status, message and error_type (and Retry-After in whole seconds,
// rounded up), anything else 500 with no detail.
func (h *Handler) errorResponse(err error, requestID string) events.APIGatewayV2HTTPResponse {
	var le *lifecycle.Error
	if errors.As(err, &le) && le.Code != lifecycle.CodeInternal {
		resp := h.jsonResponse(apigw.StatusFor(le.Code), errorBody{Status: "error", Error: le.Message, ErrorType: le.ErrorType()})
		if le.RetryAfter > 0 {
			s := int64((le.RetryAfter + time.Second - 1) / time.Second)
			resp.Headers["Retry-After"] = strconv.FormatInt(max(s, 1), 10)
		}
		return resp
	}
	return h.jsonResponse(http.StatusInternalServerError, errorBody{
		Status: "error", Error: fmt.Sprintf(internalMessage, requestID), ErrorType: string(lifecycle.CodeInternal),
	})
}

// jsonResponse answers status with body encoded as JSON and the headers
// every API answer carries.
func (h *Handler) jsonResponse(status int, body any) events.APIGatewayV2HTTPResponse {
	b, err := json.Marshal(body)
	if err != nil { // only this package's own structs are encoded
		status, b = http.StatusInternalServerError, []byte(`{"status":"error","error":"the response could not be encoded","error_type":"internal"}`)
	}
	headers := map[string]string{
		"Content-Type":                  "application/json; charset=utf-8",
		"Cache-Control":                 "no-store",
		"Access-Control-Allow-Origin":   h.allowOrigin,
		"Access-Control-Allow-Headers":  corsAllowHeaders,
		"Access-Control-Allow-Methods":  corsAllowMethods,
		"Access-Control-Expose-Headers": corsExposeHeaders,
	}
	if h.allowOrigin != "*" {
		headers["Vary"] = "Origin"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: headers, Body: string(b)}
}
