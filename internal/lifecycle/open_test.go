package lifecycle_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestConcurrentOpensResumeOnce: twenty opens of one paused session's link
// at once start exactly one resume (one paused → resuming and one
// resuming → running event, one provider resume): the paused → resuming write is conditional, so the others join
// the resume under way, and every one of them ends at the running session.
func TestConcurrentOpensResumeOnce(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.Snapshot(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	const opens = 20
	returned := make(chan struct{}, opens)
	release := make(chan struct{})
	var mu sync.Mutex
	resumes := 0
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpResume {
			return
		}
		mu.Lock()
		resumes++
		mu.Unlock()
		<-release // held until every other open has answered
	})
	var wg sync.WaitGroup
	results := make([]*lifecycle.Session, opens)
	for i := range opens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.svc.Open(context.Background(), acct, sess.ID)
			returned <- struct{}{}
			if err != nil {
				t.Errorf("open %d: %v", i, err)
			}
		}()
	}
	for range opens - 1 {
		<-returned
	}
	close(release)
	wg.Wait()
	w.fake.SetOnCall(nil)
	// Each open then follows the session (a browser over the channel, any
	// other client by holding): all of them end at the preview.
	for i := range opens {
		got, err := w.svc.WaitOpen(t.Context(), acct, sess.ID, 25*time.Second)
		if err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
		results[i] = got
	}

	if resumes != 1 {
		t.Errorf("provider resumes = %d, want 1", resumes)
	}
	resuming, resumed := 0, 0
	for _, ev := range w.log.For(sess.ID) {
		switch {
		case ev.From == lifecycle.StatePaused && ev.To == lifecycle.StateResuming:
			resuming++
		case ev.From == lifecycle.StateResuming && ev.To == lifecycle.StateRunning:
			resumed++
		}
	}
	if resuming != 1 || resumed != 1 {
		t.Errorf("events paused → resuming %d, resuming → running %d; want 1 each", resuming, resumed)
	}
	for i, got := range results {
		if got == nil || !got.Opened() {
			t.Errorf("open %d ended at %+v, want a running session with a preview", i, got)
		}
	}
	w.MustHistory(t, sess.ID)
}

// TestOpenGoneSession: the link of a killed session answers gone.
func TestOpenGoneSession(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.Delete(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); !lifecycle.IsCode(err, lifecycle.CodeGone) {
		t.Errorf("open of a killed session: %v, want gone", err)
	}
}

// TestOpenRunningCountsAsActivity: opening a running session's link moves
// its idle deadline like a heartbeat.
func TestOpenRunningCountsAsActivity(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	before := sess.IdleDeadline
	w.clock.Advance(5 * time.Minute)
	got, err := w.svc.Open(t.Context(), acct, sess.ID)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if !got.IdleDeadline.After(before) {
		t.Errorf("idle deadline %v after an open, want later than %v", got.IdleDeadline, before)
	}
}
