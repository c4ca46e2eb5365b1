package daytonatest

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// Checkpoints (docs/providers/daytona.md "Checkpoints"): snapshots of a
// sandbox's files (each sandbox's files are a sandboxfs.Mem) and forks.
//
//   - POST /sandbox/{id}/snapshot {"name"} (started or stopped only, 400;
//     409 while a change is in flight) answers the sandbox `snapshotting`;
//     after Config.SnapshotTime (Sandbox.SnapshotTime) it returns to its
//     state and, unless Sandbox.SnapshotFault says otherwise or the name is
//     taken (then the capture fails silently, as Daytona's do), the
//     snapshot is written, active, holding the files of the moment the
//     capture began. Until then GET /snapshots/{name} is 404.
//   - GET /snapshots (page, limit, name, sourceSandboxId) → {items, total,
//     page, totalPages}; GET /snapshots/{idOrName}; DELETE /snapshots/{id}
//     (an id only, 400 otherwise; 200, empty); POST
//     /snapshots/{id}/activate (inactive → pending → active after
//     Config.ActivateTime). An active snapshot unused (lastUsedAt, else
//     createdAt) for Config.Deactivation becomes inactive.
//   - POST /sandbox {"snapshot": <name or id>} copies the snapshot's files
//     and class into the new sandbox (400 "Snapshot X is inactive", "… not
//     found"); Daytona's daytona-vm-* snapshots make linux-vm sandboxes.
//   - POST /sandbox/{id}/fork (linux-vm and windows only, 422; started
//     only, 400) answers the child `creating`, a copy of the source (files,
//     labels, env, resources, intervals but autoPauseInterval) while the
//     source is `forking`; both are started after Config.ForkTime.

// Ways a capture fails, for Sandbox.SnapshotFault.
const (
	// SnapshotFailSilently returns the sandbox to its state and writes no
	// snapshot (Daytona's v0 captures, daytonaio/daytona #4990).
	SnapshotFailSilently = "silent"
	// SnapshotFailError writes the snapshot in state error.
	SnapshotFailError = "error"
)

// The checkpoint operations.
const (
	OpSnapshot       Op = "snapshot"        // POST /sandbox/{id}/snapshot
	OpFork           Op = "fork"            // POST /sandbox/{id}/fork
	OpListSnapshots  Op = "list-snapshots"  // GET /snapshots
	OpGetSnapshot    Op = "get-snapshot"    // GET /snapshots/{idOrName}
	OpDeleteSnapshot Op = "delete-snapshot" // DELETE /snapshots/{id}
	OpActivate       Op = "activate"        // POST /snapshots/{id}/activate
)

// Snapshot is the fake's record of one snapshot.
type Snapshot struct {
	ID, Name, State, SourceSandboxID, ErrorReason, Class string
	CreatedAt, UpdatedAt, LastUsedAt                     time.Time

	files    *sandboxfs.Mem
	settleAt time.Time // pending → active
}

// capture is a snapshot being taken of a sandbox.
type capture struct {
	name  string
	files *sandboxfs.Mem
}

var uuidOnly = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func (s *Server) snapshotRoutes(route func(string, Op, func(http.ResponseWriter, *http.Request))) {
	route("POST /sandbox/{id}/snapshot", OpSnapshot, s.takeSnapshot)
	route("POST /sandbox/{id}/fork", OpFork, s.fork)
	route("GET /snapshots", OpListSnapshots, s.listSnapshots)
	route("GET /snapshots/{id}", OpGetSnapshot, s.getSnapshot)
	route("DELETE /snapshots/{id}", OpDeleteSnapshot, s.deleteSnapshot)
	route("POST /snapshots/{id}/activate", OpActivate, s.activate)
}

// uuid is the n-th id of a kind of record (variant: 0x8000 sandboxes,
// 0xa000 snapshots), shaped as Daytona's UUIDs.
func uuid(n, variant int) string { return fmt.Sprintf("%08x-0000-4000-%04x-%012x", n, variant, n) }

// fs returns sb's files, made on first use. Callers hold mu.
func (sb *Sandbox) fs() *sandboxfs.Mem {
	if sb.files == nil {
		sb.files = &sandboxfs.Mem{}
	}
	return sb.files
}

