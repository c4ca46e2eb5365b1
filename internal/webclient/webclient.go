// Package webclient embeds Sandman's browser files in the binary and serves
// them: the client module at /sandman.js and the console at /console/
// (docs/DESIGN.md, "Client channel"). There is no build step: the files
// under static/ are what the browser gets.
//
// # sandman.js
//
// One dependency-free ES module with JSDoc types. connect({url, token,
// expiresAt, onTokenExpired}) opens the session's WebSocket (url is the
// `ws_url` of the client-token answer {"token","expires_at","ws_url"}; the
// token goes in `?token=`) and returns a SandmanSession, an EventTarget that
// emits "session" (the status body of every {"type":"session","session":…}
// push), "connection", "token" and "error"; resume() sends
// {"action":"resume"}; heartbeats {"action":"heartbeat","visible":bool} go
// out on user input (at most one per 30 s, configurable) and at once on a
// visibility change; a dropped channel reconnects with capped exponential
// backoff and jitter; the token is refreshed through onTokenExpired before
// it expires and after a refused connect. The module's header has an
// example.
//
// # The console
//
// /console/ is a static page that uses only sandman.js and fetch. It talks
// to a local dev API that the local stack implements by forwarding to /v1
// with the dev API key, which stays on the server (the page never sees a
// key). The contract the page assumes (all JSON, errors in the /v1 error
// envelope {"status":"error","error","error_type"}):
//
//	GET    /console/api/sessions                     → 200 the answer of GET /v1/sessions: {"sessions":[<session>…],"next_cursor":…}
//	POST   /console/api/sessions                     body as POST /v1/sessions ({"template","idle_timeout_seconds","away_timeout_seconds","metadata"}) → 201 <session>
//	POST   /console/api/sessions/{id}/client-tokens  → 200 {"token","expires_at","ws_url"} (as POST /v1/sessions/{id}/client-tokens)
//	POST   /console/api/sessions/{id}/snapshot       → 200 {"paused":true,"session"} (Pause)
//	POST   /console/api/sessions/{id}/resume         → 200 {"preview_url","session"} (Resume)
//	DELETE /console/api/sessions/{id}                → 200 <session> (state killed)
//	GET    /console/api/webhook-endpoints            → 200 the answer of GET /v1/webhook-endpoints (docs/WEBHOOKS.md)
//	GET    /console/api/webhook-endpoints/{id}/deliveries → 200 the answer of GET /v1/webhook-endpoints/{id}/deliveries (?limit=)
//
// A <session> has at least "id", "state", "preview_url" and "metadata". The
// page lists sessions once on load and after its own create; every later
// state comes from the channel's pushes (no status polling). A session in a
// final state (killed, expired, failed) gets no channel.
package webclient

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Files is the embedded tree: sandman.js and console/ at its root.
var Files fs.FS = mustSub(static, "static")

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // a missing embedded folder is a build bug
	}
	return sub
}

// Handler serves GET/HEAD /sandman.js, /console/ and the console's files;
// /console redirects to /console/; anything else is 404. It is meant to be
// mounted at the root of the local stack's mux for exactly those paths
// (the /console/api/ routes belong to the local stack, registered as a more
// specific pattern). Answers carry Cache-Control: no-cache (the files change
// with the binary) and X-Content-Type-Options: nosniff.
func Handler() http.Handler {
	files := http.FileServerFS(Files)
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /sandman.js", serve)
	mux.HandleFunc("GET /console/", serve)
	mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusMovedPermanently)
	})
	return mux
}
