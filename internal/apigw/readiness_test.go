package apigw_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

const appBody = `{"template":"base","app":{"port":5173,"start_command":"npm run dev","env":{"NODE_ENV":"development"},"ready_path":"/health","ready_timeout_seconds":90}}`

func TestCreateWithApp(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)

	s := h.mustCreate(t, withBody(appBody))
	if s.App == nil || s.App.Port != 5173 || s.App.StartCommand != "npm run dev" || s.App.ReadyPath != "/health" ||
		s.App.ReadyTimeoutSeconds != 90 || s.App.Env["NODE_ENV"] != "development" {
		t.Errorf("app = %+v, want the spec as given", s.App)
	}
	if str(s.Readiness) != "starting" || s.ReadinessDetail != nil || s.ReadyAt != nil {
		t.Errorf("readiness %q detail %v ready_at %v, want starting with neither", str(s.Readiness), s.ReadinessDetail, s.ReadyAt)
	}
	if want := "https://5173-" + str(s.SandboxID) + ".fake.test"; str(s.PreviewURL) != want {
		t.Errorf("preview_url = %q, want the app port's %q", str(s.PreviewURL), want)
	}
	st := mustDecode[api.Status](t, h.invoke(t, MustEvent(t, "status.json", withID(s.ID))))
	if str(st.Readiness) != "starting" {
		t.Errorf("status readiness = %q, want starting", str(st.Readiness))
	}

	plain := h.mustCreate(t)
	if plain.App != nil || plain.Readiness != nil {
		t.Errorf("a session without an app shows app %+v readiness %v, want null", plain.App, plain.Readiness)
	}
}

func TestCreateRefusesABadApp(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for name, c := range map[string]struct{ body, field string }{
		"NoPort":        {`{"template":"base","app":{"start_command":"npm start"}}`, "app.port"},
		"NoCommand":     {`{"template":"base","app":{"port":3000}}`, "app.start_command"},
		"PortType":      {`{"template":"base","app":{"port":"3000","start_command":"x"}}`, "port"},
		"BadPath":       {`{"template":"base","app":{"port":3000,"start_command":"x","ready_path":"health"}}`, "app.ready_path"},
		"TimeoutBounds": {`{"template":"base","app":{"port":3000,"start_command":"x","ready_timeout_seconds":0}}`, "app.ready_timeout_seconds"},
		"UnknownField":  {`{"template":"base","app":{"port":3000,"start_command":"x","health":"/"}}`, "health"},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, h.invoke(t, MustEvent(t, "sessions-create.json", withBody(c.body))), 400, "invalid", c.field)
		})
	}
}

func TestResumeWaitReady(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t, withBody(appBody))

	t.Run("ErrWaitValue", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "resume.json", withID(s.ID), withQuery("wait", "forever"))), 400, "invalid", "wait")
	})
	t.Run("AnswersOnceReady", func(t *testing.T) {
		sess := h.mustSession(t, s.ID)
		sess.Readiness, sess.ReadyAt = lifecycle.ReadinessReady, h.clock.Now()
		if err := h.store.UpdateSession(t.Context(), sess, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatal(err)
		}
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID), withQuery("wait", "ready")))
		wantStatus(t, r, 200)
		got := mustDecode[api.ResumeResult](t, r)
		if str(got.Session.Readiness) != "ready" || str(got.Session.ReadyAt) != ts(h.clock.Now()) {
			t.Errorf("readiness %q ready_at %q, want ready at %s", str(got.Session.Readiness), str(got.Session.ReadyAt), ts(h.clock.Now()))
		}
	})
}
