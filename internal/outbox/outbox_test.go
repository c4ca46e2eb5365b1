package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
)

// MustStreamEvent reads a DynamoDB Streams event fixture from events/stream.
func MustStreamEvent(tb testing.TB, name string) events.DynamoDBEvent {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "stream", name))
	if err != nil {
		tb.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		tb.Fatal(err)
	}
	return ev
}

// recorder is a lifecycle.Publisher that keeps what it is given and fails
// the calls whose 0-based number is in fail.
type recorder struct {
	mu     sync.Mutex
	calls  int
	fail   map[int]bool
	events []lifecycle.Event
}

func (r *recorder) Publish(_ context.Context, evs ...lifecycle.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.calls
	r.calls++
	if r.fail[n] {
		return errors.New("bus unavailable")
	}
	r.events = append(r.events, evs...)
	return nil
}

func ids(evs []lifecycle.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.EventID
	}
	return out
}

func TestEvent(t *testing.T) {
	ev := MustStreamEvent(t, "session-transitions.json")
	var got []lifecycle.Event
	for _, r := range ev.Records {
		e, ok, err := outbox.FromLambda(r).Event()
		if err != nil {
			t.Fatalf("record %s: %v", r.EventID, err)
		}
		if ok {
			got = append(got, e)
		}
	}
	want := []lifecycle.Event{
		{EventID: "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa:5", SessionID: "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa", AccountID: "acc_1", SandboxID: "sbx_1",
			From: lifecycle.StateRunning, To: lifecycle.StatePausing, Version: 5, Reason: lifecycle.ReasonLifetime,
			Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Since: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC),
			CheckpointBytes: 2_500_000_000}, // the old image's: what was stored while running
		{EventID: "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb:1", SessionID: "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb", AccountID: "acc_2",
			From: "", To: lifecycle.StateProvisioning, Version: 1, Reason: lifecycle.ReasonRequest,
			Time: time.Date(2026, 3, 1, 12, 0, 2, 0, time.UTC)},
		{EventID: "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb:2", SessionID: "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb", AccountID: "acc_2", SandboxID: "sbx_2",
			From: lifecycle.StateProvisioning, To: lifecycle.StateRunning, Version: 2, Reason: lifecycle.ReasonRequest,
			Time: time.Date(2026, 3, 1, 12, 0, 3, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %v, want %d (heartbeat and claim ignored)", len(got), ids(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestEventIgnored(t *testing.T) {
	session := func(state, version string) outbox.Image {
		return outbox.Image{"pk": "SESSION#ses_x", "sk": "SESSION", "id": "ses_x", "state": state, "version": version}
	}
	for name, c := range map[string]outbox.Change{
		"Heartbeat": {Op: outbox.OpModify, Old: session("running", "3"), New: session("running", "4")},
		"Remove":    {Op: outbox.OpRemove, Old: session("running", "3")},
		"APIKey":    {Op: outbox.OpInsert, New: outbox.Image{"pk": "APIKEY#ab", "sk": "APIKEY", "state": "x"}},
		"Claim":     {Op: outbox.OpModify, Old: outbox.Image{"pk": "CLAIM#k", "sk": "CLAIM"}, New: outbox.Image{"pk": "CLAIM#k", "sk": "CLAIM", "state": "running"}},
		"OtherSort": {Op: outbox.OpInsert, New: outbox.Image{"pk": "SESSION#ses_x", "sk": "OTHER", "state": "running", "version": "1"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, ok, err := c.Event()
			if err != nil || ok {
				t.Fatalf("Event() = ok %v, err %v; want ignored", ok, err)
			}
		})
	}
	t.Run("ErrBadVersion", func(t *testing.T) {
		c := outbox.Change{Sequence: "9", Op: outbox.OpModify, Old: session("running", "3"), New: session("paused", "four")}
		if _, _, err := c.Event(); err == nil {
			t.Fatal("want an error for an unreadable version")
		}
	})
}

func TestFromStream(t *testing.T) {
	img := map[string]streamtypes.AttributeValue{
		"pk": &streamtypes.AttributeValueMemberS{Value: "SESSION#ses_x"}, "sk": &streamtypes.AttributeValueMemberS{Value: "SESSION"},
		"id": &streamtypes.AttributeValueMemberS{Value: "ses_x"}, "account_id": &streamtypes.AttributeValueMemberS{Value: "acc"},
		"version":  &streamtypes.AttributeValueMemberN{Value: "7"},
		"metadata": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}},
		"state":    &streamtypes.AttributeValueMemberS{Value: "paused"}, "reason": &streamtypes.AttributeValueMemberS{Value: "away"},
		"state_changed_at": &streamtypes.AttributeValueMemberS{Value: "2026-03-01T12:00:00.500000000Z"},
	}
	old := map[string]streamtypes.AttributeValue{"state": &streamtypes.AttributeValueMemberS{Value: "pausing"}}
	c := outbox.FromStream(streamtypes.Record{EventName: streamtypes.OperationTypeModify,
		Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String("42"), NewImage: img, OldImage: old}})
	ev, ok, err := c.Event()
	if err != nil || !ok {
		t.Fatalf("Event() = ok %v, err %v", ok, err)
	}
	want := lifecycle.Event{EventID: "ses_x:7", SessionID: "ses_x", AccountID: "acc", From: lifecycle.StatePausing,
		To: lifecycle.StatePaused, Version: 7, Reason: lifecycle.ReasonAway, Time: time.Date(2026, 3, 1, 12, 0, 0, 5e8, time.UTC)}
	if ev != want {
		t.Fatalf("event = %+v, want %+v", ev, want)
	}
	if got, want := c.Sequence, "42"; got != want {
		t.Fatalf("sequence = %q, want %q", got, want)
	}
}

