package providerhook_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// TestWebhookMovesRunningSlots: with a running limit (the
// SANDMAN_MAX_RUNNING the stack gives the webhook function too), a
// provider's pause, resume and kill delivered as webhooks release and take
// the account's running slot in the same write as the transition, on
// memstore and on DynamoDB Local: the counter follows the session instead
// of drifting.
func TestWebhookMovesRunningSlots(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testWebhookMovesRunningSlots(t, MustHarness(t)) })
	t.Run("dynamodb", func(t *testing.T) { testWebhookMovesRunningSlots(t, MustDynamoHarness(t)) })
}

func testWebhookMovesRunningSlots(t *testing.T, h *harness) {
	cfg := h.service.Config()
	cfg.MaxRunning = 5
	h.service = lifecycle.NewService(cfg)
	h.handler = MustHandler(t, h.service, h.provider.Name())
	h.MustSession(t)
	h.clock.Set(fixtureStart.Add(time.Hour))
	slots := func() int {
		t.Helper()
		n, err := h.store.RunningSlots(t.Context(), "acct_1")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := slots(); got != 1 {
		t.Fatalf("running slots after create = %d, want 1", got)
	}
	for _, s := range []struct {
		file  string
		state lifecycle.State
		slots int
	}{
		{"apigw-e2b-paused.json", lifecycle.StatePaused, 0},
		{"apigw-e2b-resumed.json", lifecycle.StateRunning, 1},
		{"apigw-e2b-killed.json", lifecycle.StateExpired, 0},
	} {
		wantOK(t, h.MustDeliver(t, MustFixtureRequest(t, s.file)), lifecycle.WebhookApplied)
		if got := h.MustGet(t).State; got != s.state {
			t.Fatalf("after %s: state %s, want %s", s.file, got, s.state)
		}
		if got := slots(); got != s.slots {
			t.Errorf("after %s: running slots = %d, want %d", s.file, got, s.slots)
		}
	}
}
