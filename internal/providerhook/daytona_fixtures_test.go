package providerhook_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/provider/hookwire/daytonahook"
	"github.com/sandmanhq/sandman/internal/providerhook"
)

// Daytona fixture constants; events/webhooks/README.md documents them.
const (
	// DaytonaTestSecret is the Svix endpoint secret that signs every Daytona
	// fixture: "whsec_" and the base64 of "sandman-daytona-test-secret-0001".
	// It is a test value, never a real one.
	DaytonaTestSecret = "whsec_c2FuZG1hbi1kYXl0b25hLXRlc3Qtc2VjcmV0LTAwMDE="
	// DaytonaOrgID is the organizationId of every Daytona fixture.
	DaytonaOrgID = "org_sandman_test"
)

// daytonaFixtureDir holds the Daytona fixtures, next to E2B's.
var daytonaFixtureDir = filepath.Join(fixtureDir, "daytona")

// daytonaFixture is one Daytona delivery: its body, its svix-id, and when
// Svix sent it (svix-timestamp: a second after the event).
type daytonaFixture struct {
	name   string // daytona-<what>
	msgID  string
	sentAt time.Time
	body   daytonahook.Body
}

// daytonaFixtures returns the sample deliveries of sandbox FixtureSandboxID
// in time order, 2026-01-15 UTC: created 10:00, stopped 10:10 (started →
// stopped), started 10:20 (stopped → started), destroyed 10:30, and a
// snapshot.created at 10:31 that is acknowledged and ignored.
func daytonaFixtures() []daytonaFixture {
	at := func(d time.Duration) time.Time { return fixtureStart.Add(d) }
	state := func(n int, name, from, to string, d time.Duration) daytonaFixture {
		return daytonaFixture{name: "daytona-" + name, msgID: fmt.Sprintf("msg_2sandmanfixture%04d", n), sentAt: at(d + time.Second),
			body: daytonahook.NewStateBody(FixtureSandboxID, DaytonaOrgID, from, to, at(d))}
	}
	created := daytonaFixture{name: "daytona-created", msgID: "msg_2sandmanfixture0001", sentAt: at(time.Second),
		body: daytonahook.Body{Event: daytonahook.TypeSandboxCreated, Timestamp: at(0).Format(time.RFC3339Nano),
			ID: FixtureSandboxID, OrganizationID: DaytonaOrgID, State: "started", SandboxClass: "container",
			CreatedAt: at(0).Format(time.RFC3339Nano)}}
	snapshot := daytonaFixture{name: "daytona-snapshot-created", msgID: "msg_2sandmanfixture0005", sentAt: at(31*time.Minute + time.Second),
		body: daytonahook.Body{Event: daytonahook.TypeSnapshotCreated, Timestamp: at(31 * time.Minute).Format(time.RFC3339Nano),
			ID: "snap_0001", OrganizationID: DaytonaOrgID}}
	return []daytonaFixture{
		created,
		state(2, "stopped", "started", "stopped", 10*time.Minute),
		state(3, "started", "stopped", "started", 20*time.Minute),
		state(4, "destroyed", "stopped", "destroyed", 30*time.Minute),
		snapshot,
	}
}

// MustDaytonaBody encodes b as the exact bytes Daytona would send.
func MustDaytonaBody(tb testing.TB, b daytonahook.Body) []byte {
	tb.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		tb.Fatalf("encode daytona body: %v", err)
	}
	return raw
}

// DaytonaHeaders returns the lowercase headers of a Svix delivery of raw,
// message msgID sent at sentAt, signed with secret.
func DaytonaHeaders(tb testing.TB, secret, msgID string, sentAt time.Time, raw []byte) map[string]string {
	tb.Helper()
	h := map[string]string{
		"content-type":   "application/json",
		"content-length": strconv.Itoa(len(raw)),
		"host":           "sandman.example.test",
		"user-agent":     "Svix-Webhooks/1.0",
	}
	signed, err := daytonahook.Header(secret, msgID, sentAt, raw)
	if err != nil {
		tb.Fatalf("sign daytona delivery: %v", err)
	}
	for k, vs := range signed {
		h[strings.ToLower(k)] = vs[0]
	}
	return h
}

