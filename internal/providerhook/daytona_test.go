package providerhook_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// MustDaytonaHarness is a harness whose service creates sessions on a fake
// provider named "daytona" (so sessions are stored as Daytona's), with a
// handler serving both E2B's format and Daytona's, the Svix timestamps
// checked on the harness's manual clock.
func MustDaytonaHarness(tb testing.TB, secrets ...string) *harness {
	tb.Helper()
	if len(secrets) == 0 {
		secrets = []string{DaytonaTestSecret}
	}
	store := memstore.New()
	clock := lifecycle.NewManualClock(t0)
	h := &harness{store: store, clock: clock, logs: &syncBuffer{}}
	h.provider = fake.New(fake.Config{Clock: clock, Name: providerhook.DaytonaName})
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pub := lifecycle.PublisherFunc(func(_ context.Context, evs ...lifecycle.Event) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.published = append(h.published, evs...)
		return nil
	})
	h.service = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(store, pub), Provider: h.provider, Clock: clock,
		Policy: lifecycle.DefaultPolicy(), Log: log, NewID: func() string { return FixtureSessionID }})
	e2b, err := providerhook.NewE2B("e2b", TestSecret)
	if err != nil {
		tb.Fatal(err)
	}
	dt, err := providerhook.NewDaytona(clock, secrets...)
	if err != nil {
		tb.Fatal(err)
	}
	if h.handler, err = providerhook.New(providerhook.Config{Applier: h.service, Formats: []providerhook.Format{e2b, dt}, Log: log}); err != nil {
		tb.Fatal(err)
	}
	return h
}

// deliverAt sets the clock to when Svix sent req (svix-timestamp) plus
// late, and delivers it.
func (h *harness) deliverAt(tb testing.TB, req events.APIGatewayV2HTTPRequest, late time.Duration) reply {
	tb.Helper()
	h.clock.Set(time.UnixMilli(req.RequestContext.TimeEpoch).UTC().Add(late))
	return h.MustDeliver(tb, req)
}

// signedDaytona returns a delivery of b as message msgID sent at sentAt,
// signed with DaytonaTestSecret.
func signedDaytona(tb testing.TB, msgID string, sentAt time.Time, b daytonahook.Body) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	raw := MustDaytonaBody(tb, b)
	req := NewRequest(providerhook.DaytonaName, DaytonaHeaders(tb, DaytonaTestSecret, msgID, sentAt, raw), raw, false)
	req.RequestContext.TimeEpoch = sentAt.UnixMilli()
	return req
}

// TestDaytonaFixtureSequence delivers every signed Daytona fixture, each at
// its send time, to a session on the fixtures' sandbox.
func TestDaytonaFixtureSequence(t *testing.T) {
	h := MustDaytonaHarness(t)
	sess := h.MustSession(t)
	if got, want := sess.Provider, "daytona"; got != want {
		t.Fatalf("session provider = %q, want %q", got, want)
	}
	steps := []struct {
		file    string
		outcome lifecycle.WebhookOutcome
		state   lifecycle.State
		write   bool
	}{
		{"apigw-daytona-created.json", lifecycle.WebhookRecorded, lifecycle.StateRunning, true},
		{"apigw-daytona-stopped.json", lifecycle.WebhookApplied, lifecycle.StatePaused, true},
		{"apigw-daytona-started.json", lifecycle.WebhookApplied, lifecycle.StateRunning, true},
		{"apigw-daytona-destroyed.json", lifecycle.WebhookApplied, lifecycle.StateExpired, true},
	}
	version := sess.Version
	for _, s := range steps {
		wantOK(t, h.deliverAt(t, MustDaytonaRequest(t, s.file), 0), s.outcome)
		got := h.MustGet(t)
		if got.State != s.state {
			t.Fatalf("after %s: state = %s, want %s", s.file, got.State, s.state)
		}
		if got, want := got.Version, version+1; got != want {
			t.Errorf("after %s: version = %d, want %d", s.file, got, want)
		}
		version = got.Version
	}
	r := h.deliverAt(t, MustDaytonaRequest(t, "apigw-daytona-snapshot-created.json"), 0)
	if r.status != http.StatusOK || r.body["outcome"] != "ignored" {
		t.Errorf("snapshot.created: %d %v, want 200 ignored", r.status, r.body)
	}
	if got, want := h.MustGet(t).Version, version; got != want {
		t.Errorf("after snapshot.created: version = %d, want %d (unchanged)", got, want)
	}
	if got, want := len(h.Published()), 3; got != want {
		t.Errorf("published events = %d, want %d (paused, running, expired)", got, want)
	}
	for _, ev := range h.Published() {
		if ev.Reason != lifecycle.ReasonWebhook {
			t.Errorf("event %s→%s reason = %q, want webhook", ev.From, ev.To, ev.Reason)
		}
	}
}