// transitions returns n changes, each a transition of session id to
// version i+1, with a heartbeat after every third.
func transitions(id string, n int) []outbox.Change {
	var out []outbox.Change
	states := []string{"running", "pausing", "paused", "resuming"}
	seq := 0
	for v := 1; v <= n; v++ {
		seq++
		img := func(state string, version int) outbox.Image {
			return outbox.Image{"pk": "SESSION#" + id, "sk": "SESSION", "id": id, "state": state, "version": strconv.Itoa(version)}
		}
		out = append(out, outbox.Change{Sequence: strconv.Itoa(seq), Op: outbox.OpModify,
			Old: img(states[(v+3)%4], v-1), New: img(states[v%4], v)})
		if v%3 == 0 {
			seq++
			out = append(out, outbox.Change{Sequence: strconv.Itoa(seq), Op: outbox.OpModify, Old: img(states[v%4], v), New: img(states[v%4], v)})
		}
	}
	return out
}

// partial is a publisher that delivers the events before index first and
// fails from there, saying so as eventbridge.DeliveryError does.
type partial struct {
	rec   recorder
	first int
}

func (p *partial) Publish(ctx context.Context, evs ...lifecycle.Event) error {
	if p.first >= len(evs) {
		return p.rec.Publish(ctx, evs...)
	}
	_ = p.rec.Publish(ctx, evs[:p.first]...)
	return partialErr(p.first)
}

type partialErr int

func (e partialErr) Error() string    { return "delivered up to event " + strconv.Itoa(int(e)) }
func (e partialErr) FirstFailed() int { return int(e) }

