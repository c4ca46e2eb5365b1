package apigw_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

func TestHeartbeatBusyHold(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("Recorded", func(t *testing.T) {
		now := h.clock.Advance(time.Minute)
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBody(`{"hold_seconds":7200}`)))
		wantStatus(t, r, 204)
		got := h.mustSession(t, s.ID)
		if want := now.Add(2 * time.Hour); !got.HoldUntil.Equal(want) || !got.PauseDeadline().Equal(want) {
			t.Errorf("hold_until %v, pause deadline %v; want both %v (stored and read back)", got.HoldUntil, got.PauseDeadline(), want)
		}
		st := mustDecode[api.Session](t, h.invoke(t, MustEvent(t, "sessions-get.json", withID(s.ID))))
		if st.PauseDeadline == nil || *st.PauseDeadline != ts(now.Add(2*time.Hour)) {
			t.Errorf("pause_deadline = %v, want %s", st.PauseDeadline, ts(now.Add(2*time.Hour)))
		}
	})
	for name, body := range map[string]string{
		"ErrTooShort": `{"hold_seconds":59}`,
		"ErrTooLong":  `{"hold_seconds":86401}`,
		"ErrType":     `{"hold_seconds":"1h"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBody(body)))
			wantError(t, r, 400, "invalid", "hold_seconds")
		})
	}
}

// TestClientTokenCannotHold: a busy hold is API-key only (docs/DESIGN.md
// "Busy hold"): hold_seconds with a client token is refused with 403 and
// records nothing, while the same token's plain heartbeat still counts.
func TestClientTokenCannotHold(t *testing.T) {
	h, _ := MustTokenHarness(t)
	s := h.mustCreate(t)
	token := h.mustClientToken(t, s.ID).Token
	h.clock.Advance(time.Minute)
	before := h.mustSession(t, s.ID)
	for _, body := range []string{`{"hold_seconds":86400}`, `{"hold_seconds":60}`, `{"hold_seconds":1}`} {
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBearer(token), withBody(body)))
		wantError(t, r, 403, "forbidden", "hold_seconds", "API key")
	}
	got := h.mustSession(t, s.ID)
	if !got.HoldUntil.IsZero() || !got.PauseDeadline().Equal(before.PauseDeadline()) {
		t.Errorf("hold_until %v, pause deadline %v after refused holds; want none and %v", got.HoldUntil, got.PauseDeadline(), before.PauseDeadline())
	}
	wantStatus(t, h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBearer(token), withBody(`{}`))), 204)
	wantStatus(t, h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBody(`{"hold_seconds":60}`))), 204)
}
