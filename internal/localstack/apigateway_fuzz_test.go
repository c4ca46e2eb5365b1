package localstack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/routes"
)

// FuzzMatch matches arbitrary methods and paths against routes.Table. The
// seed corpus is in testdata/fuzz/FuzzMatch.
//
// Invariants: Match never panics and is deterministic; a match is a row of
// routes.Table with the request's method, whose path parameters are exactly
// the template's {names}, each a non-empty segment without a slash, and
// putting them back into the template gives the request's path (leading and
// trailing slashes aside); a reference matcher written independently here
// agrees on every input, so no path matches two routes and none is missed.
func FuzzMatch(f *testing.F) {
	f.Add("GET", "/v1/sessions/ses_abc/status")
	f.Fuzz(func(t *testing.T, method, path string) {
		route, params, ok := localstack.Match(method, path)
		route2, params2, ok2 := localstack.Match(method, path)
		if ok != ok2 || route != route2 || !maps.Equal(params, params2) {
			t.Fatalf("Match(%q, %q) is not deterministic", method, path)
		}
		want, wantParams, wantOK := referenceMatch(method, path)
		if ok != wantOK || route != want || (ok && !maps.Equal(params, wantParams)) {
			t.Fatalf("Match(%q, %q) = %v %v %v, the reference says %v %v %v",
				method, path, route, params, ok, want, wantParams, wantOK)
		}
		if !ok {
			return
		}
		if route.Method != method {
			t.Errorf("matched %s for method %q", route.Key(), method)
		}
		for name, v := range params {
			if v == "" || strings.Contains(v, "/") {
				t.Errorf("parameter %s = %q: want a non-empty segment", name, v)
			}
		}
		tmpl := strings.Split(strings.Trim(route.Path, "/"), "/")
		filled := make([]string, len(tmpl))
		names := 0
		for i, seg := range tmpl {
			filled[i] = seg
			if name, isParam := strings.CutPrefix(seg, "{"); isParam {
				filled[i] = params[strings.TrimSuffix(name, "}")]
				names++
			}
		}
		if got, want := len(params), names; got != want {
			t.Errorf("%d parameters %v for template %s, want %d", got, params, route.Path, want)
		}
		if got, want := strings.Join(filled, "/"), strings.Trim(path, "/"); got != want {
			t.Errorf("the template filled with %v is %q, want the path %q", params, got, want)
		}
	})
}

// referenceMatch is a second, independent matcher: the first row of
// routes.Table whose method is method and whose path template, split on
// "/", fits the path's segments (a {name} segment fits any non-empty one).
func referenceMatch(method, path string) (routes.Route, map[string]string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var found []routes.Route
	var foundParams []map[string]string
	for _, rt := range routes.Table {
		tmpl := strings.Split(strings.Trim(rt.Path, "/"), "/")
		if rt.Method != method || len(tmpl) != len(segs) {
			continue
		}
		params := map[string]string{}
		fits := true
		for i := range tmpl {
			name, isParam := strings.CutPrefix(tmpl[i], "{")
			switch {
			case isParam && segs[i] != "":
				params[strings.TrimSuffix(name, "}")] = segs[i]
			case tmpl[i] != segs[i]:
				fits = false
			}
		}
		if fits {
			found = append(found, rt)
			foundParams = append(foundParams, params)
		}
	}
	if len(found) == 0 {
		return routes.Route{}, nil, false
	}
	if len(found) > 1 {
		panic("routes.Table has two routes for " + method + " " + path)
	}
	return found[0], foundParams[0], true
}

