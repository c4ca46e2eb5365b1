package apigw_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for _, tc := range []struct {
		name     string
		headers  map[string]string // "" removes
		status   int
		contains string
	}{
		{"XAPIKey", map[string]string{}, 200, ""},
		{"XAPIKeyMixedCase", map[string]string{"x-api-key": "", "X-Api-Key": apigw.DevAPIKey}, 200, ""},
		{"Bearer", map[string]string{"x-api-key": "", "authorization": "Bearer " + apigw.DevAPIKey}, 200, ""},
		{"BearerSchemeCase", map[string]string{"x-api-key": "", "Authorization": "bearer " + apigw.DevAPIKey}, 200, ""},
		{"ErrNoKey", map[string]string{"x-api-key": ""}, 401, "API key is required"},
		{"ErrBadKey", map[string]string{"x-api-key": "sk_notakeyatall"}, 401, "not valid"},
		{"ErrBadBearer", map[string]string{"x-api-key": "", "authorization": "Bearer sk_notakeyatall"}, 401, "not valid"},
		{"ErrBothHeaders", map[string]string{"authorization": "Bearer " + apigw.DevAPIKey}, 401, "not both"},
		{"ErrBasicScheme", map[string]string{"x-api-key": "", "authorization": "Basic " + apigw.DevAPIKey}, 401, "Bearer <key>"},
		{"ErrBearerWithoutKey", map[string]string{"x-api-key": "", "authorization": "Bearer"}, 401, "Bearer <key>"},
		{"ErrBearerTwoTokens", map[string]string{"x-api-key": "", "authorization": "Bearer a b"}, 401, "Bearer <key>"},
		{"ErrEmptyXAPIKey", map[string]string{"x-api-key": "", "X-API-KEY": " "}, 401, "x-api-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := MustEvent(t, "sessions-list.json")
			// Removals first: withHeader matches any case, so removing
			// "x-api-key" after setting "X-Api-Key" would drop both.
			for k, v := range tc.headers {
				if v == "" {
					withHeader(k, "")(&ev)
				}
			}
			for k, v := range tc.headers {
				if v != "" {
					ev.Headers[k] = v // exact case, as a non-AWS caller might send it
				}
			}
			r := h.invoke(t, ev)
			if tc.status == 200 {
				wantStatus(t, r, 200)
				return
			}
			wantError(t, r, tc.status, "unauthorized", tc.contains)
			if got := r.headers["WWW-Authenticate"]; !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", got)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for _, fn := range apiFunctions {
		t.Run(fn, func(t *testing.T) {
			r := h.invokeFunction(t, fn, MustEvent(t, "preflight.json"))
			wantStatus(t, r, 204)
			if r.body != "" {
				t.Errorf("preflight has a body: %s", r.body)
			}
			if got, want := r.headers["Access-Control-Allow-Origin"], "*"; got != want {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
			}
			for _, hdr := range []string{"Authorization", "x-api-key", "Content-Type", "Idempotency-Key"} {
				if !strings.Contains(r.headers["Access-Control-Allow-Headers"], hdr) {
					t.Errorf("Access-Control-Allow-Headers = %q lacks %s", r.headers["Access-Control-Allow-Headers"], hdr)
				}
			}
			for _, m := range []string{"GET", "POST", "DELETE"} {
				if !strings.Contains(r.headers["Access-Control-Allow-Methods"], m) {
					t.Errorf("Access-Control-Allow-Methods = %q lacks %s", r.headers["Access-Control-Allow-Methods"], m)
				}
			}
		})
	}
}

func TestCORSOrigin(t *testing.T) {
	t.Parallel()
	h := MustHarness(t, func(o *apigw.Config) { o.AllowOrigin = "https://app.example.com" })
	r := h.invoke(t, MustEvent(t, "sessions-list.json", withKey("")))
	wantStatus(t, r, 401)
	if got, want := r.headers["Access-Control-Allow-Origin"], "https://app.example.com"; got != want {
		t.Errorf("Access-Control-Allow-Origin = %q, want %q", got, want)
	}
	if got, want := r.headers["Vary"], "Origin"; got != want {
		t.Errorf("Vary = %q, want %q", got, want)
	}
}

func TestRouting(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("OtherFunctionsRoute", func(t *testing.T) {
		h.prov.ResetCalls()
		r := h.invokeFunction(t, routes.Status, MustEvent(t, "resume.json", withID(s.ID)))
		wantError(t, r, 404, "not_found", "no route")
		if got := h.providerCalls(); got != 0 {
			t.Errorf("provider calls = %d, want 0", got)
		}
	})
	t.Run("UnknownRoute", func(t *testing.T) {
		ev := MustEvent(t, "sessions-list.json")
		ev.RouteKey = "$default"
		wantError(t, h.invokeFunction(t, routes.Sessions, ev), 404, "not_found")
	})
	t.Run("EveryTableRowServed", func(t *testing.T) {
		var served []string
		for _, fn := range apiFunctions {
			served = append(served, h.handlers[fn].Routes()...)
		}
		for _, rt := range routes.Table {
			if rt.Function == routes.Webhook {
				continue
			}
			if !slices.Contains(h.handlers[rt.Function].Routes(), rt.Key()) {
				t.Errorf("function %s does not serve %s", rt.Function, rt.Key())
			}
		}
		if got, want := len(served), len(routes.Table)-1; got != want {
			t.Errorf("served %d routes, want %d: %v", got, want, served)
		}
	})
}

