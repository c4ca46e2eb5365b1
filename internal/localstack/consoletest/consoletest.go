// Package consoletest serves the console (/console/, its dev routes and its
// live feed) over the real API handlers (internal/apigw) on an in-memory
// store and the fake provider with snapshots (checkpoints, restore and
// fork run as jobs in the background, as on the local stack), for the
// console's tests: the Go test that watching records nothing
// (internal/localstack) and the browser test (testdata/console.test.mjs,
// through serve/). Every committed transition is recorded in the store's
// timeline and handed to the feed, as the local stack's stream poller does.
package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/checkpointjobs"
	"github.com/sandmanhq/sandman/internal/delivery"
	deliverymem "github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/openapi/api"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/readiness"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/routes"
)

// Stack is the console over the API on memstore. Build it with New.
type Stack struct {
	Store    *memstore.Store
	Provider *fake.Provider
	// Snapshots is Provider with files and snapshots, the provider the
	// service runs on (a paused sandbox can be snapshotted).
	Snapshots *reliability.SnapshotProvider
	Service   *lifecycle.Service
	Feed      *localstack.ConsoleFeed
	// Handler serves /console/, /sandman.js, /console/api/… and /v1/…
	// (localstack.NewMux); Control adds the test's own routes (Control).
	Handler http.Handler
	DevKey  string

	jobs *checkpointjobs.Worker
	stop context.CancelFunc

	mu    sync.Mutex
	since map[string]time.Time // session id → its last transition's time
	evs   []lifecycle.Event
}

// New builds a Stack whose clock is clock (nil: the system clock); Close
// stops its checkpoint jobs.
func New(clock lifecycle.Clock) (*Stack, error) {
	if clock == nil {
		clock = lifecycle.SystemClock{}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := &Stack{Store: memstore.New(), Provider: fake.New(fake.Config{Clock: clock}),
		Feed: localstack.NewConsoleFeed(apigw.DevAccountID), DevKey: apigw.DevAPIKey, since: map[string]time.Time{},
		jobs: checkpointjobs.New(readiness.Config{Log: log})}
	st.Snapshots = reliability.NewSnapshotProvider(st.Provider, clock)
	st.Snapshots.Caps.SnapshotsPaused = true
	// The stream's work: each event gets when its session entered from
	// (the previous transition's time), is recorded, then fed.
	pub := outbox.Recording(st.Store, st.Feed)
	rec := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		st.mu.Lock()
		for i := range evs {
			evs[i].Since = st.since[evs[i].SessionID]
			if !evs[i].IsReadiness() {
				st.since[evs[i].SessionID] = evs[i].Time
			}
			st.evs = append(st.evs, evs[i])
		}
		st.mu.Unlock()
		return pub.Publish(ctx, evs...)
	})
	st.Service = lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(st.Store, rec), Provider: st.Snapshots, Clock: clock,
		Policy: lifecycle.DefaultPolicy(), Log: log, CheckpointJobs: st.jobs})
	ctx, stop := context.WithCancel(context.Background())
	st.stop = stop
	st.jobs.Start(ctx, st.Service.RunCheckpointJob)
	if err := st.Store.PutAPIKey(context.Background(), lifecycle.APIKey{Hash: apigw.HashAPIKey(apigw.DevAPIKey),
		AccountID: apigw.DevAccountID, CreatedAt: clock.Now()}); err != nil {
		return nil, err
	}
	// Webhook endpoints in memory, none delivering.
	hooks := delivery.NewService(deliverymem.New(), delivery.Guard{AllowPrivate: true}, nil, clock)
	// The sessions function's reads (the list, a session, its timeline and
	// checkpoints, pools, webhooks) on a service over the bare store, which
	// keeps the timeline; its writes (restore, fork, a checkpoint) and the
	// other functions on the recording one.
	reads := lifecycle.NewService(lifecycle.Config{Store: st.Store, Provider: st.Snapshots, Clock: clock, Policy: lifecycle.DefaultPolicy(),
		Log: log, CheckpointJobs: st.jobs})
	gw := &localstack.Gateway{Functions: map[string]localstack.HTTPHandler{}, Log: log}
	for _, fn := range []string{routes.Sessions, routes.Status, routes.Resume, routes.Pause, routes.Reconnect} {
		h, err := apigw.New(apigw.Config{Function: fn, Service: st.Service, Keys: st.Store, Log: log, Webhooks: hooks})
		if err != nil {
			return nil, err
		}
		gw.Functions[fn] = h.Handle
	}
	r, err := apigw.New(apigw.Config{Function: routes.Sessions, Service: reads, Keys: st.Store, Log: log, Webhooks: hooks})
	if err != nil {
		return nil, err
	}
	writes := gw.Functions[routes.Sessions]
	gw.Functions[routes.Sessions] = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if req.RequestContext.HTTP.Method == http.MethodGet {
			return r.Handle(ctx, req)
		}
		return writes(ctx, req)
	}
	st.Handler = localstack.NewMux(gw, http.NotFoundHandler(), st.DevKey, st.Feed)
	return st, nil
}

