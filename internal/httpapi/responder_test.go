package httpapi_test

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/routes"
)

// apiHeaders are the headers every answer carries with the default origin.
var apiHeaders = map[string]string{
	"Cache-Control":                 "no-store",
	"Access-Control-Allow-Origin":   "*",
	"Access-Control-Allow-Headers":  "Authorization, Content-Type, Idempotency-Key, x-api-key",
	"Access-Control-Allow-Methods":  "GET, POST, PATCH, DELETE, OPTIONS",
	"Access-Control-Expose-Headers": "Retry-After, Location, Idempotent-Replayed",
	"Vary":                          "",
}

// with returns base with the entries of more added (a "" value: the header
// must be absent).
func with(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

// wantHeaders checks every header of want against got; a want of "" means
// the header must be absent.
func wantHeaders(tb testing.TB, got, want map[string]string) {
	tb.Helper()
	for k, w := range want {
		if g, ok := got[k]; g != w || (w == "" && ok) {
			tb.Errorf("%s = %q (sent %v), want %q", k, g, ok, w)
		}
	}
}

// safelisted are the response headers every browser lets scripts read
// without Access-Control-Expose-Headers (Fetch standard, "CORS-safelisted
// response-header name"), plus the CORS and Vary headers themselves.
var safelisted = []string{"Cache-Control", "Content-Language", "Content-Length", "Content-Type",
	"Expires", "Last-Modified", "Pragma", "Vary"}

// wantExposed checks that a browser script may read every header of got:
// each is safelisted, a CORS header, or listed in
// Access-Control-Expose-Headers (which in AWS is routes.CORSExposeHeaders,
// whatever the function sends).
func wantExposed(tb testing.TB, got map[string]string) {
	tb.Helper()
	exposed := strings.Split(got["Access-Control-Expose-Headers"], ", ")
	if !slices.Equal(exposed, routes.CORSExposeHeaders) {
		tb.Errorf("Access-Control-Expose-Headers = %q, want routes.CORSExposeHeaders %q", exposed, routes.CORSExposeHeaders)
	}
	for k := range got {
		if slices.Contains(safelisted, k) || strings.HasPrefix(k, "Access-Control-") {
			continue
		}
		if !slices.ContainsFunc(routes.CORSExposeHeaders, func(e string) bool { return strings.EqualFold(e, k) }) {
			tb.Errorf("%s is sent but not in routes.CORSExposeHeaders %q: browsers hide it", k, routes.CORSExposeHeaders)
		}
	}
}

// TestResponderJSON: every answer carries the API's headers; a body is
// encoded without HTML escaping; the caller's headers win.
func TestResponderJSON(t *testing.T) {
	t.Parallel()
	const jsonType = "application/json; charset=utf-8"
	for _, tc := range []struct {
		name    string
		r       httpapi.Responder
		status  int
		body    any
		headers map[string]string
		wantErr bool
		want    int // status
		wantB   string
		wantH   map[string]string
	}{
		{"AnyOrigin", httpapi.Responder{}, http.StatusOK, map[string]string{"hint": "<key> & more"}, nil, false,
			http.StatusOK, `{"hint":"<key> & more"}`, with(apiHeaders, map[string]string{"Content-Type": jsonType})},
		{"OneOrigin", httpapi.Responder{AllowOrigin: "https://app.example.com"}, http.StatusCreated, struct{}{}, nil, false,
			http.StatusCreated, `{}`, with(apiHeaders, map[string]string{
				"Access-Control-Allow-Origin": "https://app.example.com", "Vary": "Origin", "Content-Type": jsonType})},
		{"NoBody", httpapi.Responder{}, http.StatusNoContent, nil, map[string]string{"Cache-Control": "max-age=5", "X-Extra": "1"}, false,
			http.StatusNoContent, "", with(apiHeaders, map[string]string{"Cache-Control": "max-age=5", "X-Extra": "1", "Content-Type": ""})},
		{"ErrEncode", httpapi.Responder{}, http.StatusOK, map[string]any{"f": func() {}}, nil, true,
			http.StatusInternalServerError, `{"status":"error","error":"the response could not be encoded","error_type":"internal"}`,
			with(apiHeaders, map[string]string{"Content-Type": jsonType})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.r.JSON(tc.status, tc.body, tc.headers)
			if got, want := err != nil, tc.wantErr; got != want {
				t.Errorf("JSON error = %v, want an error: %v", err, want)
			}
			if got, want := resp.StatusCode, tc.want; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := resp.Body, tc.wantB; got != want {
				t.Errorf("body = %s, want %s", got, want)
			}
			wantHeaders(t, resp.Headers, tc.wantH)
		})
	}
}

