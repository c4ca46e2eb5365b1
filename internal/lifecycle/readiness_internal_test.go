package lifecycle

import "testing"

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
