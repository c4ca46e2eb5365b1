package e2btest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// SandboxFault is fakekit's: the faults Inject takes, by name ("gone",
// "foreign", "partial", "snapshot_expired", "snapshot_fail",
// "snapshot_slow", "restore_slow").
type SandboxFault = fakekit.SandboxFault

// Inject switches the sandbox fault f on sandbox id (fakekit.Injector; the
// control route POST /_fake/sandboxes/{id}/faults):
//   - gone: the sandbox leaves the fake (404 from then on);
//   - foreign: its files become another session's (fakekit.Foreign);
//   - partial: its identity marker and workspace are removed;
//   - snapshot_expired: every snapshot taken of it is deleted (a create
//     from one answers E2B's 404 "template '…' not found");
//   - snapshot_fail: its snapshots answer E2B's 500 "Error creating
//     snapshot template" (after which E2B kills the source) until Clear;
//   - snapshot_slow, restore_slow: its snapshots, and creates from its
//     snapshots, are held delay on the wall's clock (E2B's calls block
//     until done) before they are served, until Clear.
func (s *Server) Inject(id string, f fakekit.SandboxFault, delay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes.Get(id)
	if !ok {
		return fakekit.NoSandbox(id)
	}
	switch f {
	case fakekit.FaultGone:
		s.sandboxes.Delete(id)
	case fakekit.FaultForeign:
		sb.Files = fakekit.Foreign()
	case fakekit.FaultPartial:
		sb.Files = fakekit.Partial(sb.Files)
	case fakekit.FaultSnapshotExpired:
		for _, sn := range s.snapshots.All() {
			if sn.SandboxID == id {
				s.snapshots.Delete(sn.ID)
			}
		}
	case fakekit.FaultSnapshotFail, fakekit.FaultSnapshotSlow, fakekit.FaultRestoreSlow:
		s.switches.Set(id, f, delay)
	default:
		return fakekit.UnknownFault(f)
	}
	return nil
}

// Clear switches the standing sandbox faults of id off.
func (s *Server) Clear(id string) { s.switches.Clear(id) }

// held serves the standing sandbox faults of a request of op before next:
// a failing snapshot answers 500 (as Fail's), a slow snapshot or restore
// is held its delay first.
func (s *Server) held(op Op, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch op {
		case OpSnapshot:
			id := r.PathValue("id")
			if _, fail := s.switches.On(id, fakekit.FaultSnapshotFail); fail {
				s.Fail(ForSandbox(OpSnapshot, id), Fault{Status: http.StatusInternalServerError})
			}
			if !s.switches.Hold(r, id, fakekit.FaultSnapshotSlow, s.Closing()) {
				return
			}
		case OpCreate:
			if !s.switches.Hold(r, s.snapshotSource(r), fakekit.FaultRestoreSlow, s.Closing()) {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// snapshotSource returns the sandbox a create's snapshot was taken of, ""
// for a create from a template; the body is kept for the handler.
func (s *Server) snapshotSource(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, fakekit.MaxBody))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct {
		TemplateID string `json:"templateID"`
	}
	if err != nil || json.Unmarshal(body, &in) != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.resolve(in.TemplateID); sn != nil {
		return sn.SandboxID
	}
	return ""
}
