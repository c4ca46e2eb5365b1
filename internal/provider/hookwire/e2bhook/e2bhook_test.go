package e2bhook_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
)

const secret = "whsec_test"

// docSign computes the v1 signature straight from docs/providers/e2b.md: SHA-256
// over the secret's bytes then the body, standard base64, + → -, / → _,
// trailing = removed.
func docSign(secret string, body []byte) string {
	sum := sha256.Sum256(append([]byte(secret), body...))
	s := base64.StdEncoding.EncodeToString(sum[:])
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	return strings.TrimRight(s, "=")
}

// killedBody is a delivery as E2B documents it, every field present.
const killedBody = `{
  "id": "8c5e4a52-3b1f-4c8e-9a47-0f1d2e3c4b5a",
  "version": "v2",
  "type": "sandbox.lifecycle.killed",
  "timestamp": "2026-01-02T03:04:05.5+01:00",
  "event_category": "lifecycle",
  "event_label": "kill",
  "sandbox_id": "isbx1",
  "sandbox_execution_id": "exec-1",
  "sandbox_template_id": "base",
  "sandbox_build_id": "build-1",
  "sandbox_team_id": "team-1",
  "event_data": {
    "sandbox_metadata": {"sandman_session_id": "ses_1"},
    "execution": {"started_at": "2026-01-02T01:00:00Z", "vcpu_count": 2, "memory_mb": 512, "execution_time": 1000},
    "kill_reason": "timeout"
  }
}`

// MustBuild builds the body of ev or fails tb.
func MustBuild(tb testing.TB, ev lifecycle.ProviderEvent) []byte {
	tb.Helper()
	b, err := e2bhook.Build(e2bhook.NewBody(ev, map[string]string{"k": "v"}))
	if err != nil {
		tb.Fatalf("build %s event: %v", ev.Type, err)
	}
	return b
}

func event(typ lifecycle.ProviderEventType) lifecycle.ProviderEvent {
	ev := lifecycle.ProviderEvent{
		ID: "evt-" + string(typ), Provider: "e2b", Type: typ, SandboxID: "isbx1",
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
	}
	switch typ {
	case lifecycle.ProviderEventKilled:
		ev.KillReason = e2bhook.KillRequest
	case lifecycle.ProviderEventUpdated:
		ev.Timeout = 15 * time.Minute
	}
	return ev
}

var allTypes = []lifecycle.ProviderEventType{
	lifecycle.ProviderEventCreated, lifecycle.ProviderEventPaused, lifecycle.ProviderEventResumed,
	lifecycle.ProviderEventUpdated, lifecycle.ProviderEventKilled,
}

func sameEvent(a, b lifecycle.ProviderEvent) bool {
	return a.ID == b.ID && a.Provider == b.Provider && a.Type == b.Type && a.SandboxID == b.SandboxID &&
		a.Timestamp.Equal(b.Timestamp) && a.Timeout == b.Timeout && a.KillReason == b.KillReason
}

func TestSign(t *testing.T) {
	t.Run("KnownVector", func(t *testing.T) {
		// printf '%s' 'whsec_test{"id":"evt_1"}' | openssl dgst -sha256 -binary | base64
		// gives tJFQdfg5psGiJ/y77DcZUPOlz8q/8ijOnqGZQ+cHZzs= (it has +, / and =).
		if got, want := e2bhook.Sign(secret, []byte(`{"id":"evt_1"}`)), "tJFQdfg5psGiJ_y77DcZUPOlz8q_8ijOnqGZQ-cHZzs"; got != want {
			t.Errorf("Sign = %q, want %q", got, want)
		}
	})
	t.Run("MatchesDocRule", func(t *testing.T) {
		for _, body := range []string{"", "{}", killedBody, strings.Repeat("x", 1000)} {
			for _, sec := range []string{"s", secret, "ünïcode-secret"} {
				if got, want := e2bhook.Sign(sec, []byte(body)), docSign(sec, []byte(body)); got != want {
					t.Errorf("Sign(%q, %.20q) = %q, want %q", sec, body, got, want)
				}
			}
		}
	})
	t.Run("NotAnHMAC", func(t *testing.T) {
		// Secret and body are simply concatenated: moving bytes across the
		// boundary does not change the signature.
		if got, want := e2bhook.Sign("ab", []byte("cd")), e2bhook.Sign("a", []byte("bcd")); got != want {
			t.Errorf("Sign(ab, cd) = %q, Sign(a, bcd) = %q, want equal", got, want)
		}
	})
}

