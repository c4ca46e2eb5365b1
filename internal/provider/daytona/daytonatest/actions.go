package daytonatest

import (
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"
)

// The sandbox actions: start, stop, pause, archive and delete (one
// transition each), recover, activity, timers and labels.

// inFlight answers 409 when a change is in progress: state !=
// desiredState while the state is transitional (an errored sandbox is not
// changing and can be deleted).
func (s *Server) inFlight(w http.ResponseWriter, r *http.Request, sb *Sandbox) bool {
	if sb.State != sb.DesiredState && Transitional(sb.State) {
		s.writeError(w, r, http.StatusConflict, "Sandbox state change in progress")
		return true
	}
	return false
}

// move is what a lifecycle action does to a sandbox: it passes through the
// transitional state via and settles at to after d (Server.begin); a wake
// is a start from stopped, paused, archived or error (Wakes), and token a
// new preview token (a start from stopped or archived).
type move struct {
	via, to     string
	d           time.Duration
	wake, token bool
}

// moveOf returns the move op (start, stop, pause, archive or delete) makes
// from sb's state, none for a start of a started sandbox, or the status
// and message refusing it (docs/providers/daytona.md "State machine").
func (s *Server) moveOf(op Op, sb *Sandbox) (m move, status int, msg string) {
	o := &s.opts
	vm := sb.Class == "linux-vm" || sb.Class == "windows"
	switch st := sb.State; {
	case op == OpStart && st == StateStarted:
		return move{}, 0, ""
	case op == OpStart && st == StateStopped:
		return move{StateStarting, StateStarted, o.StartTime, true, true}, 0, ""
	case op == OpStart && st == StateArchived:
		return move{StateRestoring, StateStarted, o.RestoreTime, true, true}, 0, ""
	case op == OpStart && st == StatePaused:
		return move{StateResuming, StateStarted, o.ResumeTime, true, false}, 0, ""
	case op == OpStart && st == StateError:
		return move{}, http.StatusBadRequest, "Sandbox is in an errored state"
	case op == OpStart:
		return move{}, http.StatusBadRequest, fmt.Sprintf("Sandbox is not in a startable state (%s)", st)
	case op == OpStop && st != StateStarted && st != StatePaused:
		return move{}, http.StatusBadRequest, "Sandbox is not in a stoppable state"
	case op == OpStop && sb.AutoDelete != 0:
		return move{via: StateStopping, to: StateStopped, d: o.StopTime}, 0, ""
	case op == OpPause && !vm:
		return move{}, http.StatusUnprocessableEntity, fmt.Sprintf("Pause is not supported for sandbox class %s", sb.Class)
	case op == OpPause && st != StateStarted:
		return move{}, http.StatusBadRequest, "Sandbox is not in a pausable state"
	case op == OpPause:
		return move{via: StatePausing, to: StatePaused, d: o.PauseTime}, 0, ""
	case op == OpArchive && (st != StateStopped || sb.AutoDelete == 0):
		return move{}, http.StatusBadRequest, "Sandbox is not in an archivable state"
	case op == OpArchive:
		return move{via: StateArchiving, to: StateArchived, d: o.ArchiveTime}, 0, ""
	}
	// A delete, or the stop of an ephemeral sandbox (autoDeleteInterval 0).
	return move{via: StateDestroying, to: StateDestroyed, d: o.DeleteTime}, 0, ""
}

// transition serves start, stop, pause, archive and delete: 404 for an
// unknown sandbox, 409 while a change is in flight, else moveOf's move and
// the sandbox after it (a delete: the sandbox before it, with its new
// state).
func (s *Server) transition(op Op) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		sb := s.lookup(w, r, true)
		if sb == nil || s.inFlight(w, r, sb) {
			return
		}
		m, status, msg := s.moveOf(op, sb)
		if status != 0 {
			s.writeError(w, r, status, msg)
			return
		}
		before := sb.clone()
		s.apply(sb, m, s.opts.Clock.Now().UTC())
		out := sb
		if op == OpDelete { // the sandbox before the delete, with its new state
			before.State, before.DesiredState = sb.State, sb.DesiredState
			out = &before
		}
		s.writeJSON(w, http.StatusOK, s.toJSON(out, true))
	}
}

// apply makes move m on sb at now. Callers hold mu.
func (s *Server) apply(sb *Sandbox, m move, now time.Time) {
	if m.token {
		sb.Token = s.newToken()
	}
	if m.wake {
		s.Add("wakes")
		s.Add("wakes " + sb.ID)
	}
	if m.via != "" {
		s.begin(sb, m.via, m.to, m.d, now)
	}
}

func (s *Server) recover(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r, true)
	if sb == nil {
		return
	}
	if sb.State != StateError || !sb.Recoverable {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not recoverable")
		return
	}
	now := s.opts.Clock.Now().UTC()
	sb.ErrorReason, sb.Recoverable = "", false
	if r.URL.Query().Get("skipStart") == "true" {
		s.set(sb, StateStopped, now)
		sb.DesiredState = StateStopped
	} else {
		s.apply(sb, move{StateStarting, StateStarted, s.opts.StartTime, true, true}, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) lastActivity(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r, false)
	if sb == nil || !s.decode(w, r, nil) {
		return
	}
	sb.LastActivityAt = s.opts.Clock.Now().UTC()
	w.WriteHeader(http.StatusCreated)
}

// timer serves POST /sandbox/{id}/{autostop,autopause,autoarchive,autodelete,ttl}/{min},
// answering 201 with the Sandbox as Daytona's v0.190 source does.
func (s *Server) timer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("timer")
	lowest, ok := map[string]int{"autostop": 0, "autopause": 0, "autoarchive": 0, "autodelete": -1, "ttl": 0}[name]
	if !ok {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot POST %s", r.URL.Path))
		return
	}
	min, err := strconv.Atoi(r.PathValue("min"))
	if err != nil || min < lowest {
		s.writeError(w, r, http.StatusBadRequest, "Interval must be a non-negative integer")
		return
	}
	sb := s.lookup(w, r, true)
	if sb == nil {
		return
	}
	now := s.opts.Clock.Now().UTC()
	switch {
	case name == "ttl":
		sb.AutoDestroyAt = time.Time{}
		if min > 0 {
			sb.AutoDestroyAt = now.Add(time.Duration(min) * time.Minute)
		}
	case min != 0 && ((name == "autostop" && sb.AutoPause != 0) || (name == "autopause" && sb.AutoStop != 0)):
		s.writeError(w, r, http.StatusBadRequest, "autoStopInterval and autoPauseInterval cannot both be set")
		return
	default:
		*map[string]*int{"autostop": &sb.AutoStop, "autopause": &sb.AutoPause, "autoarchive": &sb.AutoArchive,
			"autodelete": &sb.AutoDelete}[name] = min
	}
	sb.UpdatedAt = now
	s.writeJSON(w, http.StatusCreated, s.toJSON(sb, true))
}

func (s *Server) labels(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Labels map[string]string `json:"labels"`
	}
	if !s.decode(w, r, &in) {
		return
	} else if in.Labels == nil {
		s.writeError(w, r, http.StatusBadRequest, "labels must be an object of strings")
		return
	}
	sb := s.lookup(w, r, true)
	if sb == nil {
		return
	}
	sb.Labels = maps.Clone(in.Labels)
	s.writeJSON(w, http.StatusOK, map[string]any{"labels": sb.Labels})
}
