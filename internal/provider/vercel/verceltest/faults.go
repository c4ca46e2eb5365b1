package verceltest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// SandboxFault is fakekit's: the faults Inject takes, by name ("gone",
// "foreign", "partial", "snapshot_expired", "snapshot_fail",
// "snapshot_slow", "restore_slow").
type SandboxFault = fakekit.SandboxFault

// Inject switches the sandbox fault f on the sandbox named id, in any
// project (fakekit.Injector; the control route POST
// /_fake/sandboxes/{id}/faults):
//   - gone: the sandbox is deleted (404 from then on);
//   - foreign: the files of its current session and of its current
//     snapshot (what a resume brings back) become another session's;
//   - partial: their identity marker and workspace are removed;
//   - snapshot_expired: every snapshot of it expires (a resume or a create
//     from one answers 410 snapshot_not_found);
//   - snapshot_fail, snapshot_slow: SetSnapshotFault's Fail and Slow (on
//     the fake's clock), until Clear;
//   - restore_slow: a create from one of its snapshots, and a resume of
//     it, are held delay on the wall's clock (the SDK's create and resume
//     wait for the session) until Clear.
func (s *Server) Inject(id string, f fakekit.SandboxFault, delay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, sb := s.named(id)
	if sb == nil {
		return fakekit.NoSandbox(id)
	}
	workspaces := func(change func(**sandboxfs.Mem)) {
		if se, ok := s.sessions[sb.CurrentSessionID]; ok {
			change(&se.files)
		}
		if snap, ok := s.snapshots[sb.CurrentSnapshotID]; ok {
			change(&snap.files)
		}
	}
	switch f {
	case fakekit.FaultGone:
		delete(s.sandboxes, key)
	case fakekit.FaultForeign:
		workspaces(func(m **sandboxfs.Mem) { *m = fakekit.Foreign() })
	case fakekit.FaultPartial:
		workspaces(func(m **sandboxfs.Mem) { *m = fakekit.Partial(*m) })
	case fakekit.FaultSnapshotExpired:
		for sid, snap := range s.snapshots {
			if snap.sandbox == sb {
				s.drop(sid)
			}
		}
	case fakekit.FaultSnapshotFail:
		sb.fault.Fail = true
	case fakekit.FaultSnapshotSlow:
		sb.fault.Slow = delay
	case fakekit.FaultRestoreSlow:
		s.switches.Set(id, f, delay)
	default:
		return fakekit.UnknownFault(f)
	}
	return nil
}

// Clear switches the standing sandbox faults of the sandbox named id off.
func (s *Server) Clear(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, sb := s.named(id); sb != nil {
		sb.fault = SnapshotFault{}
	}
	s.switches.Clear(id)
}

// named returns the sandbox named id in any project, and its key. Callers
// hold s.mu.
func (s *Server) named(id string) (string, *sandboxRec) {
	for key, sb := range s.sandboxes {
		if sb.Name == id {
			return key, sb
		}
	}
	return "", nil
}

// held holds a create from a snapshot, or a resume, of a sandbox with
// restore_slow on, its delay before next serves it.
func (s *Server) held(op Op, next http.Handler) http.Handler {
	if op != OpCreate && op != OpResume {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		source := r.PathValue("name")
		if op == OpCreate {
			source = s.snapshotSource(r)
		}
		if s.switches.Hold(r, source, fakekit.FaultRestoreSlow, s.Closing()) {
			next.ServeHTTP(w, r)
		}
	})
}

// snapshotSource returns the name of the sandbox a create's snapshot was
// taken of, "" for none; the body is kept for the handler.
func (s *Server) snapshotSource(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, fakekit.MaxBody))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in createBody
	if err != nil || json.Unmarshal(body, &in) != nil || in.Source == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap, ok := s.snapshots[in.Source.SnapshotID]; ok {
		return snap.sandbox.Name
	}
	return ""
}