func TestVerify(t *testing.T) {
	body := []byte(killedBody)
	sig := e2bhook.Sign(secret, body)
	t.Run("OK", func(t *testing.T) {
		if !e2bhook.Verify(secret, body, sig) {
			t.Error("Verify = false, want true")
		}
	})
	t.Run("FlippedBodyByte", func(t *testing.T) {
		for _, i := range []int{0, len(body) / 2, len(body) - 1} {
			bad := slices.Clone(body)
			bad[i] ^= 0x01
			if e2bhook.Verify(secret, bad, sig) {
				t.Errorf("Verify with byte %d flipped = true, want false", i)
			}
		}
	})
	t.Run("FlippedSignatureByte", func(t *testing.T) {
		bad := []byte(sig)
		bad[3] ^= 0x01
		if e2bhook.Verify(secret, body, string(bad)) {
			t.Error("Verify = true, want false")
		}
	})
	t.Run("WrongSecret", func(t *testing.T) {
		if e2bhook.Verify("whsec_other", body, sig) {
			t.Error("Verify = true, want false")
		}
	})
	t.Run("EmptySecret", func(t *testing.T) {
		if e2bhook.Verify("", body, e2bhook.Sign("", body)) {
			t.Error("Verify with an empty secret = true, want false")
		}
	})
	t.Run("MissingOrPadded", func(t *testing.T) {
		for _, s := range []string{"", sig + "=", " " + sig} {
			if e2bhook.Verify(secret, body, s) {
				t.Errorf("Verify(%q) = true, want false", s)
			}
		}
	})
}

