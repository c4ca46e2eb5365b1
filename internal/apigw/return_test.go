package apigw_test

import (
	"testing"
)

// TestCreateResumeOnReturn: resume_on_return defaults to on while presence
// is on, off with presence off, and as given otherwise; the session body
// shows it (docs/WAKE.md "Resume on return").
func TestCreateResumeOnReturn(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"template":"base"}`, true},
		{`{"template":"base","away_timeout_seconds":0}`, false},
		{`{"template":"base","resume_on_return":false}`, false},
		{`{"template":"base","away_timeout_seconds":0,"resume_on_return":true}`, true},
	} {
		got := h.mustCreate(t, withBody(c.body))
		if got.ResumeOnReturn != c.want {
			t.Errorf("%s: resume_on_return %v, want %v", c.body, got.ResumeOnReturn, c.want)
		}
		if stored := h.mustSession(t, got.ID).ResumeOnReturn; stored != c.want {
			t.Errorf("%s: stored resume_on_return %v, want %v", c.body, stored, c.want)
		}
	}
}