// FuzzEvent sends arbitrary requests (method, path, raw query, "Name: value"
// header lines, body, content type) through Gateway.ServeHTTP to a function
// that echoes the body it was given, base64-encoded. The seed corpus is in
// testdata/fuzz/FuzzEvent.
//
// Invariants: nothing panics; OPTIONS answers the 204 preflight and calls
// no function; the function's own Access-Control-* headers never reach the
// client, and the answer carries routes' CORS headers exactly when the
// request has an Origin header (for OPTIONS, also
// Access-Control-Request-Method); a request Match refuses answers API Gateway's 404
// {"message":...} and calls no function; a matched one calls exactly its
// route's function with a payload v2 event carrying the route key, method,
// path, raw query, path parameters, lowercase header names without the
// cookie header (cookies split into Cookies), the Host, the query joined
// per name, and the body: verbatim when it is text (then valid UTF-8),
// otherwise base64 with IsBase64Encoded, which decodes to the bytes sent;
// and the body the function answers in base64 reaches the client decoded,
// byte for byte.
func FuzzEvent(f *testing.F) {
	f.Add("POST", "/v1/sessions/ses_1/resume", "a=1&a=2", "X-Api-Key: k\nCookie: a=1; b=2", []byte(`{"x":1}`), "application/json")
	f.Add("GET", "/v1/sessions/ses_1/status", "", "Origin: https://app.example.com", []byte(nil), "")
	f.Add("OPTIONS", "/v1/sessions", "", "Origin: https://app.example.com\nAccess-Control-Request-Method: POST", []byte(nil), "")
	f.Fuzz(func(t *testing.T, method, path, query, headerLines string, body []byte, contentType string) {
		r := &http.Request{
			Method: method, URL: &url.URL{Path: path, RawQuery: query}, Proto: "HTTP/1.1",
			Header: http.Header{}, Host: "127.0.0.1:8080", RemoteAddr: "127.0.0.1:54321",
			Body: io.NopCloser(bytes.NewReader(body)),
		}
		cookieParts := 0
		for _, line := range strings.Split(headerLines, "\n") {
			name, value, ok := strings.Cut(line, ":")
			if !ok || name == "" {
				continue
			}
			r.Header.Add(name, strings.TrimSpace(value))
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		for _, v := range r.Header.Values("Cookie") {
			for _, c := range strings.Split(v, ";") {
				if strings.TrimSpace(c) != "" {
					cookieParts++
				}
			}
		}

		var calls []string
		var got events.APIGatewayV2HTTPRequest
		gw := &localstack.Gateway{Functions: map[string]localstack.HTTPHandler{},
			Now: func() time.Time { return time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC) }}
		for _, fn := range routes.Functions {
			gw.Functions[fn] = func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				calls = append(calls, fn)
				got = ev
				raw := []byte(ev.Body)
				if ev.IsBase64Encoded {
					var err error
					if raw, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
						t.Fatalf("event body is flagged base64 but does not decode: %v", err)
					}
				}
				return events.APIGatewayV2HTTPResponse{StatusCode: http.StatusOK,
					Headers: map[string]string{"Access-Control-Allow-Origin": "https://function.example",
						"Access-Control-Expose-Headers": "X-Function-Only"},
					Body: base64.StdEncoding.EncodeToString(raw), IsBase64Encoded: true}, nil
			}
		}
		rec := httptest.NewRecorder()
		gw.ServeHTTP(rec, r)

		checkCORS(t, r, rec.Header())
		route, params, matched := localstack.Match(method, path)
		switch {
		case method == http.MethodOptions:
			if rec.Code != http.StatusNoContent || len(calls) != 0 {
				t.Fatalf("OPTIONS answered %d after %d function calls, want 204 and none", rec.Code, len(calls))
			}
			return
		case !matched:
			var msg map[string]string
			if rec.Code != http.StatusNotFound || len(calls) != 0 || json.Unmarshal(rec.Body.Bytes(), &msg) != nil || msg["message"] == "" {
				t.Fatalf("unmatched %q %q answered %d %q after %d calls, want 404 {\"message\":...}", method, path, rec.Code, rec.Body, len(calls))
			}
			return
		}
		if len(calls) != 1 || calls[0] != route.Function {
			t.Fatalf("calls = %v, want exactly [%s]", calls, route.Function)
		}
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), body) {
			t.Fatalf("answer %d %q, want 200 and the body sent %q", rec.Code, rec.Body, body)
		}
		checkEvent(t, got, r, route, params, body, cookieParts)
	})
}

