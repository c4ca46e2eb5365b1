package fakekit

import "sync"

// Outbox holds what a fake reports to a callback (the state changes its
// webhooks carry) while the fake's lock is held, and delivers it later, in
// order, outside that lock, so the callback may call the fake. The zero
// Outbox is empty; it is safe for concurrent use.
type Outbox[T any] struct {
	mu      sync.Mutex
	deliver sync.Mutex // one Flush at a time, so deliveries keep their order
	queued  []T
}

// Add queues v.
func (o *Outbox[T]) Add(v T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queued = append(o.queued, v)
}

// Flush delivers everything queued to f, in order (a nil f drops it).
func (o *Outbox[T]) Flush(f func(T)) {
	o.deliver.Lock()
	defer o.deliver.Unlock()
	o.mu.Lock()
	queued := o.queued
	o.queued = nil
	o.mu.Unlock()
	for _, v := range queued {
		if f != nil {
			f(v)
		}
	}
}
