package apigw_test

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

func TestCreateSession(t *testing.T) { forEachStore(t, testCreateSession) }

func testCreateSession(t *testing.T, newHarness harnessMaker) {
	t.Parallel()
	h := newHarness(t)

	var first api.Session
	t.Run("Created", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create.json"))
		wantStatus(t, r, 201)
		first = mustDecode[api.Session](t, r)
		if got, want := r.headers["Location"], "/v1/sessions/"+first.ID; got != want {
			t.Errorf("Location = %q, want %q", got, want)
		}
		if got, want := r.headers["Content-Type"], "application/json; charset=utf-8"; got != want {
			t.Errorf("Content-Type = %q, want %q", got, want)
		}
		if got, want := first.State, "running"; got != want {
			t.Errorf("state = %q, want %q", got, want)
		}
		if got, want := first.AccountID, apigw.DevAccountID; got != want {
			t.Errorf("account_id = %q, want %q", got, want)
		}
		if first.SandboxID == nil {
			t.Fatal("sandbox_id is null")
		}
		if got, want := str(first.PreviewURL), fake.PreviewURL(*first.SandboxID); got != want {
			t.Errorf("preview_url = %q, want %q", got, want)
		}
		if got, want := first.Metadata["project"], "demo"; got != want {
			t.Errorf("metadata.project = %q, want %q", got, want)
		}
		if got, want := first.IdleTimeoutSeconds, int64(600); got != want {
			t.Errorf("idle_timeout_seconds = %d, want %d", got, want)
		}
		if got, want := str(first.CreatedAt), ts(t0); got != want {
			t.Errorf("created_at = %q, want %q", got, want)
		}
		if got, want := str(first.LastActivityAt), ts(t0); got != want {
			t.Errorf("last_activity_at = %q, want %q", got, want)
		}
		// The idle timeout plus the 30 s heartbeat coalescing window.
		if got, want := str(first.IdleDeadline), ts(t0.Add(10*time.Minute+30*time.Second)); got != want {
			t.Errorf("idle_deadline = %q, want %q", got, want)
		}
		if got, want := str(first.PauseDeadline), ts(t0.Add(10*time.Minute+30*time.Second)); got != want {
			t.Errorf("pause_deadline = %q, want %q", got, want)
		}
		if first.PausedAt != nil {
			t.Errorf("paused_at = %q, want null", *first.PausedAt)
		}
		h.wantEvents(t, first.ID, lifecycle.StateProvisioning, lifecycle.StateRunning)
	})

	t.Run("IdempotentReplay", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create.json"))
		wantStatus(t, r, 200)
		if got, want := r.headers["Idempotent-Replayed"], "true"; got != want {
			t.Errorf("Idempotent-Replayed = %q, want %q", got, want)
		}
		if got, want := mustDecode[api.Session](t, r).ID, first.ID; got != want {
			t.Errorf("replayed id = %q, want %q", got, want)
		}
		if got, want := h.prov.Calls(fake.OpCreate), 1; got != want {
			t.Errorf("provider creates = %d, want %d", got, want)
		}
	})

	t.Run("ConcurrentSameKey", func(t *testing.T) {
		before := h.prov.Calls(fake.OpCreate)
		ev := MustEvent(t, "sessions-create.json", withHeader("idempotency-key", "concurrent-0001"))
		results := make([]result, 2)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() { results[i] = h.invoke(t, ev) })
		}
		wg.Wait()
		created := 0
		for _, r := range results {
			switch r.status {
			case 201:
				created++
			case 200, 409: // a replay, or "still in progress" while the first is under way
			default:
				t.Errorf("status = %d, want 201, 200 or 409; body %s", r.status, r.body)
			}
		}
		if got, want := created, 1; got != want {
			t.Errorf("201 answers = %d, want %d", got, want)
		}
		if got, want := h.prov.Calls(fake.OpCreate)-before, 1; got != want {
			t.Errorf("provider creates = %d, want %d", got, want)
		}
	})

	t.Run("Base64Body", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create-base64.json"))
		wantStatus(t, r, 201)
		s := mustDecode[api.Session](t, r)
		if got, want := s.Template, "base"; got != want {
			t.Errorf("template = %q, want %q", got, want)
		}
		if got, want := s.IdleTimeoutSeconds, int64(600); got != want {
			t.Errorf("idle_timeout_seconds = %d, want the default %d", got, want)
		}
		if s.Metadata == nil {
			t.Error("metadata is null, want {}")
		}
	})

	for _, tc := range []struct {
		name, body string
		status     int
		errType    string
		contains   []string
	}{
		{"BadJSON", `{"template":`, 400, "invalid", []string{"not valid JSON"}},
		{"NotAnObject", `["base"]`, 400, "invalid", []string{"JSON object"}},
		{"EmptyBody", ``, 400, "invalid", []string{"JSON object"}},
		{"TrailingData", `{"template":"base"} {}`, 400, "invalid", []string{"exactly one JSON object"}},
		{"UnknownField", `{"template":"base","idle_timeout":60}`, 400, "invalid", []string{`"idle_timeout"`}},
		{"FieldCaseMismatch", `{"Template":"base"}`, 400, "invalid", []string{`"Template"`}},
		{"WrongType", `{"template":"base","idle_timeout_seconds":"600"}`, 400, "invalid", []string{"idle_timeout_seconds must be a whole number"}},
		{"FractionalNumber", `{"template":"base","max_lifetime_seconds":1.5}`, 400, "invalid", []string{"max_lifetime_seconds"}},
		{"MetadataValueType", `{"template":"base","metadata":{"a":1}}`, 400, "invalid", []string{"metadata must be an object of string values"}},
		{"TemplateMissing", `{}`, 400, "invalid", []string{"template"}},
		{"IdleTimeoutTooShort", `{"template":"base","idle_timeout_seconds":30}`, 400, "invalid", []string{"idle_timeout_seconds"}},
		{"IdleTimeoutTooLong", `{"template":"base","idle_timeout_seconds":86401}`, 400, "invalid", []string{"idle_timeout_seconds"}},
		{"UnknownOnLost", `{"template":"base","on_lost":"pray"}`, 400, "invalid", []string{"on_lost must be restore, recreate or expire"}},
		{"ReservedMetadata", `{"template":"base","metadata":{"sandman_session_id":"x"}}`, 400, "invalid", []string{"reserved"}},
		{"TooLarge", `{"template":"` + strings.Repeat("x", apigw.MaxBodyBytes) + `"}`, 413, "too_large", []string{"65536 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.prov.Calls(fake.OpCreate)
			r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", ""), withBody(tc.body)))
			wantError(t, r, tc.status, tc.errType, tc.contains...)
			if got := h.prov.Calls(fake.OpCreate) - before; got != 0 {
				t.Errorf("provider creates = %d, want 0", got)
			}
		})
	}

	t.Run("TooLargeBase64", func(t *testing.T) {
		body := base64.StdEncoding.EncodeToString([]byte(`{"template":"` + strings.Repeat("y", apigw.MaxBodyBytes) + `"}`))
		r := h.invoke(t, MustEvent(t, "sessions-create-base64.json", func(ev *events.APIGatewayV2HTTPRequest) { ev.Body = body }))
		wantError(t, r, 413, "too_large")
	})

	t.Run("BadBase64", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create-base64.json", func(ev *events.APIGatewayV2HTTPRequest) { ev.Body = "%%%" }))
		wantError(t, r, 400, "invalid", "base64")
	})

	t.Run("EmptyIdempotencyKey", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("Idempotency-Key", "  ")))
		wantError(t, r, 400, "invalid", "Idempotency-Key")
	})

	t.Run("ProviderUnavailable", func(t *testing.T) {
		h.prov.FailNext(fake.OpCreate, lifecycle.ErrProviderTransient)
		r := h.invoke(t, MustEvent(t, "sessions-create.json", withHeader("idempotency-key", "")))
		wantError(t, r, 503, lifecycle.TypeSandboxUnreachable)
		if got, want := r.headers["Retry-After"], "5"; got != want {
			t.Errorf("Retry-After = %q, want %q", got, want)
		}
	})
}

