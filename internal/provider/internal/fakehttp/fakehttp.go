// Package fakehttp is the request plumbing the providers' fakes
// (internal/provider/e2b/e2btest, internal/provider/daytona/daytonatest,
// internal/provider/vercel/verceltest) share: reading a bounded body, splitting a
// JSON object into the fields an API knows and the ones it does not, and
// writing a JSON answer. Each fake keeps what is its provider's own: its
// error body, and whether an unknown field is ignored or refused. It
// imports only the standard library.
package fakehttp

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
)

// MaxBody is the largest request body a fake reads, in bytes: 1 MiB.
const MaxBody = 1 << 20

// ReadBody reads r's body, at most MaxBody bytes. Errors: a longer body
// (the caller answers 413) or a failed read.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
}

// SplitFields splits the JSON object b into the fields named exactly (case
// included) one of keys, re-encoded as one object, and the names of the
// others, sorted. The providers' names are case-sensitive; encoding/json's
// matching is not, so a fake decodes only known. Errors: json.Unmarshal's,
// when b is not a JSON object.
func SplitFields(b []byte, keys ...string) (known []byte, unknown []string, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, nil, err
	}
	kept := map[string]json.RawMessage{}
	for k, raw := range fields {
		if slices.Contains(keys, k) {
			kept[k] = raw
		} else {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	known, err = json.Marshal(kept) // raw messages that decoded re-encode
	return known, unknown, err
}

// WriteJSON answers status with v encoded as JSON, with Content-Type
// application/json unless the handler set one already.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
