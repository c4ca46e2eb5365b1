package costsim

import (
	"strconv"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// PredictableReturns counts the returns of tr that a pre-resume window
// could hold with hindsight: a return after gap g (longer than the floor
// of p, shorter than the histogram's 4 h) is predictable when some window
// [a, a+w) of whole minutes, w at most p.MaxWindow, holds g, at least
// p.MinFar of its user's gaps over the whole trace, and at least
// p.Precision of that user's gaps from a on (those of 4 h or more count
// as after every window). It is the learned policy's window rule given
// each user's whole distribution from the start: no learning, no misses,
// no cost test. Over the returns that needed a resume it bounds the
// pre-resume recall from above (Verdict.RecallCeiling). A user is an
// (account, user) pair of the trace; in the i.i.d. trace every session is
// one.
func PredictableReturns(tr Trace, p lifecycle.LearnedPolicy) int {
	gaps := map[[2]string][]time.Duration{}
	for i := range tr.Sessions {
		s := &tr.Sessions[i]
		k := [2]string{accountOf(s), s.User}
		if s.User == "" {
			k[1] = "#" + strconv.Itoa(i)
		}
		for j := 1; j < len(s.Bursts); j++ {
			gaps[k] = append(gaps[k], s.Bursts[j].Start-s.Bursts[j-1].End)
		}
	}
	const bins = lifecycle.IdleBins
	wmax := max(int(p.MaxWindow/time.Minute), 1)
	n := 0
	for _, gs := range gaps {
		var counts [bins + 1]int // the last: 4 h or more
		for _, g := range gs {
			counts[min(int(g/time.Minute), bins)]++
		}
		var from [bins + 2]int // gaps in bins i and after
		for i := bins; i >= 0; i-- {
			from[i] = from[i+1] + counts[i]
		}
		ok := func(b int) bool {
			for a := max(b-wmax+1, 1); a <= b; a++ {
				for w := b - a + 1; w <= wmax && a+w <= bins; w++ {
					in := from[a] - from[a+w]
					if in >= p.MinFar && float64(in) >= p.Precision*float64(from[a]) {
						return true
					}
				}
			}
			return false
		}
		for b := range bins {
			if counts[b] > 0 && time.Duration(b+1)*time.Minute > p.Floor && ok(b) {
				n += counts[b]
			}
		}
	}
	return n
}
