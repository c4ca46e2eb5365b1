package fakekit

import "sync"

// Faults is a fake's fault plan, by operation: faults queued for the next
// requests (one request each) and standing faults served to every request
// until stopped. Op is the fake's operation type, F its fault type. The
// zero value is an empty plan; it is safe for concurrent use.
type Faults[Op comparable, F any] struct {
	mu       sync.Mutex
	queued   map[Op][]F
	standing map[Op]F
}

// Queue queues faults for the next requests of op, one request each.
func (p *Faults[Op, F]) Queue(op Op, faults ...F) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queued == nil {
		p.queued = map[Op][]F{}
	}
	p.queued[op] = append(p.queued[op], faults...)
}

// Stand serves f to every request of op (after the queued ones) until the
// returned function is called.
func (p *Faults[Op, F]) Stand(op Op, f F) (stop func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.standing == nil {
		p.standing = map[Op]F{}
	}
	p.standing[op] = f
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.standing, op)
	}
}

// Next takes the fault for one request that ops name, the most specific
// first (such as the request's operation, then "any operation"): the first
// queued fault of the first op that has one, else the standing fault of
// the first op that has one. It reports false when there is none.
func (p *Faults[Op, F]) Next(ops ...Op) (F, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, op := range ops {
		if q := p.queued[op]; len(q) > 0 {
			p.queued[op] = q[1:]
			return q[0], true
		}
	}
	for _, op := range ops {
		if f, ok := p.standing[op]; ok {
			return f, true
		}
	}
	var none F
	return none, false
}