// TestDaytonaSignatureRefused: a tampered, misdated or unsigned delivery is
// 401 and changes nothing, not even the dedupe record.
func TestDaytonaSignatureRefused(t *testing.T) {
	h := MustDaytonaHarness(t)
	h.MustSession(t)
	before := h.MustGet(t)
	const file = "apigw-daytona-stopped.json"
	flip := func(s string, i int) string { b := []byte(s); b[i] ^= 0x01; return string(b) }
	cases := []struct {
		name   string
		late   time.Duration
		mutate func(r *events.APIGatewayV2HTTPRequest)
	}{
		{"FlippedBodyByte", 0, func(r *events.APIGatewayV2HTTPRequest) { r.Body = flip(r.Body, len(r.Body)/2) }},
		{"FlippedSignatureByte", 0, func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers[daytonahook.HeaderSignature] = flip(r.Headers[daytonahook.HeaderSignature], 5)
		}},
		{"OtherMessageID", 0, func(r *events.APIGatewayV2HTTPRequest) { r.Headers[daytonahook.HeaderID] = "msg_other" }},
		{"ShiftedTimestamp", 0, func(r *events.APIGatewayV2HTTPRequest) {
			ts := r.Headers[daytonahook.HeaderTimestamp]
			r.Headers[daytonahook.HeaderTimestamp] = ts[:len(ts)-1] + string('0'+(ts[len(ts)-1]-'0'+1)%10)
		}},
		{"WrongSecret", 0, func(r *events.APIGatewayV2HTTPRequest) {
			sent := time.UnixMilli(r.RequestContext.TimeEpoch)
			sig, err := daytonahook.Sign("whsec_c29tZW9uZS1lbHNl", r.Headers[daytonahook.HeaderID], sent, []byte(r.Body))
			if err != nil {
				t.Fatal(err)
			}
			r.Headers[daytonahook.HeaderSignature] = sig
		}},
		{"NotV1", 0, func(r *events.APIGatewayV2HTTPRequest) {
			r.Headers[daytonahook.HeaderSignature] = strings.Replace(r.Headers[daytonahook.HeaderSignature], "v1,", "v1a,", 1)
		}},
		{"TimestampSixMinutesOld", 6 * time.Minute, func(*events.APIGatewayV2HTTPRequest) {}},
		{"TimestampSixMinutesAhead", -6 * time.Minute, func(*events.APIGatewayV2HTTPRequest) {}},
		{"MissingSignature", 0, func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, daytonahook.HeaderSignature) }},
		{"MissingID", 0, func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, daytonahook.HeaderID) }},
		{"MissingTimestamp", 0, func(r *events.APIGatewayV2HTTPRequest) { delete(r.Headers, daytonahook.HeaderTimestamp) }},
		{"E2BSignatureOnDaytonaPath", 0, func(r *events.APIGatewayV2HTTPRequest) {
			*r = MustFixtureRequest(t, "apigw-e2b-paused.json")
			r.PathParameters[providerhook.ProviderParam] = providerhook.DaytonaName
			r.RequestContext.TimeEpoch = fixtureStart.Add(10 * time.Minute).UnixMilli()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := MustDaytonaRequest(t, file)
			c.mutate(&req)
			wantError(t, h.deliverAt(t, req, c.late), http.StatusUnauthorized, "unauthorized")
			after := h.MustGet(t)
			if after.Version != before.Version || after.State != lifecycle.StateRunning {
				t.Errorf("state %s version %d, want running at %d (unchanged)", after.State, after.Version, before.Version)
			}
		})
	}
	t.Run("WithinToleranceAfterwards", func(t *testing.T) {
		wantOK(t, h.deliverAt(t, MustDaytonaRequest(t, file), 4*time.Minute), lifecycle.WebhookApplied)
	})
}

// TestDaytonaBrandedHeaders: Svix's webhook-* header names are accepted as
// its svix-* ones are, and the webhook-id is the dedupe key.
func TestDaytonaBrandedHeaders(t *testing.T) {
	h := MustDaytonaHarness(t)
	h.MustSession(t)
	req := MustDaytonaRequest(t, "apigw-daytona-stopped.json")
	for _, n := range []string{"id", "timestamp", "signature"} {
		req.Headers["webhook-"+n] = req.Headers["svix-"+n]
		delete(req.Headers, "svix-"+n)
	}
	wantOK(t, h.deliverAt(t, req, 0), lifecycle.WebhookApplied)
	wantOK(t, h.deliverAt(t, MustDaytonaRequest(t, "apigw-daytona-stopped.json"), time.Second), lifecycle.WebhookDuplicate)
}

