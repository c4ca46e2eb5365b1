package verceltest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The snapshots: taken, listed (and walked as a tree), read and deleted;
// fork, which starts from one; and their faults.

// SnapshotFault makes the snapshots of one sandbox misbehave
// (SetSnapshotFault).
type SnapshotFault struct {
	// Fail records each snapshot with status failed: the session stops
	// all the same, and the sandbox's current snapshot stays what it was.
	Fail bool
	// Slow keeps the session snapshotting this long on the fake's clock
	// (session calls answer 422 sandbox_snapshotting); the snapshot call
	// answers once the clock has passed it, or never when its client gives
	// up first, and the snapshot is taken then all the same.
	Slow time.Duration
}

// ExpireSnapshot deletes the current snapshot of a sandbox as its
// expiration would, so the next resume answers 410 snapshot_not_found. It
// reports whether there was one.
func (s *Server) ExpireSnapshot(project, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[project+"/"+name]
	return ok && s.drop(sb.CurrentSnapshotID)
}

// DropSnapshot deletes the snapshot id behind the client's back (its
// expiry, a delete from Vercel's dashboard). It reports whether it was
// there.
func (s *Server) DropSnapshot(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drop(id)
}

// drop marks a usable snapshot deleted. Callers hold s.mu.
func (s *Server) drop(id string) bool {
	snap, ok := s.usable(id)
	if ok {
		snap.Status, snap.UpdatedAt = "deleted", s.now()
	}
	return ok
}

// SetSnapshotFault makes the snapshots of a sandbox misbehave from now on
// (the zero SnapshotFault: behave). It reports whether the sandbox exists.
func (s *Server) SetSnapshotFault(project, name string, f SnapshotFault) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[project+"/"+name]
	if ok {
		sb.fault = f
	}
	return ok
}

// takeSnapshot copies se's files into a new snapshot of its sandbox at t,
// which becomes the sandbox's current one (its parent: the one before)
// unless the sandbox's SnapshotFault fails it; keepLastSnapshots then
// evicts the oldest.
func (s *Server) takeSnapshot(se *sessionRec, expiration, t int64) *snapshotRec {
	s.seq++
	sb := se.sandbox
	snap := &snapshotRec{snapshotJSON{ID: fmt.Sprintf("snap_%08d", s.seq), SourceSessionID: se.ID, Region: sb.Region,
		Status: "created", SizeBytes: se.files.Size(), CreatedAt: t, UpdatedAt: t, ParentID: sb.CurrentSnapshotID},
		expiration, sb, se.files.Clone()}
	if expiration > 0 {
		snap.ExpiresAt = t + expiration
	}
	s.snapshots[snap.ID] = snap
	se.snapshot = snap.ID
	if sb.fault.Fail {
		snap.Status = "failed"
		return snap
	}
	sb.CurrentSnapshotID = snap.ID
	if k := sb.keepLast; k != nil && k.Count > 0 {
		var mine []*snapshotRec
		for _, o := range s.snapshots {
			if o.sandbox == sb && o.Status == "created" {
				mine = append(mine, o)
			}
		}
		slices.SortFunc(mine, func(a, b *snapshotRec) int { return cmp.Compare(b.ID, a.ID) })
		for _, o := range mine[min(k.Count, len(mine)):] {
			if k.DeleteEvicted == nil || *k.DeleteEvicted {
				o.Status, o.UpdatedAt = "deleted", t
			}
		}
	}
	return snap
}

// usable returns the snapshot id when it can make sessions.
func (s *Server) usable(id string) (*snapshotRec, bool) {
	snap, ok := s.snapshots[id]
	return snap, ok && snap.Status == "created"
}

// listSnapshots answers GET /v2/sandboxes/snapshots?project=&name=: the
// project's snapshots, of the sandbox name when given, newest first.
func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	project, ok := s.project(w, q.Get("project"))
	if !ok {
		return
	}
	limit, desc, ok := paging(w, q)
	if !ok {
		return
	}
	var all []*snapshotRec
	for _, snap := range s.snapshots {
		if snap.sandbox.ProjectID == project && (q.Get("name") == "" || q.Get("name") == snap.sandbox.Name) {
			all = append(all, snap)
		}
	}
	page, next, ok := fakekit.KeyPage(all, func(sn *snapshotRec) string { return sn.ID }, q.Get("cursor"), "snap|", limit, desc)
	if !ok {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid cursor")
		return
	}
	out := []*snapshotJSON{}
	for _, sn := range page {
		out = append(out, snapshotJSONOf(sn))
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"snapshots": out, "pagination": pagination{Count: len(out), Next: next}})
}

