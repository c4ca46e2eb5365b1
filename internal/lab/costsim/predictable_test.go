package costsim_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/costsim"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// One user back five times after 30 min, once after 3 min and once after
// a night: only the five fall in a window holding 80 % of the user's gaps
// from its head on; another user's two 30 min gaps are too few for one.
func TestPredictableReturns(t *testing.T) {
	session := func(user string, gaps ...time.Duration) costsim.SessionTrace {
		var bursts []costsim.Burst
		at := time.Duration(0)
		for _, g := range append([]time.Duration{0}, gaps...) {
			at += g
			bursts = append(bursts, costsim.Burst{Start: at, End: at + 2*time.Minute})
			at += 2 * time.Minute
		}
		st := costsim.NewSessionTrace(30*time.Second, bursts...)
		st.User, st.Account = user, "acme"
		return st
	}
	half := 30*time.Minute + 20*time.Second
	tr := costsim.Trace{Sessions: []costsim.SessionTrace{
		session("ada", half, half, half, 3*time.Minute),
		session("ada", half, half, 15*time.Hour),
		session("bob", half, half),
	}}
	if got, want := costsim.PredictableReturns(tr, lifecycle.DefaultLearnedPolicy()), 5; got != want {
		t.Errorf("predictable returns = %d, want %d", got, want)
	}
}
