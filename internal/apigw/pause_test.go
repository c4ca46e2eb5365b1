package apigw_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/routes"
)

// TestPauseAndItsAlias: POST …/pause and its alias POST …/snapshot
// (routes.Aliases) are one route under two names: the same function, and
// the same answers, 200 {"paused":true} with one provider pause however
// often it is asked, and the same refusals.
func TestPauseAndItsAlias(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	fixtures := map[string]string{"pause": "pause.json", "snapshot": "snapshot.json"}

	pause := MustEvent(t, "pause.json")
	alias := MustEvent(t, "snapshot.json")
	if got, want := routes.Aliases[alias.RouteKey], pause.RouteKey; got != want {
		t.Fatalf("routes.Aliases[%q] = %q, want %q", alias.RouteKey, got, want)
	}
	if got, want := h.byRouteKey[alias.RouteKey], h.byRouteKey[pause.RouteKey]; got != want || got == "" {
		t.Fatalf("%s is served by %q, %s by %q: want one function", alias.RouteKey, got, pause.RouteKey, want)
	}

	for name, fixture := range fixtures {
		t.Run(name, func(t *testing.T) {
			s := h.mustCreate(t)
			before := h.prov.Calls(fake.OpPause)
			for i := range 2 {
				r := h.invoke(t, MustEvent(t, fixture, withID(s.ID)))
				wantStatus(t, r, 200)
				out := mustDecode[api.PauseResult](t, r)
				if !out.Paused || out.Session.State != "paused" || out.Session.ID != s.ID {
					t.Errorf("%s %d = paused %v, session %s %q; want true, %s paused", name, i+1, out.Paused, out.Session.ID, out.Session.State, s.ID)
				}
			}
			if got, want := h.prov.Calls(fake.OpPause)-before, 1; got != want {
				t.Errorf("provider pauses = %d, want %d", got, want)
			}
			h.wantEvents(t, s.ID, lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StatePausing, lifecycle.StatePaused)

			wantError(t, h.invoke(t, MustEvent(t, fixture, withID(s.ID), withKey(h.otherKey))), 403, "forbidden")
			wantError(t, h.invoke(t, MustEvent(t, fixture, withID(lifecycle.NewSessionID()))), 404, "not_found")
			killed := h.mustCreate(t)
			wantStatus(t, h.invoke(t, MustEvent(t, "sessions-delete.json", withID(killed.ID))), 200)
			wantError(t, h.invoke(t, MustEvent(t, fixture, withID(killed.ID))), 409, "conflict", "killed", "no sandbox to pause")
		})
	}
}