// on_lost is taken at create and shown on the session (default restore).
func TestCreateSessionOnLost(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	if got := h.mustCreate(t).OnLost; got != "restore" {
		t.Errorf("default on_lost = %q, want restore", got)
	}
	for _, want := range []string{"recreate", "expire"} {
		sess := h.mustCreate(t, withBody(`{"template":"base","on_lost":"`+want+`"}`))
		if sess.OnLost != want || sess.Recovery != nil {
			t.Errorf("on_lost = %q, recovery %+v; want %q, null", sess.OnLost, sess.Recovery, want)
		}
		if got := h.mustSession(t, sess.ID).OnLost; string(got) != want {
			t.Errorf("stored on_lost = %q, want %q", got, want)
		}
	}
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	var ids []string
	for range 3 {
		ids = append(ids, h.mustCreate(t).ID)
		h.clock.Advance(time.Second)
	}

	t.Run("Pages", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-list.json", withQuery("limit", "2")))
		wantStatus(t, r, 200)
		page := mustDecode[api.SessionList](t, r)
		if got, want := len(page.Sessions), 2; got != want {
			t.Fatalf("page 1 has %d sessions, want %d", got, want)
		}
		if got, want := page.Sessions[0].ID, ids[2]; got != want {
			t.Errorf("first session = %s, want the newest %s", got, want)
		}
		if page.NextCursor == nil {
			t.Fatal("next_cursor is null on page 1")
		}
		r = h.invoke(t, MustEvent(t, "sessions-list.json", withQuery("limit", "2"), withQuery("cursor", *page.NextCursor)))
		wantStatus(t, r, 200)
		page = mustDecode[api.SessionList](t, r)
		if got, want := len(page.Sessions), 1; got != want {
			t.Fatalf("page 2 has %d sessions, want %d", got, want)
		}
		if got, want := page.Sessions[0].ID, ids[0]; got != want {
			t.Errorf("last session = %s, want the oldest %s", got, want)
		}
		if page.NextCursor != nil {
			t.Errorf("next_cursor = %q on the last page, want null", *page.NextCursor)
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-list.json", func(ev *events.APIGatewayV2HTTPRequest) { ev.QueryStringParameters = nil }))
		wantStatus(t, r, 200)
		if got, want := len(mustDecode[api.SessionList](t, r).Sessions), 3; got != want {
			t.Errorf("sessions = %d, want %d", got, want)
		}
	})

	t.Run("OtherAccountSeesNone", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-list.json", withKey(h.otherKey)))
		wantStatus(t, r, 200)
		page := mustDecode[api.SessionList](t, r)
		if page.Sessions == nil || len(page.Sessions) != 0 {
			t.Errorf("sessions = %v, want []", page.Sessions)
		}
	})

	for _, tc := range []struct{ name, param, value, contains string }{
		{"LimitZero", "limit", "0", "limit"},
		{"LimitTooLarge", "limit", "101", "limit"},
		{"LimitNotANumber", "limit", "ten", "limit"},
		{"ForeignCursor", "cursor", "bm90LWEtY3Vyc29y", "cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.invoke(t, MustEvent(t, "sessions-list.json", withQuery(tc.param, tc.value)))
			wantError(t, r, 400, "invalid", tc.contains)
		})
	}
}