// Close stops the checkpoint jobs, waiting for those under way.
func (st *Stack) Close() {
	st.stop()
	st.jobs.Close()
}

// Events returns every event the stack committed, in order.
func (st *Stack) Events() []lifecycle.Event {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]lifecycle.Event(nil), st.evs...)
}

// Seed writes n sessions of the dev account straight into the store, the
// oldest created at from and one a second after, newest last: every one
// killed but live of them, spread evenly and alternately running and
// paused (each paused one resumes on return, as a session with presence
// does); providers (fake, e2b), templates (web, base) and metadata user
// (u0..u4) rotate. It returns them, oldest first.
func (st *Stack) Seed(n, live int, from time.Time) ([]*lifecycle.Session, error) {
	var out []*lifecycle.Session
	every, made := n/max(live, 1), 0
	for i := range n {
		at := from.Add(time.Duration(i) * time.Second)
		s := &lifecycle.Session{ID: lifecycle.NewSessionID(), AccountID: apigw.DevAccountID,
			Provider: []string{"fake", "e2b"}[i%2], Template: []string{"web", "base"}[i%3%2],
			Metadata: map[string]string{"user": fmt.Sprintf("u%d", i%5)}, State: lifecycle.StateKilled, Reason: lifecycle.ReasonRequest,
			IdleTimeout: 10 * time.Minute, CreatedAt: at, UpdatedAt: at, StateChangedAt: at, Actor: lifecycle.ActorAPI}
		if live > 0 && i%every == every-1 {
			s.SandboxID = "sbx-" + s.ID
			if made++; made%2 == 1 {
				s.State, s.PausedAt, s.Reason = lifecycle.StatePaused, at, lifecycle.ReasonAway
				s.AwayTimeout, s.ResumeOnReturn = 2*time.Minute, true
			} else {
				s.State, s.RunningSince, s.LastActivityAt, s.IdleDeadline = lifecycle.StateRunning, at, at, at.Add(time.Hour)
				s.AwayTimeout, s.AwayDeadline = 2*time.Minute, at.Add(2*time.Minute) // its last client left
			}
		}
		if err := st.Store.CreateSession(context.Background(), s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ProviderCalls sums the fake provider's calls over every operation, and
// the snapshots taken.
func (st *Stack) ProviderCalls() int {
	n := len(st.Snapshots.Snapshots())
	for _, op := range fake.Ops {
		n += st.Provider.Calls(op)
	}
	return n
}

// SeedCheckpoints writes n checkpoints of session s straight into the
// store, the oldest taken at from and one a minute after: every kind,
// keeps, trigger and state a list shows (ready, saving, failed, pinned,
// expired: ready with its retention ended), labelled "step i". It returns
// them, oldest first.
func (st *Stack) SeedCheckpoints(s *lifecycle.Session, n int, from time.Time) ([]*lifecycle.Checkpoint, error) {
	var out []*lifecycle.Checkpoint
	for i := range n {
		at := from.Add(time.Duration(i) * time.Minute)
		c := &lifecycle.Checkpoint{ID: lifecycle.NewCheckpointID(at), SessionID: s.ID, AccountID: s.AccountID, CreatedAt: at, UpdatedAt: at,
			Label: fmt.Sprintf("step %d", i+1), Kind: lifecycle.KindSnapshot, Keeps: lifecycle.KeepsFilesystemMemory,
			SizeBytes: int64(i+1) * 37 << 20, State: lifecycle.CheckpointReady, Trigger: lifecycle.TriggerAPI,
			Provider: s.Provider, Template: s.Template, SourceSandboxID: s.SandboxID, ProviderRef: "snap-" + fmt.Sprint(i),
			ExpiresAt: at.Add(30 * 24 * time.Hour)}
		switch i % 6 {
		case 1:
			c.Kind, c.Keeps, c.Trigger, c.ProviderRef = lifecycle.KindArchive, lifecycle.KeepsFilesystem, lifecycle.TriggerPause, ""
			c.ArchiveKey = s.AccountID + "/" + s.ID + "/" + c.ID + ".tar.zst"
		case 2:
			c.Trigger, c.Pinned, c.ExpiresAt = lifecycle.TriggerSchedule, true, time.Time{}
		case 3:
			c.State, c.Reason, c.SizeBytes, c.ExpiresAt = lifecycle.CheckpointFailed, "the provider answered 500 twice", 0, time.Time{}
		case 4:
			c.ExpiresAt = from.Add(-time.Hour) // its retention ended: listed expired
		}
		if i == n-1 { // the newest is still saving
			c.State, c.SizeBytes, c.ExpiresAt, c.LeaseExpiresAt = lifecycle.CheckpointSaving, 0, time.Time{}, at.Add(time.Hour)
		}
		if err := st.Store.CreateCheckpoint(context.Background(), c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Control returns Handler with the test's own routes:
//
//	POST /control/sessions            create a session through the service (template "web") → the API's session
//	POST /control/sessions/{id}/pause pause it through the service
//	POST /control/sessions/{id}/resume resume it through the service
//	POST /control/sessions/{id}/kill  delete (kill) it through the service
//	POST /control/sessions/{id}/checkpoints?label= a checkpoint through the service (saved by a job) → the API's checkpoint
//	GET  /control/sessions/{id}       the stored session: {"state","version","last_activity_at","idle_deadline","away_deadline","reason"}
//	GET  /control/stats               {"provider_calls","events","watchers"}
func (st *Stack) Control() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", st.Handler)
	ctx := lifecycle.WithActor(context.Background(), lifecycle.ActorAPI)
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusConflict)
			v = map[string]string{"error": err.Error()}
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /control/sessions", func(w http.ResponseWriter, r *http.Request) {
		s, _, err := st.Service.Create(ctx, apigw.DevAccountID, lifecycle.CreateInput{Template: "web",
			Metadata: map[string]string{"user": "live"}})
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, httpapi.SessionJSON(s), nil)
	})
	mux.HandleFunc("POST /control/sessions/{id}/pause", func(w http.ResponseWriter, r *http.Request) {
		_, err := st.Service.PauseNow(ctx, apigw.DevAccountID, r.PathValue("id"))
		reply(w, map[string]bool{"ok": err == nil}, err)
	})
	mux.HandleFunc("POST /control/sessions/{id}/resume", func(w http.ResponseWriter, r *http.Request) {
		_, err := st.Service.Resume(ctx, apigw.DevAccountID, r.PathValue("id"))
		reply(w, map[string]bool{"ok": err == nil}, err)
	})
	mux.HandleFunc("POST /control/sessions/{id}/kill", func(w http.ResponseWriter, r *http.Request) {
		_, err := st.Service.Delete(ctx, apigw.DevAccountID, r.PathValue("id"))
		reply(w, map[string]bool{"ok": err == nil}, err)
	})
	mux.HandleFunc("POST /control/sessions/{id}/checkpoints", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := st.Service.CreateCheckpoint(ctx, apigw.DevAccountID, r.PathValue("id"), lifecycle.CheckpointInput{Label: r.URL.Query().Get("label")})
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, httpapi.CheckpointJSON(c), nil)
	})
	mux.HandleFunc("GET /control/sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		s, err := st.Store.GetSession(r.Context(), r.PathValue("id"))
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, map[string]any{"state": s.State, "version": s.Version, "reason": s.Reason,
			"last_activity_at": api.Time(s.LastActivityAt), "idle_deadline": api.Time(s.IdleDeadline),
			"away_deadline": api.Time(s.AwayDeadline)}, nil)
	})
	mux.HandleFunc("GET /control/stats", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, map[string]int{"provider_calls": st.ProviderCalls(), "events": len(st.Events()), "watchers": st.Feed.Watchers()}, nil)
	})
	return mux
}
