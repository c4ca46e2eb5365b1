package localstack_test

import (
	"context"
	"encoding/base64"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/routes"
)

func TestMatch(t *testing.T) {
	for _, rt := range routes.Table {
		path := strings.ReplaceAll(strings.ReplaceAll(rt.Path, "{id}", "ses_abc"), "{provider}", "e2b")
		got, params, ok := localstack.Match(rt.Method, path)
		if !ok || got != rt {
			t.Errorf("Match(%s %s) = %v, %v; want %v", rt.Method, path, got, ok, rt)
			continue
		}
		if strings.Contains(rt.Path, "{id}") && params["id"] != "ses_abc" {
			t.Errorf("Match(%s %s) params = %v", rt.Method, path, params)
		}
	}
	// A greedy {path+} takes the rest of the path, several segments too.
	got, params, ok := localstack.Match("GET", "/v1/sessions/ses_abc/open/docs/a/b.html")
	if !ok || got.Path != routes.OpenPath+"/{path+}" || params["id"] != "ses_abc" || params["path"] != "docs/a/b.html" {
		t.Errorf("Match of a link with a path = %v %v %v, want the greedy route with path docs/a/b.html", got, params, ok)
	}
	if got, _, _ := localstack.Match("GET", "/v1/sessions/ses_abc/open"); got.Path != routes.OpenPath {
		t.Errorf("Match of the bare link = %v, want %s", got, routes.OpenPath)
	}
	for _, tc := range []struct{ method, path string }{
		{"PUT", "/v1/sessions"}, {"GET", "/v1/sessions/x/y"}, {"GET", "/v1/sessions//status"}, {"GET", "/"},
	} {
		if _, _, ok := localstack.Match(tc.method, tc.path); ok {
			t.Errorf("Match(%s %s) matched", tc.method, tc.path)
		}
	}
}

func TestGateway(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	gw := &localstack.Gateway{Functions: map[string]localstack.HTTPHandler{
		routes.Resume: func(_ context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			got = req
			return events.APIGatewayV2HTTPResponse{StatusCode: 202, Headers: map[string]string{"X-Test": "1"},
				Body: base64.StdEncoding.EncodeToString([]byte(`{"ok":true}`)), IsBase64Encoded: true}, nil
		},
	}}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	t.Run("OK", func(t *testing.T) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions/ses_1/resume?a=1&a=2", strings.NewReader(`{"x":1}`))
		req.Header.Set("X-Api-Key", "k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if got, want := resp.StatusCode, 202; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
		if got, want := string(body), `{"ok":true}`; got != want {
			t.Fatalf("body = %q, want %q", got, want)
		}
		if got, want := resp.Header.Get("X-Test"), "1"; got != want {
			t.Fatalf("X-Test = %q, want %q", got, want)
		}
	})
	if got, want := got.RouteKey, "POST /v1/sessions/{id}/resume"; got != want {
		t.Fatalf("RouteKey = %q, want %q", got, want)
	}
	if got.Version != "2.0" || got.PathParameters["id"] != "ses_1" || got.Headers["x-api-key"] != "k" ||
		got.QueryStringParameters["a"] != "1,2" || got.Body != `{"x":1}` || got.IsBase64Encoded ||
		got.RequestContext.HTTP.Method != "POST" || got.RequestContext.RequestID == "" || got.RequestContext.Stage != "$default" {
		t.Fatalf("event = %+v", got)
	}

	t.Run("BinaryBodyIsBase64", func(t *testing.T) {
		resp, err := http.Post(srv.URL+"/v1/sessions/ses_1/resume", "application/octet-stream", strings.NewReader("\xff\x00"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if !got.IsBase64Encoded || got.Body != base64.StdEncoding.EncodeToString([]byte("\xff\x00")) {
			t.Fatalf("body = %q base64=%v", got.Body, got.IsBase64Encoded)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/v1/nope")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusNotFound; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
	})
	t.Run("Preflight", func(t *testing.T) {
		req, _ := http.NewRequest("OPTIONS", srv.URL+"/v1/sessions", nil)
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight = %d %v", resp.StatusCode, resp.Header)
		}
	})
}

// corsFunction answers 200 with its own CORS headers, in both header maps
// and in mixed case, which API Gateway drops once CORS is configured on the
// API.
func corsFunction(calls *int) localstack.HTTPHandler {
	return func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*calls++
		return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK,
			Headers: map[string]string{
				"Access-Control-Allow-Origin":   "https://function.example",
				"access-control-expose-headers": "X-Function-Only",
				"Vary":                          "Origin",
			},
			MultiValueHeaders: map[string][]string{"Access-Control-Max-Age": {"5"}, "X-Test": {"1"}},
		}, nil
	}
}

// corsHeaders returns the Access-Control-* headers of h, one value each.
func corsHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, vs := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			out[k] = strings.Join(vs, "|")
		}
	}
	return out
}

