package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// OutboxConfig sizes the outbox figure.
type OutboxConfig struct {
	// Rounds is how many sessions each mode drives through one snapshot
	// and one resume (default 200).
	Rounds int
}

// OutboxResult is the outbox figure: snapshot and resume latency with the
// event published in the request's path (the code before the outbox: a
// PutEvents after each committed transition) and via the stream (the
// request only writes), interleaved in one run; and the lag from commit to
// event through the local stream poller.
type OutboxResult struct {
	Rounds int `json:"rounds"`
	// SnapshotInPath etc. are Service.PauseNow / Service.Resume call
	// latencies (a fake provider answering at once, DynamoDB Local).
	SnapshotInPath Latency `json:"snapshot_in_path"`
	SnapshotStream Latency `json:"snapshot_stream"`
	ResumeInPath   Latency `json:"resume_in_path"`
	ResumeStream   Latency `json:"resume_stream"`
	// PutEventsCalls is how many PutEvents calls the in-path mode made.
	PutEventsCalls int64 `json:"put_events_calls"`
	// Lag is commit (the write returned) → event written by the poller,
	// polling every PollIntervalMS, over every transition of the run.
	Lag            Latency `json:"lag"`
	PollIntervalMS float64 `json:"poll_interval_ms"`
	// Events is how many events the poller published; Transitions how many
	// transitions were committed. Equal when nothing was lost.
	Events      int `json:"events"`
	Transitions int `json:"transitions"`
}

// fakeEventBridge is an EventBridge endpoint that accepts every entry; the
// in-path mode's PutEvents go to it over loopback HTTP, so the in-path cost
// measured is one HTTP round trip plus the SDK's signing and encoding (AWS
// adds its network latency on top).
func fakeEventBridge() (*httptest.Server, *int64Counter) {
	calls := &int64Counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Entries []json.RawMessage }
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &in)
		calls.add(1)
		out := `{"FailedEntryCount":0,"Entries":[` + strings.TrimSuffix(strings.Repeat(`{"EventId":"e"},`, len(in.Entries)), ",") + `]}`
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = io.WriteString(w, out)
	}))
	return srv, calls
}

type int64Counter struct {
	mu sync.Mutex
	n  int64
}

func (c *int64Counter) add(d int64) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *int64Counter) get() int64  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// commitClock records when each transition's write returned, by event_id.
type commitClock struct {
	lifecycle.Store
	mu sync.Mutex
	at map[string]time.Time
}

func (c *commitClock) CreateSession(ctx context.Context, s *lifecycle.Session) error {
	if err := c.Store.CreateSession(ctx, s); err != nil {
		return err
	}
	c.mark(lifecycle.EventID(s.ID, s.Version))
	return nil
}

func (c *commitClock) UpdateSession(ctx context.Context, s *lifecycle.Session, from lifecycle.State, g lifecycle.Guard) error {
	if err := c.Store.UpdateSession(ctx, s, from, g); err != nil {
		return err
	}
	if s.State != from {
		c.mark(lifecycle.EventID(s.ID, s.Version))
	}
	return nil
}

func (c *commitClock) mark(id string) {
	now := time.Now()
	c.mu.Lock()
	c.at[id] = now
	c.mu.Unlock()
}

// arrivals is the poller's publisher: it records when each event arrived.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (a *arrivals) Publish(_ context.Context, evs ...lifecycle.Event) error {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ev := range evs {
		if _, seen := a.at[ev.EventID]; !seen {
			a.at[ev.EventID] = now
		}
	}
	return nil
}

