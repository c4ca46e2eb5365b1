package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/clienttoken"
	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// ChannelConfig sizes the client-channel figure.
type ChannelConfig struct {
	// Rounds is how many sessions, each with one connected client, are
	// paused one after another for the unloaded latency (default 100).
	Rounds int
	// Sessions and ClientsPerSession shape the fan-out run: that many
	// sessions with that many clients each, all paused at once (default
	// 100 × 10 = 1,000 clients).
	Sessions          int
	ClientsPerSession int
	// Workers is how many snapshots (and dials) run at once in the fan-out
	// run (default 16).
	Workers int
	// Wait bounds how long a run waits for its pushes (default 60 s).
	Wait time.Duration
}

func (c ChannelConfig) withDefaults() ChannelConfig {
	if c.Rounds <= 0 {
		c.Rounds = 100
	}
	if c.Sessions <= 0 {
		c.Sessions = 100
	}
	if c.ClientsPerSession <= 0 {
		c.ClientsPerSession = 10
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.Wait <= 0 {
		c.Wait = time.Minute
	}
	return c
}

// ChannelRun is one run of the channel figure: commit of a session's
// paused transition → each of its clients holding a push that says
// paused.
type ChannelRun struct {
	Sessions int `json:"sessions"`
	Clients  int `json:"clients"`
	// Delivered counts clients that received a push saying paused (want:
	// Clients); Pushes counts every message a client received after its
	// first (the greeting): a pause is two transitions, running → pausing
	// → paused, so two per client, plus any late push of the session's
	// creation.
	Delivered int `json:"delivered"`
	Pushes    int `json:"pushes"`
	// Latency is commit → received, over the delivered clients.
	Latency Latency `json:"latency"`
	// ConnectSeconds is how long opening every connection and reading its
	// greeting took (not timed per client).
	ConnectSeconds float64 `json:"connect_seconds"`
	// SpanSeconds is from the first commit to the last delivery.
	SpanSeconds float64 `json:"span_seconds"`
}

// ChannelResult is the client-channel figure.
type ChannelResult struct {
	PollIntervalMS float64    `json:"poll_interval_ms"`
	Single         ChannelRun `json:"single"`
	FanOut         ChannelRun `json:"fan_out"`
	Workers        int        `json:"workers"`
	// Transitions is how many transitions both runs committed, Notified
	// how many of them the poller handed to the notifier (equal when none
	// was lost).
	Transitions int `json:"transitions"`
	Notified    int `json:"notified"`
}

// benchClient is one WebSocket client: it reads every message and keeps
// when the first one saying paused arrived.
type benchClient struct {
	conn *websocket.Conn

	mu       sync.Mutex
	greeted  chan struct{}
	paused   chan struct{}
	pausedAt time.Time
	pushes   int // messages after the greeting
	seen     int
	readErr  error
}

// read runs until the connection closes.
func (c *benchClient) read(ctx context.Context) {
	for {
		_, data, err := c.conn.Read(ctx)
		now := time.Now()
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		var p struct {
			Type    string `json:"type"`
			Session struct {
				State string `json:"state"`
			} `json:"session"`
		}
		_ = json.Unmarshal(data, &p)
		c.mu.Lock()
		c.seen++
		if c.seen == 1 {
			close(c.greeted)
		} else {
			c.pushes++
		}
		if c.seen > 1 && p.Type == "session" && p.Session.State == string(lifecycle.StatePaused) && c.pausedAt.IsZero() {
			c.pausedAt = now
			close(c.paused)
		}
		c.mu.Unlock()
	}
}

// channelRig is the local stack's client-channel path on a fresh table:
// lifecycle.Service on DynamoDB Local, the local WebSocket gateway
// (localstack.WSGateway) over real loopback sockets, channel.Handler as its
// handler and as the notifier the stream poller (internal/outbox) feeds.
type channelRig struct {
	env     *Env
	svc     *lifecycle.Service
	commits *commitClock
	tokens  *clienttoken.Tokens
	url     string
	account string

	mu      sync.Mutex
	clients []*benchClient
	readers sync.WaitGroup
	cancel  context.CancelFunc // ends the readers
}

// closeClients closes every client connection and waits for the readers.
func (r *channelRig) closeClients() {
	r.mu.Lock()
	all := r.clients
	r.clients = nil
	r.mu.Unlock()
	for _, c := range all {
		_ = c.conn.CloseNow()
	}
	r.cancel()
	r.readers.Wait()
}

// RunChannel measures the client channel as the local stack runs it (see
// Report's channel section): the unloaded commit → push latency over
// cfg.Rounds sessions paused one at a time, then cfg.Sessions ×
// cfg.ClientsPerSession clients whose sessions are all paused at once.
func RunChannel(ctx context.Context, env *Env, cfg ChannelConfig) (ChannelResult, error) {
	cfg = cfg.withDefaults()
	res := ChannelResult{PollIntervalMS: ms(outbox.DefaultPollInterval), Workers: cfg.Workers}
	table, drop, arn, streams, err := env.NewStreamTable(ctx, "bench-channel")
	if err != nil {
		return res, err
	}
	defer drop()
	store := env.Store(table)
	commits := &commitClock{Store: store, at: map[string]time.Time{}}
	svc := lifecycle.NewService(lifecycle.Config{Store: commits, Provider: fake.New(fake.Config{}), Clock: lifecycle.SystemClock{},
		Policy: lifecycle.DefaultPolicy(), Log: env.Log, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return res, fmt.Errorf("token key: %w", err)
	}
	tokens, err := clienttoken.New(clienttoken.KeySet{Signing: clienttoken.Key{ID: "bench", Secret: secret[:]}}, lifecycle.SystemClock{})
	if err != nil {
		return res, err
	}

	// The local stack's wiring (internal/localstack Run): gateway → handler,
	// stream poller → handler's notifier.
	ws := localstack.NewWSGateway(env.Log)
	chh, err := channel.New(svc, tokens, store, ws, env.Log)
	if err != nil {
		return res, err
	}
	ws.Handler = chh
	// handlers counts the gateway's connections still being served, so the
	// table outlives every $disconnect.
	var handlers sync.WaitGroup
	mux := http.NewServeMux()
	mux.Handle(localstack.WSPath, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		ws.ServeHTTP(w, req)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	notified := &arrivals{at: map[string]time.Time{}}
	notify := lifecycle.PublisherFunc(func(ctx context.Context, evs ...lifecycle.Event) error {
		if err := chh.Publish(ctx, evs...); err != nil {
			env.Log.WarnContext(ctx, "client channel push", "err", err) // best effort, as the local stack
		}
		return notified.Publish(ctx, evs...)
	})
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: notify, Log: env.Log})
	pctx, stopPoller := context.WithCancel(ctx)
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); _ = poller.Run(pctx, outbox.DefaultPollInterval) }()
	defer func() { stopPoller(); pwg.Wait() }()

	rctx, endReaders := context.WithCancel(ctx)
	rig := &channelRig{env: env, svc: svc, commits: commits, tokens: tokens, account: "bench",
		url: "ws" + strings.TrimPrefix(srv.URL, "http") + localstack.WSPath, cancel: endReaders}
	defer func() {
		// The poller first (no push into closing sockets), then the
		// clients, then every $disconnect, then (deferred earlier) the table.
		stopPoller()
		pwg.Wait()
		rig.closeClients()
		handlers.Wait()
	}()

	env.Printf("channel: %d sessions with one client each, paused one at a time", cfg.Rounds)
	if res.Single, err = rig.run(ctx, rctx, cfg.Rounds, 1, 1, cfg.Wait, true); err != nil {
		return res, fmt.Errorf("single: %w", err)
	}
	env.Printf("channel: single: p50 %.1f ms p99 %.1f ms max %.1f ms (%d of %d delivered)",
		res.Single.Latency.P50MS, res.Single.Latency.P99MS, res.Single.Latency.MaxMS, res.Single.Delivered, res.Single.Clients)
	env.Printf("channel: %d sessions × %d clients, all paused at once (%d at a time)", cfg.Sessions, cfg.ClientsPerSession, cfg.Workers)
	if res.FanOut, err = rig.run(ctx, rctx, cfg.Sessions, cfg.ClientsPerSession, cfg.Workers, cfg.Wait, false); err != nil {
		return res, fmt.Errorf("fan-out: %w", err)
	}
	env.Printf("channel: fan-out: %d of %d delivered, p50 %.1f ms p99 %.1f ms max %.1f ms, connect %.1f s",
		res.FanOut.Delivered, res.FanOut.Clients, res.FanOut.Latency.P50MS, res.FanOut.Latency.P99MS,
		res.FanOut.Latency.MaxMS, res.FanOut.ConnectSeconds)
	// Let the notifier finish the stream's tail before everything stops.
	drainWait := time.Now().Add(roundWait)
	for {
		res.Transitions, res.Notified = len(commits.snapshot()), len(notified.snapshot())
		if res.Notified >= res.Transitions || time.Now().After(drainWait) {
			break
		}
		time.Sleep(outbox.DefaultPollInterval)
	}
	if res.Notified < res.Transitions {
		return res, fmt.Errorf("the notifier got %d of %d committed transitions", res.Notified, res.Transitions)
	}
	if res.Single.Delivered != res.Single.Clients || res.FanOut.Delivered != res.FanOut.Clients {
		return res, fmt.Errorf("pushes lost: %d of %d clients (single), %d of %d (fan-out) saw their session paused",
			res.Single.Delivered, res.Single.Clients, res.FanOut.Delivered, res.FanOut.Clients)
	}
	return res, nil
}

