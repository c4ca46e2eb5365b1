package apigw_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// seedSessions writes n sessions of the dev account straight into the
// store, newest last, every one but each (live)th killed; the live ones
// alternate running and paused. Providers, templates and metadata rotate.
func (h *harness) seedSessions(tb testing.TB, n, live int) []*lifecycle.Session {
	tb.Helper()
	var out []*lifecycle.Session
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Second)
		s := &lifecycle.Session{ID: lifecycle.NewSessionID(), AccountID: apigw.DevAccountID,
			Provider: []string{"fake", "e2b"}[i%2], Template: []string{"web", "base"}[i%3%2],
			Metadata: map[string]string{"user": fmt.Sprintf("u%d", i%5)}, State: lifecycle.StateKilled, Reason: lifecycle.ReasonRequest,
			IdleTimeout: 10 * time.Minute, CreatedAt: at, UpdatedAt: at, StateChangedAt: at}
		if i%(n/live) == n/live-1 {
			s.State, s.SandboxID = lifecycle.StateRunning, "sbx-"+s.ID
			if i%2 == 0 {
				s.State, s.PausedAt = lifecycle.StatePaused, at
			} else {
				s.RunningSince, s.LastActivityAt, s.IdleDeadline = at, at, at.Add(time.Hour)
			}
		}
		if err := h.store.CreateSession(tb.Context(), s); err != nil {
			tb.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// listAll follows GET /v1/sessions?<query> page by page and returns the ids
// in order (every answer checked against the OpenAPI document).
func (h *harness) listAll(tb testing.TB, query url.Values) (ids []string, pages int) {
	tb.Helper()
	cursor := ""
	for ; ; pages++ {
		if pages > 60 {
			tb.Fatalf("%s: pages do not end", query.Encode())
		}
		ev := MustEvent(tb, "sessions-list.json", withQuery("limit", "100"))
		for k, vs := range query {
			withQuery(k, strings.Join(vs, ","))(&ev)
		}
		if cursor != "" {
			withQuery("cursor", cursor)(&ev)
		}
		l := mustDecode[api.SessionList](tb, h.invoke(tb, ev))
		for _, s := range l.Sessions {
			ids = append(ids, s.ID)
		}
		if l.NextCursor == nil {
			return ids, pages + 1
		}
		cursor = *l.NextCursor
	}
}

// TestListFilters: of 500 sessions, 480 killed, a list of the live states
// answers the 20 live ones on its first page and nothing more; every
// filter (state, provider, template, metadata, together) pages through
// exactly the sessions that pass it, newest first, and oldest first with
// order=asc; without a filter every session is reached, in either order.
// On memstore and DynamoDB Local.
func TestListFilters(t *testing.T) {
	forEachStore(t, func(t *testing.T, newHarness harnessMaker) {
		h := newHarness(t)
		all := h.seedSessions(t, 500, 20)
		want := func(keep func(*lifecycle.Session) bool) []string {
			var ids []string
			for i := len(all) - 1; i >= 0; i-- {
				if keep(all[i]) {
					ids = append(ids, all[i].ID)
				}
			}
			return ids
		}
		live := make([]string, len(lifecycle.LiveStates))
		for i, s := range lifecycle.LiveStates {
			live[i] = string(s)
		}
		first := mustDecode[api.SessionList](t, h.invoke(t, MustEvent(t, "sessions-list.json",
			withQuery("limit", "20"), withQuery("state", strings.Join(live, ",")))))
		var got []string
		for _, s := range first.Sessions {
			got = append(got, s.ID)
		}
		if w := want(func(s *lifecycle.Session) bool { return !s.State.Final() }); len(w) != 20 || !slices.Equal(got, w) || first.NextCursor != nil {
			t.Fatalf("first page of the live states: %d sessions %v, next %v; want the 20 live ones %v and no more", len(got), got, str(first.NextCursor), w)
		}

		for name, c := range map[string]struct {
			query url.Values
			keep  func(*lifecycle.Session) bool
		}{
			"Everything": {url.Values{}, func(*lifecycle.Session) bool { return true }},
			"Killed":     {url.Values{"state": {"killed"}}, func(s *lifecycle.Session) bool { return s.State == lifecycle.StateKilled }},
			"TwoStates": {url.Values{"state": {"running", "paused"}}, func(s *lifecycle.Session) bool {
				return s.State == lifecycle.StateRunning || s.State == lifecycle.StatePaused
			}},
			"Provider": {url.Values{"provider": {"e2b"}}, func(s *lifecycle.Session) bool { return s.Provider == "e2b" }},
			"Template": {url.Values{"template": {"base"}}, func(s *lifecycle.Session) bool { return s.Template == "base" }},
			"Metadata": {url.Values{"metadata[user]": {"u3"}}, func(s *lifecycle.Session) bool { return s.Metadata["user"] == "u3" }},
			"All": {url.Values{"state": {"killed"}, "provider": {"fake"}, "template": {"web"}, "metadata[user]": {"u2"}}, func(s *lifecycle.Session) bool {
				return s.State == lifecycle.StateKilled && s.Provider == "fake" && s.Template == "web" && s.Metadata["user"] == "u2"
			}},
			"EverythingAsc": {url.Values{"order": {"asc"}}, func(*lifecycle.Session) bool { return true }},
			"LiveAsc":       {url.Values{"order": {"asc"}, "state": live}, func(s *lifecycle.Session) bool { return !s.State.Final() }},
			"ProviderAsc":   {url.Values{"order": {"asc"}, "provider": {"e2b"}}, func(s *lifecycle.Session) bool { return s.Provider == "e2b" }},
			"KilledDesc":    {url.Values{"order": {"desc"}, "state": {"killed"}}, func(s *lifecycle.Session) bool { return s.State == lifecycle.StateKilled }},
		} {
			t.Run(name, func(t *testing.T) {
				got, pages := h.listAll(t, c.query)
				w := want(c.keep)
				if c.query.Get("order") == "asc" {
					slices.Reverse(w)
				}
				if !slices.Equal(got, w) {
					t.Errorf("%d sessions in %d pages, want %d in order %q", len(got), pages, len(w), c.query.Get("order"))
				}
			})
		}
	})
}

// TestListFiltersRefused: unknown states, malformed metadata parameters,
// too many pairs, an unknown order, and a cursor of other filters or
// another order are 400 invalid.
func TestListFiltersRefused(t *testing.T) {
	h := MustHarness(t)
	h.seedSessions(t, 10, 5)
	page := mustDecode[api.SessionList](t, h.invoke(t, MustEvent(t, "sessions-list.json", withQuery("limit", "1"), withQuery("state", "killed"))))
	if page.NextCursor == nil {
		t.Fatal("no second page of killed sessions")
	}
	tooMany := func(ev *events.APIGatewayV2HTTPRequest) {
		for i := range lifecycle.MaxFilterMetadata + 1 {
			ev.QueryStringParameters[fmt.Sprintf("metadata[k%d]", i)] = "v"
		}
	}
	for name, patches := range map[string][]func(*events.APIGatewayV2HTTPRequest){
		"UnknownState":   {withQuery("state", "asleep")},
		"EmptyState":     {withQuery("state", "running,")},
		"BareMetadata":   {withQuery("metadata", "user:ada")},
		"EmptyKey":       {withQuery("metadata[]", "x")},
		"TooManyPairs":   {tooMany},
		"OtherFilters":   {withQuery("state", "running"), withQuery("cursor", *page.NextCursor)},
		"FilterOnList":   {withQuery("cursor", *page.NextCursor)},
		"ReservedPrefix": {withQuery("metadata[sandman_session_id]", "x")},
		"UnknownOrder":   {withQuery("order", "newest")},
		"OtherOrder":     {withQuery("state", "killed"), withQuery("order", "asc"), withQuery("cursor", *page.NextCursor)},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, h.invoke(t, MustEvent(t, "sessions-list.json", patches...)), 400, "invalid")
		})
	}
}
