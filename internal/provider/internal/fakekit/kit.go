package fakekit

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"
)

// Effect is what a fault does to the request it is served to.
type Effect int

// The effects of a fault.
const (
	// Serve is no fault: the request is served.
	Serve Effect = iota
	// Answer answers the fault instead (its status and the provider's
	// error body: Handle's answer).
	Answer
	// Drop closes the connection without an answer.
	Drop
	// Hang holds the request until the client gives up or the fake
	// closes; Kit.Hanging reports that it arrived.
	Hang
	// Lose serves the request (its effect happens) and then closes the
	// connection without the answer: a commit whose answer was lost.
	Lose
)

// Effector is a fake's fault type: it says what it does.
type Effector interface{ Effect() Effect }

// Kit is the plumbing one fake embeds: request counts by operation, named
// tallies (wakes, refused tokens...), the fault plan, the unknown fields
// the fake recorded, the requests its Hang faults hold, and the boot delay
// of the commands it "runs". Op is the fake's operation type; its zero
// value stands for every operation (Requests of it is the total, and
// faults queued under it serve a request of any operation whose Handle
// names it). F is the fake's fault type. The zero Kit is ready to use; its
// methods are safe for concurrent use.
type Kit[Op comparable, F Effector] struct {
	faults Faults[Op, F]

	mu      sync.Mutex
	counts  map[Op]int
	tallies map[string]int
	unknown []string
	boot    time.Duration
	latency map[Op]time.Duration
	hanging chan Op
	closing chan struct{}
	closed  bool
}

// lazy makes the channels and maps. Callers hold mu.
func (k *Kit[Op, F]) lazy() {
	if k.counts == nil {
		k.counts, k.tallies = map[Op]int{}, map[string]int{}
		k.hanging, k.closing = make(chan Op, 64), make(chan struct{})
	}
}

// Fail queues faults for the next requests of op, one request each.
func (k *Kit[Op, F]) Fail(op Op, faults ...F) { k.faults.Queue(op, faults...) }

// FailUntil answers every request of op with f (after the queued faults)
// until the returned function is called.
func (k *Kit[Op, F]) FailUntil(op Op, f F) (stop func()) { return k.faults.Stand(op, f) }

// Requests returns how many requests of op arrived (the zero Op: of every
// operation), faulted and refused ones included.
func (k *Kit[Op, F]) Requests(op Op) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var zero Op
	if op != zero {
		return k.counts[op]
	}
	n := 0
	for _, c := range k.counts {
		n += c
	}
	return n
}

// Count counts one request of op (Handle does it for the requests it
// wraps).
func (k *Kit[Op, F]) Count(op Op) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lazy()
	k.counts[op]++
}

// Add adds one to the tally name (such as "wakes" or "refused").
func (k *Kit[Op, F]) Add(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lazy()
	k.tallies[name]++
}

// Tally returns the tally name.
func (k *Kit[Op, F]) Tally(name string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.tallies[name]
}

// Note records an unknown field or parameter the fake saw, once or
// repeatedly as the fake wants (each is kept in arrival order).
func (k *Kit[Op, F]) Note(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unknown = append(k.unknown, name)
}

// NoteOnce is Note of a name not noted yet.
func (k *Kit[Op, F]) NoteOnce(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !slices.Contains(k.unknown, name) {
		k.unknown = append(k.unknown, name)
	}
}

// UnknownFields returns what Note recorded, in arrival order.
func (k *Kit[Op, F]) UnknownFields() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.unknown)
}

// SetBootDelay sets how long after its start a command the fake "runs"
// listens on its ports.
func (k *Kit[Op, F]) SetBootDelay(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.boot = d
}

// BootDelay returns SetBootDelay's delay (0: commands listen at once).
func (k *Kit[Op, F]) BootDelay() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.boot
}

// Booted reports whether a command started at start listens at now.
func (k *Kit[Op, F]) Booted(start, now time.Time) bool { return !now.Before(start.Add(k.BootDelay())) }

// SetLatency makes every request of op wait d (real time) before it is
// served or faulted, as the provider's own latency for that call (a
// benchmark's provider model; 0 takes it away). A request whose client
// gives up, or that the fake's Close releases, meanwhile gets no answer.
func (k *Kit[Op, F]) SetLatency(op Op, d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.latency == nil {
		k.latency = map[Op]time.Duration{}
	}
	k.latency[op] = d
}

// Latency returns SetLatency's latency of op (0: none).
func (k *Kit[Op, F]) Latency(op Op) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.latency[op]
}

// Hanging reports the op of each request a Hang fault is holding (the
// last 64 when nobody reads).
func (k *Kit[Op, F]) Hanging() <-chan Op {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lazy()
	return k.hanging
}

// Closing is closed by Close.
func (k *Kit[Op, F]) Closing() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lazy()
	return k.closing
}

// Close releases the requests Hang faults hold, and any a fake holds on
// Closing (a stream, a wait). It is idempotent.
func (k *Kit[Op, F]) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lazy()
	if !k.closed {
		k.closed = true
		close(k.closing)
	}
}

// Wait waits d, or until r's client gives up or the fake closes; it
// reports whether d passed.
func (k *Kit[Op, F]) Wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return false
	case <-k.Closing():
		return false
	case <-t.C:
		return true
	}
}

// Handle wraps next, which serves op: it counts each request, waits op's
// latency (SetLatency), takes its fault (the first of the ops named in from that has one, Faults.Next;
// from empty: op's own), and does what the fault's Effect says. answer
// writes an Answer fault (the fake's status, headers and error body).
func (k *Kit[Op, F]) Handle(op Op, next http.Handler, answer func(http.ResponseWriter, *http.Request, F), from ...Op) http.Handler {
	if len(from) == 0 {
		from = []Op{op}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.Count(op)
		if d := k.Latency(op); d > 0 && !k.Wait(r, d) {
			return
		}
		f, _ := k.faults.Next(from...)
		switch f.Effect() {
		case Answer:
			answer(w, r, f)
		case Hang:
			k.mu.Lock()
			k.lazy()
			select {
			case k.hanging <- op:
			default:
			}
			k.mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-k.Closing():
			}
		case Lose:
			next.ServeHTTP(httptest.NewRecorder(), r)
			DropConn(w)
		case Drop:
			DropConn(w)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// DropConn closes the request's connection without an answer (through any
// writer that unwraps to the connection's); failing that it aborts the
// handler, which also ends the answer.
func DropConn(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}
