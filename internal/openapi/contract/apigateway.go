package contract

import (
	"encoding/base64"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// FromAPIGateway turns an API Gateway HTTP API (payload 2.0) request and
// its answer, as the handler tests drive them, into an Exchange: the path
// template is the route key's ("$default", which no operation has, for a
// request outside the route table; a greedy {name+} becomes {name}), bodies are decoded from base64 when
// they travelled encoded.
func FromAPIGateway(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) Exchange {
	method := ev.RequestContext.HTTP.Method
	path := ev.RouteKey
	if m, p, ok := strings.Cut(ev.RouteKey, " "); ok {
		path = p
		if method == "" {
			method = m
		}
	}
	// A greedy {name+} (API Gateway) is {name} in OpenAPI.
	path = strings.ReplaceAll(path, "+}", "}")
	return Exchange{
		Method: method, Path: path, PathParams: ev.PathParameters, Query: ev.QueryStringParameters,
		RequestHeaders: ev.Headers, RequestBody: decoded(ev.Body, ev.IsBase64Encoded),
		Status: resp.StatusCode, Headers: resp.Headers, Body: decoded(resp.Body, resp.IsBase64Encoded),
	}
}

// decoded returns body, base64-decoded when b64 (as is, when it does not
// decode: the handler answers that 400 itself).
func decoded(body string, b64 bool) []byte {
	if b64 {
		if b, err := base64.StdEncoding.DecodeString(body); err == nil {
			return b
		}
	}
	return []byte(body)
}
