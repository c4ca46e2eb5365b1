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
	for k := range q {
		if !slices.Contains([]string{"state", "metadata", "limit", "nextToken", "order", "startedAfter", "template"}, k) {
			s.note(op, k)
		}
	}
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
	limit, ok := fakekit.Limit(q.Get("limit"), 100, 1, math.MaxInt)
	if !ok {
		writeError(w, http.StatusBadRequest, "limit must be at least 1")
		return
	}
	limit = min(limit, 100)
	from := -1
	if v := q.Get("nextToken"); v != "" {
		if from, err = strconv.Atoi(strings.TrimPrefix(v, "tok-")); err != nil || !strings.HasPrefix(v, "tok-") {
			writeError(w, http.StatusBadRequest, "invalid next token")
			return
		}
	}
	s.expire()
	want := map[string]string{}
	for k := range md {
		want[k] = md.Get(k)
	}
	var match []*Sandbox
	for _, sb := range slices.Backward(s.sandboxes.All()) {
		if sb.Transition != Killing && (from < 0 || s.sandboxes.Of(sb.ID) <= from) &&
			states[stateOf(sb)] && fakekit.HasAll(sb.Metadata, want) {
			match = append(match, sb)
		}
	}
	if len(match) > limit {
		w.Header().Set("X-Next-Token", "tok-"+strconv.Itoa(s.sandboxes.Of(match[limit].ID)))
		match = match[:limit]
	}
	out := make([]listedBody, 0, len(match))
	for _, sb := range match {
		out = append(out, listed(sb))
	}
	fakekit.WriteJSON(w, http.StatusOK, out)
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
