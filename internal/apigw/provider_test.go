package apigw_test

import (
	"testing"
)

// TestCreateProvider: "provider" on POST /v1/sessions picks a configured
// provider; an unknown one is a 400 naming the configured ones, before
// anything is written or any provider is called.
func TestCreateProvider(t *testing.T) {
	h := MustHarness(t)
	t.Run("OK", func(t *testing.T) {
		s := h.mustCreate(t, withBody(`{"template":"base","provider":"fake"}`))
		if got, want := s.Provider, "fake"; got != want {
			t.Errorf("provider = %q, want %q", got, want)
		}
		if got := h.mustSession(t, s.ID).Provider; got != "fake" {
			t.Errorf("stored provider = %q, want fake", got)
		}
	})
	t.Run("ErrUnknown", func(t *testing.T) {
		before := h.providerCalls()
		r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""),
			withBody(`{"template":"base","provider":"vercel"}`)))
		wantError(t, r, 400, "invalid", `provider "vercel" is not configured`, "configured: fake")
		if got := h.providerCalls() - before; got != 0 {
			t.Errorf("a refused create made %d provider calls", got)
		}
	})
	t.Run("ErrNotAString", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""),
			withBody(`{"template":"base","provider":7}`)))
		wantError(t, r, 400, "invalid", "provider")
	})
}
