package localstack

import (
	"context"
	"slices"
	"testing"
)

// TestQueuedHeartbeatsSettleToLast: a heartbeat queued right behind another
// replaces it, so a burst of visibility toggles costs one handled message;
// other messages keep their place and order.
func TestQueuedHeartbeatsSettleToLast(t *testing.T) {
	q := &msgQueue{ready: make(chan struct{}, 1)}
	hb := func(v string) string { return `{"action":"heartbeat","visible":` + v + `}` }
	for i := range 2000 {
		q.push(hb([]string{"true", "false"}[i%2]))
	}
	q.push(`{"action":"hello"}`)
	q.push(hb("false"))
	q.push(hb("true"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var got []string
	for {
		q.mu.Lock()
		n := len(q.items)
		q.mu.Unlock()
		if n == 0 {
			break
		}
		body, _ := q.next(ctx)
		got = append(got, body)
	}
	if want := []string{hb("false"), `{"action":"hello"}`, hb("true")}; !slices.Equal(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
}