// checkCORS checks the CORS headers of one answer of a Gateway whose
// CORSOrigin is the default (FuzzEvent's doc): only the configured ones, and
// only for a request with an Origin (and, for OPTIONS, an
// Access-Control-Request-Method) header.
func checkCORS(t *testing.T, r *http.Request, got http.Header) {
	t.Helper()
	want := map[string]string{}
	switch {
	case r.Header.Get("Origin") == "":
	case r.Method != http.MethodOptions:
		want["Access-Control-Allow-Origin"] = "*"
		want["Access-Control-Expose-Headers"] = strings.Join(routes.CORSExposeHeaders, ", ")
	case r.Header.Get("Access-Control-Request-Method") != "":
		want["Access-Control-Allow-Origin"] = "*"
		want["Access-Control-Allow-Methods"] = strings.Join(routes.CORSAllowMethods, ", ")
		want["Access-Control-Allow-Headers"] = strings.Join(routes.CORSAllowHeaders, ", ")
		want["Access-Control-Max-Age"] = strconv.Itoa(routes.CORSMaxAgeSeconds)
	}
	cors := map[string]string{}
	for k, vs := range got {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			cors[k] = strings.Join(vs, "|")
		}
	}
	if !maps.Equal(cors, want) {
		t.Errorf("CORS headers = %v, want %v", cors, want)
	}
}

// checkEvent checks one event Gateway built (FuzzEvent's doc).
func checkEvent(t *testing.T, ev events.APIGatewayV2HTTPRequest, r *http.Request, route routes.Route,
	params map[string]string, body []byte, cookieParts int) {
	t.Helper()
	if ev.Version != "2.0" || ev.RouteKey != route.Key() || ev.RequestContext.RouteKey != route.Key() {
		t.Errorf("version %q route key %q / %q, want 2.0 and %q", ev.Version, ev.RouteKey, ev.RequestContext.RouteKey, route.Key())
	}
	if ev.RequestContext.HTTP.Method != r.Method || ev.RawPath != r.URL.Path || ev.RequestContext.HTTP.Path != r.URL.Path ||
		ev.RawQueryString != r.URL.RawQuery {
		t.Errorf("method %q path %q / %q query %q, want %q %q %q", ev.RequestContext.HTTP.Method, ev.RawPath,
			ev.RequestContext.HTTP.Path, ev.RawQueryString, r.Method, r.URL.Path, r.URL.RawQuery)
	}
	if ev.RequestContext.RequestID == "" {
		t.Error("no request id")
	}
	if len(params) == 0 && ev.PathParameters != nil || len(params) > 0 && !maps.Equal(ev.PathParameters, params) {
		t.Errorf("path parameters = %v, want %v", ev.PathParameters, params)
	}
	for k := range ev.Headers {
		if k != strings.ToLower(k) || k == "cookie" {
			t.Errorf("header name %q: want lowercase names and no cookie header", k)
		}
	}
	if got, want := ev.Headers["host"], r.Host; got != want {
		t.Errorf("host = %q, want %q", got, want)
	}
	if got, want := len(ev.Cookies), cookieParts; got != want {
		t.Errorf("%d cookies, want %d", got, want)
	}
	for k, vs := range r.URL.Query() {
		if got, want := ev.QueryStringParameters[k], strings.Join(vs, ","); got != want {
			t.Errorf("query %q = %q, want %q", k, got, want)
		}
	}
	switch {
	case len(body) == 0:
		if ev.Body != "" || ev.IsBase64Encoded {
			t.Errorf("empty body became %q (base64 %v)", ev.Body, ev.IsBase64Encoded)
		}
	case ev.IsBase64Encoded:
		raw, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil || !bytes.Equal(raw, body) {
			t.Errorf("base64 body decodes to %q (%v), want %q", raw, err, body)
		}
	default:
		if ev.Body != string(body) || !utf8.ValidString(ev.Body) {
			t.Errorf("text body = %q, want %q and valid UTF-8", ev.Body, body)
		}
	}
}
