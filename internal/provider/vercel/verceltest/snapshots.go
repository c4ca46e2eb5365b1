package verceltest

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The snapshots: list, tree, get and delete; and fork, which starts from
// one.

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
