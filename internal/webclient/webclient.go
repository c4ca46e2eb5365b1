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
// /console/ is a static page (console.js, session.js, checkpoints.js,
// actions.js, admin.js, api.js) that watches (docs/CONSOLE.md): it reads
// through a local dev API that the local stack implements by forwarding to
// /v1 with the dev API key, which stays on the server (the page never sees
// a key), and hears of every transition on the local stack's feed. It
// never imports sandman.js: no client channel, no client token, no stable
// link, so watching is never activity, presence or a return. It acts only
// on an operator's confirmed Restore or Fork of a checkpoint (actions.js),
// each one POST with an Idempotency-Key. The contract the page assumes (all
// JSON, errors in the /v1 error envelope {"status":"error","error","error_type"}):
//
//	GET /console/api/sessions?state=&provider=&template=&metadata[k]=&order=&limit=&cursor= → the answer of GET /v1/sessions
//	GET /console/api/sessions/{id}               → 200 <session> (GET /v1/sessions/{id})
//	GET /console/api/sessions/{id}/events        → 200 the answer of GET /v1/sessions/{id}/events (?limit=&cursor=)
//	GET /console/api/sessions/{id}/checkpoints   → 200 the answer of GET /v1/sessions/{id}/checkpoints (?limit=&cursor=)
//	POST /console/api/sessions/{id}/restore      → the answer of POST /v1/sessions/{id}/restore (Idempotency-Key required)
//	POST /console/api/sessions/{id}/fork         → the answer of POST /v1/sessions/{id}/fork (Idempotency-Key required)
//	GET /console/api/pools                       → 200 the answer of GET /v1/pools
//	GET /console/api/webhook-endpoints           → 200 the answer of GET /v1/webhook-endpoints (docs/WEBHOOKS.md)
//	GET /console/api/webhook-endpoints/{id}/deliveries → 200 the answer of GET /v1/webhook-endpoints/{id}/deliveries (?limit=)
//	GET /console/api/feed                        → text/event-stream: "transition" events {"session_id", …the timeline entry}, "resync"
//
// /console/preview.html?id=ses_… is not the console: it is the session as
// its end user sees it (preview.js, preview.css: the preview, its sleeping
// card and waking line), live over the client channel with sandman.js, so
// it counts as a visible client. It reads the session as above and mints
// its client token with
//
//	POST /console/api/sessions/{id}/client-tokens → 200 {"token","expires_at","ws_url"} (as POST /v1/sessions/{id}/client-tokens)
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
