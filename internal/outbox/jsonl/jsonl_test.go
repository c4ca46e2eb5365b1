package jsonl_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox/jsonl"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// MustOpen opens a publisher with cfg and closes it when the test ends.
func MustOpen(tb testing.TB, cfg jsonl.Config) *jsonl.Publisher {
	tb.Helper()
	p, err := jsonl.Open(cfg)
	if err != nil {
		tb.Fatalf("open %s: %v", cfg.Path, err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// MustReadLines returns the file's lines, failing on a missing final newline.
func MustReadLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read %s: %v", path, err)
	}
	if len(data) == 0 {
		return nil
	}
	if data[len(data)-1] != '\n' {
		tb.Fatalf("%s does not end with a newline", path)
	}
	return bytes.Split(data[:len(data)-1], []byte("\n"))
}

func event(session string, to lifecycle.State, version int64) lifecycle.Event {
	return lifecycle.Event{
		SessionID: session, AccountID: "acc_1", SandboxID: "sbx_1",
		From: lifecycle.StateRunning, To: to, Version: version,
		Reason: lifecycle.ReasonIdle, Time: t0.Add(1500 * time.Millisecond),
	}
}

// line is what a consumer decodes from one line.
type line struct {
	Version    string `json:"version"`
	ID         string `json:"id"`
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Time       string `json:"time"`
	Detail     struct {
		EventID   string `json:"event_id"`
		SessionID string `json:"session_id"`
		AccountID string `json:"account_id"`
		SandboxID string `json:"sandbox_id"`
		From      string `json:"from"`
		To        string `json:"to"`
		Version   int64  `json:"version"`
		Reason    string `json:"reason"`
		Time      string `json:"time"`
	} `json:"detail"`
}

func TestPublishShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "events.jsonl")
	p := MustOpen(t, jsonl.Config{Path: path})
	if err := p.Publish(context.Background(), event("ses_1", lifecycle.StatePaused, 3)); err != nil {
		t.Fatalf("publish: %v", err)
	}
	lines := MustReadLines(t, path)
	if got, want := len(lines), 1; got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	var got line
	dec := json.NewDecoder(bytes.NewReader(lines[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode %s: %v", lines[0], err)
	}
	checks := []struct{ name, got, want string }{
		{"version", got.Version, "0"},
		{"source", got.Source, "sandman"},
		{"detail-type", got.DetailType, "Session Paused"},
		{"time", got.Time, "2026-03-01T12:00:01Z"},
		{"detail.session_id", got.Detail.SessionID, "ses_1"},
		{"detail.account_id", got.Detail.AccountID, "acc_1"},
		{"detail.sandbox_id", got.Detail.SandboxID, "sbx_1"},
		{"detail.from", got.Detail.From, "running"},
		{"detail.to", got.Detail.To, "paused"},
		{"detail.reason", got.Detail.Reason, "idle"},
		{"detail.time", got.Detail.Time, "2026-03-01T12:00:01.5Z"},
		{"detail.version", fmt.Sprint(got.Detail.Version), "3"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(got.ID) {
		t.Errorf("id = %q, want a version 4 UUID", got.ID)
	}
}

func TestPublishConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	p := MustOpen(t, jsonl.Config{Path: path, Fsync: true})
	const workers, calls = 8, 25 // each call publishes 2 events
	var wg sync.WaitGroup
	errs := make(chan error, workers*calls)
	for w := range workers {
		wg.Go(func() {
			for c := range calls {
				errs <- p.Publish(context.Background(),
					event(fmt.Sprintf("ses_%d_%d_a", w, c), lifecycle.StatePausing, 2),
					event(fmt.Sprintf("ses_%d_%d_b", w, c), lifecycle.StatePaused, 3))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("publish: %v", err)
		}
	}

	lines := MustReadLines(t, path)
	if got, want := len(lines), workers*calls*2; got != want {
		t.Fatalf("%d lines, want %d", got, want)
	}
	seen := make(map[string]bool)
	ids := make(map[string]bool)
	for i, raw := range lines {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %d is not JSON (%v): %s", i+1, err, raw)
		}
		if l.Source != "sandman" || l.DetailType == "" || l.Detail.SessionID == "" {
			t.Errorf("line %d lacks source, detail-type or session: %s", i+1, raw)
		}
		if seen[l.Detail.SessionID] {
			t.Errorf("session %s written twice", l.Detail.SessionID)
		}
		seen[l.Detail.SessionID] = true
		if ids[l.ID] {
			t.Errorf("event id %s used twice", l.ID)
		}
		ids[l.ID] = true
	}
}

func TestOpen(t *testing.T) {
	t.Run("DefaultPath", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		p := MustOpen(t, jsonl.Config{})
		if got, want := p.Path(), ".sandman/events.jsonl"; got != want {
			t.Errorf("Path() = %q, want %q", got, want)
		}
		if err := p.Publish(context.Background(), event("ses_1", lifecycle.StatePaused, 2)); err != nil {
			t.Fatalf("publish: %v", err)
		}
		if got := len(MustReadLines(t, filepath.Join(dir, ".sandman", "events.jsonl"))); got != 1 {
			t.Errorf("%d lines in the default file, want 1", got)
		}
	})
	t.Run("Appends", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		for i := range 2 {
			p := MustOpen(t, jsonl.Config{Path: path})
			if err := p.Publish(context.Background(), event(fmt.Sprint("ses_", i), lifecycle.StatePaused, 2)); err != nil {
				t.Fatalf("publish: %v", err)
			}
			if err := p.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		}
		if got, want := len(MustReadLines(t, path)), 2; got != want {
			t.Errorf("%d lines after two opens, want %d (reopening appends)", got, want)
		}
	})
	t.Run("ErrNotDirectory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := jsonl.Open(jsonl.Config{Path: filepath.Join(file, "events.jsonl")}); err == nil {
			t.Error("open under a regular file succeeded, want an error")
		}
	})
}

func TestPublishFailures(t *testing.T) {
	t.Run("ErrClosed", func(t *testing.T) {
		p := MustOpen(t, jsonl.Config{Path: filepath.Join(t.TempDir(), "events.jsonl")})
		if err := p.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := p.Publish(context.Background(), event("ses_1", lifecycle.StatePaused, 2)); !errors.Is(err, jsonl.ErrClosed) {
			t.Errorf("publish after close = %v, want ErrClosed", err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("second close = %v, want nil", err)
		}
	})
	t.Run("ContextDone", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		p := MustOpen(t, jsonl.Config{Path: path})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := p.Publish(ctx, event("ses_1", lifecycle.StatePaused, 2), event("ses_2", lifecycle.StatePaused, 2))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("publish = %v, want context.Canceled", err)
		}
		if err == nil || !regexp.MustCompile(`\b2 of 2 events not written`).MatchString(err.Error()) {
			t.Errorf("error %q does not say 2 of 2 events were not written", err)
		}
		if got := len(MustReadLines(t, path)); got != 0 {
			t.Errorf("%d lines written, want 0", got)
		}
	})
	t.Run("NoEvents", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		p := MustOpen(t, jsonl.Config{Path: path})
		if err := p.Publish(context.Background()); err != nil {
			t.Errorf("publish of nothing = %v", err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if bufio.NewScanner(f).Scan() {
			t.Error("publishing nothing wrote a line")
		}
	})
}
