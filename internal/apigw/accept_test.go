package apigw

import "testing"

// TestPrefersHTMLAccept: a page only for an Accept that names text/html
// (or text/*) above zero and at least as high as JSON, the first named
// winning a tie.
func TestPrefersHTMLAccept(t *testing.T) {
	for accept, want := range map[string]bool{
		"": false, "*/*": false, "application/json": false, "text/plain": false,
		"text/html": true, "TEXT/HTML": true, "text/*": true,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"application/json, text/html":                                     false,
		"text/html, application/json":                                     true,
		"application/json;q=0.5, text/html":                               true,
		"application/json, text/html;q=0.9":                               false,
		"text/html;q=0":                                                   false,
		"text/html;q=0.2, */*;q=0.1":                                      true,
		"*/*, text/html;q=0.5":                                            false,
		"text/html;q=0.5, application/*;q=0.9":                            false,
		"not a media type, text/html":                                     true,
	} {
		if got := prefersHTMLAccept(accept); got != want {
			t.Errorf("prefersHTMLAccept(%q) = %v, want %v", accept, got, want)
		}
	}
}
