package daytonatest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
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
	limit, ok := fakekit.Limit(q.Get("limit"), 100, 1, 200)
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, "limit must not be less than 1, limit must not be greater than 200")
		return
	}
	sortBy, order := cmp.Or(q.Get("sort"), "createdAt"), cmp.Or(q.Get("order"), "asc")
	if !slices.Contains([]string{"createdAt", "lastActivityAt", "name", "cpu", "memoryGib", "diskGib"}, sortBy) ||
		(order != "asc" && order != "desc") {
		s.writeError(w, r, http.StatusBadRequest, "sort or order is not valid")
		return
	}
	from := 0
	if v := q.Get("cursor"); v != "" {
		c, ok := fakekit.ReadCursor(v, "c:")
		n, err := strconv.Atoi(c)
		if !ok || err != nil || n < 0 {
			s.writeError(w, r, http.StatusBadRequest, "Invalid cursor")
			return
		}
		from = n
	}
	s.tick()
	now := s.opts.Clock.Now()
	all := s.sandboxes.All()
	for _, t := range s.tombstones {
		if now.Before(t.until) {
			c := t.sb.clone()
			all = append(all, &c)
		}
	}
	var match []*Sandbox
	for _, sb := range all {
		if (len(states) == 0 || states[sb.State]) && fakekit.HasAll(sb.Labels, labels) &&
			strings.HasPrefix(sb.Name, q.Get("name")) && strings.HasPrefix(sb.ID, q.Get("id")) {
			match = append(match, sb)
		}
	}
	slices.SortStableFunc(match, func(a, b *Sandbox) int {
		c := 0
		switch sortBy {
		case "lastActivityAt":
			c = a.LastActivityAt.Compare(b.LastActivityAt)
		case "name":
			c = strings.Compare(a.Name, b.Name)
		}
		c = cmp.Or(c, s.sandboxes.Of(a.ID)-s.sandboxes.Of(b.ID))
		if order == "desc" {
			return -c
		}
		return c
	})
	match = match[min(from, len(match)):]
	var next *string
	if len(match) > limit {
		c := fakekit.Cursor("c:", strconv.Itoa(from+limit))
		next = &c
		match = match[:limit]
	}
	items := make([]sandboxJSON, 0, len(match))
	for _, sb := range match {
		items = append(items, s.toJSON(sb, false))
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": items, "nextCursor": next})
}
