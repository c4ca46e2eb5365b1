package provhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// readVercel reads a {"error":{"code","message"}} body.
func readVercel(b []byte) (string, string, bool) {
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	err := json.Unmarshal(b, &body)
	return body.Error.Code, body.Error.Message, err == nil && body.Error.Message != ""
}

func TestParseError(t *testing.T) {
	e := provhttp.ParseError("vercel", provhttp.Reply{Status: 410, Body: []byte(`{"error":{"code":"snapshot_not_found","message":"gone"}}`)}, readVercel)
	if got, want := e.Error(), "vercel answered 410 snapshot_not_found: gone"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = provhttp.ParseError("e2b", provhttp.Reply{Status: 502, Body: []byte("<html>bad gateway</html>")}, readVercel)
	if got, want := e.Error(), "e2b answered 502: <html>bad gateway</html>"; got != want {
		t.Errorf("Error() = %q, want %q (the raw body's start)", got, want)
	}
	if got, want := (&provhttp.APIError{Provider: "daytona", Status: 404}).Error(), "daytona answered 404: Not Found"; got != want {
		t.Errorf("Error() = %q, want %q (the status text)", got, want)
	}
	if got := provhttp.StatusOf(lifecycle.NewProviderError(lifecycle.ErrSandboxGone, "get", "sb", e)); got != 502 {
		t.Errorf("StatusOf = %d, want 502", got)
	}
}

func TestClassesError(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := provhttp.Classes{Gone: []int{410}, Conflict: []int{422}, Auth: map[int]string{401: "the token is wrong"}}
	for _, tc := range []struct {
		name      string
		status    int
		sandboxID string
		want      error // nil: a plain error
		text      string
	}{
		{"NotFoundAboutOne", 404, "sb", lifecycle.ErrSandboxGone, ""},
		{"NotFoundInList", 404, "", nil, "list sandboxes: "},
		{"Gone", 410, "", lifecycle.ErrSandboxGone, ""},
		{"Conflict", 422, "sb", lifecycle.ErrSandboxConflict, ""},
		{"Throttled", 429, "sb", lifecycle.ErrProviderTransient, ""},
		{"ServerError", 503, "sb", lifecycle.ErrProviderTransient, ""},
		{"Auth", 401, "sb", nil, "list sandbox sb: the token is wrong: "},
		{"Other", 400, "sb", nil, "list sandbox sb: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := provhttp.Reply{Status: tc.status, Header: http.Header{"Retry-After": {"3"}}}
			cause := &provhttp.APIError{Provider: "p", Status: tc.status}
			err := c.Error("list", tc.sandboxID, r, cause, now)
			if !errors.Is(err, cause) && !errors.As(err, new(*provhttp.APIError)) {
				t.Errorf("err = %v, want the cause inside", err)
			}
			var pe *lifecycle.ProviderError
			if tc.want == nil {
				if errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.text) {
					t.Errorf("err = %v, want a plain error starting %q", err, tc.text)
				}
				return
			}
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == lifecycle.ErrProviderTransient {
				if pe.RetryAfter != 3*time.Second || pe.Refused != (tc.status == 429) {
					t.Errorf("RetryAfter %s, Refused %v; want 3s and refused only on a 429", pe.RetryAfter, pe.Refused)
				}
			}
		})
	}
	own := provhttp.Classes{RetryAfter: func(http.Header, time.Time) time.Duration { return time.Minute }}
	var pe *lifecycle.ProviderError
	if err := own.Error("get", "sb", provhttp.Reply{Status: 500}, errors.New("x"), now); !errors.As(err, &pe) || pe.RetryAfter != time.Minute {
		t.Errorf("a provider's own Retry-After reader: %v, want a minute", err)
	}
}

func TestRetrier(t *testing.T) {
	r := provhttp.Retrier{Name: "p", MaxRetries: 2, Base: time.Millisecond, MaxWait: time.Millisecond,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }, Log: slog.New(slog.DiscardHandler)}
	transient := lifecycle.NewProviderError(lifecycle.ErrProviderTransient, "get", "sb", errors.New("503"))
	n := 0
	err := r.Do(t.Context(), "get", "sb", nil, func(context.Context) error { n++; return transient })
	if !errors.Is(err, lifecycle.ErrProviderTransient) || n != 3 {
		t.Errorf("attempts = %d (%v), want 3: one and MaxRetries retries of a transient failure", n, err)
	}
	n = 0
	gone := lifecycle.NewProviderError(lifecycle.ErrSandboxGone, "get", "sb", errors.New("404"))
	if err := r.Do(t.Context(), "get", "sb", nil, func(context.Context) error { n++; return gone }); !errors.Is(err, lifecycle.ErrSandboxGone) || n != 1 {
		t.Errorf("attempts = %d (%v), want 1: gone is not retried", n, err)
	}
	n = 0
	once := func(err error, k int) bool { return k < 1 }
	if err := r.Do(t.Context(), "get", "sb", once, func(context.Context) error { n++; return gone }); err == nil || n != 2 {
		t.Errorf("attempts = %d, want 2 with the caller's own retryable", n)
	}
}

func TestRoundTripJoinsPathAndQuery(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL.RequestURI() }))
	defer srv.Close()
	rq := provhttp.Request{Op: "get", SandboxID: "a b", Method: http.MethodGet, URL: srv.URL + "/api?old=1",
		Path: []string{"sandbox", "a b"}, Query: url.Values{"limit": {"2"}}, Timeout: time.Second, MaxBody: 1}
	if _, err := provhttp.RoundTrip(t.Context(), srv.Client(), rq); err != nil {
		t.Fatal(err)
	}
	if want := "/api/sandbox/a%20b?limit=2"; got != want {
		t.Errorf("request URI = %q, want %q (the segments escaped, the query replaced)", got, want)
	}
}
