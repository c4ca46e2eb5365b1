package providerhook_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// FuzzHandler drives arbitrary deliveries through the whole handler, the
// apply step replaced by a stub, so no DynamoDB is needed. With sign set the
// body is signed correctly (over the raw bytes), which lets the fuzzer
// reach the parser; otherwise sig is sent as is. The seed corpus is in
// testdata/fuzz/FuzzHandler (written by TestFixtures -update).
//
// Invariants: Handle never fails or panics; it answers one of 200, 400,
// 401, 404, 413 with a JSON body (the error envelope on errors); and an
// event reaches the rules only when the provider is e2b, the version v1 and
// the signature verifies over the decoded bytes, and then it carries the
// configured provider name, an id, a sandbox id and a known type; a 200
// "ignored" (a well-formed event of a type Sandman does not use) needs the
// same valid signature and applies nothing.
func FuzzHandler(f *testing.F) {
	f.Add("e2b", "v1", "", []byte(`{}`), false, true)
	f.Fuzz(func(t *testing.T, provider, version, sig string, body []byte, b64, sign bool) {
		a := &stubApplier{outcome: lifecycle.WebhookApplied}
		h := MustStubHandler(t, a, func(c *providerhook.Config) { c.MaxBodyBytes = 4096 })
		if sign {
			sig = e2bhook.Sign(TestSecret, body)
		}
		headers := map[string]string{
			e2bhook.HeaderSignatureVersion: version,
			e2bhook.HeaderSignature:        sig,
		}
		if !b64 && !utf8.Valid(body) {
			b64 = true // API Gateway base64-encodes what is not text
		}
		req := NewRequest(provider, headers, body, b64)
		resp, err := h.Handle(t.Context(), req)
		if err != nil {
			t.Fatalf("Handle returned an error: %v", err)
		}
		checkContract(t, req, resp)

		var out map[string]string
		if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
			t.Fatalf("body %q is not a JSON object of strings: %v", resp.Body, err)
		}
		wantType := map[int]string{
			http.StatusBadRequest: "invalid", http.StatusUnauthorized: "unauthorized",
			http.StatusNotFound: "not_found", http.StatusRequestEntityTooLarge: "too_large",
		}
		ignored := resp.StatusCode == http.StatusOK && out["outcome"] == "ignored"
		if ignored && (provider != providerhook.E2BName || !e2bhook.Verify(TestSecret, body, sig)) {
			t.Fatalf("an event was acknowledged as ignored without a valid signature")
		}
		switch {
		case ignored:
		case resp.StatusCode == http.StatusOK:
			if got, want := out["outcome"], string(lifecycle.WebhookApplied); got != want {
				t.Errorf("outcome = %q, want %q", got, want)
			}
		case resp.StatusCode == http.StatusBadRequest, resp.StatusCode == http.StatusUnauthorized,
			resp.StatusCode == http.StatusNotFound, resp.StatusCode == http.StatusRequestEntityTooLarge:
			if got, want := out["error_type"], wantType[resp.StatusCode]; got != want || out["status"] != "error" {
				t.Errorf("status %d body = %v, want the envelope with error_type %q", resp.StatusCode, out, want)
			}
		default:
			t.Fatalf("status = %d (%s), want 200, 400, 401, 404 or 413", resp.StatusCode, resp.Body)
		}

		evs := a.Events()
		if got, want := len(evs) == 1, resp.StatusCode == http.StatusOK && !ignored; got != want {
			t.Fatalf("applied %d events with status %d", len(evs), resp.StatusCode)
		}
		if len(evs) == 0 {
			return
		}
		if provider != providerhook.E2BName || version != e2bhook.SignatureVersion || !e2bhook.Verify(TestSecret, body, sig) {
			t.Fatalf("an event reached the rules without a valid signature: provider %q version %q sig %q", provider, version, sig)
		}
		ev := evs[0]
		if ev.Provider != "e2b" || ev.ID == "" || ev.SandboxID == "" || ev.Timestamp.Location() != time.UTC {
			t.Errorf("event = %+v: want provider e2b, an id, a sandbox id and a UTC time", ev)
		}
		switch ev.Type {
		case lifecycle.ProviderEventCreated, lifecycle.ProviderEventPaused, lifecycle.ProviderEventResumed,
			lifecycle.ProviderEventUpdated, lifecycle.ProviderEventKilled:
		default:
			t.Errorf("event type %q is not a provider event type", ev.Type)
		}
	})
}
