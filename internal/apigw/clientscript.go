package apigw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sandmanhq/sandman/internal/webclient"
)

// ClientScriptMaxAge is how long a browser or a CDN may keep
// GET /v1/sandman.js without asking again (Cache-Control max-age), in
// seconds; after it, a request with the ETag answers 304 while the file is
// unchanged. Short, because the file changes with a deployment.
const ClientScriptMaxAge = 300

// clientScriptFile is the embedded sandman.js with its ETag (a quoted
// prefix of its SHA-256), read once.
var clientScriptFile = sync.OnceValues(func() (string, string) {
	b, err := fs.ReadFile(webclient.Files, "sandman.js")
	if err != nil {
		panic(err) // a missing embedded file is a build bug
	}
	sum := sha256.Sum256(b)
	return string(b), `"` + hex.EncodeToString(sum[:12]) + `"`
})

// clientScript serves GET /v1/sandman.js (routes.ClientScriptPath), the
// browser client module (internal/webclient), to anyone: 200 with
// Content-Type text/javascript, Cache-Control public with
// ClientScriptMaxAge and an ETag; 304 with no body when If-None-Match names
// that ETag (docs/WAKE.md "The waking page").
func (h *Handler) clientScript(_ context.Context, r *request) (response, error) {
	body, etag := clientScriptFile()
	headers := map[string]string{
		"Cache-Control":          "public, max-age=" + strconv.Itoa(ClientScriptMaxAge),
		"ETag":                   etag,
		"X-Content-Type-Options": "nosniff",
	}
	if match, ok := r.header("If-None-Match"); ok && etagMatches(match, etag) {
		return response{status: http.StatusNotModified, headers: headers}, nil
	}
	return response{status: http.StatusOK, headers: headers, html: body,
		contentType: "text/javascript; charset=utf-8"}, nil
}

// etagMatches reports whether an If-None-Match value names etag (or is *),
// weak or strong.
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}
