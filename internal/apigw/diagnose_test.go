package apigw_test

import (
	"context"
	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

type diagnoseOut struct {
	Session        api.Session `json:"session"`
	LeaseExpiresAt *string     `json:"lease_expires_at"`
	LeaseExpired   bool        `json:"lease_expired"`
	Provider       struct {
		Checked bool    `json:"checked"`
		State   *string `json:"state"`
		Error   *string `json:"error"`
	} `json:"provider"`
	Preview struct {
		Checked  bool    `json:"checked"`
		Answered bool    `json:"answered"`
		Status   *int    `json:"status"`
		Error    *string `json:"error"`
	} `json:"preview"`
	Agree   bool       `json:"agree"`
	Verdict string     `json:"verdict"`
	Events  []eventOut `json:"events"`
}

type eventOut struct {
	EventID string `json:"event_id"`
	Time    string `json:"time"`
	From    string `json:"from"`
	To      string `json:"to"`
	Reason  string `json:"reason"`
	Version int64  `json:"version"`
}

// TestDiagnoseRoute: GET /v1/sessions/{id}/diagnose answers the diagnosis
// (validated against the OpenAPI document), is read-only, and refuses
// another account's session.
func TestDiagnoseRoute(t *testing.T) {
	h := MustHarness(t, func(o *apigw.Config) {
		o.PreviewProber = func(context.Context, string) (int, error) { return 200, nil }
	})
	s := h.mustCreate(t)
	r := h.invoke(t, MustEvent(t, "diagnose.json", withID(s.ID)))
	wantStatus(t, r, 200)
	d := mustDecode[diagnoseOut](t, r)
	if !d.Agree || d.Verdict != lifecycle.VerdictAgreeRunning || !d.Preview.Answered || str(d.Provider.State) != "running" {
		t.Errorf("diagnosis of a healthy session: %+v", d)
	}
	sb := h.mustSession(t, s.ID)
	h.prov.SetState(sb.SandboxID, lifecycle.SandboxPaused)
	d = mustDecode[diagnoseOut](t, h.invoke(t, MustEvent(t, "diagnose.json", withID(s.ID))))
	if d.Agree || d.Verdict != lifecycle.VerdictRunningPaused || str(d.Provider.State) != "paused" || d.Preview.Checked {
		t.Errorf("diagnosis of a self-paused sandbox: %+v", d)
	}
	if got := h.mustSession(t, s.ID); got.Version != sb.Version || got.State != lifecycle.StateRunning {
		t.Errorf("diagnose wrote the session: %s v%d", got.State, got.Version)
	}
	wantError(t, h.invoke(t, MustEvent(t, "diagnose.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
}
