package localstack_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
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