func TestGetSession(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("OK", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-get.json", withID(s.ID)))
		wantStatus(t, r, 200)
		got := mustDecode[api.Session](t, r)
		if got.ID != s.ID || got.State != "running" || got.Version != s.Version {
			t.Errorf("got %s %s v%d, want %s running v%d", got.ID, got.State, got.Version, s.ID, s.Version)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-get.json", withID(lifecycle.NewSessionID())))
		wantError(t, r, 404, "not_found")
	})
	t.Run("ErrMalformedID", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-get.json", withID("ses_NOT-AN-ID")))
		wantError(t, r, 404, "not_found", "ses_NOT-AN-ID", "26 lowercase base32")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-get.json", withID(s.ID), withKey(h.otherKey)))
		wantError(t, r, 403, "forbidden")
	})
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("Recorded", func(t *testing.T) {
		now := h.clock.Advance(time.Minute)
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID)))
		wantStatus(t, r, 204)
		if r.body != "" {
			t.Errorf("204 has a body: %s", r.body)
		}
		got := h.mustSession(t, s.ID)
		if want := now.Add(10*time.Minute + 30*time.Second); !got.IdleDeadline.Equal(want) {
			t.Errorf("idle deadline = %v, want %v", got.IdleDeadline, want)
		}
	})
	t.Run("Coalesced", func(t *testing.T) {
		before := h.mustSession(t, s.ID).Version
		h.clock.Advance(10 * time.Second)
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID)))
		wantStatus(t, r, 204)
		if got := h.mustSession(t, s.ID).Version; got != before {
			t.Errorf("version = %d after a coalesced heartbeat, want %d", got, before)
		}
	})
	t.Run("ErrBody", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withBody(`{"at":"now"}`)))
		wantError(t, r, 400, "invalid", `"at"`)
	})
	t.Run("ErrSandboxPaused", func(t *testing.T) {
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), 200)
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID)))
		wantError(t, r, 409, lifecycle.TypeSandboxPaused, "resume")
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(s.ID), withKey(h.otherKey)))
		wantError(t, r, 403, "forbidden")
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-activity.json", withID(lifecycle.NewSessionID())))
		wantError(t, r, 404, "not_found")
	})
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	s := h.mustCreate(t)

	t.Run("OK", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-delete.json", withID(s.ID)))
		wantStatus(t, r, 200)
		if got, want := mustDecode[api.Session](t, r).State, "killed"; got != want {
			t.Errorf("state = %q, want %q", got, want)
		}
		if _, ok := h.prov.Sandbox(*s.SandboxID); ok {
			t.Error("the sandbox still exists at the provider")
		}
	})
	t.Run("Twice", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-delete.json", withID(s.ID)))
		wantStatus(t, r, 200)
		if got, want := mustDecode[api.Session](t, r).State, "killed"; got != want {
			t.Errorf("state = %q, want %q", got, want)
		}
		if got, want := h.prov.Calls(fake.OpKill), 1; got != want {
			t.Errorf("provider kills = %d, want %d", got, want)
		}
		h.wantEvents(t, s.ID, lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StateKilled)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		other := h.mustCreate(t)
		r := h.invoke(t, MustEvent(t, "sessions-delete.json", withID(other.ID), withKey(h.otherKey)))
		wantError(t, r, 403, "forbidden")
		if got, want := h.mustSession(t, other.ID).State, lifecycle.StateRunning; got != want {
			t.Errorf("state = %s, want %s", got, want)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "sessions-delete.json", withID(lifecycle.NewSessionID())))
		wantError(t, r, 404, "not_found")
	})
	t.Run("ProviderUnavailableLeftToSweep", func(t *testing.T) {
		// The kill is recorded before the provider is asked: a
		// kill the provider could not do is left to the sweep, which reaps
		// the sandboxes of killed sessions.
		other := h.mustCreate(t)
		h.prov.FailNext(fake.OpKill, lifecycle.ErrProviderTransient)
		r := h.invoke(t, MustEvent(t, "sessions-delete.json", withID(other.ID)))
		wantStatus(t, r, 200)
		if got, want := h.mustSession(t, other.ID).State, lifecycle.StateKilled; got != want {
			t.Errorf("state = %s, want %s", got, want)
		}
		if _, ok := h.prov.Sandbox(*other.SandboxID); !ok {
			t.Error("the sandbox is gone although its kill failed")
		}
	})
}
