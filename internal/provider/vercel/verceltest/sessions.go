package verceltest

import (
	"fmt"
	"net/http"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The sessions: stop, extend, snapshot, read, and a route's preview.

// sessionOf finds the path's session, writing 404 when there is none or its
// sandbox was deleted.
func (s *Server) sessionOf(w http.ResponseWriter, r *http.Request) *sessionRec {
	se, ok := s.sessions[r.PathValue("id")]
	if ok {
		if cur, live := s.sandboxes[se.sandbox.ProjectID+"/"+se.sandbox.Name]; live && cur == se.sandbox {
			return se
		}
	}
	writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("session %q not found", r.PathValue("id")))
	return nil
}

// notRunning writes the answer to a session call on a session that is not
// running, and reports whether it did.
func notRunning(w http.ResponseWriter, se *sessionRec) bool {
	switch se.Status {
	case StatusRunning, StatusPending:
		return false
	case StatusStopping:
		writeError(w, http.StatusUnprocessableEntity, "sandbox_stopping", "the sandbox is stopping")
	case StatusSnapshotting:
		writeError(w, http.StatusUnprocessableEntity, "sandbox_snapshotting", "the sandbox is snapshotting")
	default:
		writeError(w, http.StatusGone, "sandbox_stopped", "the sandbox session is stopped")
	}
	return true
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil {
		return
	}
	out := stopAnswer{}
	switch se.Status {
	case StatusStopped, StatusFailed, StatusAborted:
	default: // running, pending, or a stop already under way: wait it out
		now := s.now()
		se.RequestedStopAt = now
		if snap := s.stopAt(se, now); snap != nil {
			out.Snapshot = snapshotJSONOf(snap)
		}
	}
	out.Session = sessionJSONOf(se)
	sbj := s.sandboxJSON(se.sandbox)
	out.Sandbox = &sbj
	fakekit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil {
		return
	}
	var b extendBody
	if !decode(w, r, &b, false, "duration") {
		return
	}
	if b.Duration < 1000 {
		writeError(w, http.StatusBadRequest, "bad_request", "duration must be at least 1000 ms")
		return
	}
	if notRunning(w, se) {
		return
	}
	if ms(se.Timeout+b.Duration) > s.opts.MaxSessionTimeout {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf(
			"the session timeout would exceed the plan's maximum of %d ms", s.opts.MaxSessionTimeout.Milliseconds()))
		return
	}
	se.Timeout += b.Duration
	se.UpdatedAt = s.now()
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"session": sessionJSONOf(se)})
}

// snapshot takes a snapshot of the path's running session and stops it;
// with the sandbox's SnapshotFault.Slow the session snapshots until the
// clock has passed it (expire completes it), and the call waits for that.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil {
		return
	}
	var b snapshotBody
	if !decode(w, r, &b, true, "expiration") {
		return
	}
	if notRunning(w, se) {
		return
	}
	now, exp := s.now(), se.sandbox.SnapshotExpiration
	fakekit.Set(&exp, b.Expiration)
	if slow := se.sandbox.fault.Slow; slow > 0 {
		se.Status, se.due, se.dueExpiration = StatusSnapshotting, now+slow.Milliseconds(), exp
		for se.due != 0 {
			if !s.waitChange(r) {
				return
			}
		}
	} else {
		se.RequestedStopAt = now
		s.stopSession(se, now, true, exp)
	}
	snap := s.snapshots[se.snapshot]
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"snapshot": snapshotJSONOf(snap), "session": sessionJSONOf(se)})
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	se := s.sessionOf(w, r)
	if se == nil {
		return
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"session": sessionJSONOf(se), "routes": orEmpty(se.routes)})
}

// preview answers a route's URL: the app's page while its session runs and
// a command listens on the route's port, 502 SANDBOX_NOT_LISTENING while
// none does, 410 SANDBOX_STOPPED after the session stopped (no
// wake-on-request, as the sheet assumes).
func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	se, ok := s.bySub[r.PathValue("sub")]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "not_found", "no such sandbox route")
	case se.Status != StatusRunning:
		writeError(w, http.StatusGone, "SANDBOX_STOPPED", "the sandbox is stopped")
	case !s.listens(se, s.routePort(se, r.PathValue("sub")), s.now()):
		writeError(w, http.StatusBadGateway, "SANDBOX_NOT_LISTENING", "the sandbox is running but nothing listens on this port")
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "sandbox %s session %s\n", se.sandbox.Name, se.ID)
	}
}

// routePort is the port of se's route sub.
func (s *Server) routePort(se *sessionRec, sub string) int {
	for _, r := range se.routes {
		if r.Subdomain == sub {
			return r.Port
		}
	}
	return 0
}