// TestGatewayCORS: the local gateway applies routes' CORS configuration as
// API Gateway does, whatever the function sends.
func TestGatewayCORS(t *testing.T) {
	const app = "https://app.example.com"
	preflightHeaders := func(origin string) map[string]string {
		return map[string]string{
			"Access-Control-Allow-Origin":  origin,
			"Access-Control-Allow-Methods": strings.Join(routes.CORSAllowMethods, ", "),
			"Access-Control-Allow-Headers": strings.Join(routes.CORSAllowHeaders, ", "),
			"Access-Control-Max-Age":       strconv.Itoa(routes.CORSMaxAgeSeconds),
		}
	}
	responseHeaders := func(origin string) map[string]string {
		return map[string]string{
			"Access-Control-Allow-Origin":   origin,
			"Access-Control-Expose-Headers": strings.Join(routes.CORSExposeHeaders, ", "),
		}
	}
	for _, tc := range []struct {
		name       string
		corsOrigin string // Gateway.CORSOrigin
		method     string
		path       string
		headers    map[string]string
		wantStatus int
		wantCalls  int
		want       map[string]string // every Access-Control-* header of the answer
	}{
		{"PreflightAnyOrigin", "", "OPTIONS", "/v1/sessions/ses_1/status",
			map[string]string{"Origin": app, "Access-Control-Request-Method": "GET"}, 204, 0, preflightHeaders("*")},
		{"PreflightOneOrigin", app, "OPTIONS", "/v1/sessions",
			map[string]string{"Origin": app, "Access-Control-Request-Method": "POST"}, 204, 0, preflightHeaders(app)},
		{"PreflightOtherOrigin", app, "OPTIONS", "/v1/sessions",
			map[string]string{"Origin": "https://other.example", "Access-Control-Request-Method": "POST"}, 204, 0, map[string]string{}},
		{"OptionsWithoutOrigin", "", "OPTIONS", "/v1/sessions",
			map[string]string{"Access-Control-Request-Method": "POST"}, 204, 0, map[string]string{}},
		{"OptionsWithoutRequestMethod", "", "OPTIONS", "/v1/sessions",
			map[string]string{"Origin": app}, 204, 0, map[string]string{}},
		{"FunctionHeadersReplaced", "", "GET", "/v1/sessions/ses_1/status",
			map[string]string{"Origin": app}, 200, 1, responseHeaders("*")},
		{"FunctionHeadersReplacedOneOrigin", app, "GET", "/v1/sessions/ses_1/status",
			map[string]string{"Origin": app}, 200, 1, responseHeaders(app)},
		{"FunctionHeadersDroppedOtherOrigin", app, "GET", "/v1/sessions/ses_1/status",
			map[string]string{"Origin": "https://other.example"}, 200, 1, map[string]string{}},
		{"FunctionHeadersDroppedWithoutOrigin", "", "GET", "/v1/sessions/ses_1/status",
			nil, 200, 1, map[string]string{}},
		{"GatewayError", "", "GET", "/v1/nope",
			map[string]string{"Origin": app}, 404, 0, responseHeaders("*")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			gw := &localstack.Gateway{CORSOrigin: tc.corsOrigin,
				Functions: map[string]localstack.HTTPHandler{routes.Status: corsFunction(&calls)}}
			req := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			gw.ServeHTTP(rec, req)
			if got, want := rec.Code, tc.wantStatus; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := calls, tc.wantCalls; got != want {
				t.Errorf("function calls = %d, want %d", got, want)
			}
			if got, want := corsHeaders(rec.Header()), tc.want; !maps.Equal(got, want) {
				t.Errorf("CORS headers = %v, want %v", got, want)
			}
			if tc.wantCalls > 0 {
				if got, want := rec.Header().Get("X-Test"), "1"; got != want {
					t.Errorf("X-Test = %q, want %q: other function headers must pass", got, want)
				}
				if got, want := rec.Header().Get("Vary"), "Origin"; got != want {
					t.Errorf("Vary = %q, want %q: other function headers must pass", got, want)
				}
			}
		})
	}
}

// TestGatewayPath: the path is decoded before routing and sent decoded, as
// API Gateway's HTTP API does (see Gateway.Event).
func TestGatewayPath(t *testing.T) {
	var calls []events.APIGatewayV2HTTPRequest
	gw := &localstack.Gateway{Functions: map[string]localstack.HTTPHandler{
		routes.Status: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			calls = append(calls, ev)
			return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK}, nil
		},
	}}

	t.Run("EncodedSlashSplitsTheID", func(t *testing.T) {
		calls = nil
		req := httptest.NewRequest("GET", "/v1/sessions/ses%2F1/status", nil)
		if got, want := req.URL.EscapedPath(), "/v1/sessions/ses%2F1/status"; got != want {
			t.Fatalf("the request's escaped path = %q, want %q", got, want)
		}
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, req)
		if got, want := rec.Code, http.StatusNotFound; got != want {
			t.Errorf("status = %d, want %d", got, want)
		}
		if got, want := len(calls), 0; got != want {
			t.Errorf("function calls = %d, want %d", got, want)
		}
	})
	t.Run("EncodedSpaceIsDecoded", func(t *testing.T) {
		calls = nil
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/sessions/ses%201/status?q=a%20b", nil))
		if got, want := rec.Code, http.StatusOK; got != want {
			t.Fatalf("status = %d, want %d", got, want)
		}
		if got, want := len(calls), 1; got != want {
			t.Fatalf("function calls = %d, want %d", got, want)
		}
		ev := calls[0]
		if got, want := ev.RawPath, "/v1/sessions/ses 1/status"; got != want {
			t.Errorf("RawPath = %q, want %q", got, want)
		}
		if got, want := ev.RequestContext.HTTP.Path, "/v1/sessions/ses 1/status"; got != want {
			t.Errorf("RequestContext.HTTP.Path = %q, want %q", got, want)
		}
		if got, want := ev.PathParameters["id"], "ses 1"; got != want {
			t.Errorf("id = %q, want %q", got, want)
		}
		if got, want := ev.RawQueryString, "q=a%20b"; got != want {
			t.Errorf("RawQueryString = %q, want %q", got, want)
		}
		if got, want := ev.QueryStringParameters["q"], "a b"; got != want {
			t.Errorf("query q = %q, want %q", got, want)
		}
	})
}
