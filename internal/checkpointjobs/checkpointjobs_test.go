package checkpointjobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/checkpointjobs"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// TestWorkerRunsAndRetries: a job queued before Start runs once started,
// and a failing job runs again until it succeeds.
func TestWorkerRunsAndRetries(t *testing.T) {
	w := checkpointjobs.New(readiness.Config{Backoff: time.Millisecond})
	job := lifecycle.CheckpointJob{Op: lifecycle.CheckpointOpSave, SessionID: "ses_1", CheckpointID: "chk_1"}
	if err := w.EnqueueCheckpoint(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs []lifecycle.CheckpointJob
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w.Start(ctx, func(_ context.Context, got lifecycle.CheckpointJob) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, got)
		if len(runs) < 3 {
			return errors.New("transient")
		}
		close(done)
		return nil
	})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not succeed")
	}
	w.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, r := range runs {
		if r != job {
			t.Errorf("ran %+v, want %+v", r, job)
		}
	}
	if err := w.EnqueueCheckpoint(t.Context(), job); !lifecycle.IsCode(err, lifecycle.CodeUnavailable) {
		t.Errorf("enqueue after Close = %v, want unavailable", err)
	}
}
