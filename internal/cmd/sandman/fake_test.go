package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFakeCommand: `sandman fake e2b` serves the fake E2B on a free port,
// answers a v2 create, logs a line per request, and stops when ctx ends.
func TestFakeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	logs := &syncWriter{b: &strings.Builder{}}
	done := make(chan error, 1)
	go func() { done <- fakeCommand(ctx, []string{"e2b", "-addr", "127.0.0.1:0"}, outW, logs) }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	base := strings.TrimSpace(strings.TrimPrefix(line, "fake e2b listening on "))
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("X-API-Key", "e2b_test_key")
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusCreated; got != want {
		t.Errorf("create: %d, want %d", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("fakeCommand: %v", err)
	}
	if !strings.Contains(logs.String(), "path=/v2/sandboxes") {
		t.Errorf("no request log line in %q", logs.String())
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
