package local

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// pausedPreviewBound is how long a GET of a paused sandbox's preview may
// take: the front answers from the record and /proc, never from the
// stopped process.
const pausedPreviewBound = 2 * time.Second

// getWithin GETs url with a client bounded by pausedPreviewBound and
// returns the status, the FrontHeader value and the decoded body.
func getWithin(t *testing.T, url string) (int, string, frontJSON) {
	t.Helper()
	c := &http.Client{Timeout: pausedPreviewBound}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v (a paused preview must answer within %s)", url, err, pausedPreviewBound)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body frontJSON
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, resp.Header.Get(FrontHeader), body
}

// TestAPausedSandboxsPreviewAnswers502AtOnce: a paused local sandbox's
// preview (a web sandbox's, and an app's mapped port) answers 502 with
// E2B's proxy shape and FrontHeader "paused" within the bound, instead of
// accepting the connection and never answering; resumed, it serves the
// sandbox again; an app port nobody listens on answers "port-closed",
// which PortClosed recognises.
func TestAPausedSandboxsPreviewAnswers502AtOnce(t *testing.T) {
	p := MustProvider(t, Config{})
	ctx := MustContext(t)
	web := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateWeb})
	base := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	appURL, err := p.PortURL(ctx, base.ID, 3000)
	if err != nil {
		t.Fatal(err)
	}
	status, why, body := getWithin(t, appURL)
	if status != http.StatusBadGateway || why != FrontPortClosed || body.Port == 0 {
		t.Errorf("app port before the app listens = %d %q %+v, want 502 port-closed with the port", status, why, body)
	}
	resp := &http.Response{StatusCode: status, Header: http.Header{FrontHeader: {why}}}
	if !p.PortClosed(resp.StatusCode, resp.Header, nil) {
		t.Error("PortClosed does not recognise the front's port-closed answer")
	}
	if _, err := p.StartCommand(ctx, base.ID, appCommand(t)); err != nil {
		t.Fatal(err)
	}
	awaitAnswer(t, appURL)

	for _, sb := range []struct{ id, url string }{{web.ID, web.PreviewURL}, {base.ID, appURL}} {
		if err := p.Pause(ctx, sb.id); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		status, why, body := getWithin(t, sb.url)
		took := time.Since(start)
		if status != http.StatusBadGateway || why != FrontPaused || body.SandboxID != sb.id || body.Code != 502 {
			t.Errorf("paused %s at %s = %d %q %+v, want 502 paused naming the sandbox", sb.id, sb.url, status, why, body)
		}
		t.Logf("paused preview answered in %s", took.Round(time.Microsecond))
		if _, err := p.Resume(ctx, sb.id, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := HTTPGet(web.PreviewURL, 5*time.Second); err != nil {
		t.Errorf("resumed web preview: %v", err)
	}
	awaitAnswer(t, appURL)
}
