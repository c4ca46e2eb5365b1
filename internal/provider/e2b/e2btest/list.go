package e2btest

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sandmanhq/sandman/internal/provider/internal/fakekit"
)

// Listing sandboxes: states, the metadata filter, newest first, paged by token.

// list serves GET /v2/sandboxes: state (comma-separated), metadata
// (decoded three times: see DecodeMetadataFilter; all pairs must match),
// limit (at least 1; above 100 clamped to 100; default 100) and nextToken (a
// token this server issued), newest first. order, startedAfter and template
// are accepted and ignored, like any other unknown parameter.
func (s *Server) list(op Op, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.noteQuery(op, r, "state", "metadata", "limit", "nextToken", "order", "startedAfter", "template")
	states := map[string]bool{"running": true, "paused": true}
	if v := q.Get("state"); v != "" {
		states = map[string]bool{}
		for _, name := range strings.Split(v, ",") {
			if name != "running" && name != "paused" {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("invalid state %q", name))
				return
			}
			states[name] = true
		}
	}
	md, err := DecodeMetadataFilter(q.Get("metadata"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "error when parsing metadata: "+err.Error())
		return
	}
	s.expire()
	want := map[string]string{}
	for k := range md {
		want[k] = md.Get(k)
	}
	match, ok := page(w, q, &s.sandboxes, func(sb *Sandbox) string { return sb.ID }, func(sb *Sandbox) bool {
		return sb.Transition != Killing && states[stateOf(sb)] && fakekit.HasAll(sb.Metadata, want)
	})
	if !ok {
		return
	}
	out := make([]listedBody, 0, len(match))
	for _, sb := range match {
		out = append(out, listed(sb))
	}
	fakekit.WriteJSON(w, http.StatusOK, out)
}

// page serves the paging of a list over t's records that keep reports,
// newest first: limit (at least 1; above 100 clamped to 100; default 100)
// and nextToken (a token this fake issued, "tok-<place>"); the next page's
// token goes in the X-Next-Token header. It answers a bad limit or token
// with 400 itself and returns false.
func page[T any](w http.ResponseWriter, q url.Values, t *fakekit.Table[T], id func(*T) string, keep func(*T) bool) ([]*T, bool) {
	limit, ok := fakekit.Limit(q.Get("limit"), 100, 1, math.MaxInt)
	if !ok {
		writeError(w, http.StatusBadRequest, "limit must be at least 1")
		return nil, false
	}
	limit = min(limit, 100)
	from := math.MaxInt
	if v := q.Get("nextToken"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "tok-"))
		if err != nil || !strings.HasPrefix(v, "tok-") {
			writeError(w, http.StatusBadRequest, "invalid next token")
			return nil, false
		}
		from = n
	}
	var match []*T
	for _, v := range slices.Backward(t.All()) {
		if t.Of(id(v)) <= from && keep(v) {
			match = append(match, v)
		}
	}
	if len(match) > limit {
		w.Header().Set("X-Next-Token", "tok-"+strconv.Itoa(t.Of(id(match[limit]))))
		match = match[:limit]
	}
	return match, true
}

// DecodeMetadataFilter decodes list's metadata query value (already
// decoded once from the query string) the way E2B's server does: the value
// is percent-decoded again, split into k=v pairs at '&', and each key and
// value percent-decoded a third time. Errors: a malformed escape.
func DecodeMetadataFilter(v string) (url.Values, error) {
	once, err := url.QueryUnescape(v)
	if err != nil {
		return nil, err
	}
	return url.ParseQuery(once)
}
