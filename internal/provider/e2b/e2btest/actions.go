package e2btest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The actions on a sandbox: pause, connect (resume), set timeout, kill, and
// envd's health behind the proxy.

func (s *Server) pause(op Op, w http.ResponseWriter, r *http.Request) {
	s.noteQuery(op, r)
	sb := s.lookupAny(w, r)
	switch {
	case sb == nil:
	case sb.Transition == Killing || sb.Transition == Snapshotting:
		writeError(w, http.StatusConflict, fmt.Sprintf("Sandbox cannot be paused while in '%s' state", sb.Transition))
	case readsPaused(sb):
		writeError(w, http.StatusConflict, fmt.Sprintf("Sandbox %s is already paused", sb.ID))
	default:
		sb.State, sb.EndAt = lifecycle.SandboxPaused, s.now()
		w.WriteHeader(http.StatusNoContent)
	}
}

// conflicted answers 409 for a sandbox in a transition. Callers hold mu.
func conflicted(w http.ResponseWriter, sb *Sandbox) bool {
	if sb.Transition == "" {
		return false
	}
	writeError(w, http.StatusConflict, fmt.Sprintf("Sandbox %s is in '%s' state", sb.ID, sb.Transition))
	return true
}

// capped returns the end time of a timeout asked for at now on sb: at most
// the last start + the run-length cap.
func (s *Server) capped(sb *Sandbox, now time.Time, timeout time.Duration) time.Time {
	end := now.Add(timeout)
	if limit := sb.StartedAt.Add(s.opts.MaxRunLength); end.After(limit) {
		return limit
	}
	return end
}

// resume starts the paused sb again now, for its last timeout.
func (s *Server) resume(sb *Sandbox) {
	now := s.now()
	sb.State, sb.StartedAt = lifecycle.SandboxRunning, now
	sb.EndAt = s.capped(sb, now, sb.Timeout) // from the new start
}

// connect resumes a paused sandbox (201) or extends a running one's timeout
// to at least now+timeout (200), capped at the run length either way. The
// body is optional: an omitted timeout is 300 s (DefaultTimeout).
func (s *Server) connect(op Op, w http.ResponseWriter, r *http.Request) {
	var in timeoutReq
	if !s.decode(op, w, r, &in, "timeout") {
		return
	}
	s.noteQuery(op, r)
	if in.Timeout == nil {
		secs := int64(DefaultTimeout / time.Second)
		in.Timeout = &secs
	}
	if *in.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "Timeout must be greater than or equal to 0")
		return
	}
	timeout := time.Duration(*in.Timeout) * time.Second
	sb := s.lookupAny(w, r)
	if sb == nil || conflicted(w, sb) {
		return
	}
	sb.Timeout = timeout
	if sb.State == lifecycle.SandboxPaused {
		s.resume(sb)
		fakekit.WriteJSON(w, http.StatusCreated, created(sb))
		return
	}
	if end := s.capped(sb, s.now(), timeout); end.After(sb.EndAt) {
		sb.EndAt = end
	}
	fakekit.WriteJSON(w, http.StatusOK, created(sb))
}

// setTimeout sets a running sandbox's endAt to now+timeout, capped at the
// run length; 0 expires it now. A paused sandbox answers 404: E2B keeps
// timers only for running sandboxes (from its API's source).
func (s *Server) setTimeout(op Op, w http.ResponseWriter, r *http.Request) {
	var in timeoutReq
	if !s.decode(op, w, r, &in, "timeout") {
		return
	}
	s.noteQuery(op, r)
	if in.Timeout == nil || *in.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "timeout is required and must not be negative")
		return
	}
	sb := s.lookupAny(w, r)
	if sb == nil || conflicted(w, sb) {
		return
	}
	if sb.State != lifecycle.SandboxRunning {
		writeError(w, http.StatusNotFound, fmt.Sprintf("sandbox %q is not running", sb.ID))
		return
	}
	now := s.now()
	limit := sb.StartedAt.Add(s.opts.MaxRunLength)
	if !now.Before(limit) {
		writeError(w, http.StatusBadRequest, "Sandbox has reached its maximum run length")
		return
	}
	sb.Timeout = time.Duration(*in.Timeout) * time.Second
	sb.EndAt = s.capped(sb, now, sb.Timeout)
	s.expire()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) kill(op Op, w http.ResponseWriter, r *http.Request) {
	s.noteQuery(op, r)
	if sb := s.lookup(w, r); sb != nil {
		s.sandboxes.Delete(sb.ID)
		w.WriteHeader(http.StatusNoContent)
	}
}

// health is envd's /health behind E2B's proxy; it needs no access token.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	sb, ok := s.sandboxes.Get(r.PathValue("id"))
	switch {
	case !ok || sb.Transition == Killing:
		http.Error(w, "sandbox not found", http.StatusBadGateway)
		return
	case readsPaused(sb) && !sb.AutoResume:
		http.Error(w, "sandbox is not running", http.StatusBadGateway)
		return
	case sb.State == lifecycle.SandboxPaused:
		s.resume(sb)
	}
	if tok := r.Header.Get("X-Access-Token"); tok != "" && tok != sb.AccessToken {
		s.Add("refused tokens")
	}
	w.WriteHeader(http.StatusNoContent)
}