// generatedDaytona is every Daytona fixture file by name.
func generatedDaytona(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	sigs := map[string]daytonaSignature{}
	for _, f := range daytonaFixtures() {
		raw := MustDaytonaBody(tb, f.body)
		files[f.name+".json"] = raw
		sig, err := daytonahook.Sign(DaytonaTestSecret, f.msgID, f.sentAt, raw)
		if err != nil {
			tb.Fatal(err)
		}
		sigs[f.name+".json"] = daytonaSignature{ID: f.msgID, Timestamp: f.sentAt.Unix(), Signature: sig}
		req := NewRequest(providerhook.DaytonaName, DaytonaHeaders(tb, DaytonaTestSecret, f.msgID, f.sentAt, raw), raw, false)
		req.RequestContext.HTTP.UserAgent = "Svix-Webhooks/1.0"
		req.RequestContext.TimeEpoch = f.sentAt.UnixMilli()
		req.RequestContext.Time = f.sentAt.Format("02/Jan/2006:15:04:05 -0700")
		files["apigw-"+f.name+".json"] = mustIndent(tb, req)
	}
	files["signatures.json"] = mustIndent(tb, daytonaManifest{Secret: DaytonaTestSecret, Signatures: sigs})
	return files
}

// daytonaManifest is events/webhooks/daytona/signatures.json.
type daytonaManifest struct {
	Secret     string                      `json:"secret"`
	Signatures map[string]daytonaSignature `json:"signatures"`
}

// daytonaSignature is what Svix signs a body with: svix-id,
// svix-timestamp (Unix seconds) and svix-signature.
type daytonaSignature struct {
	ID        string `json:"svix_id"`
	Timestamp int64  `json:"svix_timestamp"`
	Signature string `json:"svix_signature"`
}

// MustDaytonaRequest reads a Daytona request fixture.
func MustDaytonaRequest(tb testing.TB, name string) events.APIGatewayV2HTTPRequest {
	tb.Helper()
	return MustFixtureRequest(tb, filepath.Join("daytona", name))
}

// TestDaytonaFixtures keeps events/webhooks/daytona in step with the
// generator (`go generate ./internal/providerhook/` rewrites it) and checks that
// every fixture on disk verifies under the test secret at its send time.
func TestDaytonaFixtures(t *testing.T) {
	want := generatedDaytona(t)
	if *update {
		if err := os.MkdirAll(daytonaFixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(daytonaFixtureDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("UpToDate", func(t *testing.T) {
		for name, b := range want {
			got, err := os.ReadFile(filepath.Join(daytonaFixtureDir, name))
			if err != nil {
				t.Errorf("%v (run `go generate ./internal/providerhook/`)", err)
				continue
			}
			if !bytes.Equal(got, b) {
				t.Errorf("%s differs from the generator's output; run `go generate ./internal/providerhook/`", name)
			}
		}
	})
	t.Run("SignaturesVerify", func(t *testing.T) {
		var m daytonaManifest
		mustReadJSON(t, filepath.Join(daytonaFixtureDir, "signatures.json"), &m)
		if m.Secret != DaytonaTestSecret || len(m.Signatures) != 5 {
			t.Fatalf("manifest: secret %q, %d signatures; want the test secret and 5", m.Secret, len(m.Signatures))
		}
		for name, sig := range m.Signatures {
			raw, err := os.ReadFile(filepath.Join(daytonaFixtureDir, name))
			if err != nil {
				t.Fatal(err)
			}
			sent := time.Unix(sig.Timestamp, 0)
			v, err := daytonahook.NewVerifier(DaytonaTestSecret, fixedClock(sent))
			if err != nil {
				t.Fatal(err)
			}
			h := DaytonaHeaders(t, DaytonaTestSecret, sig.ID, sent, raw)
			if h[daytonahook.HeaderSignature] != sig.Signature {
				t.Errorf("%s: signature %q, want %q", name, sig.Signature, h[daytonahook.HeaderSignature])
			}
			if _, err := v.Verify(canonicalHeader(h), raw); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			req := MustDaytonaRequest(t, "apigw-"+name)
			if req.Body != string(raw) || req.Headers[daytonahook.HeaderSignature] != sig.Signature {
				t.Errorf("apigw-%s does not carry %s and its signature", name, name)
			}
			if _, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sig.Signature, "v1,")); err != nil {
				t.Errorf("%s: signature is not v1,<base64>: %v", name, err)
			}
		}
	})
}

// fixedClock is a lifecycle.Clock stopped at one time.
type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// canonicalHeader turns lowercase header names into an http.Header.
func canonicalHeader(h map[string]string) http.Header {
	out := http.Header{}
	for k, v := range h {
		out.Set(k, v)
	}
	return out
}