// run creates sessions, connects perSession clients to each (reading each
// greeting), then pauses every session with Service.PauseNow, workers at a
// time. When oneByOne, each pause waits for its clients' push and a random
// part of the poll interval first, so the commits fall at every phase of
// the poller's cycle. It returns once every client saw paused or wait ran
// out.
func (r *channelRig) run(ctx, readCtx context.Context, sessions, perSession, workers int, wait time.Duration, oneByOne bool) (ChannelRun, error) {
	out := ChannelRun{Sessions: sessions, Clients: sessions * perSession}
	ids := make([]string, sessions)
	for i := range ids {
		sess, _, err := r.svc.Create(ctx, r.account, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			return out, fmt.Errorf("create: %w", err)
		}
		ids[i] = sess.ID
	}

	clients := make([][]*benchClient, sessions)
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, id := range ids {
		tok, _, err := r.tokens.Mint(id, r.account, 0)
		if err != nil {
			return out, err
		}
		clients[i] = make([]*benchClient, perSession)
		for j := range perSession {
			g.Go(func() error {
				conn, _, err := websocket.Dial(gctx, r.url+"?token="+tok, nil)
				if err != nil {
					return fmt.Errorf("dial: %w", err)
				}
				c := &benchClient{conn: conn, greeted: make(chan struct{}), paused: make(chan struct{})}
				r.mu.Lock()
				r.clients = append(r.clients, c)
				r.readers.Add(1)
				r.mu.Unlock()
				clients[i][j] = c
				go func() { defer r.readers.Done(); c.read(readCtx) }()
				// As sandman.js does on open: hello asks for the current
				// status (API Gateway cannot push during $connect).
				if err := conn.Write(gctx, websocket.MessageText, []byte(`{"action":"hello"}`)); err != nil {
					return fmt.Errorf("hello: %w", err)
				}
				select {
				case <-c.greeted:
					return nil
				case <-time.After(wait):
					return fmt.Errorf("no greeting within %v", wait)
				case <-gctx.Done():
					return gctx.Err()
				}
			})
		}
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	out.ConnectSeconds = seconds(time.Since(start))

	// Pause every session; keep the commit time of its paused transition.
	committed := make([]time.Time, sessions)
	pause := func(ctx context.Context, i int) error {
		sess, err := r.svc.PauseNow(ctx, r.account, ids[i])
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		at, ok := r.commits.get(lifecycle.EventID(sess.ID, sess.Version))
		if !ok || sess.State != lifecycle.StatePaused {
			return fmt.Errorf("snapshot of %s left %s with no commit recorded", ids[i], sess.State)
		}
		committed[i] = at
		return nil
	}
	if oneByOne {
		for i := range ids {
			// Land the commit at a random phase of the poll cycle.
			select {
			case <-time.After(mrand.N(outbox.DefaultPollInterval)):
			case <-ctx.Done():
				return out, ctx.Err()
			}
			if err := pause(ctx, i); err != nil {
				return out, err
			}
			waitPaused(ctx, clients[i], min(wait, roundWait))
		}
	} else {
		g, gctx = errgroup.WithContext(ctx)
		g.SetLimit(workers)
		for i := range ids {
			g.Go(func() error { return pause(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return out, err
		}
	}
	deadline := time.Now().Add(wait)
	for i := range clients {
		waitPaused(ctx, clients[i], time.Until(deadline))
	}

	var lats []time.Duration
	first, last := time.Time{}, time.Time{}
	for i, cs := range clients {
		if first.IsZero() || committed[i].Before(first) {
			first = committed[i]
		}
		for _, c := range cs {
			c.mu.Lock()
			at, pushes := c.pausedAt, c.pushes
			c.mu.Unlock()
			out.Pushes += pushes
			if at.IsZero() {
				continue
			}
			out.Delivered++
			lats = append(lats, max(at.Sub(committed[i]), 0))
			if at.After(last) {
				last = at
			}
		}
	}
	out.Latency = Summarize(lats)
	if !last.IsZero() {
		out.SpanSeconds = seconds(last.Sub(first))
	}
	return out, nil
}

// roundWait bounds the wait for one session's push when sessions are
// paused one at a time.
const roundWait = 10 * time.Second

// waitPaused waits until every client saw paused, or wait ran out.
func waitPaused(ctx context.Context, cs []*benchClient, wait time.Duration) {
	t := time.NewTimer(max(wait, 0))
	defer t.Stop()
	for _, c := range cs {
		select {
		case <-c.paused:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *commitClock) snapshot() map[string]time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.at)
}

func (a *arrivals) snapshot() map[string]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.at)
}

func (c *commitClock) get(id string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[id]
	return at, ok
}

// channelSection renders the client-channel figure.
func (r *Report) channelSection(b *strings.Builder, c *ChannelResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 7. Client channel: commit → browser push\n\n")
	p("The local stack's push path, end to end, over real loopback sockets: sessions created and paused with ")
	p("`lifecycle.Service.PauseNow` on DynamoDB Local (fake provider answering at once); `internal/outbox`'s poller reading ")
	p("DynamoDB Local's stream every %.0f ms and handing each transition to `channel.Handler` (the notifier: it queries the ", c.PollIntervalMS)
	p("session's connections on the by-session index, reads the session and pushes `{\"type\":\"session\",…}` to each); ")
	p("`localstack.WSGateway` serving `/v1/ws` with github.com/coder/websocket; clients dialled with github.com/coder/websocket ")
	p("and a client token each (`?token=`), every connection a real `$connect` (token check, connection stored in the table). ")
	p("Latency is from the commit of the session's paused transition (the conditional write returned) to the client ")
	p("reading a push that says `paused`; a pause is two transitions (running → pausing → paused), and whichever push ")
	p("first says paused counts.\n\n")
	p("Included: the stream poll wait, the stream read, the notifier's reads and the WebSocket write and read on loopback. ")
	p("Not included: in AWS the publisher Lambda reads the table's stream (DynamoDB Streams' own delivery to Lambda, ")
	p("typically sub-second, replaces the %.0f ms poll) and an EventBridge rule on its bus invokes the notifier Lambda; ", c.PollIntervalMS)
	p("pushes go through API Gateway's Management API ")
	p("(`PostToConnection`, one HTTPS call per connection) and then API Gateway's WebSocket to the browser over the ")
	p("internet; none of those latencies is measured here.\n\n")
	p("| run | sessions | clients | delivered | pushes received | p50 ms | p90 ms | p99 ms | max ms | first commit → last delivery | connect + greeting, all clients |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, run ChannelRun, span string) {
		l := run.Latency
		p("| %s | %d | %s | **%s** | %s | **%.1f** | %.1f | **%.1f** | %.1f | %s | %.2f s |\n", name, run.Sessions,
			numfmt.Thousands(run.Clients), numfmt.Thousands(run.Delivered), numfmt.Thousands(run.Pushes),
			l.P50MS, l.P90MS, l.P99MS, l.MaxMS, span, run.ConnectSeconds)
	}
	row("one client per session, paused one at a time", c.Single, "(one at a time)")
	row(fmt.Sprintf("%d clients per session, all sessions paused at once (%d snapshots at a time)",
		c.FanOut.Clients/max(c.FanOut.Sessions, 1), c.Workers), c.FanOut, fmt.Sprintf("%.2f s", c.FanOut.SpanSeconds))
	p("\nThe poller handed %s of the %s committed transitions (creates and pauses of both runs) to the notifier.\n", numfmt.Thousands(c.Notified), numfmt.Thousands(c.Transitions))
	p("\nIn the first run each pause waits for the previous push and then a random part of the poll interval, so ")
	p("commits fall at every phase of the poller's cycle: about half a poll interval of the latency is the wait for the ")
	p("next poll. In the fan-out run the poller hands the batch's transitions to the notifier one after another, and ")
	p("each transition's pushes go out one connection after another, so the last clients wait for the whole batch.\n\n")
}
