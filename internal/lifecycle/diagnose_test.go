package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestHTTPPreviewProber: the default preview probe reports the status of a
// GET, and an error when nothing answers.
func TestHTTPPreviewProber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	probe := lifecycle.HTTPPreviewProber(srv.Client())
	if code, err := probe(t.Context(), srv.URL+"/"); err != nil || code != 200 {
		t.Errorf("probe of a serving preview = %d, %v; want 200", code, err)
	}
	if code, err := probe(t.Context(), srv.URL+"/broken"); err != nil || code != 502 {
		t.Errorf("probe of a broken preview = %d, %v; want 502", code, err)
	}
	url := srv.URL
	srv.Close()
	if _, err := probe(t.Context(), url); err == nil {
		t.Errorf("probe of a closed server answered")
	}
}

// previewAnswers is a PreviewProber whose preview answers code (or err).
func previewAnswers(code int, err error) lifecycle.PreviewProber {
	return func(context.Context, string) (int, error) { return code, err }
}

// TestDiagnoseVerdicts: Diagnose compares the table, the provider and the
// preview and says which agree, or what disagrees and what reconciles it
// (docs/DESIGN.md "Operators").
func TestDiagnoseVerdicts(t *testing.T) {
	tests := []struct {
		name      string
		arrange   func(e *env, sess *lifecycle.Session)
		probe     lifecycle.PreviewProber
		wantAgree bool
		want      string
	}{
		{name: "RunningAndServing", probe: previewAnswers(200, nil), wantAgree: true, want: lifecycle.VerdictAgreeRunning},
		{name: "PreviewBroken", probe: previewAnswers(502, nil),
			want: fmt.Sprintf(lifecycle.VerdictPreviewNotAnswered, "the preview answered HTTP 502")},
		{name: "PreviewUnreachable", probe: previewAnswers(0, errors.New("connection refused")),
			want: fmt.Sprintf(lifecycle.VerdictPreviewNotAnswered, "connection refused")},
		{name: "PausedOutsideSandman", probe: previewAnswers(200, nil), want: lifecycle.VerdictRunningPaused,
			arrange: func(e *env, sess *lifecycle.Session) { e.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused) }},
		{name: "SandboxGone", probe: previewAnswers(200, nil), want: fmt.Sprintf(lifecycle.VerdictGone, lifecycle.StateRunning),
			arrange: func(e *env, sess *lifecycle.Session) { e.fake.Forget(sess.SandboxID) }},
		{name: "ProviderSilent", probe: previewAnswers(200, nil),
			arrange: func(e *env, _ *lifecycle.Session) { e.fake.FailNext(fake.OpGet, lifecycle.ErrProviderTransient) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sess := e.mustCreate(t, lifecycle.CreateInput{})
			if tc.arrange != nil {
				tc.arrange(e, sess)
			}
			d, err := e.svc.Diagnose(t.Context(), acct, sess.ID, tc.probe)
			if err != nil {
				t.Fatalf("diagnose: %v", err)
			}
			if d.Agree != tc.wantAgree {
				t.Errorf("agree %v, want %v (%s)", d.Agree, tc.wantAgree, d.Verdict)
			}
			if tc.want != "" && d.Verdict != tc.want {
				t.Errorf("verdict %q, want %q", d.Verdict, tc.want)
			}
			if tc.name == "ProviderSilent" && (d.Provider.Error == "" || !strings.HasPrefix(d.Verdict, "the provider did not answer")) {
				t.Errorf("provider error %q, verdict %q: want the provider's failure reported", d.Provider.Error, d.Verdict)
			}
		})
	}
}

// TestDiagnosePausedAndExpired: a paused session whose sandbox is paused
// agrees without probing the preview; an expired one that holds no sandbox
// has nothing to compare.
func TestDiagnosePausedAndExpired(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	probed := false
	probe := func(context.Context, string) (int, error) { probed = true; return 200, nil }
	d, err := e.svc.Diagnose(t.Context(), acct, sess.ID, probe)
	if err != nil {
		t.Fatalf("diagnose paused: %v", err)
	}
	if !d.Agree || d.Verdict != lifecycle.VerdictAgreePaused || probed {
		t.Errorf("paused: agree %v, verdict %q, preview probed %v; want agree, %q, not probed", d.Agree, d.Verdict, probed, lifecycle.VerdictAgreePaused)
	}
	e.fake.Forget(sess.SandboxID)
	if res, err := e.svc.Reconnect(t.Context(), acct, sess.ID); err != nil || res.Status != lifecycle.ReconnectExpired {
		t.Fatalf("reconnect to a gone sandbox: %+v, %v; want expired (setup)", res, err)
	}
	d, err = e.svc.Diagnose(t.Context(), acct, sess.ID, probe)
	if err != nil {
		t.Fatalf("diagnose expired: %v", err)
	}
	if want := fmt.Sprintf(lifecycle.VerdictFinal, lifecycle.StateExpired); !d.Agree || d.Verdict != want || d.Provider.Checked {
		t.Errorf("expired: agree %v, verdict %q, provider checked %v; want agree, %q, unchecked", d.Agree, d.Verdict, d.Provider.Checked, want)
	}
}

// TestDiagnoseOtherAccount: an operator of another account learns nothing
// of the session (not_found, as every other read).
func TestDiagnoseOtherAccount(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	_, err := e.svc.Diagnose(t.Context(), "acct_other", sess.ID, previewAnswers(200, nil))
	if got := lifecycle.ErrorCode(err); got != lifecycle.CodeNotFound && got != lifecycle.CodeForbidden {
		t.Errorf("diagnose of another account's session: code %s (%v), want not_found or forbidden", got, err)
	}
}
