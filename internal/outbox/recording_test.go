package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	awseb "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/outbox/eventbridge"
)

// usageLog is a lifecycle.UsageStore that logs what it records, fails the
// event ids in fail, and, while gate is set, holds each session's first
// record until gate sessions are recording at once.
type usageLog struct {
	mu      sync.Mutex
	order   []string
	fail    map[string]bool
	gate    int
	waiting int
	open    chan struct{}
}

func (u *usageLog) RecordTransition(ctx context.Context, ev lifecycle.Event) error {
	u.mu.Lock()
	if u.gate > 0 && ev.Version == 1 {
		u.waiting++
		if u.waiting == u.gate {
			close(u.open)
		}
		u.mu.Unlock()
		select {
		case <-u.open:
		case <-time.After(10 * time.Second): // only when the records are not concurrent
			return errors.New("records are not concurrent")
		}
		u.mu.Lock()
	}
	defer u.mu.Unlock()
	if u.fail[ev.EventID] {
		return errors.New("table busy")
	}
	u.order = append(u.order, ev.EventID)
	return nil
}

func (u *usageLog) UsageRows(context.Context, lifecycle.UsageQuery) (lifecycle.UsagePage, error) {
	return lifecycle.UsagePage{}, nil
}

func (u *usageLog) SessionEvents(context.Context, lifecycle.EventQuery) (lifecycle.EventPage, error) {
	return lifecycle.EventPage{}, nil
}

// interleaved returns n sessions' events, each session v1..per, in stream
// order: every session's v1, then every v2, and so on.
func interleaved(n, per int) []lifecycle.Event {
	var evs []lifecycle.Event
	for v := 1; v <= per; v++ {
		for i := range n {
			sid := fmt.Sprintf("ses_%02d", i)
			evs = append(evs, lifecycle.Event{EventID: fmt.Sprintf("%s:%d", sid, v), SessionID: sid, AccountID: "acct_1",
				From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: int64(v), Time: time.Unix(0, 0).UTC()})
		}
	}
	return evs
}

// TestRecordingConcurrentAcrossSessions: sessions are recorded at once (the
// gate opens only when RecordConcurrency sessions record together), each
// session's events in version order, and every event is published in the
// order given.
func TestRecordingConcurrentAcrossSessions(t *testing.T) {
	evs := interleaved(outbox.RecordConcurrency, 3)
	u := &usageLog{gate: outbox.RecordConcurrency, open: make(chan struct{})}
	rec := &recorder{}
	if err := outbox.Recording(u, rec).Publish(t.Context(), evs...); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if got, want := ids(rec.events), ids(evs); !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	last := map[string]int{}
	for _, id := range u.order {
		var sid string
		var v int
		fmt.Sscanf(id, "ses_%2s:%d", &sid, &v)
		if v != last[sid]+1 {
			t.Errorf("session %s recorded version %d after %d", sid, v, last[sid])
		}
		last[sid] = v
	}
	if got, want := len(u.order), len(evs); got != want {
		t.Errorf("recorded %d events, want %d", got, want)
	}
}

// TestRecordingFailureHoldsItsSession: an event that cannot be recorded
// holds back its session's later events, not the other sessions'; the
// error names it as the first not delivered, so the stream redelivers from
// there.
func TestRecordingFailureHoldsItsSession(t *testing.T) {
	evs := interleaved(3, 3) // 00:1 01:1 02:1 00:2 01:2 02:2 00:3 01:3 02:3
	u := &usageLog{fail: map[string]bool{"ses_01:2": true}}
	rec := &recorder{}
	err := outbox.Recording(u, rec).Publish(t.Context(), evs...)
	var re *outbox.RecordingError
	if !errors.As(err, &re) {
		t.Fatalf("publish = %v, want a *RecordingError", err)
	}
	if got, want := re.FirstFailed(), 4; got != want {
		t.Errorf("first failed = %d, want %d (ses_01:2)", got, want)
	}
	want := []string{"ses_00:1", "ses_01:1", "ses_02:1", "ses_00:2", "ses_02:2", "ses_00:3", "ses_02:3"}
	if got := ids(rec.events); !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	done, err := outbox.Publish(t.Context(), outbox.Recording(u, &recorder{}), changesOf(t, evs))
	if err == nil || done != 4 {
		t.Errorf("outbox.Publish = %d, %v; want redelivery from change 4", done, err)
	}
}

// changesOf turns events into stream changes (a MODIFY each).
func changesOf(t testing.TB, evs []lifecycle.Event) []outbox.Change {
	t.Helper()
	var out []outbox.Change
	for i, ev := range evs {
		img := func(state lifecycle.State, version int64) outbox.Image {
			return outbox.Image{"pk": "SESSION#" + ev.SessionID, "sk": "SESSION", "id": ev.SessionID, "account_id": ev.AccountID,
				"state": string(state), "version": itoa(version), "state_changed_at": ev.Time.Format(time.RFC3339Nano)}
		}
		out = append(out, outbox.Change{Sequence: itoa(int64(i)), Op: outbox.OpModify,
			Old: img(ev.From, ev.Version-1), New: img(ev.To, ev.Version)})
	}
	return out
}

// countingBus is an eventbridge.API that accepts every entry and counts
// calls.
type countingBus struct {
	mu    sync.Mutex
	calls [][]string
}

func (b *countingBus) PutEvents(_ context.Context, in *awseb.PutEventsInput, _ ...func(*awseb.Options)) (*awseb.PutEventsOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var call []string
	out := &awseb.PutEventsOutput{}
	for _, e := range in.Entries {
		call = append(call, *e.Detail)
		out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{EventId: e.Detail})
	}
	b.calls = append(b.calls, call)
	return out, nil
}

// TestStreamBatchPutEventsCalls counts the PutEvents calls of one stream
// batch of 100 transitions (50 sessions, each paused: running → pausing →
// paused): the whole batch goes to the publisher at once, so 10 calls of 10
// entries, no session twice in a call.
func TestStreamBatchPutEventsCalls(t *testing.T) {
	evs := interleaved(50, 2)
	bus := &countingBus{}
	pub := outbox.Recording(&usageLog{}, eventbridge.New(eventbridge.Config{Client: bus, Bus: "b"}))
	done, err := outbox.Publish(t.Context(), pub, changesOf(t, evs))
	if err != nil || done != len(evs) {
		t.Fatalf("Publish = %d, %v", done, err)
	}
	if got, want := len(bus.calls), 10; got != want {
		t.Errorf("PutEvents calls = %d for %d transitions, want %d", got, len(evs), want)
	}
	for i, c := range bus.calls {
		if len(c) != eventbridge.MaxEntries {
			t.Errorf("call %d has %d entries, want %d", i, len(c), eventbridge.MaxEntries)
		}
	}
}
