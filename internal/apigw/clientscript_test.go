package apigw_test

import (
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/webclient"
)

// TestClientScript: GET /v1/sandman.js answers the embedded module to
// anyone, as JavaScript that may be cached with its ETag, and 304 to a
// request naming that ETag.
func TestClientScript(t *testing.T) {
	t.Parallel()
	h := MustHarness(t)
	want, err := fs.ReadFile(webclient.Files, "sandman.js")
	if err != nil {
		t.Fatal(err)
	}
	r := h.invoke(t, MustEvent(t, "sandman-js.json", withKey("")))
	wantStatus(t, r, http.StatusOK)
	if r.body != string(want) {
		t.Error("the served module differs from internal/webclient's sandman.js")
	}
	for name, want := range map[string]string{
		"Content-Type":                "text/javascript; charset=utf-8",
		"Cache-Control":               "public, max-age=300",
		"Access-Control-Allow-Origin": "*",
	} {
		if got := r.headers[name]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	etag := r.headers["ETag"]
	if !strings.HasPrefix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag = %q, want a quoted tag", etag)
	}

	for name, c := range map[string]struct {
		match string
		want  int
	}{
		"SameTag":     {etag, http.StatusNotModified},
		"WeakSameTag": {"W/" + etag, http.StatusNotModified},
		"InAList":     {`"old", ` + etag, http.StatusNotModified},
		"OtherTag":    {`"0123456789"`, http.StatusOK},
		"NoTag":       {"", http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			patches := []func(*events.APIGatewayV2HTTPRequest){}
			if c.match != "" {
				patches = append(patches, withHeader("if-none-match", c.match), withKey(""))
			}
			r := h.invoke(t, MustEvent(t, "sandman-js.json", patches...))
			wantStatus(t, r, c.want)
			if c.want == http.StatusNotModified && r.body != "" {
				t.Errorf("304 with a body of %d bytes", len(r.body))
			}
			if r.headers["ETag"] != etag {
				t.Errorf("ETag = %q, want %q", r.headers["ETag"], etag)
			}
		})
	}
}
