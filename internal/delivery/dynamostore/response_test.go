package dynamostore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/dynamostore"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// jobs is a Dispatcher that keeps the jobs it is given.
type jobs struct {
	mu   sync.Mutex
	list []delivery.Job
}

func (j *jobs) Dispatch(_ context.Context, job delivery.Job, _ time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.list = append(j.list, job)
	return nil
}

func (j *jobs) take(t *testing.T) delivery.Job {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.list) == 0 {
		t.Fatal("no job was dispatched")
	}
	job := j.list[0]
	j.list = j.list[1:]
	return job
}

// TestAnAnswerIsLoggedAsAtMostOneKiBOfUTF8: the attempt log keeps the
// first KiB of the receiver's answer as a table string (docs/WEBHOOKS.md
// "The delivery log"). A cut that falls inside a character, or an answer
// of bytes that are not text, is stored by the SDK with replacement
// characters added, which made the kept answer longer than the KiB the
// log promises; it must be cut at a character and stay within it.
func TestAnAnswerIsLoggedAsAtMostOneKiBOfUTF8(t *testing.T) {
	client := dynamotest.MustClient(t)
	for _, c := range []struct{ name, body string }{
		{"cut inside a character", strings.Repeat("a", delivery.MaxResponseBody-1) + "é and more"},
		{"binary", "\xff\xfe\x00binary\x80"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(c.body))
			}))
			t.Cleanup(rcv.Close)
			store := dynamostore.New(client, dynamotest.MustTable(t))
			q := &jobs{}
			guard := delivery.Guard{AllowPrivate: true}
			engine, err := delivery.NewEngine(delivery.Config{Store: store, Dispatcher: q, Guard: guard,
				Schedule: []time.Duration{0, time.Nanosecond, time.Nanosecond}})
			if err != nil {
				t.Fatal(err)
			}
			url := rcv.URL
			ep, err := delivery.NewService(store, guard, q, nil).Create(t.Context(), "acct", delivery.EndpointInput{URL: &url})
			if err != nil {
				t.Fatal(err)
			}
			ev := lifecycle.Event{EventID: lifecycle.EventID("ses_u", 3), SessionID: "ses_u", AccountID: "acct",
				From: lifecycle.StateRunning, To: lifecycle.StatePaused, Version: 3, Time: time.Now().UTC()}
			if err := engine.Accept(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
			if err := engine.Attempt(t.Context(), q.take(t)); err != nil {
				t.Fatalf("the attempt was not recorded: %v", err)
			}
			d, err := store.GetDelivery(t.Context(), ep.ID, delivery.DeliveryID(ev.Time, ep.ID, ev.EventID))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Attempts) != 1 || d.Attempts[0].StatusCode != http.StatusInternalServerError {
				t.Fatalf("attempts = %+v, want one answered 500", d.Attempts)
			}
			if r := d.Attempts[0].Response; !utf8.ValidString(r) || len(r) > delivery.MaxResponseBody || r == "" {
				t.Errorf("recorded response = %q (%d bytes); want valid UTF-8, at most %d bytes, not empty",
					r, len(r), delivery.MaxResponseBody)
			}
		})
	}
}
