package e2btest

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

// Snapshots and forks (docs/providers/e2b.md "Checkpoints"), as E2B's API
// serves them:
//   - POST /sandboxes/{id}/snapshots {"name"?} → 201 {snapshotID, names}:
//     the running sandbox's files and processes are copied and it goes on
//     running. The name is <name>, <TeamSlug>/<name> or either with :<tag>
//     (lowercased; letters, digits, '-' and '_'; another team's namespace
//     is a 400); the snapshotID is <TeamSlug>/<name>:<tag>, or
//     <templateID>:default unnamed; a name taken already moves to the new
//     state. 404 for a paused or unknown sandbox, 409 in a transition, 400
//     for envd older than 0.5.0.
//   - GET /snapshots ?sandboxID, name (a snapshotID, a name, or a
//     template id), limit, nextToken → 200 [{snapshotID, names}], newest
//     first, paged as the sandbox list is.
//   - DELETE /templates/{id} → 204; 404 unknown; 400 while a running or
//     paused sandbox made from it exists.
//   - POST /v2/sandboxes with a snapshot's id as templateID starts a
//     sandbox holding its files and processes; a templateID holding '/' or
//     ':' that names no snapshot is a 404 "template '<id>' not found".
//   - POST /sandboxes/{id}/fork {"count"?: 1..100, "timeout"?: s, 15
//     omitted} → 201 [{"sandbox": …}] × count: each fork copies the files,
//     processes, metadata, autoPause and autoResume; the source goes on
//     running. 409 paused or in a transition, 404 unknown.

// Snapshot is the fake's record of one snapshot.
type Snapshot struct {
	ID         string // snapshotID
	TemplateID string
	Name       string // <TeamSlug>/<name>:<tag>; "" unnamed
	SandboxID  string // its source
	Files      *sandboxfs.Mem
	Processes  []Process
}

// checkpointFailure is E2B's 500 message for a snapshot or a fork that
// failed midway, after which E2B kills the source (faulty).
var checkpointFailure = map[Op]string{OpSnapshot: "Error creating snapshot template", OpFork: "Error forking sandbox"}

func (s *Server) snapshotRoutes(api *http.ServeMux) {
	api.Handle("POST /sandboxes/{id}/snapshots", s.handle(OpSnapshot, s.snapshot))
	api.Handle("GET /snapshots", s.handle(OpListSnapshots, s.listSnapshots))
	api.Handle("DELETE /templates/{id}", s.handle(OpDeleteSnapshot, s.deleteSnapshot))
	api.Handle("POST /sandboxes/{id}/fork", s.handle(OpFork, s.fork))
}

// DropSnapshot deletes a snapshot as if behind Sandman's back (no check of
// the sandboxes made from it), reporting whether there was one.
func (s *Server) DropSnapshot(ref string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sn := s.resolve(ref); sn != nil {
		s.snapshots.Delete(sn.ID)
		return true
	}
	return false
}

// resolve finds the snapshot a reference names: its snapshotID, its name
// with or without the team and the tag (:default when none), or its
// template id. Callers hold mu.
func (s *Server) resolve(ref string) *Snapshot {
	ref = strings.ToLower(strings.TrimSpace(ref))
	if !strings.Contains(ref, ":") {
		ref += ":default"
	}
	for _, sn := range s.snapshots.All() {
		if sn.ID == ref || sn.ID == TeamSlug+"/"+ref || sn.TemplateID+":default" == ref {
			return sn
		}
	}
	return nil
}

// files returns sb's files, making them on first use.
func files(sb *Sandbox) *sandboxfs.Mem {
	if sb.Files == nil {
		sb.Files = &sandboxfs.Mem{}
	}
	return sb.Files
}

var (
	aliasOf = regexp.MustCompile(`^[a-z0-9_-]+$`)
	tagOf   = regexp.MustCompile(`^[a-z0-9_.-]+$`)
)

// parseName reads a snapshot's name as E2B does:
// [<namespace>/]<alias>[:<tag>]; refused is E2B's 400 message otherwise.
func parseName(in string) (name, refused string) {
	id, tag, _ := strings.Cut(strings.ToLower(strings.TrimSpace(in)), ":")
	ns, alias, found := strings.Cut(id, "/")
	if !found {
		ns, alias = TeamSlug, id
	}
	switch tag = cmp.Or(tag, "default"); {
	case ns != TeamSlug:
		return "", fmt.Sprintf("namespace '%s' must match your team '%s'", ns, TeamSlug)
	case !aliasOf.MatchString(alias):
		return "", "Invalid name: invalid template ID: " + in
	case !tagOf.MatchString(tag):
		return "", "Invalid name: invalid tag: " + tag
	}
	return ns + "/" + alias + ":" + tag, ""
}

// checkpointable answers the request and returns false unless sb can be
// snapshotted or forked (what, in E2B's messages) now.
func checkpointable(w http.ResponseWriter, sb *Sandbox, what string) bool {
	var major, minor int
	fmt.Sscanf(cmp.Or(sb.EnvdVersion, EnvdVersion), "%d.%d", &major, &minor)
	switch {
	case sb.Transition != "":
		writeError(w, http.StatusConflict, fmt.Sprintf("Sandbox '%s' cannot be %s while in '%s' state", sb.ID, what, sb.Transition))
	case major == 0 && minor < 5:
		writeError(w, http.StatusBadRequest, "sandbox envd version must be at least 0.5.0 to create snapshots, please rebuild the template")
	default:
		return true
	}
	return false
}

