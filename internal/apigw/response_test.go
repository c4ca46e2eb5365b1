package apigw_test

import (
	"encoding/json"
	"testing"
	"time"
)

// TestHibernateAfterIsPauseDeadline: every answer that carries
// pause_deadline (a session, a list of them, the lifecycle envelope of
// status and reconnect, resume's and pause's sessions) also carries
// hibernate_after, its deprecated former name, with the same value: a
// timestamp while running, null once paused.
func TestHibernateAfterIsPauseDeadline(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)
	h.clock.Advance(time.Minute)

	answers := func(t *testing.T) map[string]result {
		t.Helper()
		out := map[string]result{"sessions-list.json": h.invoke(t, MustEvent(t, "sessions-list.json"))}
		for _, name := range []string{"sessions-get.json", "status.json", "reconnect.json"} {
			out[name] = h.invoke(t, MustEvent(t, name, withID(s.ID)))
		}
		for name, r := range out {
			if r.status != 200 {
				t.Fatalf("%s: status %d, want 200; body %s", name, r.status, r.body)
			}
		}
		return out
	}
	check := func(t *testing.T, answers map[string]result, wantNull bool) {
		t.Helper()
		for name, r := range answers {
			var body any
			if err := json.Unmarshal([]byte(r.body), &body); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			n := 0
			walkObjects(body, func(o map[string]any) {
				deadline, ok := o["pause_deadline"]
				if !ok {
					return
				}
				n++
				if old, ok := o["hibernate_after"]; !ok || old != deadline {
					t.Errorf("%s: hibernate_after = %v, want pause_deadline's %v", name, old, deadline)
				}
				if got := deadline == nil; got != wantNull {
					t.Errorf("%s: pause_deadline = %v, want null: %v", name, deadline, wantNull)
				}
			})
			if n == 0 {
				t.Errorf("%s: no pause_deadline in %s", name, r.body)
			}
		}
	}

	t.Run("Running", func(t *testing.T) {
		check(t, answers(t), false)
	})
	t.Run("Paused", func(t *testing.T) {
		paused := h.invoke(t, MustEvent(t, "pause.json", withID(s.ID)))
		wantStatus(t, paused, 200)
		got := answers(t)
		got["pause.json"] = paused
		check(t, got, true)
	})
	t.Run("Resumed", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "resume.json", withID(s.ID)))
		wantStatus(t, r, 200)
		check(t, map[string]result{"resume.json": r}, false)
	})
}

// walkObjects calls f with every JSON object in v, v itself included.
func walkObjects(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, e := range v {
			walkObjects(e, f)
		}
	case []any:
		for _, e := range v {
			walkObjects(e, f)
		}
	}
}