// TestResponderError: the envelope, the status table, Retry-After rounding,
// and no detail for anything that is not an application error.
func TestResponderError(t *testing.T) {
	t.Parallel()
	paused := &lifecycle.Error{Code: lifecycle.CodeConflict, Type: lifecycle.TypeSandboxPaused, Message: "the sandbox is paused"}
	for _, tc := range []struct {
		name       string
		err        error
		known      bool
		status     int
		body       string
		retryAfter string // "" means no header
	}{
		{"NotFound", lifecycle.Errorf(lifecycle.CodeNotFound, "no session"), true, 404,
			`{"status":"error","error":"no session","error_type":"not_found"}`, ""},
		{"WrappedType", fmt.Errorf("heartbeat: %w", paused), true, 409,
			`{"status":"error","error":"the sandbox is paused","error_type":"sandbox_paused"}`, ""},
		{"RetryAfterRoundsUp", &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: "later", RetryAfter: 1500 * time.Millisecond}, true, 503,
			`{"status":"error","error":"later","error_type":"unavailable"}`, "2"},
		{"RetryAfterAtLeastOne", &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: "later", RetryAfter: time.Millisecond}, true, 503,
			`{"status":"error","error":"later","error_type":"unavailable"}`, "1"},
		{"RetryAfterWhole", &lifecycle.Error{Code: lifecycle.CodeUnavailable, Message: "later", RetryAfter: 5 * time.Second}, true, 503,
			`{"status":"error","error":"later","error_type":"unavailable"}`, "5"},
		{"Unauthorized", lifecycle.Errorf(lifecycle.CodeUnauthorized, "bad signature"), true, 401,
			`{"status":"error","error":"bad signature","error_type":"unauthorized"}`, ""},
		{"ErrPlain", errors.New("dynamodb: secret detail"), false, 500,
			`{"status":"error","error":"something went wrong on our side; if it keeps happening, report request id req-1","error_type":"internal"}`, ""},
		{"ErrInternalCode", &lifecycle.Error{Code: lifecycle.CodeInternal, Message: "secret detail", RetryAfter: time.Second}, false, 500,
			`{"status":"error","error":"something went wrong on our side; if it keeps happening, report request id req-1","error_type":"internal"}`, ""},
		{"ErrUnknownCode", lifecycle.Errorf("teapot", "secret detail"), false, 500,
			`{"status":"error","error":"something went wrong on our side; if it keeps happening, report request id req-1","error_type":"internal"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, known := httpapi.Responder{}.Error(tc.err, "req-1")
			if got, want := known, tc.known; got != want {
				t.Errorf("known = %v, want %v", got, want)
			}
			if got, want := resp.StatusCode, tc.status; got != want {
				t.Errorf("status = %d, want %d", got, want)
			}
			if got, want := resp.Body, tc.body; got != want {
				t.Errorf("body = %s, want %s", got, want)
			}
			if got, want := resp.Headers["Retry-After"], tc.retryAfter; got != want {
				t.Errorf("Retry-After = %q, want %q", got, want)
			}
			// WWW-Authenticate is the API handler's to add: a webhook's 401 has none.
			wantHeaders(t, resp.Headers, with(apiHeaders, map[string]string{
				"Content-Type": "application/json; charset=utf-8", "WWW-Authenticate": ""}))
			wantExposed(t, resp.Headers)
		})
	}
}

// TestErrorType: the type logged is the type the envelope shows.
func TestErrorType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"Code", lifecycle.Errorf(lifecycle.CodeForbidden, "not yours"), "forbidden"},
		{"Type", fmt.Errorf("resume: %w", &lifecycle.Error{Code: lifecycle.CodeUnavailable, Type: lifecycle.TypeSandboxExpired}), "sandbox_expired"},
		{"Plain", errors.New("boom"), "internal"},
		{"InternalCode", &lifecycle.Error{Code: lifecycle.CodeInternal, Type: "custom"}, "internal"},
		{"UnknownCode", lifecycle.Errorf("teapot", "x"), "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := httpapi.ErrorType(tc.err), tc.want; got != want {
				t.Errorf("ErrorType = %q, want %q", got, want)
			}
			resp, _ := httpapi.Responder{}.Error(tc.err, "req-1")
			if got, want := resp.Body, fmt.Sprintf(`"error_type":%q}`, tc.want); !strings.HasSuffix(got, want) {
				t.Errorf("envelope %s does not end with %s", got, want)
			}
		})
	}
}
