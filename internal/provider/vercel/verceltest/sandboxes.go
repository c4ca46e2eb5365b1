package verceltest

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The named sandboxes: create, get (and resume), list, update and delete.

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if !decode(w, r, &b, false, createKeys...) {
		return
	}
	project, ok := s.project(w, b.ProjectID)
	if !ok {
		return
	}
	now := s.now()
	sb := &sandboxRec{sandboxJSON: sandboxJSON{ProjectID: project, Name: b.Name, Persistent: true, Image: b.Image,
		Runtime: b.Runtime, VCPUs: 2, Timeout: int64(DefaultSessionTimeout / time.Millisecond), Tags: b.Tags,
		Region: cmp.Or(b.Region, DefaultRegion), SnapshotExpiration: int64(DefaultSnapshotExpiration / time.Millisecond),
		CreatedAt: now, UpdatedAt: now}, ports: b.Ports, env: b.Env, keepLast: b.KeepLastSnapshots}
	if sb.Name == "" {
		s.seq++
		sb.Name = fmt.Sprintf("sandbox-%08d", s.seq)
	}
	fakekit.Set(&sb.Persistent, b.Persistent)
	fakekit.Set(&sb.SnapshotExpiration, b.SnapshotExpiration)
	fakekit.Set(&sb.Timeout, b.Timeout)
	if b.Resources != nil && b.Resources.VCPUs != 0 {
		sb.VCPUs = b.Resources.VCPUs
	}
	var fromSnapshot string
	if b.Source != nil && b.Source.Type == "snapshot" {
		fromSnapshot = b.Source.SnapshotID
	}
	if msg := s.validate(sb, fromSnapshot != "" && (b.Image != "" || b.Runtime != "")); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	if fromSnapshot == "" && sb.Image == "" && sb.Runtime == "" {
		sb.Image = DefaultImage
	}
	if _, taken := s.sandboxes[project+"/"+sb.Name]; taken {
		writeError(w, http.StatusBadRequest, "bad_request",
			fmt.Sprintf("a sandbox named %q already exists; use GET /sandboxes/:name", sb.Name))
		return
	}
	snap, ok := s.usable(fromSnapshot)
	if fromSnapshot != "" && !ok {
		writeError(w, http.StatusGone, "snapshot_not_found", fmt.Sprintf("snapshot %q not found", fromSnapshot))
		return
	}
	s.sandboxes[project+"/"+sb.Name] = sb
	s.boot(sb, snap)
	fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, false))
}

// validate returns a 400 message for a sandbox the API would refuse, or "".
func (s *Server) validate(sb *sandboxRec, snapshotWithImage bool) string {
	switch {
	case !nameRE.MatchString(sb.Name):
		return fmt.Sprintf("name %q must be 1 to 128 of a-z, A-Z, 0-9, _ and -", sb.Name)
	case snapshotWithImage:
		return "source of type snapshot excludes image and runtime"
	case sb.Image != "" && sb.Runtime != "":
		return "image and runtime exclude each other"
	case sb.Timeout < 1000:
		return "timeout must be at least 1000 ms"
	case ms(sb.Timeout) > s.opts.MaxSessionTimeout:
		return fmt.Sprintf("timeout %d ms exceeds the plan's maximum of %d ms", sb.Timeout, s.opts.MaxSessionTimeout.Milliseconds())
	case sb.VCPUs < 1 || sb.VCPUs > 8 || (sb.VCPUs > 1 && sb.VCPUs%2 != 0):
		return "resources.vcpus must be 1 or an even number up to 8"
	case sb.SnapshotExpiration < 0:
		return "snapshotExpiration must be 0 (never) or positive"
	}
	if msg := checkPorts(sb.ports); msg != "" {
		return msg
	}
	return checkTags(sb.Tags)
}

func checkPorts(ports []int) string {
	if len(ports) > 15 {
		return "at most 15 ports"
	}
	for _, p := range ports {
		if p < 1 || p > 65535 {
			return fmt.Sprintf("port %d is out of range", p)
		}
	}
	return ""
}

func checkTags(tags map[string]string) string {
	if len(tags) > 5 {
		return "at most 5 tags"
	}
	for k := range tags {
		if k == "" || strings.Contains(k, ":") {
			return fmt.Sprintf("tag key %q must be non-empty and without ':'", k)
		}
	}
	return ""
}

// useSnapshot records a use of snap at now, which restarts its expiry.
func (s *Server) useSnapshot(snap *snapshotRec, now int64) {
	if snap.expiration > 0 {
		snap.ExpiresAt = now + snap.expiration
	}
	snap.UpdatedAt, snap.LastUsedAt = now, now
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	if r.URL.Query().Get("resume") != "true" {
		fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, false))
		return
	}
	switch st := s.statusOf(sb); st {
	case StatusRunning, StatusPending:
		fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, false))
		return
	case StatusStopping:
		writeError(w, http.StatusUnprocessableEntity, "sandbox_stopping", "the sandbox is stopping")
		return
	case StatusSnapshotting:
		writeError(w, http.StatusUnprocessableEntity, "sandbox_snapshotting", "the sandbox is snapshotting")
		return
	}
	var from *snapshotRec
	if sb.Persistent && sb.CurrentSnapshotID != "" {
		snap, ok := s.usable(sb.CurrentSnapshotID)
		if !ok {
			writeError(w, http.StatusGone, "snapshot_not_found", "Cannot resume sandbox: no snapshot available.")
			return
		}
		from = snap
	}
	s.boot(sb, from)
	fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, true))
}

