package daytonatest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Listing sandboxes: filters, sort order and cursors.

// list serves GET /sandbox: labels (URL-encoded JSON object, all pairs
// must match), states (repeated; destroyed refused), name and id
// prefixes, limit (1-200, default 100), cursor (opaque, issued here),
// sort and order (createdAt by default, ascending).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var labels map[string]string
	if v := q.Get("labels"); v != "" {
		if err := json.Unmarshal([]byte(v), &labels); err != nil {
			s.writeError(w, r, http.StatusBadRequest, "Invalid labels JSON format")
			return
		}
	}
	states := map[string]bool{}
	for _, v := range q["states"] {
		for _, st := range strings.Split(v, ",") {
			if st == StateDestroyed || !knownState(st) {
				s.writeError(w, r, http.StatusBadRequest, fmt.Sprintf("each value in states must be one of the non-destroyed states, got %q", st))
				return
			}
			states[st] = true
		}
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			s.writeError(w, r, http.StatusBadRequest, "limit must not be less than 1, limit must not be greater than 200")
			return
		}
		limit = n
	}
	sortBy, order := cmp.Or(q.Get("sort"), "createdAt"), cmp.Or(q.Get("order"), "asc")
	if !slices.Contains([]string{"createdAt", "lastActivityAt", "name", "cpu", "memoryGib", "diskGib"}, sortBy) ||
		(order != "asc" && order != "desc") {
		s.writeError(w, r, http.StatusBadRequest, "sort or order is not valid")
		return
	}
	from := 0
	if v := q.Get("cursor"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		n, aerr := strconv.Atoi(strings.TrimPrefix(string(b), "c:"))
		if err != nil || aerr != nil || !strings.HasPrefix(string(b), "c:") || n < 0 {
			s.writeError(w, r, http.StatusBadRequest, "Invalid cursor")
			return
		}
		from = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	now := s.opts.Clock.Now()
	var all []*Sandbox
	for _, sb := range s.sandboxes {
		all = append(all, sb)
	}
	for _, t := range s.tombstones {
		if now.Before(t.until) {
			c := t.sb.clone()
			all = append(all, &c)
		}
	}
	var match []*Sandbox
	for _, sb := range all {
		if (len(states) == 0 || states[sb.State]) && hasLabels(sb.Labels, labels) &&
			strings.HasPrefix(sb.Name, q.Get("name")) && strings.HasPrefix(sb.ID, q.Get("id")) {
			match = append(match, sb)
		}
	}
	less := func(a, b *Sandbox) bool {
		switch sortBy {
		case "lastActivityAt":
			if !a.LastActivityAt.Equal(b.LastActivityAt) {
				return a.LastActivityAt.Before(b.LastActivityAt)
			}
		case "name":
			if a.Name != b.Name {
				return a.Name < b.Name
			}
		}
		return s.order.Of(a.ID) < s.order.Of(b.ID)
	}
	sort.SliceStable(match, func(i, j int) bool {
		if order == "desc" {
			return less(match[j], match[i])
		}
		return less(match[i], match[j])
	})
	if from > len(match) {
		from = len(match)
	}
	match = match[from:]
	var next *string
	if len(match) > limit {
		c := base64.RawURLEncoding.EncodeToString([]byte("c:" + strconv.Itoa(from+limit)))
		next = &c
		match = match[:limit]
	}
	items := make([]sandboxJSON, 0, len(match))
	for _, sb := range match {
		items = append(items, s.toJSON(sb, false))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "nextCursor": next})
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
