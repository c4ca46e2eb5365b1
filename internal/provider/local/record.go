package local

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Names inside a sandbox's directory.
const (
	recordName = "sandbox.json"
	filesName  = "files"
	logName    = "sandbox.log"
	lockName   = "lock"
)

// idPrefix starts every local sandbox id; idRandLen base32 characters follow.
const (
	idPrefix  = "lsb_"
	idRandLen = 16
)

// idEncoding is lowercase base32 without padding: ids are safe as file names
// and in URLs.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a fresh sandbox id, "lsb_" and 16 random characters (80 bits).
func newID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return idPrefix + idEncoding.EncodeToString(b[:])
}

// validID reports whether id has the shape newID makes. Anything else is not
// a local sandbox, and never becomes a path.
func validID(id string) bool {
	rest, ok := strings.CutPrefix(id, idPrefix)
	if !ok || len(rest) != idRandLen {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// newUUID returns a random (version 4) UUID in its canonical text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// record is a sandbox's sandbox.json. It is the on-disk shape, separate from
// lifecycle.Sandbox; whether the sandbox runs, is paused or is gone is read
// from /proc, never from here.
type record struct {
	ID       string `json:"id"`
	Template string `json:"template"`
	PID      int    `json:"pid"`
	PGID     int    `json:"pgid"`
	// StartTicks is field 22 of /proc/<pid>/stat when the child started; a
	// process with the same pid and another start time is someone else.
	StartTicks uint64    `json:"start_ticks"`
	Port       int       `json:"port,omitempty"` // web: the preview port on 127.0.0.1 (the front's)
	CreatedAt  time.Time `json:"created_at"`
	// ExecutionID names the current run: a new one at create and at every
	// resume (E2B's sandbox_execution_id).
	ExecutionID        string    `json:"execution_id"`
	ExecutionStartedAt time.Time `json:"execution_started_at"`
	// TimeoutSeconds is the provider-side timeout last set, whole seconds;
	// ExpiresAt is when it fires for a running sandbox.
	TimeoutSeconds int64             `json:"timeout_seconds"`
	ExpiresAt      time.Time         `json:"expires_at"`
	AutoPause      bool              `json:"auto_pause"`
	PausedAt       time.Time         `json:"paused_at,omitzero"`
	Metadata       map[string]string `json:"metadata"`
	// Ports maps sandbox ports (as text) to the loopback host ports that
	// serve them (PortURL); Commands are the background commands started
	// by StartCommand, by name (commands.go).
	Ports map[string]int `json:"ports,omitempty"`
	// Upstreams maps each public port (as text: the preview port, the
	// mapped ports) to the loopback port the sandbox's process listens on
	// behind the provider's preview front (front.go).
	Upstreams map[string]int           `json:"upstreams,omitempty"`
	Commands  map[string]commandRecord `json:"commands,omitempty"`
}

// errNoRecord is readRecord's error when the sandbox has no sandbox.json:
// it was killed, or its create never finished.
var errNoRecord = errors.New("no sandbox record")

// sandboxDir returns the directory of sandbox id.
func (p *Provider) sandboxDir(id string) string { return filepath.Join(p.cfg.Dir, id) }

// readRecord reads sandbox id's record; errNoRecord when it has none.
func (p *Provider) readRecord(id string) (record, error) {
	b, err := os.ReadFile(filepath.Join(p.sandboxDir(id), recordName))
	if errors.Is(err, fs.ErrNotExist) {
		return record{}, errNoRecord
	}
	if err != nil {
		return record{}, fmt.Errorf("read sandbox record %s: %w", id, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, fmt.Errorf("decode sandbox record %s: %w", id, err)
	}
	if rec.ID != id || rec.PID <= 1 || rec.PGID <= 1 {
		return record{}, fmt.Errorf("decode sandbox record %s: id %q, pid %d, pgid %d do not fit", id, rec.ID, rec.PID, rec.PGID)
	}
	p.remember(rec)
	return rec, nil
}

// writeRecord replaces rec's sandbox.json atomically (write, then rename),
// so a reader never sees half a record.
func (p *Provider) writeRecord(rec record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sandbox record %s: %w", rec.ID, err)
	}
	dir := p.sandboxDir(rec.ID)
	f, err := os.CreateTemp(dir, recordName+".*")
	if err != nil {
		return fmt.Errorf("write sandbox record %s: %w", rec.ID, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, recordName))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write sandbox record %s: %w", rec.ID, err)
	}
	p.remember(rec)
	return nil
}

// listIDs returns the ids of the sandbox directories under Dir, sorted.
func (p *Provider) listIDs() ([]string, error) {
	entries, err := os.ReadDir(p.cfg.Dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("list sandboxes in %s: %w", p.cfg.Dir, err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && validID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// load reads sandbox id's record and its process state. Errors: gone when
// id is not a local id, has no record, or its process has exited (or its
// pid now belongs to another process).
func (p *Provider) load(op, id string) (record, lifecycle.SandboxState, error) {
	if !validID(id) {
		return record{}, "", p.gone(op, id, errors.New("not a local sandbox id"))
	}
	rec, err := p.readRecord(id)
	if errors.Is(err, errNoRecord) {
		return record{}, "", p.gone(op, id, err)
	}
	if err != nil {
		return record{}, "", fmt.Errorf("%s sandbox %s: %w", op, id, err)
	}
	st, err := p.liveStat(rec)
	if err != nil {
		return record{}, "", p.classify(op, id, err)
	}
	if st.stopped() {
		return rec, lifecycle.SandboxPaused, nil
	}
	return rec, lifecycle.SandboxRunning, nil
}

// lock takes sandbox id's lock (flock on <id>/lock), retrying while another
// goroutine or process holds it, until ctx is done. Errors: gone when the
// sandbox has no directory; transient when ctx is done.
func (p *Provider) lock(ctx context.Context, op, id string) (unlock func(), err error) {
	if !validID(id) {
		return nil, p.gone(op, id, errors.New("not a local sandbox id"))
	}
	f, err := os.OpenFile(filepath.Join(p.sandboxDir(id), lockName), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, p.gone(op, id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s sandbox %s: %w", op, id, err)
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		ok, err := tryLock(f)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("%s sandbox %s: %w", op, id, err)
		}
		if ok {
			return func() { _ = f.Close() }, nil // closing releases the flock
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, p.transient(op, id, fmt.Errorf("sandbox is locked: %w", ctx.Err()))
		case <-t.C:
		}
	}
}

// sandbox converts a record and its process state to the domain's view.
func (p *Provider) sandbox(rec record, state lifecycle.SandboxState) lifecycle.Sandbox {
	sb := lifecycle.Sandbox{
		ID:         rec.ID,
		Template:   rec.Template,
		State:      state,
		StartedAt:  rec.ExecutionStartedAt,
		PreviewURL: previewURL(rec),
		Metadata:   maps.Clone(rec.Metadata),
	}
	if state == lifecycle.SandboxRunning {
		sb.ExpiresAt = rec.ExpiresAt
	} else {
		sb.PausedAt = rec.PausedAt
	}
	return sb
}

// previewURL returns a web sandbox's preview URL, "" for other templates.
func previewURL(rec record) string {
	if rec.Port == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(rec.Port)) + "/"
}