// treeNode is one node of GET /v2/sandboxes/snapshots/tree: count is a
// string (the SDK validates it so).
type treeNode struct {
	Snapshot *snapshotJSON   `json:"snapshot"`
	Siblings []*snapshotJSON `json:"siblings"`
	Count    string          `json:"count"`
}

// snapshotTree walks from snapshotId through its ancestors (sortOrder
// desc, the default) or its first descendants (asc), limit nodes a page;
// each node lists the other children of its parent, and count is how many
// children that parent has (1 for a root). The next page's cursor is the next node's id,
// which the SDK sends back as snapshotId.
func (s *Server) snapshotTree(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if _, ok := s.project(w, q.Get("project")); !ok {
		return
	}
	limit, desc, ok := paging(w, q)
	if !ok {
		return
	}
	snap, ok := s.snapshots[q.Get("snapshotId")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("snapshot %q not found", q.Get("snapshotId")))
		return
	}
	children := func(parent string) (out []*snapshotRec) {
		for _, c := range s.snapshots {
			if c.ParentID == parent && c.sandbox.ProjectID == snap.sandbox.ProjectID {
				out = append(out, c)
			}
		}
		return out
	}
	nodes := []treeNode{}
	for ; snap != nil && len(nodes) < limit; snap = s.treeNext(snap, desc, children) {
		node := treeNode{Snapshot: snapshotJSONOf(snap), Siblings: []*snapshotJSON{}}
		kin := []*snapshotRec{snap} // a root has no siblings
		if snap.ParentID != "" {
			kin = children(snap.ParentID)
		}
		for _, k := range kin {
			if k != snap {
				node.Siblings = append(node.Siblings, snapshotJSONOf(k))
			}
		}
		node.Count = strconv.Itoa(len(kin))
		nodes = append(nodes, node)
	}
	var next *string
	if snap != nil {
		next = &snap.ID
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"snapshots": nodes, "pagination": pagination{Count: len(nodes), Next: next}})
}

// treeNext is the node after snap: its parent (desc) or its oldest child.
func (s *Server) treeNext(snap *snapshotRec, desc bool, children func(string) []*snapshotRec) *snapshotRec {
	if desc {
		return s.snapshots[snap.ParentID]
	}
	var first *snapshotRec
	for _, c := range children(snap.ID) {
		if first == nil || c.ID < first.ID {
			first = c
		}
	}
	return first
}

// getSnapshot answers GET and DELETE /v2/sandboxes/snapshots/{id}: the
// snapshot (deleted ones too, with status deleted); DELETE deletes it
// first. 404 for an id never seen.
func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.snapshots[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("snapshot %q not found", r.PathValue("id")))
		return
	}
	if r.Method == http.MethodDelete && snap.Status != "deleted" {
		snap.Status, snap.UpdatedAt = "deleted", s.now()
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"snapshot": snapshotJSONOf(snap)})
}

// fork answers POST /v2/sandboxes/{name}/fork: a new sandbox with the
// source's settings, env and tags (the body's fields override them),
// booted from the source's current snapshot, else fresh; a running source
// is left alone, and what it has not snapshotted is not in the fork.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	src := s.lookup(w, r)
	if src == nil {
		return
	}
	var b createBody
	if !decode(w, r, &b, true, createKeys...) {
		return
	}
	now := s.now()
	sb := &sandboxRec{sandboxJSON: src.sandboxJSON, ports: src.ports, env: src.env, keepLast: src.keepLast}
	sb.Name, sb.CurrentSessionID, sb.CurrentSnapshotID, sb.sessions = b.Name, "", "", nil
	sb.CreatedAt, sb.UpdatedAt = now, now
	if sb.Name == "" {
		s.seq++
		sb.Name = fmt.Sprintf("sandbox-%08d", s.seq)
	}
	fakekit.Set(&sb.Persistent, b.Persistent)
	fakekit.Set(&sb.Timeout, b.Timeout)
	fakekit.Set(&sb.SnapshotExpiration, b.SnapshotExpiration)
	sb.Image, sb.Region = cmp.Or(b.Image, sb.Image), cmp.Or(b.Region, sb.Region)
	if b.Ports != nil {
		sb.ports = b.Ports
	}
	if b.Tags != nil {
		sb.Tags = b.Tags
	}
	if b.Env != nil {
		sb.env = b.Env
	}
	if msg := s.validate(sb, false); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	if _, taken := s.sandboxes[sb.ProjectID+"/"+sb.Name]; taken {
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("a sandbox named %q already exists", sb.Name))
		return
	}
	from, _ := s.usable(src.CurrentSnapshotID)
	s.sandboxes[sb.ProjectID+"/"+sb.Name] = sb
	s.boot(sb, from)
	fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, false))
}
