package localstack

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// ConsoleFeed streams one account's lifecycle events to the console as
// Server-Sent Events (GET /console/api/feed): the live updates of its
// sessions table and session pages. It is a lifecycle.Publisher the local
// stream poller hands every committed transition to, after recording it,
// so a page that hears of an event can read the session and its timeline
// at once. Watching through it touches no session: it is not activity, no
// presence, no return (docs/CONSOLE.md "Watching is not presence").
//
// Each message is "event: transition" with data {"session_id", and the
// fields of a timeline entry (api.SessionEvent)}. A watcher that falls
// behind by more than feedBuffer events gets "event: resync" (read the view
// again) instead of the events it missed. A comment line keeps idle
// connections open every KeepAlive.
type ConsoleFeed struct {
	account string
	// KeepAlive is how often an idle stream gets a comment line
	// (default 20 s). Set it before serving.
	KeepAlive time.Duration

	mu   sync.Mutex
	subs map[*feedSub]struct{}
	done chan struct{} // closed by Close
	once sync.Once
}

// feedSub is one watcher: its queue, and whether it overflowed.
type feedSub struct {
	events  chan lifecycle.Event
	dropped chan struct{} // closed once when events overflowed
	once    sync.Once
}

// feedBuffer is how many events a watcher may fall behind by.
const feedBuffer = 256

var _ lifecycle.Publisher = (*ConsoleFeed)(nil)

// NewConsoleFeed returns a feed of accountID's events.
func NewConsoleFeed(accountID string) *ConsoleFeed {
	return &ConsoleFeed{account: accountID, KeepAlive: 20 * time.Second, subs: map[*feedSub]struct{}{}, done: make(chan struct{})}
}

// Close ends every stream (the stack is stopping: an open stream would hold
// the server's graceful shutdown). Streams opened later end at once.
func (f *ConsoleFeed) Close() { f.once.Do(func() { close(f.done) }) }

// Publish hands evs of the feed's account to every watcher, without
// waiting: a watcher whose queue is full is told to resync. It never fails.
func (f *ConsoleFeed) Publish(_ context.Context, evs ...lifecycle.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range evs {
		if ev.AccountID != f.account {
			continue
		}
		for s := range f.subs {
			select {
			case s.events <- ev:
			default:
				s.once.Do(func() { close(s.dropped) })
			}
		}
	}
	return nil
}

// Watchers returns how many streams are open.
func (f *ConsoleFeed) Watchers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// feedEvent is the data of one "transition" message.
type feedEvent struct {
	SessionID string `json:"session_id"`
	api.SessionEvent
}

// ServeHTTP streams the feed until the client goes.
func (f *ConsoleFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	s := &feedSub{events: make(chan lifecycle.Event, feedBuffer), dropped: make(chan struct{})}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, s)
		f.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(": the dev account's lifecycle events\n\n"))
	flusher.Flush()
	tick := time.NewTicker(f.KeepAlive)
	defer tick.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-f.done:
			return
		case <-s.dropped:
			msg = []byte("event: resync\ndata: {}\n\n")
			s = f.resubscribe(s)
		case ev := <-s.events:
			data, err := json.Marshal(feedEvent{SessionID: ev.SessionID, SessionEvent: apigw.SessionEventJSON(ev)})
			if err != nil {
				return
			}
			msg = append(append([]byte("event: transition\ndata: "), data...), "\n\n"...)
		case <-tick.C:
			msg = []byte(": keep-alive\n\n")
		}
		if _, err := w.Write(msg); err != nil {
			return
		}
		flusher.Flush()
	}
}

// resubscribe swaps an overflowed watcher for a fresh one: what it missed
// is read again by the page (resync).
func (f *ConsoleFeed) resubscribe(old *feedSub) *feedSub {
	s := &feedSub{events: make(chan lifecycle.Event, feedBuffer), dropped: make(chan struct{})}
	f.mu.Lock()
	delete(f.subs, old)
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}