// sortKey orders sandboxes for list: the sort field (numbers zero-padded)
// then the name.
func (s *Server) sortKey(sb *sandboxRec, by string) string {
	var k string
	switch by {
	case "name":
		k = ""
	case "statusUpdatedAt":
		k = fmt.Sprintf("%020d", sb.StatusUpdatedAt)
	case "currentSnapshotId":
		k = sb.CurrentSnapshotID
	default:
		k = fmt.Sprintf("%020d", sb.CreatedAt)
	}
	return k + "\x00" + sb.Name
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	project, ok := s.project(w, q.Get("project"))
	if !ok {
		return
	}
	limit, desc, ok := paging(w, q)
	if !ok {
		return
	}
	by := cmp.Or(q.Get("sortBy"), "createdAt")
	if !slices.Contains([]string{"createdAt", "name", "statusUpdatedAt", "currentSnapshotId"}, by) {
		writeError(w, http.StatusBadRequest, "bad_request", "sortBy must be createdAt, name, statusUpdatedAt or currentSnapshotId")
		return
	}
	prefix := q.Get("namePrefix")
	if prefix != "" && by != "name" {
		writeError(w, http.StatusBadRequest, "bad_request", "namePrefix needs sortBy=name")
		return
	}
	tags := map[string]string{}
	if tq := q["tags"]; len(tq) > 1 {
		writeError(w, http.StatusBadRequest, "bad_request", "only one tag filter is supported")
		return
	} else if len(tq) == 1 {
		k, v, found := strings.Cut(tq[0], ":")
		if !found || k == "" {
			writeError(w, http.StatusBadRequest, "bad_request", "tags must be key:value")
			return
		}
		tags[k] = v
	}
	var all []*sandboxRec
	for _, sb := range s.sandboxes {
		if sb.ProjectID == project && strings.HasPrefix(sb.Name, prefix) && fakekit.HasAll(sb.Tags, tags) {
			all = append(all, sb)
		}
	}
	page, next, ok := fakekit.KeyPage(all, func(sb *sandboxRec) string { return s.sortKey(sb, by) },
		q.Get("cursor"), by+"|", limit, desc)
	if !ok {
		writeError(w, http.StatusBadRequest, "bad_request", "invalid cursor")
		return
	}
	out := listAnswer{Sandboxes: []sandboxJSON{}, Pagination: pagination{Next: next}}
	for _, sb := range page {
		out.Sandboxes = append(out.Sandboxes, s.sandboxJSON(sb))
	}
	out.Pagination.Count = len(out.Sandboxes)
	fakekit.WriteJSON(w, http.StatusOK, out)
}

// paging reads a list's limit (1-50, default 20) and sortOrder (asc or
// desc, the default), writing a 400 when either is wrong.
func paging(w http.ResponseWriter, q url.Values) (limit int, desc, ok bool) {
	limit, ok = fakekit.Limit(q.Get("limit"), 20, 1, 50)
	order := cmp.Or(q.Get("sortOrder"), "desc")
	if !ok || (order != "asc" && order != "desc") {
		writeError(w, http.StatusBadRequest, "bad_request", "limit must be 1 to 50 and sortOrder asc or desc")
		return 0, false, false
	}
	return limit, order == "desc", true
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	var b updateBody
	if !decode(w, r, &b, false, updateKeys...) {
		return
	}
	next := *sb
	fakekit.Set(&next.Persistent, b.Persistent)
	fakekit.Set(&next.Timeout, b.Timeout)
	if b.Ports != nil {
		next.ports = b.Ports
	}
	if b.Tags != nil {
		next.Tags = b.Tags
	}
	if b.Resources != nil && b.Resources.VCPUs != 0 {
		next.VCPUs = b.Resources.VCPUs
	}
	fakekit.Set(&next.SnapshotExpiration, b.SnapshotExpiration)
	if b.KeepLastSnapshots != nil {
		next.keepLast = b.KeepLastSnapshots
	}
	if msg := s.validate(&next, false); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	if b.CurrentSnapshotID != nil {
		if snap, ok := s.usable(*b.CurrentSnapshotID); !ok || snap.sandbox.ProjectID != sb.ProjectID {
			writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("snapshot %q not found", *b.CurrentSnapshotID))
			return
		}
		next.CurrentSnapshotID = *b.CurrentSnapshotID
	}
	next.UpdatedAt = s.now()
	*sb = next
	se := s.sessions[sb.CurrentSessionID]
	if b.Ports != nil && (se.Status == StatusRunning || se.Status == StatusPending) {
		s.routeSession(se, sb.ports)
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"sandbox": s.sandboxJSON(sb), "routes": orEmpty(se.routes)})
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	now := s.now()
	for _, id := range sb.sessions {
		se := s.sessions[id]
		if se.Status != StatusStopped && se.Status != StatusFailed && se.Status != StatusAborted {
			se.Status, se.StoppedAt, se.UpdatedAt = StatusStopped, now, now
		}
		for _, rt := range se.routes {
			delete(s.bySub, rt.Subdomain)
		}
	}
	out := s.sandboxJSON(sb)
	delete(s.sandboxes, sb.ProjectID+"/"+sb.Name)
	if r.URL.Query().Get("deleteOrphanSnapshots") == "true" {
		used := map[string]bool{}
		for _, o := range s.sandboxes {
			used[o.CurrentSnapshotID] = true
		}
		for _, snap := range s.snapshots {
			if snap.sandbox == sb && !used[snap.ID] {
				snap.Status, snap.UpdatedAt = "deleted", now
			}
		}
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"sandbox": out})
}
