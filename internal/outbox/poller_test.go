package outbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/jsonl"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// streamTable is a fresh table on DynamoDB Local with its stream.
type streamTable struct {
	store   *dynamo.Store
	arn     string
	streams outbox.StreamsAPI
	clock   *lifecycle.ManualClock
	fake    *fake.Provider
}

// MustStreamTable creates a table (with its NEW_AND_OLD_IMAGES stream) for
// one test and returns its store and stream.
func MustStreamTable(tb testing.TB) *streamTable {
	tb.Helper()
	client := dynamotest.MustClient(tb)
	name := dynamotest.MustTable(tb)
	streams, arn := dynamotest.MustStream(tb, name)
	clock := lifecycle.NewManualClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	return &streamTable{store: dynamo.New(dynamo.Config{Client: client, Table: name}), arn: arn, streams: streams, clock: clock,
		fake: fake.New(fake.Config{Clock: clock})}
}

// service returns a lifecycle service over store.
func (st *streamTable) service(store lifecycle.Store) *lifecycle.Service {
	return lifecycle.NewService(lifecycle.Config{Store: store, Provider: st.fake, Clock: st.clock, Policy: lifecycle.DefaultPolicy(), Log: quiet()})
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// MustJSONL opens a JSON-lines publisher in a temporary directory.
func MustJSONL(tb testing.TB) *jsonl.Publisher {
	tb.Helper()
	p, err := jsonl.Open(jsonl.Config{Path: filepath.Join(tb.TempDir(), "events.jsonl")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// readEvents returns the events in a JSON-lines file, in file order.
func readEvents(tb testing.TB, path string) []lifecycle.Event {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []lifecycle.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			DetailType string          `json:"detail-type"`
			Detail     lifecycle.Event `json:"detail"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatalf("line %q: %v", sc.Text(), err)
		}
		if line.DetailType != line.Detail.DetailType() {
			tb.Fatalf("detail-type %q for an event to %s", line.DetailType, line.Detail.To)
		}
		out = append(out, line.Detail)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// pollUntil polls until the publisher has written want events or a bounded
// number of polls made no progress. DynamoDB Local makes a record readable
// when its write returns, so one poll is enough; the bound only keeps a
// broken stream from hanging the test.
func pollUntil(tb testing.TB, p *outbox.Poller, path string, want int) []lifecycle.Event {
	tb.Helper()
	for range 50 {
		if _, err := p.Poll(tb.Context()); err != nil {
			tb.Fatalf("poll: %v", err)
		}
		if evs := readEvents(tb, path); len(evs) >= want {
			return evs
		}
	}
	evs := readEvents(tb, path)
	tb.Fatalf("after 50 polls %d events, want %d: %v", len(evs), want, ids(evs))
	return nil
}

// diesAfterCommit is a store whose process dies right after its first
// session write commits: the write is in the table, and the caller sees
// only an error (nothing after the commit runs, no publish, no log).
type diesAfterCommit struct {
	lifecycle.Store
	dead bool
}

var errDied = errors.New("the function died after its write committed")

func (d *diesAfterCommit) UpdateSession(ctx context.Context, s *lifecycle.Session, from lifecycle.State, g lifecycle.Guard) error {
	if d.dead {
		return errDied
	}
	if err := d.Store.UpdateSession(ctx, s, from, g); err != nil {
		return err
	}
	d.dead = true
	return errDied
}

func TestPollerCrashAfterCommit(t *testing.T) {
	st := MustStreamTable(t)
	sess, _, err := st.service(st.store).Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	// A snapshot whose function dies right after running→pausing commits.
	dying := st.service(&diesAfterCommit{Store: st.store})
	if _, err := dying.PauseNow(t.Context(), "acct_1", sess.ID); !errors.Is(err, errDied) {
		t.Fatalf("snapshot: %v, want the death", err)
	}
	stored, err := st.store.GetSession(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stored.State, lifecycle.StatePausing; got != want {
		t.Fatalf("stored state %s, want %s (the write committed)", got, want)
	}

	pub := MustJSONL(t)
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: pub, Log: quiet()})
	evs := pollUntil(t, poller, pub.Path(), 3)
	// provisioning (create), running, then the dead function's pausing.
	want := []string{lifecycle.EventID(sess.ID, 1), lifecycle.EventID(sess.ID, 2), lifecycle.EventID(sess.ID, stored.Version)}
	if got := ids(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	last := evs[2]
	if last.From != lifecycle.StateRunning || last.To != lifecycle.StatePausing || last.Reason != lifecycle.ReasonRequest {
		t.Fatalf("last event %+v, want running→pausing for request", last)
	}
	// Nothing more: a further poll finds no new transition.
	if n, err := poller.Poll(t.Context()); err != nil || n != 0 {
		t.Fatalf("extra poll published %d, %v", n, err)
	}

	t.Run("DuplicateDelivery", func(t *testing.T) {
		// A second poller with no checkpoint is a redelivery of every record.
		again := MustJSONL(t)
		evs2 := pollUntil(t, outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: again, Log: quiet()}), again.Path(), 3)
		if !slices.Equal(evs2, evs) {
			t.Fatalf("redelivered %+v, want the same events %+v", evs2, evs)
		}
	})
}

func TestPollerIgnoresNonTransitions(t *testing.T) {
	st := MustStreamTable(t)
	svc := st.service(st.store)
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.store.PutAPIKey(t.Context(), lifecycle.APIKey{Hash: "ab12", AccountID: "acct_1", CreatedAt: st.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // heartbeats: writes that keep the state
		st.clock.Advance(time.Minute)
		if wrote, err := svc.Heartbeat(t.Context(), "acct_1", sess.ID); err != nil || !wrote {
			t.Fatalf("heartbeat: wrote %v, %v", wrote, err)
		}
	}
	if _, err := svc.PauseNow(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	stored, err := st.store.GetSession(t.Context(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub := MustJSONL(t)
	poller := outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: pub, Log: quiet()})
	evs := pollUntil(t, poller, pub.Path(), 4)
	var states []lifecycle.State
	for i, ev := range evs {
		states = append(states, ev.To)
		if i > 0 && ev.Version <= evs[i-1].Version {
			t.Fatalf("versions out of order: %v", ids(evs))
		}
	}
	want := []lifecycle.State{lifecycle.StateProvisioning, lifecycle.StateRunning, lifecycle.StatePausing, lifecycle.StatePaused}
	if !slices.Equal(states, want) {
		t.Fatalf("transitions %v, want %v (heartbeats, the claim and the API key are no events)", states, want)
	}
	if got, want := evs[3].EventID, lifecycle.EventID(sess.ID, stored.Version); got != want {
		t.Fatalf("last event_id %s, want %s", got, want)
	}
}

func TestPollerCheckpoint(t *testing.T) {
	st := MustStreamTable(t)
	svc := st.service(st.store)
	sess, _, err := svc.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "checkpoint.json")
	pub := MustJSONL(t)
	first := outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: pub, CheckpointFile: cp, Log: quiet()})
	pollUntil(t, first, pub.Path(), 2)

	// The poller restarts (a new one on the same checkpoint) and a pause
	// commits meanwhile: only the new transitions follow.
	if _, err := svc.PauseNow(t.Context(), "acct_1", sess.ID); err != nil {
		t.Fatal(err)
	}
	second := outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: pub, CheckpointFile: cp, Log: quiet()})
	evs := pollUntil(t, second, pub.Path(), 4)
	if got, want := ids(evs), []string{sess.ID + ":1", sess.ID + ":2", sess.ID + ":3", sess.ID + ":4"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v (no redelivery after a checkpoint)", got, want)
	}
}
