// Package jsonl is the local lifecycle.Publisher: it appends each lifecycle
// event to a file as one JSON line shaped like the event EventBridge would
// deliver to a rule's target (docs/DESIGN.md "Events out": "Locally the publisher
// writes the same events as JSON lines"), so a local consumer can read what a
// production one would receive:
//
//	{"version":"0","id":"<uuid>","detail-type":"Session Paused","source":"sandman",
//	 "time":"2026-03-01T12:00:00Z","detail":{"session_id":"ses_…","account_id":"acc_…",
//	 "from":"running","to":"paused","version":3,"reason":"idle","time":"2026-03-01T12:00:00Z"}}
//
// The detail is lifecycle.Event's JSON, the same bytes the EventBridge
// publisher sends as Detail. Lines are written whole, one write per line, to
// a file opened with O_APPEND, under a mutex: concurrent Publish calls in one
// process never interleave, and neither do several processes appending to the
// same file (each line is well under the size an append writes atomically on
// a local file system).
package jsonl

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.Publisher = (*Publisher)(nil)

// DefaultPath is where Open writes when given no path, relative to the
// working directory.
const DefaultPath = ".sandman/events.jsonl"

// envelopeVersion is EventBridge's envelope version, always "0".
const envelopeVersion = "0"

// envelope is one line of the file, after EventBridge's event envelope.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     lifecycle.Event `json:"detail"`
}

// Config is what a Publisher is opened with (Open). Every zero field means
// the default named on it, filled in once by Open.
type Config struct {
	// Path is the file appended to. Default DefaultPath.
	Path string
	// Fsync makes every Publish call fsync the file after its lines, so an
	// event that Publish reported sent survives a crash of the machine.
	// Default false: the local stack does not need it and it costs a disk
	// flush per call.
	Fsync bool
}

// Publisher appends lifecycle events to a JSON-lines file. Build it with
// Open and Close it when done; it is safe for concurrent use.
type Publisher struct {
	path  string
	fsync bool

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// Open opens (creating it, and its directory, if needed) the file at
// cfg.Path for appending, with the defaults of Config filled in. The
// directory is created 0755, the file 0644. Errors: the file system's,
// wrapped with the path.
func Open(cfg Config) (*Publisher, error) {
	path := cfg.Path
	if path == "" {
		path = DefaultPath
	}
	p := &Publisher{path: path, fsync: cfg.Fsync}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create events directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open events file: %w", err)
	}
	p.f = f
	return p, nil
}

// Path returns the file the publisher appends to.
func (p *Publisher) Path() string { return p.path }

// Publish appends one line per event, in order. It stops at the first
// failure and returns an error naming how many of the events were not
// written; lines already written stay. It checks ctx before each line.
// Errors: ctx's, the file system's, or ErrClosed after Close.
func (p *Publisher) Publish(ctx context.Context, events ...lifecycle.Event) error {
	if len(events) == 0 {
		return nil
	}
	lines := make([][]byte, len(events))
	for i, ev := range events {
		line, err := encode(ev)
		if err != nil {
			return fmt.Errorf("publish %d events: encode event for session %s: %w", len(events), ev.SessionID, err)
		}
		lines[i] = line
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("publish %d events: %w", len(events), ErrClosed)
	}
	for i, line := range lines {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("publish: %d of %d events not written: %w", len(lines)-i, len(lines), err)
		}
		if _, err := p.f.Write(line); err != nil {
			return fmt.Errorf("publish: %d of %d events not written to %s: %w", len(lines)-i, len(lines), p.path, err)
		}
	}
	if p.fsync {
		if err := p.f.Sync(); err != nil {
			return fmt.Errorf("publish: sync %s: %w", p.path, err)
		}
	}
	return nil
}

// Close closes the file. Publish after Close fails with ErrClosed; a second
// Close does nothing.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.f.Close(); err != nil {
		return fmt.Errorf("close events file %s: %w", p.path, err)
	}
	return nil
}

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("events file is closed")

// encode returns ev's line, newline included.
func encode(ev lifecycle.Event) ([]byte, error) {
	line, err := json.Marshal(envelope{
		Version:    envelopeVersion,
		ID:         newID(),
		DetailType: ev.DetailType(),
		Source:     lifecycle.EventSource,
		Time:       ev.Time.UTC().Truncate(time.Second),
		Detail:     ev,
	})
	if err != nil {
		return nil, fmt.Errorf("marshal event: %w", err)
	}
	return append(line, '\n'), nil
}

// newID returns a random (version 4) UUID, as EventBridge gives each event.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24: it crashes the program instead
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
