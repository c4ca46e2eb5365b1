package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Creating and reading a sandbox.

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	raw, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var in createBody
	var fields map[string]json.RawMessage
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "body must be a JSON object")
		return
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		s.writeError(w, r, http.StatusBadRequest, "invalid body: "+err.Error())
		return
	}
	var bad []string
	switch {
	case in.Snapshot != nil && in.BuildInfo != nil:
		bad = append(bad, "cannot specify both snapshot and buildInfo")
	case in.Snapshot != nil && (in.CPU != nil || in.GPU != nil || in.Memory != nil || in.Disk != nil):
		bad = append(bad, "cannot specify sandbox resources when using a snapshot")
	case in.AutoStopInterval != nil && in.AutoPauseInterval != nil && *in.AutoStopInterval != 0 && *in.AutoPauseInterval != 0:
		bad = append(bad, "autoStopInterval and autoPauseInterval cannot both be set")
	}
	for _, p := range []struct {
		name string
		v    *int
		min  int
	}{{"autoStopInterval", in.AutoStopInterval, 0}, {"autoPauseInterval", in.AutoPauseInterval, 0},
		{"autoArchiveInterval", in.AutoArchiveInterval, 0}, {"autoDeleteInterval", in.AutoDeleteInterval, -1},
		{"ttlMinutes", in.TTLMinutes, 0}} {
		if p.v != nil && *p.v < p.min {
			bad = append(bad, fmt.Sprintf("%s must not be less than %d", p.name, p.min))
		}
	}
	if in.BuildInfo != nil && !strings.HasPrefix(strings.TrimSpace(in.BuildInfo.DockerfileContent), "FROM ") {
		bad = append(bad, "buildInfo.dockerfileContent must be a Dockerfile")
	}
	if len(bad) > 0 {
		s.writeError(w, r, http.StatusBadRequest, strings.Join(bad, ", "))
		return
	}
	for k := range fields {
		if !slices.Contains(createFields, k) {
			s.NoteOnce(k) // daytona.md does not list it (Daytona's SDK sends a few)
		}
	}
	snapshot := ""
	if in.Snapshot != nil {
		snapshot = *in.Snapshot
		if s.opts.Snapshots != nil && !slices.Contains(s.opts.Snapshots, snapshot) {
			s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Snapshot %s not found. Did you add it through the Daytona Dashboard?", snapshot))
			return
		}
	}
	s.tick()
	if in.Name != "" {
		for _, o := range s.sandboxes.All() {
			if o.Name == in.Name {
				s.writeError(w, r, http.StatusConflict, fmt.Sprintf("Sandbox with name %s already exists", in.Name))
				return
			}
		}
	}
	now := s.opts.Clock.Now().UTC()
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", s.sandboxes.Next(), s.sandboxes.Next())
	sb := &Sandbox{
		ID: id, Name: cmp.Or(in.Name, id), Snapshot: snapshot, Labels: maps.Clone(in.Labels),
		Env: maps.Clone(in.Env), Public: in.Public, Target: cmp.Or(in.Target, DefaultTarget),
		Class: s.opts.Class, CPU: 1, Memory: 1, Disk: 3, AutoStop: 15, AutoArchive: 10080, AutoDelete: -1,
		CreatedAt: now, UpdatedAt: now, LastActivityAt: now, Token: s.newToken(),
	}
	if sb.Labels == nil {
		sb.Labels = map[string]string{}
	}
	pauseCapable := sb.Class == "linux-vm" || sb.Class == "windows"
	if pauseCapable && in.AutoStopInterval == nil && in.AutoPauseInterval == nil {
		sb.AutoStop, sb.AutoPause = 0, 60
	}
	fakekit.Set(&sb.AutoStop, in.AutoStopInterval)
	fakekit.Set(&sb.AutoPause, in.AutoPauseInterval)
	fakekit.Set(&sb.AutoArchive, in.AutoArchiveInterval)
	fakekit.Set(&sb.AutoDelete, in.AutoDeleteInterval)
	if in.TTLMinutes != nil && *in.TTLMinutes > 0 {
		sb.AutoDestroyAt = now.Add(time.Duration(*in.TTLMinutes) * time.Minute)
	}
	for _, p := range []struct {
		dst *int
		v   *int
	}{{&sb.CPU, in.CPU}, {&sb.GPU, in.GPU}, {&sb.Memory, in.Memory}, {&sb.Disk, in.Disk}} {
		fakekit.Set(p.dst, p.v)
	}
	sb.DesiredState = StateStarted
	s.sandboxes.Put(sb.ID, sb)
	switch {
	case in.BuildInfo != nil:
		// Answered at once as pending_build, even with BuildTime 0 (it then
		// settles on the next read).
		s.set(sb, StatePendingBuild, now)
		sb.next, sb.settleAt = StateStarted, now.Add(s.opts.BuildTime)
	default:
		s.begin(sb, StateCreating, StateStarted, s.opts.CreateTime, now)
	}
	s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookup(w, r); sb != nil {
		s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
	}
}
