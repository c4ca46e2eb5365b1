// Package fakekit is the plumbing the providers' fakes
// (internal/provider/e2b/e2btest, internal/provider/daytona/daytonatest,
// internal/provider/vercel/verceltest) share, so that each fake keeps only
// its provider's own state rules and wire shapes: the Kit a fake embeds
// (request counts and tallies, the fault plan and what a fault does to a
// request, hanging requests, the boot delay of the commands it "runs"), the
// fault plan over HTTP for a fake run on its own (Control), a fault type for the fakes whose error body is a status, code and message
// (Fault), reading a bounded body and splitting a JSON object into the
// fields an API knows and the ones it does not, writing a JSON answer, the
// ports a command line listens on, preview hosts (PortHost), records kept
// in creation order (Table), list filters (HasAll), page cursors and
// sizes, the request log, an in-process transport, serving on an address,
// a Sleep that never sleeps, and sending signed webhooks (Sender). Each
// fake keeps its error body, whether an unknown field is ignored or
// refused, and what each fault answers. It imports only the standard
// library.
package fakekit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
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

// ListenPorts returns the ports a command the fakes "run" listens on (the
// fakes run nothing: their previews answer for these ports once the
// command has booted). port is the command's PORT variable, when it has
// one: then that port only. Otherwise a PORT=<n> in line, else every whole
// number of 2 to 5 digits in line that stands on its own (not part of a
// word or a version such as 3.13), up to 65535: `python3 -m http.server
// 3000`, `next dev -p 3000`, `--port=8080`, `0.0.0.0:5000`.
func ListenPorts(line, port string) []int {
	if n, err := strconv.Atoi(strings.TrimSpace(port)); err == nil && n >= 1 && n <= 65535 {
		return []int{n}
	}
	if m := portAssign.FindStringSubmatch(line); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 && n <= 65535 {
			return []int{n}
		}
	}
	var out []int
	for _, ix := range digits.FindAllStringIndex(line, -1) {
		before, after := rune(' '), rune(' ')
		if ix[0] > 0 {
			before = rune(line[ix[0]-1])
		}
		if ix[1] < len(line) {
			after = rune(line[ix[1]])
		}
		if n := ix[1] - ix[0]; n < 2 || n > 5 || wordish(before) || wordish(after) {
			continue
		}
		if n, _ := strconv.Atoi(line[ix[0]:ix[1]]); n >= 1 && n <= 65535 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

var (
	portAssign = regexp.MustCompile(`\bPORT=['"]?(\d+)`)
	digits     = regexp.MustCompile(`\d+`)
)

// wordish reports whether r joins a number to a word or a version.
func wordish(r rune) bool {
	return r == '.' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// DecodeObject decodes the fields of the JSON object b named exactly one of
// keys into v (SplitFields) and returns the names of the others, sorted:
// a fake that ignores unknown fields records them, one that refuses them
// answers 400. Errors: b is not a JSON object, or a known field does not
// decode into v.
func DecodeObject(b []byte, v any, keys ...string) (unknown []string, err error) {
	known, unknown, err := SplitFields(b, keys...)
	if err != nil {
		return nil, err
	}
	return unknown, json.Unmarshal(known, v)
}

// ErrTooLarge is ReadObject's error for a body it could not read whole: over
// MaxBody bytes (the caller answers 413), or a failed read.
var ErrTooLarge = errors.New("request body too large")

// ReadObject reads r's body (ReadBody) as a JSON object and decodes the
// fields named exactly one of keys into v (DecodeObject), returning the
// names of the others, sorted. A blank body is an empty object when
// optional, otherwise a decoding error. Errors: ErrTooLarge, or
// DecodeObject's.
func ReadObject(w http.ResponseWriter, r *http.Request, v any, optional bool, keys ...string) (unknown []string, err error) {
	b, err := ReadBody(w, r)
	if err != nil {
		return nil, ErrTooLarge
	}
	if optional && len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	return DecodeObject(b, v, keys...)
}

// Hostname returns host without its :port, if it has one.
func Hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// PortHost parses a preview host of a port, <port>-<id>.<domain> (what the
// providers' SDKs build; a :port after it is dropped): ok is false for any
// other host, a port that is not a number, or an empty id.
func PortHost(host, domain string) (port int, id string, ok bool) {
	label, found := strings.CutSuffix(Hostname(host), "."+domain)
	if !found {
		return 0, "", false
	}
	p, id, found := strings.Cut(label, "-")
	port, err := strconv.Atoi(p)
	return port, id, found && err == nil && id != ""
}

// NoSleep is an adapter's Sleep for tests against a fake: it returns at
// once (ctx's error, if ctx is done), so retries never sleep.
func NoSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// Set sets *dst to *v when v is not nil: an optional field of a request
// body over a default.
func Set[T any](dst, v *T) {
	if v != nil {
		*dst = *v
	}
}
