package apigw_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// recordAll hands a session's committed events to the store's recorder as
// the stream publisher does: in order, each with Since, when the session
// entered its from state (the previous transition's time; the in-path
// recorder has no old image to read it from).
func (h *harness) recordAll(tb testing.TB, id string) []lifecycle.Event {
	tb.Helper()
	evs := h.events.forSession(id)
	for i := range evs {
		if i > 0 {
			evs[i].Since = evs[i-1].Time
		}
		if err := h.store.RecordTransition(tb.Context(), evs[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return evs
}

// TestSessionEventsTimeline: GET /v1/sessions/{id}/events pages through
// every transition newest first, each with its reason, who caused it and
// how long the session was in the state it left; reading it is not
// activity; a client token, another account, a foreign cursor and an
// unknown session are refused (every answer checked against the OpenAPI
// document).
func TestSessionEventsTimeline(t *testing.T) {
	h, _ := MustTokenHarness(t)
	s := h.mustCreate(t)              // provisioning, running: the API key's
	h.clock.Advance(90 * time.Second) // 90 s running
	wantStatus(t, h.invoke(t, MustEvent(t, "pause.json", withID(s.ID))), http.StatusOK)
	h.clock.Advance(5 * time.Minute) // 5 min paused
	tok := h.mustClientToken(t, s.ID)
	wantStatus(t, h.invoke(t, MustEvent(t, "resume.json", withID(s.ID), withBearer(tok.Token))), http.StatusOK)
	evs := h.recordAll(t, s.ID)
	h.withUsage(t, nil) // the service on the store itself, which keeps the events
	if len(evs) != 6 {
		t.Fatalf("%d transitions, want 6 (create, running, pausing, paused, resuming, running)", len(evs))
	}
	before := h.mustSession(t, s.ID)

	var got []api.SessionEvent
	cursor := ""
	for page := 0; ; page++ {
		ev := MustEvent(t, "sessions-events.json", withID(s.ID), withQuery("limit", "4"))
		if cursor != "" {
			withQuery("cursor", cursor)(&ev)
		}
		l := mustDecode[api.SessionEventList](t, h.invoke(t, ev))
		got = append(got, l.Events...)
		if l.NextCursor == nil {
			break
		}
		if cursor = *l.NextCursor; page > 3 {
			t.Fatal("pages do not end")
		}
	}
	if len(got) != len(evs) {
		t.Fatalf("%d events over the pages, want %d", len(got), len(evs))
	}
	want := []struct {
		from, to, reason, actor string
		duration                *int64
	}{
		{"resuming", "running", "request", "client", ms(0)},
		{"paused", "resuming", "request", "client", ms(5 * time.Minute)},
		{"pausing", "paused", "request", "api", ms(0)},
		{"running", "pausing", "request", "api", ms(90 * time.Second)},
		{"provisioning", "running", "request", "api", ms(0)},
		{"", "provisioning", "request", "api", nil},
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.from || g.To != w.to || g.Reason != w.reason || str(g.Actor) != w.actor {
			t.Errorf("event %d = %s→%s %s by %s, want %s→%s %s by %s", i, g.From, g.To, g.Reason, str(g.Actor), w.from, w.to, w.reason, w.actor)
		}
		if (g.DurationMS == nil) != (w.duration == nil) || g.DurationMS != nil && *g.DurationMS != *w.duration {
			t.Errorf("event %d %s→%s duration_ms %v, want %v", i, g.From, g.To, deref(g.DurationMS), deref(w.duration))
		}
		if g.EventID != evs[len(evs)-1-i].EventID || g.Readiness != nil {
			t.Errorf("event %d = %+v, want %s newest first, no readiness", i, g, evs[len(evs)-1-i].EventID)
		}
	}
	if after := h.mustSession(t, s.ID); after.Version != before.Version || !after.LastActivityAt.Equal(before.LastActivityAt) {
		t.Errorf("reading the timeline wrote the session: version %d → %d, activity %v → %v",
			before.Version, after.Version, before.LastActivityAt, after.LastActivityAt)
	}

	t.Run("Refused", func(t *testing.T) {
		wantError(t, h.invoke(t, MustEvent(t, "sessions-events.json", withID(s.ID), withBearer(tok.Token))), 403, "forbidden")
		wantError(t, h.invoke(t, MustEvent(t, "sessions-events.json", withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
		other := h.mustCreate(t)
		wantError(t, h.invoke(t, MustEvent(t, "sessions-events.json", withID(s.ID),
			withQuery("cursor", lifecycle.EventCursor(other.ID, 3)))), 400, "invalid", "cursor")
		wantError(t, h.invoke(t, MustEvent(t, "sessions-events.json", withID(s.ID), withQuery("limit", "101"))), 400, "invalid")
		wantError(t, h.invoke(t, MustEvent(t, "sessions-events.json", withID("ses_bbbbbbbbbbbbbbbbbbbbbbbbbb"))), 404, "not_found")
	})
}

func ms(d time.Duration) *int64 { v := d.Milliseconds(); return &v }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
