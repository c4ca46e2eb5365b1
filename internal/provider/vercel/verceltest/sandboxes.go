package verceltest

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// The named sandboxes: create, get (and resume), list, update and delete.

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var b createBody
	if !decode(w, r, &b, createKeys...) {
		return
	}
	project, ok := s.project(w, b.ProjectID)
	if !ok {
		return
	}
	now := s.now()
	sb := &sandboxRec{project: project, name: b.Name, persistent: true, image: b.Image, runtime: b.Runtime,
		vcpus: 2, timeout: int64(DefaultSessionTimeout / time.Millisecond), ports: b.Ports, env: b.Env,
		tags: b.Tags, region: cmp.Or(b.Region, DefaultRegion),
		snapshotExpiration: int64(DefaultSnapshotExpiration / time.Millisecond), createdAt: now, updatedAt: now}
	if sb.name == "" {
		s.seq++
		sb.name = fmt.Sprintf("sandbox-%08d", s.seq)
	}
	if b.Persistent != nil {
		sb.persistent = *b.Persistent
	}
	if b.SnapshotExpiration != nil {
		sb.snapshotExpiration = *b.SnapshotExpiration
	}
	if b.Timeout != nil {
		sb.timeout = *b.Timeout
	}
	if b.Resources != nil && b.Resources.VCPUs != 0 {
		sb.vcpus = b.Resources.VCPUs
	}
	var fromSnapshot string
	if b.Source != nil && b.Source.Type == "snapshot" {
		fromSnapshot = b.Source.SnapshotID
	}
	if msg := s.validate(sb, fromSnapshot != "" && (b.Image != "" || b.Runtime != "")); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	if fromSnapshot == "" && sb.image == "" && sb.runtime == "" {
		sb.image = DefaultImage
	}
	if _, taken := s.sandboxes[project+"/"+sb.name]; taken {
		writeError(w, http.StatusBadRequest, "bad_request",
			fmt.Sprintf("a sandbox named %q already exists; use GET /sandboxes/:name", sb.name))
		return
	}
	if fromSnapshot != "" {
		snap, ok := s.snapshots[fromSnapshot]
		if !ok || snap.status != "created" {
			writeError(w, http.StatusGone, "snapshot_not_found", fmt.Sprintf("snapshot %q not found", fromSnapshot))
			return
		}
		s.useSnapshot(snap, now)
	}
	s.sandboxes[project+"/"+sb.name] = sb
	s.boot(sb, fromSnapshot)
	fakekit.WriteJSON(w, http.StatusOK, s.answer(sb, false))
}

