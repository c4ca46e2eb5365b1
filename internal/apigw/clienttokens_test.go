package apigw_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

type clientTokenOut struct {
	Token     string  `json:"token"`
	ExpiresAt string  `json:"expires_at"`
	WSURL     *string `json:"ws_url"`
}

const testWSURL = "wss://ws.example.com/live"

// MustTokenHarness is a harness whose handlers mint and accept client
// tokens signed with one fixed key, on the harness clock.
func MustTokenHarness(tb testing.TB) (*harness, *clienttoken.Tokens) {
	tb.Helper()
	var tokens *clienttoken.Tokens
	var h *harness
	h = MustHarness(tb, func(o *apigw.Config) {
		keys := clienttoken.KeySet{Signing: clienttoken.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))}}
		t, err := clienttoken.New(keys, clockFunc(func() time.Time { return h.clock.Now() }))
		if err != nil {
			tb.Fatal(err)
		}
		tokens, o.Tokens, o.WSURL = t, t, testWSURL
	})
	return h, tokens
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// withBearer sets Authorization: Bearer token and drops x-api-key.
func withBearer(token string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) {
		withKey("")(ev)
		withHeader("authorization", "Bearer "+token)(ev)
	}
}

func (h *harness) mustClientToken(tb testing.TB, id string, patches ...func(*events.APIGatewayV2HTTPRequest)) clientTokenOut {
	tb.Helper()
	r := h.invoke(tb, MustEvent(tb, "client-tokens.json", append([]func(*events.APIGatewayV2HTTPRequest){withID(id)}, patches...)...))
	wantStatus(tb, r, http.StatusOK)
	return mustDecode[clientTokenOut](tb, r)
}

func TestClientTokenMint(t *testing.T) {
	h, tokens := MustTokenHarness(t)
	sess := h.mustCreate(t)

	t.Run("OK", func(t *testing.T) {
		out := h.mustClientToken(t, sess.ID)
		if got, want := out.ExpiresAt, t0.Add(clienttoken.DefaultTTL).Format(time.RFC3339); got != want {
			t.Errorf("expires_at = %s, want %s", got, want)
		}
		if got, want := str(out.WSURL), testWSURL; got != want {
			t.Errorf("ws_url = %s, want %s", got, want)
		}
		c, err := tokens.VerifyFor(out.Token, sess.ID)
		if err != nil {
			t.Fatalf("minted token does not verify: %v", err)
		}
		if got, want := c.AccountID, apigw.DevAccountID; got != want {
			t.Errorf("account = %s, want %s", got, want)
		}
	})
	t.Run("TTL", func(t *testing.T) {
		out := h.mustClientToken(t, sess.ID, withBody(`{"ttl_seconds":60}`))
		if got, want := out.ExpiresAt, t0.Add(time.Minute).Format(time.RFC3339); got != want {
			t.Errorf("expires_at = %s, want %s", got, want)
		}
	})
	t.Run("ErrTTL", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "client-tokens.json", withID(sess.ID), withBody(`{"ttl_seconds":86401}`)))
		wantError(t, r, http.StatusBadRequest, "invalid", "ttl_seconds")
	})
	t.Run("ErrOtherAccount", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "client-tokens.json", withID(sess.ID), withKey(h.otherKey)))
		wantStatus(t, r, http.StatusForbidden)
	})
	t.Run("ErrClientTokenCannotMint", func(t *testing.T) {
		out := h.mustClientToken(t, sess.ID)
		r := h.invoke(t, MustEvent(t, "client-tokens.json", withID(sess.ID), withBearer(out.Token)))
		wantError(t, r, http.StatusForbidden, "forbidden", "client token")
	})
	t.Run("ErrNotConfigured", func(t *testing.T) {
		plain := MustHarness(t)
		s := plain.mustCreate(t)
		r := plain.invoke(t, MustEvent(t, "client-tokens.json", withID(s.ID)))
		wantError(t, r, http.StatusServiceUnavailable, "unavailable", "not configured")
	})
}

// TestClientTokenScope: a client token works on its session's status,
// activity and resume, and is refused on every other route (403), on
// another session (403), after expiry (401) and when tampered with (401).
func TestClientTokenScope(t *testing.T) {
	h, _ := MustTokenHarness(t)
	sess := h.mustCreate(t)
	other := h.mustCreate(t)
	token := h.mustClientToken(t, sess.ID).Token

	t.Run("OK", func(t *testing.T) {
		r := h.invoke(t, MustEvent(t, "status.json", withID(sess.ID), withBearer(token)))
		wantStatus(t, r, http.StatusOK)
		if got, want := mustDecode[api.Status](t, r).SessionID, sess.ID; got != want {
			t.Errorf("status of %s, want %s", got, want)
		}
		h.clock.Advance(time.Minute) // past the heartbeat granularity: a write
		wantStatus(t, h.invoke(t, MustEvent(t, "sessions-activity.json", withID(sess.ID), withBearer(token))), http.StatusNoContent)
		if got, want := h.mustSession(t, sess.ID).LastActivityAt, h.clock.Now(); !got.Equal(want) {
			t.Errorf("last_activity_at = %v, want %v (the heartbeat counted)", got, want)
		}
		wantStatus(t, h.invoke(t, MustEvent(t, "resume.json", withID(sess.ID), withBearer(token))), http.StatusOK)
	})
	t.Run("ErrWrongRoute", func(t *testing.T) {
		for _, name := range []string{"sessions-get.json", "sessions-delete.json", "snapshot.json", "reconnect.json", "client-tokens.json"} {
			r := h.invoke(t, MustEvent(t, name, withID(sess.ID), withBearer(token)))
			wantError(t, r, http.StatusForbidden, "forbidden", "status, activity and resume")
		}
		r := h.invoke(t, MustEvent(t, "sessions-list.json", withBearer(token)))
		wantError(t, r, http.StatusForbidden, "forbidden")
		if got := h.mustSession(t, sess.ID).State; got != lifecycle.StateRunning {
			t.Errorf("state = %s after refused calls, want running", got)
		}
	})
	t.Run("ErrOtherSession", func(t *testing.T) {
		for _, name := range []string{"status.json", "sessions-activity.json", "resume.json"} {
			r := h.invoke(t, MustEvent(t, name, withID(other.ID), withBearer(token)))
			wantError(t, r, http.StatusForbidden, "forbidden", "another session")
		}
	})
	t.Run("ErrTampered", func(t *testing.T) {
		payload, mac, _ := strings.Cut(token, ".")
		flipped := []byte(mac)
		flipped[0] ^= 'A' ^ 'B'
		if flipped[0] == mac[0] {
			t.Fatal("tamper did not change the token")
		}
		for _, bad := range []string{payload + "." + string(flipped), payload[:len(payload)-2] + "." + mac, "x.y"} {
			r := h.invoke(t, MustEvent(t, "status.json", withID(sess.ID), withBearer(bad)))
			wantError(t, r, http.StatusUnauthorized, "unauthorized", "not valid")
		}
	})
	t.Run("ErrExpired", func(t *testing.T) {
		h.clock.Advance(clienttoken.DefaultTTL)
		r := h.invoke(t, MustEvent(t, "status.json", withID(sess.ID), withBearer(token)))
		wantError(t, r, http.StatusUnauthorized, "unauthorized", "expired")
		if got := r.headers["WWW-Authenticate"]; got == "" {
			t.Error("401 without WWW-Authenticate")
		}
	})
}