func TestHeader(t *testing.T) {
	if got, want := []string{e2bhook.HeaderWebhookID, e2bhook.HeaderDeliveryID, e2bhook.HeaderSignatureVersion, e2bhook.HeaderSignature},
		[]string{"e2b-webhook-id", "e2b-delivery-id", "e2b-signature-version", "e2b-signature"}; !slices.Equal(got, want) {
		t.Errorf("header names = %v, want %v", got, want)
	}
	body := []byte(killedBody)
	h := e2bhook.Header(secret, "wh-1", "dl-1", body)
	for name, want := range map[string]string{
		"e2b-webhook-id": "wh-1", "e2b-delivery-id": "dl-1",
		"e2b-signature-version": "v1", "e2b-signature": docSign(secret, body),
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestVerifyAndParse(t *testing.T) {
	body := []byte(killedBody)
	t.Run("OK", func(t *testing.T) {
		ev, err := e2bhook.VerifyAndParse(secret, e2bhook.Header(secret, "wh", "dl", body), body)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ev.Type, lifecycle.ProviderEventKilled; got != want {
			t.Errorf("Type = %q, want %q", got, want)
		}
	})
	t.Run("ErrMissingSignature", func(t *testing.T) {
		_, err := e2bhook.VerifyAndParse(secret, http.Header{}, body)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnauthorized; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
	t.Run("ErrTamperedBody", func(t *testing.T) {
		h := e2bhook.Header(secret, "wh", "dl", body)
		tampered := []byte(strings.Replace(killedBody, "isbx1", "isbx2", 1))
		_, err := e2bhook.VerifyAndParse(secret, h, tampered)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnauthorized; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
	t.Run("ErrSignatureVersion", func(t *testing.T) {
		h := e2bhook.Header(secret, "wh", "dl", body)
		h.Set(e2bhook.HeaderSignatureVersion, "v2")
		_, err := e2bhook.VerifyAndParse(secret, h, body)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnauthorized; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
	t.Run("ErrSignedButMalformed", func(t *testing.T) {
		bad := []byte(`{"version":"v2"}`)
		_, err := e2bhook.VerifyAndParse(secret, e2bhook.Header(secret, "wh", "dl", bad), bad)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
}

func TestParse(t *testing.T) {
	t.Run("DocumentedBody", func(t *testing.T) {
		ev, err := e2bhook.Parse([]byte(killedBody))
		if err != nil {
			t.Fatal(err)
		}
		want := lifecycle.ProviderEvent{
			ID: "8c5e4a52-3b1f-4c8e-9a47-0f1d2e3c4b5a", Provider: "e2b", Type: lifecycle.ProviderEventKilled,
			SandboxID: "isbx1", Timestamp: time.Date(2026, 1, 2, 2, 4, 5, 5e8, time.UTC), KillReason: "timeout",
		}
		if !sameEvent(ev, want) {
			t.Errorf("event = %+v, want %+v", ev, want)
		}
		if got, want := ev.Timestamp.Location(), time.UTC; got != want {
			t.Errorf("timestamp location = %v, want UTC", got)
		}
	})
	t.Run("EveryType", func(t *testing.T) {
		for e2bType, want := range map[string]lifecycle.ProviderEventType{
			"sandbox.lifecycle.created": lifecycle.ProviderEventCreated,
			"sandbox.lifecycle.paused":  lifecycle.ProviderEventPaused,
			"sandbox.lifecycle.resumed": lifecycle.ProviderEventResumed,
			"sandbox.lifecycle.updated": lifecycle.ProviderEventUpdated,
			"sandbox.lifecycle.killed":  lifecycle.ProviderEventKilled,
		} {
			body := strings.Replace(killedBody, "sandbox.lifecycle.killed", e2bType, 1)
			ev, err := e2bhook.Parse([]byte(body))
			if err != nil {
				t.Fatalf("%s: %v", e2bType, err)
			}
			if got := ev.Type; got != want {
				t.Errorf("%s: Type = %q, want %q", e2bType, got, want)
			}
			if got, want := ev.KillReason != "", want == lifecycle.ProviderEventKilled; got != want {
				t.Errorf("%s: KillReason = %q, want it set only on killed", e2bType, ev.KillReason)
			}
		}
	})
	t.Run("SetTimeout", func(t *testing.T) {
		for _, tc := range []struct {
			name, raw string
			want      time.Duration
		}{
			// E2B sends the end time; a number's unit would be a guess.
			{"Seconds", `300`, 0},
			{"FractionalSeconds", `90.7`, 0},
			{"EndTimeFractional", `"2026-01-02T03:05:35.7Z"`, 90 * time.Second},
			{"EndTime", `"2026-01-02T03:14:05Z"`, 10 * time.Minute},
			{"EndTimeWithOffset", `"2026-01-02T04:06:05+01:00"`, 2 * time.Minute},
			{"EndTimeInPast", `"2026-01-02T03:00:00Z"`, 0},
			{"Garbage", `"soon"`, 0},
			{"Object", `{"timeout":300}`, 0},
			{"Null", `null`, 0},
			{"Negative", `-5`, 0},
			{"UnderASecond", `0.5`, 0},
			{"Huge", `1e300`, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := `{"id":"e","version":"v2","type":"sandbox.lifecycle.updated","timestamp":"2026-01-02T03:04:05Z",` +
					`"sandbox_id":"s","event_data":{"sandbox_metadata":{},"set_timeout":` + tc.raw + `}}`
				ev, err := e2bhook.Parse([]byte(body))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := ev.Timeout, tc.want; got != want {
					t.Errorf("Timeout = %v, want %v", got, want)
				}
			})
		}
	})
	t.Run("SetTimeoutOnlyOnUpdated", func(t *testing.T) {
		body := `{"id":"e","version":"v2","type":"sandbox.lifecycle.paused","timestamp":"2026-01-02T03:04:05Z",` +
			`"sandbox_id":"s","event_data":{"sandbox_metadata":{},"set_timeout":300}}`
		ev, err := e2bhook.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Timeout != 0 {
			t.Errorf("Timeout = %v, want 0", ev.Timeout)
		}
	})
}

func TestParseInvalid(t *testing.T) {
	valid := func(edit func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(killedBody), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"Empty", ``, "JSON"},
		{"Truncated", `{"id":`, "JSON"},
		{"Array", `[]`, "JSON object"},
		{"String", `"x"`, "JSON object"},
		{"Null", `null`, "version"},
		{"TrailingData", killedBody + `{}`, "more than one"},
		{"MissingVersion", valid(func(m map[string]any) { delete(m, "version") }), "version"},
		{"UnknownVersion", valid(func(m map[string]any) { m["version"] = "v3" }), "version"},
		{"UnknownType", valid(func(m map[string]any) { m["type"] = "sandbox.lifecycle.snapshotted" }), "type"},
		{"MissingType", valid(func(m map[string]any) { delete(m, "type") }), "type"},
		{"MissingID", valid(func(m map[string]any) { delete(m, "id") }), "id"},
		{"LongID", valid(func(m map[string]any) { m["id"] = strings.Repeat("a", 257) }), "id"},
		{"MissingSandboxID", valid(func(m map[string]any) { delete(m, "sandbox_id") }), "sandbox_id"},
		{"NumericSandboxID", valid(func(m map[string]any) { m["sandbox_id"] = 7 }), "sandbox_id"},
		{"MissingTimestamp", valid(func(m map[string]any) { delete(m, "timestamp") }), "timestamp"},
		{"BadTimestamp", valid(func(m map[string]any) { m["timestamp"] = "yesterday" }), "timestamp"},
		{"TimestampOutOfRange", valid(func(m map[string]any) { m["timestamp"] = "0000-01-01T00:30:00+01:00" }), "timestamp"},
		{"TimestampZero", valid(func(m map[string]any) { m["timestamp"] = "0001-01-01T00:00:00Z" }), "timestamp"},
		{"BadMetadata", valid(func(m map[string]any) {
			m["event_data"] = map[string]any{"sandbox_metadata": map[string]any{"k": 1}}
		}), "event_data.sandbox_metadata"},
		{"BadExecution", valid(func(m map[string]any) {
			m["event_data"] = map[string]any{"execution": map[string]any{"vcpu_count": "two"}}
		}), "event_data.execution.vcpu_count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e2bhook.Parse([]byte(tc.body))
			if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
				t.Fatalf("code = %q (err %v), want %q", got, err, want)
			}
			var le *lifecycle.Error
			if !errors.As(err, &le) || !strings.Contains(le.Message, tc.field) {
				t.Errorf("message = %q, want it to name %q", le.Message, tc.field)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Run("RoundTripsEveryType", func(t *testing.T) {
		for _, typ := range allTypes {
			want := event(typ)
			got, err := e2bhook.Parse(MustBuild(t, want))
			if err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
			if !sameEvent(got, want) {
				t.Errorf("%s: parsed %+v, want %+v", typ, got, want)
			}
		}
	})
	t.Run("DocumentedFieldNames", func(t *testing.T) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(MustBuild(t, event(lifecycle.ProviderEventUpdated)), &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"event_category", "event_data", "event_label", "id", "sandbox_build_id", "sandbox_execution_id",
			"sandbox_id", "sandbox_team_id", "sandbox_template_id", "timestamp", "type", "version"}
		if !slices.Equal(keys, want) {
			t.Errorf("keys = %v, want %v", keys, want)
		}
		var data map[string]json.RawMessage
		if err := json.Unmarshal(m["event_data"], &data); err != nil {
			t.Fatal(err)
		}
		if got, want := string(data["sandbox_metadata"]), `{"k":"v"}`; got != want {
			t.Errorf("sandbox_metadata = %s, want %s", got, want)
		}
		if got, want := string(data["set_timeout"]), `"2026-01-02T03:19:05.123456789Z"`; got != want { // the end time
			t.Errorf("set_timeout = %s, want %s", got, want)
		}
		if got, want := string(m["event_label"]), `"update"`; got != want {
			t.Errorf("event_label = %s, want %s", got, want)
		}
	})
	t.Run("MetadataAbsentWhenNone", func(t *testing.T) {
		// E2B leaves sandbox_metadata out for a sandbox without metadata.
		b, err := e2bhook.Build(e2bhook.NewBody(event(lifecycle.ProviderEventCreated), nil))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), `sandbox_metadata`) {
			t.Errorf("body %s, want no sandbox_metadata", b)
		}
	})
	t.Run("ErrUnknownType", func(t *testing.T) {
		_, err := e2bhook.Build(e2bhook.NewBody(lifecycle.ProviderEvent{ID: "e", SandboxID: "s", Type: "exploded", Timestamp: time.Now()}, nil))
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
	t.Run("ErrMissingSandbox", func(t *testing.T) {
		ev := event(lifecycle.ProviderEventPaused)
		ev.SandboxID = ""
		_, err := e2bhook.Build(e2bhook.NewBody(ev, nil))
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
			t.Errorf("code = %q, want %q", got, want)
		}
	})
}

// FuzzVerifyAndParse feeds arbitrary bodies and signatures. It checks that
// nothing panics, Verify agrees with the doc's rule, Parse fails only with
// CodeInvalid, and whatever Parse accepts is a well-formed event that
// survives NewBody, Build and Parse again unchanged.
func FuzzVerifyAndParse(f *testing.F) {
	f.Add([]byte(killedBody), "")
	f.Add([]byte(killedBody), docSign(secret, []byte(killedBody)))
	for _, typ := range allTypes {
		b := MustBuild(f, event(typ))
		f.Add(b, docSign(secret, b))
	}
	for _, s := range []string{
		``, `{`, `[]`, `null`, `"x"`, `{}`, `{"version":"v2"}`, killedBody + `{}`,
		`{"id":"e","version":"v2","type":"sandbox.lifecycle.updated","timestamp":"2026-01-02T03:04:05Z","sandbox_id":"s","event_data":{"set_timeout":"2026-01-02T04:04:05Z"}}`,
		`{"id":"e","version":"v2","type":"sandbox.lifecycle.updated","timestamp":"2026-01-02T03:04:05Z","sandbox_id":"s","event_data":{"set_timeout":1e308}}`,
		`{"id":"e","version":"v2","type":"sandbox.lifecycle.killed","timestamp":"9999-12-31T23:59:59-23:59","sandbox_id":"\u0000"}`,
		`{"id":"\xff\xfe","version":"v2","type":"sandbox.lifecycle.created","timestamp":"0001-01-01T00:00:00Z","sandbox_id":"s"}`,
	} {
		f.Add([]byte(s), "tJFQdfg5psGiJ_y77DcZUPOlz8q_8ijOnqGZQ-cHZzs")
	}
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		if got, want := e2bhook.Verify(secret, body, sig), sig == docSign(secret, body); got != want {
			t.Fatalf("Verify = %v, want %v", got, want)
		}
		if !e2bhook.Verify(secret, body, e2bhook.Sign(secret, body)) {
			t.Fatal("Verify of Sign's own signature = false")
		}
		ev, err := e2bhook.Parse(body)
		if err != nil {
			if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
				t.Fatalf("code = %q, want %q", got, want)
			}
			return
		}
		if ev.ID == "" || ev.SandboxID == "" || ev.Provider != "e2b" || ev.Timestamp.Year() < 2000 || ev.Timestamp.Location() != time.UTC {
			t.Fatalf("accepted a malformed event %+v", ev)
		}
		if !slices.Contains(allTypes, ev.Type) {
			t.Fatalf("accepted unknown type %q", ev.Type)
		}
		if ev.Timeout < 0 || ev.Timeout > e2bhook.MaxTimeout || ev.Timeout%time.Second != 0 {
			t.Fatalf("Timeout = %v, want whole seconds within bounds", ev.Timeout)
		}
		rebuilt, err := e2bhook.Build(e2bhook.NewBody(ev, nil))
		if err != nil {
			t.Fatalf("rebuild %+v: %v", ev, err)
		}
		again, err := e2bhook.VerifyAndParse(secret, e2bhook.Header(secret, "wh", "dl", rebuilt), rebuilt)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if !sameEvent(again, ev) {
			t.Fatalf("round trip changed the event: %+v became %+v", ev, again)
		}
	})
}

// The tests below each check one webhook fact of docs/providers/e2b.md "Checked
// against the real spec"; each failed on the parser before it followed it.

func TestFactUnknownTypeIsIgnored(t *testing.T) {
	for _, typ := range []string{e2bhook.TypeCheckpointed, "sandbox.lifecycle.teleported"} {
		body := `{"id":"e1","version":"v2","type":"` + typ + `","timestamp":"2026-01-02T03:04:05Z","sandbox_id":"s1","event_data":{}}`
		_, err := e2bhook.Parse([]byte(body))
		if !errors.Is(err, e2bhook.ErrIgnoredType) {
			t.Errorf("%s: err = %v, want ErrIgnoredType", typ, err)
		}
	}
}

func TestFactOptionalFieldsAbsent(t *testing.T) {
	body := `{"id":"e1","version":"v2","type":"sandbox.lifecycle.paused","timestamp":"2026-01-02T03:04:05Z","sandbox_id":"s1"}`
	ev, err := e2bhook.Parse([]byte(body))
	if err != nil {
		t.Fatalf("no event_category, event_label or event_data: %v", err)
	}
	if ev.Type != lifecycle.ProviderEventPaused || ev.SandboxID != "s1" {
		t.Errorf("event = %+v", ev)
	}
}

func TestFactSetTimeoutIsEndTime(t *testing.T) {
	body := `{"id":"e1","version":"v2","type":"sandbox.lifecycle.updated","timestamp":"2026-01-02T03:04:05Z",` +
		`"sandbox_id":"s1","event_data":{"set_timeout":"2026-01-02T03:34:05Z"}}`
	ev, err := e2bhook.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ev.Timestamp.Add(ev.Timeout), time.Date(2026, 1, 2, 3, 34, 5, 0, time.UTC); !got.Equal(want) {
		t.Errorf("end = %v, want %v", got, want)
	}
	built := e2bhook.NewBody(lifecycle.ProviderEvent{ID: "e", SandboxID: "s", Type: lifecycle.ProviderEventUpdated,
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Timeout: 30 * time.Minute}, nil)
	if got, want := string(built.EventData.SetTimeout), `"2026-01-02T03:34:05Z"`; got != want {
		t.Errorf("NewBody set_timeout = %s, want %s", got, want)
	}
}

func TestFactV1CamelCaseBody(t *testing.T) {
	// The shape E2B's public docs show.
	body := `{
  "version": "v1",
  "id": "evt-1",
  "type": "sandbox.lifecycle.killed",
  "eventData": {
    "sandbox_metadata": {"sandman_session_id": "ses_1"},
    "execution": {"started_at": "2025-08-06T20:58:24Z", "vcpu_count": 2, "memory_mb": 512, "execution_time": 1000},
    "kill_reason": "timeout"
  },
  "sandboxBuildId": "build-1",
  "sandboxExecutionId": "exec-1",
  "sandboxId": "isbx1",
  "sandboxTeamId": "team-1",
  "sandboxTemplateId": "base",
  "timestamp": "2025-08-06T20:59:24Z"
}`
	ev, err := e2bhook.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := lifecycle.ProviderEvent{ID: "evt-1", Provider: e2bhook.Provider, Type: lifecycle.ProviderEventKilled,
		SandboxID: "isbx1", Timestamp: time.Date(2025, 8, 6, 20, 59, 24, 0, time.UTC), KillReason: "timeout"}
	if ev != want {
		t.Errorf("event = %+v, want %+v", ev, want)
	}
}