// validate returns a 400 message for a sandbox the API would refuse, or "".
func (s *Server) validate(sb *sandboxRec, snapshotWithImage bool) string {
	switch {
	case !nameRE.MatchString(sb.name):
		return fmt.Sprintf("name %q must be 1 to 128 of a-z, A-Z, 0-9, _ and -", sb.name)
	case snapshotWithImage:
		return "source of type snapshot excludes image and runtime"
	case sb.image != "" && sb.runtime != "":
		return "image and runtime exclude each other"
	case sb.timeout < 1000:
		return "timeout must be at least 1000 ms"
	case ms(sb.timeout) > s.opts.MaxSessionTimeout:
		return fmt.Sprintf("timeout %d ms exceeds the plan's maximum of %d ms", sb.timeout, s.opts.MaxSessionTimeout.Milliseconds())
	case sb.vcpus < 1 || sb.vcpus > 8 || (sb.vcpus > 1 && sb.vcpus%2 != 0):
		return "resources.vcpus must be 1 or an even number up to 8"
	case sb.snapshotExpiration < 0:
		return "snapshotExpiration must be 0 (never) or positive"
	}
	if msg := checkPorts(sb.ports); msg != "" {
		return msg
	}
	return checkTags(sb.tags)
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
		snap.expiresAt = now + snap.expiration
	}
	snap.updatedAt = now
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
	from := ""
	if sb.persistent && sb.currentSnapshotID != "" {
		snap := s.snapshots[sb.currentSnapshotID]
		if snap == nil || snap.status != "created" {
			writeError(w, http.StatusGone, "snapshot_not_found",
				fmt.Sprintf("snapshot %q of sandbox %q has expired", sb.currentSnapshotID, sb.name))
			return
		}
		s.useSnapshot(snap, s.now())
		from = snap.id
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
		k = fmt.Sprintf("%020d", sb.statusUpdatedAt)
	case "currentSnapshotId":
		k = sb.currentSnapshotID
	default:
		k = fmt.Sprintf("%020d", sb.createdAt)
	}
	return k + "\x00" + sb.name
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	project, ok := s.project(w, q.Get("project"))
	if !ok {
		return
	}
	limit, ok := fakekit.Limit(q.Get("limit"), 20, 1, 50)
	if !ok {
		writeError(w, http.StatusBadRequest, "bad_request", "limit must be between 1 and 50")
		return
	}
	by := cmp.Or(q.Get("sortBy"), "createdAt")
	if !slices.Contains([]string{"createdAt", "name", "statusUpdatedAt", "currentSnapshotId"}, by) {
		writeError(w, http.StatusBadRequest, "bad_request", "sortBy must be createdAt, name, statusUpdatedAt or currentSnapshotId")
		return
	}
	order := cmp.Or(q.Get("sortOrder"), "desc")
	if order != "asc" && order != "desc" {
		writeError(w, http.StatusBadRequest, "bad_request", "sortOrder must be asc or desc")
		return
	}
	prefix := q.Get("namePrefix")
	if prefix != "" && by != "name" {
		writeError(w, http.StatusBadRequest, "bad_request", "namePrefix needs sortBy=name")
		return
	}
	var tagKey, tagValue string
	if tags := q["tags"]; len(tags) > 1 {
		writeError(w, http.StatusBadRequest, "bad_request", "only one tag filter is supported")
		return
	} else if len(tags) == 1 {
		var found bool
		tagKey, tagValue, found = strings.Cut(tags[0], ":")
		if !found || tagKey == "" {
			writeError(w, http.StatusBadRequest, "bad_request", "tags must be key:value")
			return
		}
	}
	after := ""
	if c := q.Get("cursor"); c != "" {
		if after, ok = fakekit.ReadCursor(c, by+"|"); !ok {
			writeError(w, http.StatusBadRequest, "bad_request", "invalid cursor")
			return
		}
	}
	type keyed struct {
		key string
		sb  *sandboxRec
	}
	var all []keyed
	for _, sb := range s.sandboxes {
		if sb.project != project || !strings.HasPrefix(sb.name, prefix) {
			continue
		}
		if tagKey != "" {
			if v, ok := sb.tags[tagKey]; !ok || v != tagValue {
				continue
			}
		}
		all = append(all, keyed{s.sortKey(sb, by), sb})
	}
	slices.SortFunc(all, func(a, b keyed) int {
		if order == "desc" {
			return strings.Compare(b.key, a.key)
		}
		return strings.Compare(a.key, b.key)
	})
	if after != "" {
		i := 0
		for i < len(all) && ((order == "desc" && all[i].key >= after) || (order == "asc" && all[i].key <= after)) {
			i++
		}
		all = all[i:]
	}
	out := listAnswer{Sandboxes: []sandboxJSON{}}
	for i, k := range all {
		if i == limit {
			next := fakekit.Cursor(by+"|", all[i-1].key)
			out.Pagination.Next = &next
			break
		}
		out.Sandboxes = append(out.Sandboxes, s.sandboxJSON(k.sb))
	}
	out.Pagination.Count = len(out.Sandboxes)
	fakekit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	sb := s.lookup(w, r)
	if sb == nil {
		return
	}
	var b updateBody
	if !decode(w, r, &b, updateKeys...) {
		return
	}
	next := *sb
	if b.Persistent != nil {
		next.persistent = *b.Persistent
	}
	if b.Timeout != nil {
		next.timeout = *b.Timeout
	}
	if b.Ports != nil {
		next.ports = b.Ports
	}
	if b.Tags != nil {
		next.tags = b.Tags
	}
	if b.Resources != nil && b.Resources.VCPUs != 0 {
		next.vcpus = b.Resources.VCPUs
	}
	if b.SnapshotExpiration != nil {
		next.snapshotExpiration = *b.SnapshotExpiration
	}
	if msg := s.validate(&next, false); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	if b.CurrentSnapshotID != nil {
		if snap, ok := s.snapshots[*b.CurrentSnapshotID]; !ok || snap.status != "created" {
			writeError(w, http.StatusGone, "snapshot_not_found", fmt.Sprintf("snapshot %q not found", *b.CurrentSnapshotID))
			return
		}
		next.currentSnapshotID = *b.CurrentSnapshotID
	}
	next.updatedAt = s.now()
	*sb = next
	se := s.sessions[sb.currentSessionID]
	if b.Ports != nil && (se.status == StatusRunning || se.status == StatusPending) {
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
		if se.status != StatusStopped && se.status != StatusFailed && se.status != StatusAborted {
			se.status, se.stoppedAt, se.updatedAt = StatusStopped, now, now
		}
		for _, rt := range se.routes {
			delete(s.bySub, rt.Subdomain)
		}
	}
	out := s.sandboxJSON(sb)
	delete(s.sandboxes, sb.project+"/"+sb.name)
	if r.URL.Query().Get("deleteOrphanSnapshots") == "true" {
		for _, snap := range s.snapshots {
			if se, ok := s.sessions[snap.sourceSessionID]; ok && se.sandbox == sb {
				snap.status, snap.updatedAt = "deleted", now
			}
		}
	}
	fakekit.WriteJSON(w, http.StatusOK, map[string]any{"sandbox": out})
}