func TestPublish(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		changes := transitions("ses_x", 25) // 25 transitions, 8 heartbeats
		rec := &recorder{}
		done, err := outbox.Publish(context.Background(), rec, changes)
		if err != nil || done != len(changes) {
			t.Fatalf("Publish = %d, %v; want %d, nil", done, err, len(changes))
		}
		if got, want := rec.calls, 1; got != want {
			t.Fatalf("publisher calls = %d, want %d (the whole batch at once)", got, want)
		}
		for i, ev := range rec.events {
			if got, want := ev.Version, int64(i+1); got != want {
				t.Fatalf("event %d version = %d, want %d (in order, no heartbeat)", i, got, want)
			}
		}
	})
	t.Run("ErrPartial", func(t *testing.T) {
		changes := transitions("ses_x", 25)
		pub := &partial{first: 10}
		done, err := outbox.Publish(context.Background(), pub, changes)
		if err == nil {
			t.Fatal("want the publisher's error")
		}
		// Versions 1..10 were delivered: redelivery starts at version 11.
		ev, _, _ := changes[done].Event()
		if got, want := ev.Version, int64(11); got != want {
			t.Fatalf("retry from change %d (version %d), want version %d", done, got, want)
		}
		// Redelivering from done publishes the rest; versions 11.. follow 10.
		pub.first = 1 << 30
		if _, err := outbox.Publish(context.Background(), pub, changes[done:]); err != nil {
			t.Fatal(err)
		}
		for i, ev := range pub.rec.events {
			if got, want := ev.Version, int64(i+1); got != want {
				t.Fatalf("event %d version = %d, want %d", i, got, want)
			}
		}
	})
	t.Run("ErrWhole", func(t *testing.T) {
		changes := transitions("ses_x", 5)
		rec := &recorder{fail: map[int]bool{0: true}}
		done, err := outbox.Publish(context.Background(), rec, changes)
		if err == nil {
			t.Fatal("want the publisher's error")
		}
		if ev, ok, _ := changes[done].Event(); !ok || ev.Version != 1 {
			t.Fatalf("retry from change %d, want the first transition's", done)
		}
	})
	t.Run("ErrPoisonRecord", func(t *testing.T) {
		changes := transitions("ses_x", 4)
		changes[2].New["version"] = "bad"
		rec := &recorder{}
		done, err := outbox.Publish(context.Background(), rec, changes)
		if err == nil || done != 2 {
			t.Fatalf("Publish = %d, %v; want 2 and an error", done, err)
		}
		if got, want := ids(rec.events), []string{"ses_x:1", "ses_x:2"}; !slices.Equal(got, want) {
			t.Fatalf("published %v, want %v (everything before the poison record)", got, want)
		}
	})
}

func TestHandle(t *testing.T) {
	ev := MustStreamEvent(t, "session-transitions.json")
	t.Run("OK", func(t *testing.T) {
		rec := &recorder{}
		resp, err := outbox.NewHandler(rec, quiet()).Handle(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %+v, %v; want no failures", resp, err)
		}
		if got, want := ids(rec.events), []string{"ses_aaaaaaaaaaaaaaaaaaaaaaaaaa:5", "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb:1", "ses_bbbbbbbbbbbbbbbbbbbbbbbbbb:2"}; !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
	t.Run("DuplicateDelivery", func(t *testing.T) {
		rec := &recorder{}
		h := outbox.NewHandler(rec, quiet())
		for range 2 {
			if _, err := h.Handle(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
		}
		first, second := rec.events[:3], rec.events[3:]
		if !slices.Equal(first, second) {
			t.Fatalf("redelivered events differ:\n%+v\n%+v", first, second)
		}
	})
	t.Run("ErrPublish", func(t *testing.T) {
		rec := &recorder{fail: map[int]bool{0: true}}
		resp, err := outbox.NewHandler(rec, quiet()).Handle(context.Background(), ev)
		if err != nil {
			t.Fatalf("Handle returned %v; failures go in the response", err)
		}
		// Record 1 (a heartbeat) is done; the batch failed from record 2.
		want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: "100000000000000000002"}}
		if !slices.Equal(resp.BatchItemFailures, want) {
			t.Fatalf("failures = %+v, want %+v", resp.BatchItemFailures, want)
		}
	})
}

// TestEventCarriesTheLoss: the event of a recovery read from the stream
// (resuming → restoring, reason lost) carries the session's lost (how the
// sandbox was lost, the checkpoint and its age), as the in-path event
// does (lifecycle.NewEvent); an event of another reason carries none.
func TestEventCarriesTheLoss(t *testing.T) {
	const lost = "gone checkpoint=chk_1 age_seconds=42 created_at=2026-03-01T11:59:18Z"
	img := func(state, version, reason string) outbox.Image {
		return outbox.Image{"pk": "SESSION#ses_1", "sk": "SESSION", "id": "ses_1", "state": state, "version": version,
			"reason": reason, "lost": lost, "state_changed_at": "2026-03-01T12:00:00Z"}
	}
	for reason, want := range map[string]string{lifecycle.ReasonLost: lost, lifecycle.ReasonUnarchive: ""} {
		c := outbox.Change{Op: outbox.OpModify, Old: img("resuming", "6", lifecycle.ReasonRequest), New: img("restoring", "7", reason)}
		ev, ok, err := c.Event()
		if err != nil || !ok {
			t.Fatalf("reason %s: Event = %v, %v", reason, ok, err)
		}
		if ev.Lost != want {
			t.Errorf("reason %s: Lost = %q, want %q", reason, ev.Lost, want)
		}
	}
}