func (s *Server) snapshot(op Op, w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name *string `json:"name"`
	}
	if !s.decode(op, w, r, &in, "name") {
		return
	}
	s.noteQuery(op, r)
	name, refused := "", ""
	if in.Name != nil {
		if name, refused = parseName(*in.Name); refused != "" {
			writeError(w, http.StatusBadRequest, refused)
			return
		}
	}
	sb := s.lookupAny(w, r)
	switch {
	case sb == nil:
		return
	case sb.State == lifecycle.SandboxPaused: // no longer in the live store
		writeError(w, http.StatusNotFound, fmt.Sprintf("Sandbox %q doesn't exist or you don't have access to it", sb.ID))
		return
	case !checkpointable(w, sb, "snapshotted"):
		return
	}
	sn := &Snapshot{TemplateID: fmt.Sprintf("snap%016d", s.snapshots.Next()), Name: name, SandboxID: sb.ID,
		Files: files(sb).Clone(), Processes: slices.Clone(sb.Processes)}
	sn.ID = cmp.Or(name, sn.TemplateID+":default")
	if old, ok := s.snapshots.Get(sn.ID); ok { // the name moves to the new state
		sn.TemplateID = old.TemplateID
	}
	s.snapshots.Put(sn.ID, sn)
	fakekit.WriteJSON(w, http.StatusCreated, info(sn))
}

// info is a snapshot's answer (E2B's SnapshotInfo).
func info(sn *Snapshot) map[string]any {
	names := []string{}
	if sn.Name != "" {
		names = append(names, sn.Name)
	}
	return map[string]any{"snapshotID": sn.ID, "names": names}
}

func (s *Server) listSnapshots(op Op, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.noteQuery(op, r, "sandboxID", "name", "limit", "nextToken")
	var named *Snapshot
	if n := q.Get("name"); n != "" {
		if named = s.resolve(n); named == nil {
			fakekit.WriteJSON(w, http.StatusOK, []any{})
			return
		}
	}
	match, ok := page(w, q, &s.snapshots, func(sn *Snapshot) string { return sn.ID }, func(sn *Snapshot) bool {
		return (named == nil || sn == named) && (q.Get("sandboxID") == "" || sn.SandboxID == q.Get("sandboxID"))
	})
	if !ok {
		return
	}
	out := make([]map[string]any, 0, len(match))
	for _, sn := range match {
		out = append(out, info(sn))
	}
	fakekit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSnapshot(op Op, w http.ResponseWriter, r *http.Request) {
	s.noteQuery(op, r)
	s.expire()
	ref := r.PathValue("id")
	sn := s.resolve(ref)
	if sn == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("template '%s' not found", ref))
		return
	}
	for _, sb := range s.sandboxes.All() {
		if sb.FromSnapshot == sn.ID && sb.Transition != Killing {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("cannot delete template '%s' because there are %s sandboxes using it", ref, stateOf(sb)))
			return
		}
	}
	s.snapshots.Delete(sn.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) fork(op Op, w http.ResponseWriter, r *http.Request) {
	var in struct {
		Count   *int   `json:"count"`
		Timeout *int64 `json:"timeout"`
	}
	if !s.decode(op, w, r, &in, "count", "timeout") {
		return
	}
	s.noteQuery(op, r)
	count, secs := 1, int64(DefaultTimeoutV1/time.Second)
	fakekit.Set(&count, in.Count)
	fakekit.Set(&secs, in.Timeout)
	switch {
	case count < 1 || count > 100:
		writeError(w, http.StatusBadRequest, "Count must be between 1 and 100")
		return
	case secs <= 0 || secs > int64(s.opts.MaxRunLength/time.Second):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("Timeout must be between 1 s and %s", s.opts.MaxRunLength))
		return
	}
	sb := s.lookupAny(w, r)
	switch {
	case sb == nil:
		return
	case readsPaused(sb) && sb.Transition != Pausing:
		writeError(w, http.StatusConflict, fmt.Sprintf("Sandbox '%s' is paused and cannot be forked; resume it first", sb.ID))
		return
	case !checkpointable(w, sb, "forked"):
		return
	}
	out := make([]map[string]any, count)
	for i := range out {
		f := sb.clone()
		now := s.now()
		f.ID, f.StartedAt, f.EndAt, f.Timeout = s.newID(), now, now.Add(time.Duration(secs)*time.Second), time.Duration(secs)*time.Second
		f.AccessToken, f.Files, f.FromSnapshot = "envd-token-"+f.ID, files(sb).Clone(), ""
		s.sandboxes.Put(f.ID, &f)
		out[i] = map[string]any{"sandbox": created(&f)}
	}
	fakekit.WriteJSON(w, http.StatusCreated, out)
}

// newID returns the id of a new sandbox. Callers hold mu.
func (s *Server) newID() string { return fmt.Sprintf("isbx%016d", s.sandboxes.Next()) }
