package lifecycle

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReadyURLKeepsThePreviewQuery: the ready path joins the preview URL's
// path, and a query on the preview URL (Daytona's preview token) is kept
// whole, so the probe is not sent to the sign-in page.
func TestReadyURLKeepsThePreviewQuery(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"https://3000-sb.proxy.daytona.works?DAYTONA_SANDBOX_AUTH_KEY=tok", "/",
			"https://3000-sb.proxy.daytona.works/?DAYTONA_SANDBOX_AUTH_KEY=tok"},
		{"http://127.0.0.1:9100/preview/3000-sb/?DAYTONA_SANDBOX_AUTH_KEY=tok", "/health",
			"http://127.0.0.1:9100/preview/3000-sb/health?DAYTONA_SANDBOX_AUTH_KEY=tok"},
		{"https://3000-sb.e2b.app", "/", "https://3000-sb.e2b.app/"},
		{"http://127.0.0.1:4100/", "/ready?deep=1", "http://127.0.0.1:4100/ready?deep=1"},
		{"https://x.vercel.run?a=1", "/ready?deep=1", "https://x.vercel.run/ready?a=1&deep=1"},
	} {
		if got := readyURL(c.base, c.path); got != c.want {
			t.Errorf("readyURL(%q, %q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
}

// TestWithOutputKeepsTheReasonAndTheOutputsEnd: a failed readiness detail
// fits in MaxReadinessDetail with its reason whole and the output's end
// kept, so an open can tell the reason from the output lines.
func TestWithOutputKeepsTheReasonAndTheOutputsEnd(t *testing.T) {
	reason := "the start command exited with code 1 before the preview answered"
	long := strings.Repeat("é", MaxReadinessDetail) + "\nthe last line"
	got := withOutput(reason, long)
	if len(got) > MaxReadinessDetail || !utf8.ValidString(got) {
		t.Fatalf("detail of %d bytes (valid UTF-8: %v), want at most %d", len(got), utf8.ValidString(got), MaxReadinessDetail)
	}
	why, output, ok := strings.Cut(got, outputSeparator)
	if !ok || why != reason || !strings.HasSuffix(output, "the last line") || !strings.HasPrefix(output, "…") {
		t.Errorf("reason %q, output %.40q…; want the reason whole and the output's end after a cut", why, output)
	}
	if got := withOutput(reason, "  "); got != reason {
		t.Errorf("with no output: %q, want the reason alone", got)
	}
}
