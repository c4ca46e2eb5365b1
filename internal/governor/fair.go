package governor

import (
	"math"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Fair shares within a class: a process keeps, per class, a decaying count
// of each account's calls (half-life shareHalfLife). An account whose count
// is over overShare × the mean of the accounts seen is over its share: its
// calls take the class's lower rank, so every other account's calls of the
// class go first, in this process (its queue) and across the fleet (the
// lower rank's shallower depth in the bucket). The processes that take an
// account's calls see samples of the same traffic, so each judges alike.
const (
	shareHalfLife = 10 * time.Second
	overShare     = 1.5
	// shareMinCalls is how many recent calls an account needs before it
	// can be over its share: a few calls never are.
	shareMinCalls = 4.0
	// shareDecayEvery is how often the counts decay (and the accounts
	// whose count fell under shareForget are forgotten).
	shareDecayEvery = time.Second
	shareForget     = 0.05
)

// shares is the per-class account counts of one process (not safe for
// concurrent use: the governor's lock guards it).
type shares struct {
	classes [lifecycle.NumCallPriorities]classShares
}

type classShares struct {
	counts  map[string]float64
	total   float64
	decayed time.Time
}

// arrive counts one call of account in class c at now and reports whether
// the account is over its share of the class. An unknown account ("") is
// never over.
func (sh *shares) arrive(c lifecycle.CallPriority, account string, now time.Time) bool {
	cs := &sh.classes[min(c, lifecycle.NumCallPriorities-1)]
	if cs.counts == nil {
		cs.counts, cs.decayed = map[string]float64{}, now
	}
	if dt := now.Sub(cs.decayed); dt >= shareDecayEvery {
		f := math.Exp2(-dt.Seconds() / shareHalfLife.Seconds())
		cs.total = 0
		for a, n := range cs.counts {
			n *= f
			if n < shareForget {
				delete(cs.counts, a)
				continue
			}
			cs.counts[a] = n
			cs.total += n
		}
		cs.decayed = now
	}
	if account == "" {
		return false
	}
	cs.counts[account]++
	cs.total++
	n := cs.counts[account]
	return len(cs.counts) > 1 && n >= shareMinCalls && n > overShare*cs.total/float64(len(cs.counts))
}

// rankQueue is the calls of one rank waiting for a token: first in first
// out per account, the accounts served in turn (round robin), so an
// account with many calls waiting holds back no other account's.
type rankQueue struct {
	byAccount map[string][]*waiter
	order     []string // accounts with calls waiting, in turn order
	next      int
	n         int
}

func (q *rankQueue) push(w *waiter) {
	if q.byAccount == nil {
		q.byAccount = map[string][]*waiter{}
	}
	if len(q.byAccount[w.account]) == 0 {
		q.order = append(q.order, w.account)
	}
	q.byAccount[w.account] = append(q.byAccount[w.account], w)
	q.n++
}

// pop takes the next account's oldest call, or nil.
func (q *rankQueue) pop() *waiter {
	if q.n == 0 {
		return nil
	}
	if q.next >= len(q.order) {
		q.next = 0
	}
	a := q.order[q.next]
	ws := q.byAccount[a]
	w := ws[0]
	if len(ws) == 1 {
		delete(q.byAccount, a)
		q.order = append(q.order[:q.next], q.order[q.next+1:]...)
	} else {
		q.byAccount[a] = ws[1:]
		q.next++
	}
	q.n--
	return w
}

// remove takes w out; it reports whether w was waiting.
func (q *rankQueue) remove(w *waiter) bool {
	ws := q.byAccount[w.account]
	for i, x := range ws {
		if x != w {
			continue
		}
		ws = append(ws[:i:i], ws[i+1:]...)
		q.n--
		if len(ws) > 0 {
			q.byAccount[w.account] = ws
			return true
		}
		delete(q.byAccount, w.account)
		for j, a := range q.order {
			if a == w.account {
				q.order = append(q.order[:j], q.order[j+1:]...)
				if q.next > j {
					q.next--
				}
				break
			}
		}
		return true
	}
	return false
}
