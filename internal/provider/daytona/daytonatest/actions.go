package daytonatest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The sandbox actions: start, stop, pause, archive, recover, delete,
// activity, timers and labels.

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

func (s *Server) start(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	now := s.opts.Clock.Now().UTC()
	switch sb.State {
	case StateStarted:
	case StateStopped:
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateStarting, StateStarted, s.opts.StartTime, now)
	case StateArchived:
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateRestoring, StateStarted, s.opts.RestoreTime, now)
	case StatePaused:
		s.wakes[sb.ID]++
		s.begin(sb, StateResuming, StateStarted, s.opts.ResumeTime, now)
	case StateError:
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is in an errored state")
		return
	default:
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Sandbox is not in a startable state (%s)", sb.State))
		return
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.State != StateStarted && sb.State != StatePaused {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in a stoppable state")
		return
	}
	now := s.opts.Clock.Now().UTC()
	if sb.AutoDelete == 0 {
		s.destroy(sb, now)
	} else {
		s.begin(sb, StateStopping, StateStopped, s.opts.StopTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.Class != "linux-vm" && sb.Class != "windows" {
		s.writeError(w, r, http.StatusUnprocessableEntity, fmt.Sprintf("Pause is not supported for sandbox class %s", sb.Class))
		return
	}
	if sb.State != StateStarted {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in a pausable state")
		return
	}
	s.begin(sb, StatePausing, StatePaused, s.opts.PauseTime, s.opts.Clock.Now().UTC())
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	if sb.State != StateStopped || sb.AutoDelete == 0 {
		s.writeError(w, r, http.StatusBadRequest, "Sandbox is not in an archivable state")
		return
	}
	s.begin(sb, StateArchiving, StateArchived, s.opts.ArchiveTime, s.opts.Clock.Now().UTC())
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) recover(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
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
		sb.Token = s.newToken()
		s.wakes[sb.ID]++
		s.begin(sb, StateStarting, StateStarted, s.opts.StartTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil || s.inFlight(w, r, sb) {
		return
	}
	out := s.toJSON(sb, true)
	s.destroy(sb, s.opts.Clock.Now().UTC())
	out.State, out.DesiredState = sb.State, sb.DesiredState
	s.writeJSON(w, http.StatusOK, out)
}

func (s *Server) lastActivity(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.readBody(w, r); !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookupByID(w, r)
	if sb == nil {
		return
	}
	sb.LastActivityAt = s.opts.Clock.Now().UTC()
	w.WriteHeader(http.StatusCreated)
}

// timer serves POST /sandbox/{id}/{autostop,autopause,autoarchive,autodelete,ttl}/{min},
// answering 201 with the Sandbox as Daytona's v0.190 source does.
func (s *Server) timer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("timer")
	if !slices.Contains([]string{"autostop", "autopause", "autoarchive", "autodelete", "ttl"}, name) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Cannot POST %s", r.URL.Path))
		return
	}
	min, err := strconv.Atoi(r.PathValue("min"))
	lowest := 0
	if name == "autodelete" {
		lowest = -1
	}
	if err != nil || min < lowest {
		s.writeError(w, r, http.StatusBadRequest, "Interval must be a non-negative integer")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	now := s.opts.Clock.Now().UTC()
	switch name {
	case "autostop":
		if min != 0 && sb.AutoPause != 0 {
			s.writeError(w, r, http.StatusBadRequest, "autoStopInterval and autoPauseInterval cannot both be set")
			return
		}
		sb.AutoStop = min
	case "autopause":
		if min != 0 && sb.AutoStop != 0 {
			s.writeError(w, r, http.StatusBadRequest, "autoStopInterval and autoPauseInterval cannot both be set")
			return
		}
		sb.AutoPause = min
	case "autoarchive":
		sb.AutoArchive = min
	case "autodelete":
		sb.AutoDelete = min
	case "ttl":
		sb.AutoDestroyAt = time.Time{}
		if min > 0 {
			sb.AutoDestroyAt = now.Add(time.Duration(min) * time.Minute)
		}
	}
	sb.UpdatedAt = now
	s.writeJSON(w, http.StatusCreated, s.toJSON(sb, true))
}

func (s *Server) labels(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var in struct {
		Labels map[string]string `json:"labels"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.Labels == nil {
		s.writeError(w, r, http.StatusBadRequest, "labels must be an object of strings")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	sb.Labels = maps.Clone(in.Labels)
	s.writeJSON(w, http.StatusOK, map[string]any{"labels": sb.Labels})
}
