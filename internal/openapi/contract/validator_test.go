package contract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/openapi/contract"
)

// session is a valid session body as the API answers it.
const session = `{"id":"ses_aaaaaaaaaaaaaaaaaaaaaaaaaa","account_id":"acct_dev","provider":"fake","template":"base",` +
	`"state":"running","reason":"request","sandbox_id":"fake_1","preview_url":"https://x.test","metadata":{},` +
	`"idle_timeout_seconds":600,"max_lifetime_seconds":0,"version":1,"created_at":"2026-11-21T12:00:00Z",` +
	`"updated_at":"2026-11-21T12:00:00Z","last_activity_at":"2026-11-21T12:00:00Z","idle_deadline":"2026-11-21T12:10:00Z",` +
	`"pause_deadline":"2026-11-21T12:10:00Z","hibernate_after":"2026-11-21T12:10:00Z","running_since":"2026-11-21T12:00:00Z","paused_at":null,"sandbox_expires_at":null,"app":null,"readiness":null,"readiness_detail":null,"ready_at":null}`

var jsonHeaders = map[string]string{"Content-Type": "application/json; charset=utf-8"}

func getSession(status int, headers map[string]string, body string) contract.Exchange {
	return contract.Exchange{Method: "GET", Path: "/v1/sessions/{id}",
		PathParams: map[string]string{"id": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		Status:     status, Headers: headers, Body: []byte(body)}
}

// without returns session without field.
func without(field string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(session), &m); err != nil {
		panic(err)
	}
	delete(m, field)
	b, _ := json.Marshal(m)
	return string(b)
}

// TestValidate shows the validator passes a conforming answer and fails
// each kind of drift.
func TestValidate(t *testing.T) {
	v, err := contract.NewValidator(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		name string
		x    contract.Exchange
	}{
		{"OK", getSession(200, jsonHeaders, session)},
		{"OKError", getSession(404, jsonHeaders, `{"status":"error","error":"no session","error_type":"not_found"}`)},
		{"OKNoContent", contract.Exchange{Method: "POST", Path: "/v1/sessions/{id}/activity",
			PathParams: map[string]string{"id": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, Status: 204}},
		{"OKUnknownRouteError", contract.Exchange{Method: "GET", Path: "$default", Status: 404, Headers: jsonHeaders,
			Body: []byte(`{"status":"error","error":"no route","error_type":"not_found"}`)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			if err := v.Validate(t.Context(), tc.x); err != nil {
				t.Fatal(err)
			}
		})
	}
	bad := []struct {
		name, want string
		x          contract.Exchange
	}{
		{"ErrMissingField", "preview_url", getSession(200, jsonHeaders, without("preview_url"))},
		{"ErrExtraField", "surprise", getSession(200, jsonHeaders, strings.Replace(session, `"id"`, `"surprise":1,"id"`, 1))},
		{"ErrBadState", "state", getSession(200, jsonHeaders, strings.Replace(session, `"running"`, `"asleep"`, 1))},
		{"ErrUndocumentedStatus", "not documented", getSession(418, jsonHeaders, `{"status":"error","error":"x","error_type":"internal"}`)},
		{"ErrBadErrorType", "error_type", getSession(404, jsonHeaders, `{"status":"error","error":"x","error_type":"nope"}`)},
		{"ErrBodyOn204", "no body", contract.Exchange{Method: "POST", Path: "/v1/sessions/{id}/activity",
			PathParams: map[string]string{"id": "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, Status: 204, Body: []byte(`{}`)}},
		{"ErrMissingLocation", "Location", contract.Exchange{Method: "POST", Path: "/v1/sessions", Status: 201,
			RequestBody: []byte(`{"template":"base"}`), Headers: jsonHeaders, Body: []byte(session)}},
		{"ErrAcceptedBadRequest", "request", contract.Exchange{Method: "POST", Path: "/v1/sessions", Status: 201,
			RequestBody: []byte(`{"idle_timeout_seconds":"ten"}`),
			Headers:     map[string]string{"Content-Type": "application/json", "Location": "/v1/sessions/ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
			Body:        []byte(session)}},
		{"ErrUnknownRouteSuccess", "no operation", contract.Exchange{Method: "GET", Path: "/v1/nope", Status: 200,
			Headers: jsonHeaders, Body: []byte(`{}`)}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Validate(t.Context(), tc.x)
			if err == nil {
				t.Fatal("validated")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	if got, want := v.Count(), len(ok); got != want {
		t.Errorf("Count = %d, want %d (only the answers that validated)", got, want)
	}
}
