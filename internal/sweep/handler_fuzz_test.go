package sweep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// emptyStore is a lifecycle.Store with no sessions: every due index is
// empty. Any other method is a nil interface call, which panics: the sweep
// of an empty table must not need one.
type emptyStore struct{ lifecycle.Store }

func (emptyStore) FindDue(context.Context, lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	return lifecycle.SessionPage{}, nil
}

// FuzzScheduledEvent decodes arbitrary bytes as the Lambda runtime decodes
// the sweep function's payload (encoding/json into
// events.CloudWatchEvent) and hands what decodes to Handler.Handle, over an
// empty table (emptyStore, so no DynamoDB) and an empty fake provider. The
// seed corpus is in testdata/fuzz/FuzzScheduledEvent.
//
// Invariants: nothing panics; any event that decodes triggers exactly one
// run that succeeds with an all-zero summary (the event's content is only
// logged); every log line is valid JSON and the trigger line names the
// event's id; and the event survives a JSON round trip (the same id,
// detail-type, source, account, region, time, resources and detail).
func FuzzScheduledEvent(f *testing.F) {
	f.Add([]byte(`{"id":"1","detail-type":"Scheduled Event","source":"aws.events","time":"2026-03-02T09:00:00Z","detail":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev events.CloudWatchEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return // the runtime refuses it before the handler runs
		}
		clock := lifecycle.NewManualClock(t0)
		svc := lifecycle.NewService(lifecycle.Config{Store: emptyStore{}, Provider: fake.New(fake.Config{Clock: clock}), Clock: clock, Policy: lifecycle.DefaultPolicy(), Log: quiet()})
		var logs syncBuffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		h := sweep.NewHandler(sweep.New(svc, sweep.Config{Rate: rate.Inf}, log), log)

		sum, err := h.Handle(t.Context(), ev)
		if err != nil {
			t.Fatalf("Handle: %v", err)
		}
		sum.DurationMS = 0
		if sum != (sweep.Summary{}) {
			t.Errorf("summary of an empty table = %+v, want zero", sum)
		}
		triggered := logs.lines(t, "idle sweep triggered") // fails on a line that is not JSON
		if got, want := len(triggered), 1; got != want {
			t.Fatalf("%d trigger lines, want %d", got, want)
		}
		if got, want := triggered[0]["event_id"], ev.ID; got != want {
			t.Errorf("logged event_id = %v, want %q", got, want)
		}
		if got, want := len(logs.lines(t, "idle sweep finished")), 1; got != want {
			t.Errorf("%d summary lines, want %d", got, want)
		}

		out, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("re-encode the event: %v", err)
		}
		var back events.CloudWatchEvent
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("decode the re-encoded event %s: %v", out, err)
		}
		if back.ID != ev.ID || back.DetailType != ev.DetailType || back.Source != ev.Source ||
			back.AccountID != ev.AccountID || back.Region != ev.Region || back.Version != ev.Version ||
			!back.Time.Equal(ev.Time) || !slices.Equal(back.Resources, ev.Resources) ||
			!bytes.Equal(compact(t, back.Detail), compact(t, ev.Detail)) {
			t.Errorf("round trip changed the event:\n got %+v\nwant %+v", back, ev)
		}
	})
}

// compact returns raw compacted, with an absent detail read as null.
func compact(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	if len(raw) == 0 {
		return []byte("null")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("detail %q is not JSON: %v", raw, err)
	}
	return b.Bytes()
}
