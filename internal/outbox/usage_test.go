package outbox_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
	"github.com/sandmanhq/sandman/internal/outbox"
)

// TestUsageReplayThroughPoller drives one session through the service on
// DynamoDB Local (create, pause, resume, a pause across UTC midnight,
// delete), lets the poller read the table's stream and record usage
// through outbox.Recording, and compares GET /v1/usage's figures
// (Service.Usage) with the transitions, to the millisecond. A second
// poller with no checkpoint redelivers every record: nothing is counted
// twice.
func TestUsageReplayThroughPoller(t *testing.T) {
	st := MustStreamTable(t)
	st.clock.Set(time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC))
	svc := lifecycle.NewService(lifecycle.Config{Store: st.store, Provider: st.fake, Clock: st.clock,
		Policy: lifecycle.DefaultPolicy(), Log: quiet(),
		Prices: map[string]lifecycle.Price{"fake": {RunningPerHour: 3.6, PausedPerHour: 0.36}}})
	ctx := t.Context()
	sess, _, err := svc.Create(ctx, "acct_u", lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 86400})
	if err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration, op func(context.Context, string, string) (*lifecycle.Session, error)) {
		t.Helper()
		st.clock.Advance(d)
		if _, err := op(ctx, "acct_u", sess.ID); err != nil {
			t.Fatal(err)
		}
	}
	step(30*time.Minute, svc.PauseNow)                                 // 22:30:00 running 1,800 s
	step(30*time.Minute+1500*time.Millisecond, svc.Resume)             // 23:00:01.5 paused 1,801.5 s
	step(time.Hour+10*time.Minute-1500*time.Millisecond, svc.PauseNow) // 00:10 running 3,598.5 s + 600 s
	ctx = lifecycle.WithActor(ctx, lifecycle.ActorAPI)                 // the delete is the API's
	step(50*time.Minute, svc.Delete)                                   // 01:00 paused 3,000 s

	poll := func(name string) {
		t.Helper()
		pub := MustJSONL(t)
		p := outbox.NewPoller(outbox.PollerConfig{Streams: st.streams, StreamARN: st.arn, Publisher: outbox.Recording(st.store, pub), Log: quiet()})
		evs := pollUntil(t, p, pub.Path(), 9)
		if len(evs) != 9 {
			t.Fatalf("%s: %d events, want 9 transitions", name, len(evs))
		}
	}
	want := []lifecycle.UsageLine{
		{Day: "2026-03-01", UsageTotals: lifecycle.UsageTotals{RunningSeconds: 5398.5, PausedSeconds: 1801.5, Pauses: 1, Resumes: 1,
			EstimatedCostUSD: 5398.5/3600*3.6 + 1801.5/3600*0.36}},
		{Day: "2026-03-02", UsageTotals: lifecycle.UsageTotals{RunningSeconds: 600, PausedSeconds: 3000, Pauses: 1,
			EstimatedCostUSD: 600.0/3600*3.6 + 3000.0/3600*0.36}},
	}
	check := func(name string) {
		t.Helper()
		rep, err := svc.Usage(ctx, "acct_u", lifecycle.UsageRequest{From: "2026-03-01", To: "2026-03-02"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Lines) != len(want) {
			t.Fatalf("%s: lines %+v, want %+v", name, rep.Lines, want)
		}
		for i, w := range want {
			g := rep.Lines[i]
			w.EstimatedCostUSD = float64(int64(w.EstimatedCostUSD*1e6+0.5)) / 1e6
			if g != w {
				t.Errorf("%s: line %d = %+v, want %+v", name, i, g, w)
			}
		}
		if got, want := rep.Total.RunningSeconds, 5998.5; got != want {
			t.Errorf("%s: total running %v s, want %v", name, got, want)
		}
	}
	poll("first delivery")
	check("first delivery")
	poll("redelivery") // a new poller without a checkpoint reads every record again
	check("redelivery")

	page, err := st.store.SessionEvents(ctx, lifecycle.EventQuery{SessionID: sess.ID, Limit: lifecycle.DiagnoseEvents})
	if err != nil {
		t.Fatal(err)
	}
	evs := page.Events
	if len(evs) != 9 || evs[0].To != lifecycle.StateKilled || evs[8].To != lifecycle.StateProvisioning {
		t.Fatalf("recent events %+v, want the 9 transitions newest first", evs)
	}
	// The timeline: each event keeps who caused it and when its from began.
	if got := evs[0]; got.Actor != lifecycle.ActorAPI || got.Time.Sub(got.Since) != 50*time.Minute {
		t.Errorf("the delete: actor %q after %v paused, want api after 50m", got.Actor, got.Time.Sub(got.Since))
	}
	if got := evs[1]; got.Actor != lifecycle.ActorSandman || got.From != lifecycle.StatePausing {
		t.Errorf("the pause: actor %q from %s, want sandman (no edge said) from pausing", got.Actor, got.From)
	}
	if got := evs[8]; !got.Since.IsZero() {
		t.Errorf("the create has since %v, want none", got.Since)
	}
}

// TestRecordingDuplicateRecords feeds the publisher path (outbox.Publish
// through outbox.Recording) the stream records of a replay with every
// record delivered twice and the whole batch again, concurrently from two
// deliveries: each transition counts once.
func TestRecordingDuplicateRecords(t *testing.T) {
	store := memstore.New()
	var changes []outbox.Change
	for i, ev := range storetest.Replay("ses_dup", "acct_d", "e2b") {
		img := func(state lifecycle.State, at time.Time, version int64) outbox.Image {
			return outbox.Image{"pk": "SESSION#ses_dup", "sk": "SESSION", "id": "ses_dup", "account_id": "acct_d",
				"provider": "e2b", "state": string(state), "version": itoa(version), "state_changed_at": at.Format(time.RFC3339Nano)}
		}
		c := outbox.Change{Sequence: itoa(int64(i)), Op: outbox.OpModify, New: img(ev.To, ev.Time, ev.Version)}
		if ev.From == "" {
			c.Op = outbox.OpInsert
		} else {
			c.Old = img(ev.From, ev.Since, ev.Version-1)
		}
		changes = append(changes, c, c) // each record twice
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if done, err := outbox.Publish(t.Context(), outbox.Recording(store, &recorder{}), changes); err != nil || done != len(changes) {
				t.Errorf("Publish = %d, %v", done, err)
			}
		})
	}
	wg.Wait()
	page, err := store.UsageRows(t.Context(), lifecycle.UsageQuery{AccountID: "acct_d", From: "2026-03-01", To: "2026-03-02"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Rows) != len(storetest.ReplayWant) {
		t.Fatalf("rows %+v, want %+v", page.Rows, storetest.ReplayWant)
	}
	for i, w := range storetest.ReplayWant {
		w.Provider = "e2b"
		if page.Rows[i] != w {
			t.Errorf("row %d = %+v, want %+v", i, page.Rows[i], w)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
