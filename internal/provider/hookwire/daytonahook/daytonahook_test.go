package daytonahook_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
)

// secret is a Svix-style secret: whsec_ and base64 of 24 bytes.
var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("sandman-daytona-test-key"))

var now = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

const stateBody = `{"event":"sandbox.state.updated","timestamp":"2026-05-06T07:08:00.123Z","id":"sb-1",` +
	`"organizationId":"org-1","oldState":"stopping","newState":"stopped","updatedAt":"2026-05-06T07:07:59.500Z"}`

func mustVerifier(tb testing.TB) *daytonahook.Verifier {
	tb.Helper()
	v, err := daytonahook.NewVerifier(secret, lifecycle.NewManualClock(now))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustHeader(tb testing.TB, id string, ts time.Time, body string) http.Header {
	tb.Helper()
	h, err := daytonahook.Header(secret, id, ts, []byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func code(err error) lifecycle.Code {
	var le *lifecycle.Error
	if errors.As(err, &le) {
		return le.Code
	}
	return ""
}

// TestKnownSignature pins the scheme to a value computed independently:
// HMAC-SHA256 with key base64("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") over
// "msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}", the
// example of Svix's "Verifying Webhooks Manually".
func TestKnownSignature(t *testing.T) {
	got, err := daytonahook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	v := mustVerifier(t)
	t.Run("OK", func(t *testing.T) {
		ev, err := v.VerifyAndParse(mustHeader(t, "msg_1", now.Add(-time.Minute), stateBody), []byte(stateBody))
		if err != nil {
			t.Fatal(err)
		}
		want := lifecycle.ProviderEvent{ID: "msg_1", Provider: "daytona", Type: lifecycle.ProviderEventPaused,
			SandboxID: "sb-1", Timestamp: time.Date(2026, 5, 6, 7, 7, 59, 500e6, time.UTC)}
		if ev != want {
			t.Fatalf("event = %+v, want %+v", ev, want)
		}
	})
	t.Run("RetryKeepsID", func(t *testing.T) {
		// Svix retries a message with the same svix-id (and a new timestamp
		// and signature): both deliveries carry one dedupe key.
		a, err := v.VerifyAndParse(mustHeader(t, "msg_7", now.Add(-4*time.Minute), stateBody), []byte(stateBody))
		if err != nil {
			t.Fatal(err)
		}
		b, err := v.VerifyAndParse(mustHeader(t, "msg_7", now, stateBody), []byte(stateBody))
		if err != nil {
			t.Fatal(err)
		}
		if a != b || a.ID != "msg_7" {
			t.Fatalf("deliveries = %+v / %+v, want one event with id msg_7", a, b)
		}
	})
	t.Run("WebhookHeaders", func(t *testing.T) {
		h := mustHeader(t, "msg_2", now, stateBody)
		b := http.Header{}
		for k, n := range map[string]string{"svix-id": "webhook-id", "svix-timestamp": "webhook-timestamp", "svix-signature": "webhook-signature"} {
			b.Set(n, h.Get(k))
		}
		if _, err := v.Verify(b, []byte(stateBody)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("AnyV1Entry", func(t *testing.T) {
		h := mustHeader(t, "msg_3", now, stateBody)
		h.Set("svix-signature", "v1,AAAA v1a,xyz "+h.Get("svix-signature")+" v1,notbase64!")
		if _, err := v.Verify(h, []byte(stateBody)); err != nil {
			t.Fatal(err)
		}
	})
	reject := map[string]func(h http.Header) ([]byte, http.Header){
		"ErrTamperedBody": func(h http.Header) ([]byte, http.Header) {
			return []byte(strings.Replace(stateBody, "stopped", "started", 1)), h
		},
		"ErrTamperedID": func(h http.Header) ([]byte, http.Header) {
			h.Set("svix-id", "msg_other")
			return []byte(stateBody), h
		},
		"ErrOldTimestamp": func(h http.Header) ([]byte, http.Header) {
			return []byte(stateBody), mustHeader(t, "msg_1", now.Add(-5*time.Minute-time.Second), stateBody)
		},
		"ErrFutureTimestamp": func(h http.Header) ([]byte, http.Header) {
			return []byte(stateBody), mustHeader(t, "msg_1", now.Add(5*time.Minute+time.Second), stateBody)
		},
		"ErrTimestampNotSeconds": func(h http.Header) ([]byte, http.Header) {
			h.Set("svix-timestamp", now.Format(time.RFC3339))
			return []byte(stateBody), h
		},
		"ErrNoSignature": func(h http.Header) ([]byte, http.Header) {
			h.Del("svix-signature")
			return []byte(stateBody), h
		},
		"ErrOtherVersionOnly": func(h http.Header) ([]byte, http.Header) {
			h.Set("svix-signature", strings.Replace(h.Get("svix-signature"), "v1,", "v2,", 1))
			return []byte(stateBody), h
		},
		"ErrWrongSecret": func(h http.Header) ([]byte, http.Header) {
			other, _ := daytonahook.Header("whsec_"+base64.StdEncoding.EncodeToString([]byte("other")), "msg_1", now, []byte(stateBody))
			return []byte(stateBody), other
		},
	}
	for name, mutate := range reject {
		t.Run(name, func(t *testing.T) {
			body, h := mutate(mustHeader(t, "msg_1", now, stateBody))
			_, err := v.VerifyAndParse(h, body)
			if got, want := code(err), lifecycle.CodeUnauthorized; got != want {
				t.Fatalf("err = %v (code %q), want %q", err, got, want)
			}
		})
	}
	t.Run("ErrBadSecret", func(t *testing.T) {
		for _, s := range []string{"", "whsec_", "whsec_!!!"} {
			if _, err := daytonahook.NewVerifier(s, nil); err == nil {
				t.Errorf("secret %q accepted", s)
			}
		}
	})
}

func TestParse(t *testing.T) {
	state := func(old, new string) string {
		b, _ := json.Marshal(daytonahook.NewStateBody("sb-9", "org-1", old, new, now))
		return string(b)
	}
	cases := []struct {
		name, body string
		want       lifecycle.ProviderEventType
		reason     string
	}{
		{"Started", state("starting", "started"), lifecycle.ProviderEventResumed, ""},
		{"WarmPoolClaim", state("started", "started"), lifecycle.ProviderEventCreated, ""},
		{"Stopped", state("stopping", "stopped"), lifecycle.ProviderEventPaused, ""},
		{"Paused", state("pausing", "paused"), lifecycle.ProviderEventPaused, ""},
		{"Archived", state("archiving", "archived"), lifecycle.ProviderEventPaused, ""},
		{"Destroyed", state("destroying", "destroyed"), lifecycle.ProviderEventKilled, "unknown"},
		{"Stopping", state("started", "stopping"), lifecycle.ProviderEventUpdated, ""},
		{"Error", state("starting", "error"), lifecycle.ProviderEventUpdated, ""},
		{"UnknownState", state("started", "hibernating"), lifecycle.ProviderEventUpdated, ""},
		{"Created", `{"event":"sandbox.created","timestamp":"2026-05-06T07:08:09Z","id":"sb-9","organizationId":"o",` +
			`"state":"creating","sandboxClass":"container","createdAt":"2026-05-06T07:08:09Z"}`, lifecycle.ProviderEventCreated, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := daytonahook.Parse("msg_9", []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != c.want || ev.KillReason != c.reason || ev.SandboxID != "sb-9" || !ev.Timestamp.Equal(now) || ev.ID != "msg_9" {
				t.Fatalf("event = %+v, want type %s reason %q", ev, c.want, c.reason)
			}
		})
	}
	t.Run("NotSandboxEvent", func(t *testing.T) {
		_, err := daytonahook.Parse("m", []byte(`{"event":"volume.created","timestamp":"2026-05-06T07:08:09Z","id":"v"}`))
		if !errors.Is(err, daytonahook.ErrNotSandboxEvent) {
			t.Fatalf("err = %v, want ErrNotSandboxEvent", err)
		}
	})
	for name, body := range map[string]string{
		"ErrNotJSON":      `nope`,
		"ErrTwoValues":    stateBody + `{}`,
		"ErrUnknownEvent": `{"event":"sandbox.exploded","timestamp":"2026-05-06T07:08:09Z","id":"sb"}`,
		"ErrNoID":         `{"event":"sandbox.state.updated","timestamp":"2026-05-06T07:08:09Z","newState":"started"}`,
		"ErrNoNewState":   `{"event":"sandbox.state.updated","timestamp":"2026-05-06T07:08:09Z","id":"sb"}`,
		"ErrBadTime":      `{"event":"sandbox.state.updated","timestamp":"yesterday","id":"sb","newState":"started"}`,
		"ErrTimeRange":    `{"event":"sandbox.state.updated","timestamp":"0001-01-01T00:00:00Z","id":"sb","newState":"started"}`,
		"ErrLongID":       `{"event":"sandbox.created","timestamp":"2026-05-06T07:08:09Z","id":"` + strings.Repeat("x", 300) + `"}`,
		"ErrWrongType":    `{"event":"sandbox.created","timestamp":"2026-05-06T07:08:09Z","id":7}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := daytonahook.Parse("m", []byte(body))
			if got, want := code(err), lifecycle.CodeInvalid; got != want {
				t.Fatalf("err = %v (code %q), want %q", err, got, want)
			}
		})
	}
}

// TestOrdering: deliveries are unordered; each carries Daytona's change
// time, so a consumer that applies only newer events ends on the last.
func TestOrdering(t *testing.T) {
	v := mustVerifier(t)
	changes := []string{"starting", "started", "stopping", "stopped"}
	var evs []lifecycle.ProviderEvent
	for i := len(changes) - 1; i > 0; i-- { // delivered newest first
		b, _ := json.Marshal(daytonahook.NewStateBody("sb-1", "o", changes[i-1], changes[i], now.Add(time.Duration(i)*time.Second)))
		id := "msg_" + strconv.Itoa(i)
		ev, err := v.VerifyAndParse(mustHeader(t, id, now, string(b)), b)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	var last lifecycle.ProviderEvent
	for _, ev := range evs {
		if ev.Timestamp.After(last.Timestamp) {
			last = ev
		}
	}
	if last.Type != lifecycle.ProviderEventPaused || last.ID != "msg_3" {
		t.Fatalf("newest event = %+v, want the stopped one", last)
	}
}

func FuzzVerifyAndParse(f *testing.F) {
	h, _ := daytonahook.Header(secret, "msg_1", now, []byte(stateBody))
	f.Add("msg_1", strconv.FormatInt(now.Unix(), 10), h.Get("svix-signature"), []byte(stateBody))
	f.Add("msg_2", "1", "v1,AAAA", []byte(`{"event":"sandbox.created"}`))
	f.Add("", "", "", []byte(nil))
	v := mustVerifier(f)
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		hdr := http.Header{}
		hdr.Set("svix-id", id)
		hdr.Set("svix-timestamp", ts)
		hdr.Set("svix-signature", sig)
		ev, err := v.VerifyAndParse(hdr, body)
		if err != nil {
			if c := code(err); c != lifecycle.CodeUnauthorized && c != lifecycle.CodeInvalid && !errors.Is(err, daytonahook.ErrNotSandboxEvent) {
				t.Fatalf("unclassified error %v", err)
			}
		} else if ev.ID != id || ev.SandboxID == "" || ev.Timestamp.IsZero() || ev.Provider != "daytona" {
			t.Fatalf("accepted a bad event %+v", ev)
		}
		// Whatever was fuzzed, a correctly signed copy verifies.
		good, err := daytonahook.Header(secret, "m", now, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(good, body); err != nil {
			t.Fatalf("a correctly signed body was refused: %v", err)
		}
		if _, err := daytonahook.Parse("m", body); err != nil && code(err) != lifecycle.CodeInvalid && !errors.Is(err, daytonahook.ErrNotSandboxEvent) {
			t.Fatalf("parse: unclassified error %v", err)
		}
	})
}
