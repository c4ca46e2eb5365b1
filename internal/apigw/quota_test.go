package apigw_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// withMaxRunning rebuilds h's handlers on a service with max_running n.
func (h *harness) withMaxRunning(tb testing.TB, n int) {
	tb.Helper()
	cfg := h.svc.Config()
	cfg.MaxRunning = n
	h.svc = lifecycle.NewService(cfg)
	for _, fn := range apiFunctions {
		hd, err := apigw.New(apigw.Config{Function: fn, Service: h.svc, Keys: h.store, Log: apigwLogger(h.logs)})
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
}

// TestQuotaAnswers429: past max_running a create and a resume answer 429
// quota_exceeded naming the limit (validated against the OpenAPI document
// like every answer of the harness), without asking the provider; a pause
// frees the slot.
func TestQuotaAnswers429(t *testing.T) {
	h := MustHarness(t)
	h.withMaxRunning(t, 1)
	first := h.mustCreate(t)
	calls := h.providerCalls()
	r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", "")))
	wantError(t, r, 429, "quota_exceeded", "1 running sandbox,", "max_running")
	if got := h.providerCalls(); got != calls {
		t.Errorf("a refused create made %d provider calls", got-calls)
	}
	wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(first.ID))), 200)
	second := h.mustCreate(t)
	if second.State != "running" {
		t.Fatalf("create after a pause: state %s", second.State)
	}
	r = h.invoke(t, MustEvent(t, "resume.json", withID(first.ID)))
	wantError(t, r, 429, "quota_exceeded", "max_running")
	if got := h.mustSession(t, first.ID).State; got != lifecycle.StatePaused {
		t.Errorf("refused resume left the session %s, want paused", got)
	}
}
