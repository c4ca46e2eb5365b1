package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

// TestFakeCommand: `sandman fake <provider>` serves each provider's fake on
// a free port, answers an authorised request of that provider's API, logs a
// line per request, and stops when ctx ends.
func TestFakeCommand(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body, header, value string
		want                                    int
	}{
		{"e2b", http.MethodPost, "/v2/sandboxes", `{"templateID":"base"}`, "X-API-Key", "e2b_test_key", http.StatusCreated},
		{"daytona", http.MethodGet, "/sandbox", "", "Authorization", "Bearer " + daytonatest.DefaultAPIKey, http.StatusOK},
		{"vercel", http.MethodGet, "/v2/sandboxes?teamId=" + verceltest.DefaultTeamID + "&project=" + verceltest.DefaultProjectID,
			"", "Authorization", "Bearer " + verceltest.DefaultToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			outR, outW := io.Pipe()
			logs := &syncWriter{b: &strings.Builder{}}
			done := make(chan error, 1)
			go func() { done <- fakeCommand(ctx, []string{tc.name, "-addr", "127.0.0.1:0"}, outW, logs) }()
			line, err := bufio.NewReader(outR).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = io.Copy(io.Discard, outR) }()
			base := strings.TrimSpace(strings.TrimPrefix(line, "fake "+tc.name+" listening on "))
			req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			req.Header.Set(tc.header, tc.value)
			client := &http.Client{Timeout: 5 * time.Second}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.StatusCode; got != tc.want {
				t.Errorf("%s %s: %d, want %d", tc.method, tc.path, got, tc.want)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("fakeCommand: %v", err)
			}
			path, _, _ := strings.Cut(tc.path, "?")
			if !strings.Contains(logs.String(), "path="+path) {
				t.Errorf("no request log line in %q", logs.String())
			}
		})
	}
	if err := fakeCommand(context.Background(), []string{"nosuch"}, io.Discard, io.Discard); err == nil {
		t.Error("fake nosuch: no error")
	}
}

// syncWriter lets the fake's handler goroutines log into one builder.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestFakeDaytonaServesItsToolboxAndLocalPreviews: `sandman fake daytona`
// points toolboxProxyUrl at its own /toolbox, and with -local-previews
// hands out preview URLs on its own address, so a local stack reaches both.
func TestFakeDaytonaServesItsToolboxAndLocalPreviews(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- fakeCommand(ctx, []string{"daytona", "-addr", "127.0.0.1:0", "-local-previews", "-boot-delay", "1s"}, outW, io.Discard)
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	base := strings.TrimSpace(strings.TrimPrefix(line, "fake daytona listening on "))
	call := func(method, path string) map[string]any {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+daytonatest.DefaultAPIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, err)
		}
		return out
	}
	sb := call(http.MethodPost, "/sandbox")
	if got := sb["toolboxProxyUrl"]; got != base+"/toolbox" {
		t.Errorf("toolboxProxyUrl = %v, want %s/toolbox", got, base)
	}
	link := call(http.MethodGet, "/sandbox/"+sb["id"].(string)+"/ports/3000/preview-url")
	if u, _ := link["url"].(string); !strings.HasPrefix(u, base+"/preview/3000-") {
		t.Errorf("preview url = %q, want one on %s/preview/", u, base)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("fakeCommand: %v", err)
	}
}