// RunOutbox measures the outbox figure on a fresh table with its stream.
func RunOutbox(ctx context.Context, env *Env, cfg OutboxConfig) (OutboxResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 200
	}
	res := OutboxResult{Rounds: cfg.Rounds, PollIntervalMS: ms(outbox.DefaultPollInterval)}
	table, drop, arn, streams, err := env.NewStreamTable(ctx, "bench-outbox")
	if err != nil {
		return res, err
	}
	defer drop()

	srv, calls := fakeEventBridge()
	defer srv.Close()
	ebClient := awseb.New(awseb.Options{BaseEndpoint: aws.String(srv.URL), Region: dynamo.LocalRegion,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	bus := eventbridge.New(eventbridge.Config{Client: ebClient, Bus: "bench-bus", Log: env.Log})

	commits := &commitClock{Store: env.Store(table), at: map[string]time.Time{}}
	provider := fake.New(fake.Config{})
	svc := func(store lifecycle.Store) *lifecycle.Service {
		return lifecycle.NewService(lifecycle.Config{Store: store, Provider: provider, Clock: lifecycle.SystemClock{},
			Policy: lifecycle.DefaultPolicy(), Log: env.Log, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	}
	modes := map[string]*lifecycle.Service{"in_path": svc(outbox.InPath(commits, bus)), "stream": svc(commits)}

	got := &arrivals{at: map[string]time.Time{}}
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: got, Log: env.Log})
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = poller.Run(pctx, outbox.DefaultPollInterval) }()
	defer func() { stop(); wg.Wait() }()

	lat := map[string][]time.Duration{}
	env.Printf("outbox: %d rounds of create, snapshot, resume per mode (in path, stream), interleaved", cfg.Rounds)
	for i := 0; i < cfg.Rounds; i++ {
		for _, mode := range []string{"in_path", "stream"} {
			s := modes[mode]
			sess, _, err := s.Create(ctx, "bench", lifecycle.CreateInput{Template: "base"})
			if err != nil {
				return res, fmt.Errorf("create (%s): %w", mode, err)
			}
			start := time.Now()
			if _, err := s.PauseNow(ctx, "bench", sess.ID); err != nil {
				return res, fmt.Errorf("snapshot (%s): %w", mode, err)
			}
			lat["snapshot_"+mode] = append(lat["snapshot_"+mode], time.Since(start))
			start = time.Now()
			if _, err := s.Resume(ctx, "bench", sess.ID); err != nil {
				return res, fmt.Errorf("resume (%s): %w", mode, err)
			}
			lat["resume_"+mode] = append(lat["resume_"+mode], time.Since(start))
		}
	}
	res.SnapshotInPath, res.SnapshotStream = Summarize(lat["snapshot_in_path"]), Summarize(lat["snapshot_stream"])
	res.ResumeInPath, res.ResumeStream = Summarize(lat["resume_in_path"]), Summarize(lat["resume_stream"])
	res.PutEventsCalls = calls.get()

	// Wait (real time: the poller runs on its own ticker) until every
	// committed transition arrived, at most 30 s.
	commits.mu.Lock()
	want := len(commits.at)
	commits.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got.mu.Lock()
		n := len(got.at)
		got.mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	wg.Wait()
	var lags []time.Duration
	commits.mu.Lock()
	got.mu.Lock()
	for id, c := range commits.at {
		if a, ok := got.at[id]; ok {
			lags = append(lags, max(a.Sub(c), 0))
		}
	}
	res.Transitions, res.Events = len(commits.at), len(got.at)
	got.mu.Unlock()
	commits.mu.Unlock()
	res.Lag = Summarize(lags)
	env.Printf("outbox: snapshot p50 %.3f ms in path vs %.3f ms stream; resume p50 %.3f vs %.3f; lag p50 %.1f ms p99 %.1f ms (%d of %d events)",
		res.SnapshotInPath.P50MS, res.SnapshotStream.P50MS, res.ResumeInPath.P50MS, res.ResumeStream.P50MS,
		res.Lag.P50MS, res.Lag.P99MS, res.Events, res.Transitions)
	if res.Events != res.Transitions {
		return res, fmt.Errorf("the stream poller published %d events for %d committed transitions", res.Events, res.Transitions)
	}
	return res, nil
}

// outboxSection renders the outbox figure.
func (r *Report) outboxSection(b *strings.Builder, o *OutboxResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 6. Events out: in the request path vs the table's stream\n\n")
	p("%d sessions per mode, each created, snapshotted and resumed through `lifecycle.Service` on DynamoDB Local ", o.Rounds)
	p("with a fake provider that answers at once; the two modes interleaved in one run. *In path* is the code before ")
	p("the outbox: a PutEvents (`internal/outbox/eventbridge`) after every committed transition, here to a loopback fake ")
	p("EventBridge (%d calls; AWS adds its network round trip to each). *Stream* is the request as built: it only ", o.PutEventsCalls)
	p("writes, and `internal/outbox`'s poller publishes from DynamoDB Local's stream.\n\n")
	p("| request | mode | n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|---|\n")
	row := func(name, mode string, l Latency) {
		p("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f |\n", name, mode, l.N, l.P50MS, l.P90MS, l.P99MS, l.MaxMS)
	}
	row("snapshot", "in path", o.SnapshotInPath)
	row("snapshot", "stream", o.SnapshotStream)
	row("resume", "in path", o.ResumeInPath)
	row("resume", "stream", o.ResumeStream)
	p("\nCommit → event on the local stream (write returned → the poller handed the event to its publisher; ")
	p("poll interval %.0f ms): p50 **%.1f ms**, p90 %.1f ms, p99 **%.1f ms**, max %.1f ms over %d events for %d transitions.\n\n",
		o.PollIntervalMS, o.Lag.P50MS, o.Lag.P90MS, o.Lag.P99MS, o.Lag.MaxMS, o.Events, o.Transitions)
}