func (s *Server) takeSnapshot(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name          string `json:"name"`
		IncludeMemory bool   `json:"includeMemory"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	switch sb := s.lookup(w, r, true); {
	case sb == nil:
	case strings.TrimSpace(in.Name) == "":
		s.writeError(w, r, http.StatusBadRequest, "name should not be empty")
	case in.IncludeMemory && sb.Class != "windows":
		s.writeError(w, r, http.StatusBadRequest, "includeMemory is only supported for Windows sandboxes")
	case sb.State != StateStarted && sb.State != StateStopped:
		s.writeError(w, r, http.StatusBadRequest, "Sandbox must be in started or stopped state to create a snapshot")
	case !s.inFlight(w, r, sb):
		sb.capture = &capture{name: in.Name, files: sb.fs().Clone()}
		s.begin(sb, StateSnapshotting, sb.State, cmp.Or(sb.SnapshotTime, s.opts.SnapshotTime), s.opts.Clock.Now().UTC())
		s.writeJSON(w, http.StatusOK, s.toJSON(sb, true))
	}
}

// captured ends sb's capture at t: the snapshot is written unless it
// fails. Callers hold mu.
func (s *Server) captured(sb *Sandbox, t time.Time) {
	c := sb.capture
	sb.capture = nil
	if sb.SnapshotFault == SnapshotFailSilently || s.findSnapshot(c.name) != nil {
		return
	}
	sn := &Snapshot{ID: uuid(s.snapshots.Next(), 0xa000), Name: c.name, State: "active", SourceSandboxID: sb.ID, Class: sb.Class,
		CreatedAt: t, UpdatedAt: t, files: c.files}
	if sb.SnapshotFault == SnapshotFailError {
		sn.State, sn.ErrorReason = StateError, "the runner failed to push the snapshot"
	}
	s.snapshots.Put(sn.ID, sn)
}

// findSnapshot returns the snapshot of id or name, nil when there is none.
// Callers hold mu.
func (s *Server) findSnapshot(idOrName string) *Snapshot {
	if sn, ok := s.snapshots.Get(idOrName); ok {
		return sn
	}
	for _, sn := range s.snapshots.All() {
		if sn.Name == idOrName {
			return sn
		}
	}
	return nil
}

// snapshotOf returns the request's snapshot {id} (with byName, its name
// too), or answers 404 and returns nil. Callers hold mu.
func (s *Server) snapshotOf(w http.ResponseWriter, r *http.Request, byName bool) *Snapshot {
	s.tick()
	id := r.PathValue("id")
	if !byName && !uuidOnly.MatchString(id) {
		s.writeError(w, r, http.StatusBadRequest, "Validation failed (uuid is expected)")
		return nil
	}
	sn := s.findSnapshot(id)
	if sn == nil || (!byName && sn.ID != id) {
		s.writeError(w, r, http.StatusNotFound, fmt.Sprintf("Snapshot %s not found", id))
		return nil
	}
	return sn
}

// snapshotJSON is Daytona's SnapshotDto for sn. Callers hold mu.
func (s *Server) snapshotJSON(sn *Snapshot) map[string]any {
	last := any(nil)
	if !sn.LastUsedAt.IsZero() {
		last = iso(sn.LastUsedAt)
	}
	return map[string]any{"id": sn.ID, "name": sn.Name, "state": sn.State, "sourceSandboxId": sn.SourceSandboxID,
		"general": false, "size": float64(sn.files.Size()) / (1 << 30), "entrypoint": nil, "cpu": 1, "gpu": 0,
		"mem": 1, "disk": 3, "errorReason": orNull(sn.ErrorReason), "createdAt": iso(sn.CreatedAt),
		"updatedAt": iso(sn.UpdatedAt), "lastUsedAt": last, "sandboxClass": sn.Class, "regionIds": []string{DefaultTarget}}
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.tick()
	all := slices.DeleteFunc(s.snapshots.All(), func(sn *Snapshot) bool {
		return !strings.Contains(sn.Name, q.Get("name")) || (q.Has("sourceSandboxId") && sn.SourceSandboxID != q.Get("sourceSandboxId"))
	})
	from, to, pages, ok := fakekit.PageNumber(len(all), q.Get("page"), q.Get("limit"), 100, 200)
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, "page must not be less than 1, limit must be between 1 and 200")
		return
	}
	items := []map[string]any{}
	for _, sn := range all[from:to] {
		items = append(items, s.snapshotJSON(sn))
	}
	page, _ := fakekit.Limit(q.Get("page"), 1, 1, 1<<30)
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "total": len(all), "page": page, "totalPages": pages})
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	if sn := s.snapshotOf(w, r, true); sn != nil {
		s.writeJSON(w, http.StatusOK, s.snapshotJSON(sn))
	}
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	if sn := s.snapshotOf(w, r, false); sn != nil {
		s.dropSnapshot(sn)
		w.WriteHeader(http.StatusOK)
	}
}

func (s *Server) activate(w http.ResponseWriter, r *http.Request) {
	switch sn := s.snapshotOf(w, r, false); {
	case sn == nil:
	case sn.State == "active":
		s.writeError(w, r, http.StatusBadRequest, "Snapshot is already active")
	case sn.State != "inactive":
		s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Snapshot cannot be activated - it is in %s state", sn.State))
	default:
		now := s.opts.Clock.Now().UTC()
		sn.State, sn.UpdatedAt, sn.LastUsedAt, sn.settleAt = "pending", now, now, now.Add(s.opts.ActivateTime)
		s.tickSnapshots(now)
		s.writeJSON(w, http.StatusOK, s.snapshotJSON(sn))
	}
}

// tickSnapshots activates what was activated and deactivates what was not
// used for Config.Deactivation, by now. Callers hold mu.
func (s *Server) tickSnapshots(now time.Time) {
	for _, sn := range s.snapshots.All() {
		idle := cmp.Or(sn.LastUsedAt, sn.CreatedAt).Add(s.opts.Deactivation)
		switch {
		case sn.State == "pending" && !sn.settleAt.After(now):
			sn.State, sn.UpdatedAt = "active", sn.settleAt
		case sn.State == "active" && !idle.After(now):
			sn.State, sn.UpdatedAt = "inactive", idle
		}
	}
}

// fromSnapshot returns the files and class of a sandbox created from the
// snapshot name, or the 400 message refusing it. A snapshot this fake did
// not take (Config.Snapshots) holds no files; Daytona's daytona-vm-*
// snapshots make linux-vm sandboxes, the others Config.Class ("").
// Callers hold mu.
func (s *Server) fromSnapshot(name string, now time.Time) (files *sandboxfs.Mem, class, refused string) {
	sn := s.findSnapshot(name)
	switch {
	case sn == nil && (s.removed[name] || (s.opts.Snapshots != nil && !slices.Contains(s.opts.Snapshots, name))):
		return nil, "", fmt.Sprintf("Snapshot %s not found. Did you add it through the Daytona Dashboard?", name)
	case sn == nil && strings.HasPrefix(name, "daytona-vm-"):
		return nil, "linux-vm", ""
	case sn == nil:
		return nil, "", ""
	case sn.State != "active":
		return nil, "", fmt.Sprintf("Snapshot %s is %s", name, sn.State)
	}
	sn.LastUsedAt = now
	return sn.files.Clone(), sn.Class, ""
}

// DropSnapshot removes the snapshot of id or name as if deleted behind the
// adapter's back; false when there is none.
func (s *Server) DropSnapshot(idOrName string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.findSnapshot(idOrName)
	if sn != nil {
		s.dropSnapshot(sn)
	}
	return sn != nil
}

// dropSnapshot removes sn; its name and id are then not found. Callers
// hold mu.
func (s *Server) dropSnapshot(sn *Snapshot) {
	s.snapshots.Delete(sn.ID)
	s.removed[sn.ID], s.removed[sn.Name] = true, true
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name string `json:"name"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	switch sb := s.lookup(w, r, true); {
	case sb == nil:
	case sb.Class != "linux-vm" && sb.Class != "windows":
		s.writeError(w, r, http.StatusUnprocessableEntity, "Forking is not supported for this sandbox")
	case sb.State != StateStarted:
		s.writeError(w, r, http.StatusBadRequest, "Sandbox must be in started state to fork")
	case in.Name != "" && slices.ContainsFunc(s.sandboxes.All(), func(o *Sandbox) bool { return o.Name == in.Name }):
		s.writeError(w, r, http.StatusConflict, "Sandbox with this name already exists")
	default:
		now := s.opts.Clock.Now().UTC()
		child := sb.clone() // a new sandbox: a new id, token, files and faults
		child.ID = uuid(s.sandboxes.Next(), 0x8000)
		child.Name, child.State, child.AutoPause, child.Token, child.CreatedAt = cmp.Or(in.Name, child.ID), "", 0, s.newToken(), now
		child.files, child.capture, child.SnapshotFault, child.SnapshotTime, child.Stuck = sb.fs().Clone(), nil, "", 0, false
		s.sandboxes.Put(child.ID, &child)
		s.begin(&child, StateCreating, StateStarted, s.opts.ForkTime, now)
		s.begin(sb, StateForking, StateStarted, s.opts.ForkTime, now)
		s.writeJSON(w, http.StatusOK, s.toJSON(&child, true))
	}
}