func TestNew(t *testing.T) {
	svc := lifecycle.NewService(lifecycle.Config{Provider: fake.New(fake.Config{}), Clock: lifecycle.SystemClock{}, Policy: lifecycle.DefaultPolicy()})
	for _, fn := range apiFunctions {
		if _, err := apigw.New(apigw.Config{Function: fn, Service: svc, Keys: failingKeys{}}); err != nil {
			t.Errorf("New(%s): %v", fn, err)
		}
	}
	for _, fn := range []string{routes.Webhook, routes.Sweep, "nope"} {
		if _, err := apigw.New(apigw.Config{Function: fn, Service: svc, Keys: failingKeys{}}); err == nil {
			t.Errorf("New(%s) succeeded, want an error", fn)
		}
	}
}

// failingKeys is a KeyStore whose every lookup fails unexpectedly.
type failingKeys struct{}

func (failingKeys) GetAPIKey(context.Context, string) (lifecycle.APIKey, error) {
	return lifecycle.APIKey{}, errors.New("dynamodb: connection reset by peer (secret detail)")
}

func TestInternalError(t *testing.T) {
	logs := &syncBuffer{}
	svc := lifecycle.NewService(lifecycle.Config{Provider: fake.New(fake.Config{}), Clock: lifecycle.SystemClock{}, Policy: lifecycle.DefaultPolicy()})
	hd, err := apigw.New(apigw.Config{Function: routes.Sessions, Service: svc, Keys: failingKeys{}, Log: apigwLogger(logs)})
	if err != nil {
		t.Fatal(err)
	}
	ev := MustEvent(t, "sessions-list.json")
	resp, err := hd.Handle(context.Background(), ev)
	if err != nil {
		t.Fatalf("Handle returned an error: %v", err)
	}
	checkContract(t, ev, resp)
	r := result{status: resp.StatusCode, headers: resp.Headers, body: resp.Body}
	e := wantError(t, r, 500, "internal", ev.RequestContext.RequestID)
	if strings.Contains(e.Error, "secret detail") || strings.Contains(e.Error, "dynamodb") {
		t.Errorf("500 leaks the cause: %q", e.Error)
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the cause is not in the log:\n%s", logs.String())
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)
	ev := MustEvent(t, "status.json", withID(s.ID))
	wantStatus(t, h.invoke(t, ev), 200)
	wantError(t, h.invoke(t, MustEvent(t, "status.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")

	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(h.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if m["msg"] == "request" && m["route"] == "GET /v1/sessions/{id}/status" {
			lines = append(lines, m)
		}
	}
	if got, want := len(lines), 2; got != want {
		t.Fatalf("access lines for status = %d, want %d", got, want)
	}
	ok, denied := lines[0], lines[1]
	if got, want := ok["request_id"], ev.RequestContext.RequestID; got != want {
		t.Errorf("request_id = %v, want %v", got, want)
	}
	if got, want := ok["status"], float64(200); got != want {
		t.Errorf("status = %v, want %v", got, want)
	}
	if got, want := ok["account_id"], apigw.DevAccountID; got != want {
		t.Errorf("account_id = %v, want %v", got, want)
	}
	if _, has := ok["duration_ms"]; !has {
		t.Error("no duration_ms")
	}
	if got, want := denied["error_type"], "forbidden"; got != want {
		t.Errorf("error_type = %v, want %v", got, want)
	}
	if got, want := denied["account_id"], otherAccount; got != want {
		t.Errorf("account_id = %v, want %v", got, want)
	}
}

func TestStatusFor(t *testing.T) {
	for code, want := range map[lifecycle.Code]int{
		lifecycle.CodeInvalid: 400, lifecycle.CodeUnauthorized: 401, lifecycle.CodeForbidden: 403,
		lifecycle.CodeNotFound: 404, lifecycle.CodeConflict: 409, lifecycle.CodeTooLarge: 413,
		lifecycle.CodeUnavailable: 503, lifecycle.CodeInternal: 500, "made_up": 500,
	} {
		if got := httpapi.StatusFor(code); got != want {
			t.Errorf("StatusFor(%s) = %d, want %d", code, got, want)
		}
	}
}

func TestNewAPIKey(t *testing.T) {
	secret, hash := apigw.NewAPIKey()
	if !regexp.MustCompile(`^sk_[a-z2-7]{32}$`).MatchString(secret) {
		t.Errorf("secret %q is not sk_ + 32 base32 characters", secret)
	}
	if got, want := hash, apigw.HashAPIKey(secret); got != want {
		t.Errorf("hash = %q, want HashAPIKey(secret) %q", got, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(hash) {
		t.Errorf("hash %q is not lowercase hex SHA-256", hash)
	}
	if other, _ := apigw.NewAPIKey(); other == secret {
		t.Error("two keys are equal")
	}
	// echo -n sk_testkeytestkeytestkeytestkey2345 | sha256sum
	if got, want := apigw.HashAPIKey(apigw.DevAPIKey), "7ac4ef8d2345c299da844a95447fb8e5966705ec90f14e5bda382cb6809e2b64"; got != want {
		t.Errorf("HashAPIKey(DevAPIKey) = %q, want %q", got, want)
	}
}
