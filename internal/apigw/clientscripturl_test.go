package apigw

import "testing"

// TestClientScriptURL: the waking page imports the client module from the
// API the link was opened on, keeping whatever comes before /v1.
func TestClientScriptURL(t *testing.T) {
	for link, want := range map[string]string{
		"/v1/sessions/ses_a/open":        "/v1/sandman.js",
		"/v1/sessions/ses_a/open/docs/x": "/v1/sandman.js",
		"/prod/v1/sessions/ses_a/open":   "/prod/v1/sandman.js",
		"/somewhere/else":                "/v1/sandman.js",
	} {
		if got := clientScriptURL(link); got != want {
			t.Errorf("clientScriptURL(%q) = %q, want %q", link, got, want)
		}
	}
}