// TestDaytonaDuplicate: a Svix retry (same svix-id, a new timestamp and
// signature) changes the session once.
func TestDaytonaDuplicate(t *testing.T) {
	h := MustDaytonaHarness(t)
	h.MustSession(t)
	f := daytonaFixtures()[1] // stopped
	wantOK(t, h.deliverAt(t, signedDaytona(t, f.msgID, f.sentAt, f.body), 0), lifecycle.WebhookApplied)
	retry := signedDaytona(t, f.msgID, f.sentAt.Add(5*time.Second), f.body)
	wantOK(t, h.deliverAt(t, retry, 0), lifecycle.WebhookDuplicate)
	if got, want := len(h.Published()), 1; got != want {
		t.Errorf("published = %d, want %d", got, want)
	}
}

// TestDaytonaOutOfOrder: a state change older than the last applied one (a
// late delivery; Svix is unordered) is stale and moves nothing backwards.
func TestDaytonaOutOfOrder(t *testing.T) {
	h := MustDaytonaHarness(t)
	h.MustSession(t)
	wantOK(t, h.deliverAt(t, MustDaytonaRequest(t, "apigw-daytona-stopped.json"), 0), lifecycle.WebhookApplied)
	paused := h.MustGet(t)
	late := daytonahook.NewStateBody(FixtureSandboxID, DaytonaOrgID, "stopped", "started", fixtureStart.Add(5*time.Minute))
	wantOK(t, h.deliverAt(t, signedDaytona(t, "msg_late", fixtureStart.Add(11*time.Minute), late), 0), lifecycle.WebhookStale)
	got := h.MustGet(t)
	if got.State != lifecycle.StatePaused || got.Version != paused.Version {
		t.Errorf("state %s version %d, want paused at %d", got.State, got.Version, paused.Version)
	}
}

// TestDaytonaUnknownSandbox: an event for a sandbox no Daytona session
// holds (here: the sandbox id of an E2B-format session would be another
// provider's) is acknowledged.
func TestDaytonaUnknownSandbox(t *testing.T) {
	h := MustDaytonaHarness(t)
	b := daytonahook.NewStateBody("sbx_nobody", DaytonaOrgID, "started", "stopped", fixtureStart.Add(time.Minute))
	wantOK(t, h.deliverAt(t, signedDaytona(t, "msg_nobody", fixtureStart.Add(time.Minute), b), 0), lifecycle.WebhookUnknownSandbox)
}

// TestDaytonaSecretRotation: during a rotation Svix signs with both
// secrets (two v1 entries); either secret configured verifies it.
func TestDaytonaSecretRotation(t *testing.T) {
	const newSecret = "whsec_bmV3LXNhbmRtYW4tZGF5dG9uYS1zZWNyZXQ="
	f := daytonaFixtures()[1]
	raw := MustDaytonaBody(t, f.body)
	oldSig, _ := daytonahook.Sign(DaytonaTestSecret, f.msgID, f.sentAt, raw)
	newSig, err := daytonahook.Sign(newSecret, f.msgID, f.sentAt, raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		sig     string
		status  int
	}{
		{"BothEntriesNewSecret", []string{newSecret}, oldSig + " " + newSig, http.StatusOK},
		{"NewEntryOldAndNewSecrets", []string{DaytonaTestSecret, newSecret}, newSig, http.StatusOK},
		{"NewEntryOldSecretOnly", []string{DaytonaTestSecret}, newSig, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := MustDaytonaHarness(t, tc.secrets...)
			h.MustSession(t)
			req := signedDaytona(t, f.msgID, f.sentAt, f.body)
			req.Headers[daytonahook.HeaderSignature] = tc.sig
			if got := h.deliverAt(t, req, 0).status; got != tc.status {
				t.Errorf("status = %d, want %d", got, tc.status)
			}
		})
	}
}

func TestNewDaytona(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
	}{{"NoSecret", nil}, {"Empty", []string{""}}, {"NotBase64", []string{"whsec_%%%"}}} {
		t.Run("Err"+tc.name, func(t *testing.T) {
			if _, err := providerhook.NewDaytona(nil, tc.secrets...); err == nil {
				t.Error("NewDaytona accepted it")
			}
		})
	}
}

// TestNoFormat: a deployment whose providers send no webhooks (Vercel)
// answers 404 to every provider.
func TestNoFormat(t *testing.T) {
	h, err := providerhook.New(providerhook.Config{Applier: &stubApplier{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, provider := range []string{"e2b", "daytona", "vercel"} {
		req := MustDaytonaRequest(t, "apigw-daytona-stopped.json")
		req.PathParameters[providerhook.ProviderParam] = provider
		wantError(t, mustHandle(t, h, req), http.StatusNotFound, "not_found")
	}
}
