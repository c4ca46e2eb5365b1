package lifecycle_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// The helpers of the lifecycle tests, and the world of the Service's rule
// tests (claim_test.go, create_test.go, pause_test.go, resume_test.go,
// sessions_test.go, reconcile_test.go). They
// need no database: the store is internal/lifecycle/memstore behind a
// reliability.RecordingStore, which refuses chosen writes and records every
// committed one so each test can check the session's history. The rules that
// depend on DynamoDB itself (a lost write answer) are tested in
// internal/reliability.

// t0 is the tests' start time, where each manual clock begins.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// quiet discards the logs of the service and the sweep.
var quiet = slog.New(slog.DiscardHandler)

// world is one rule test's Sandman: env (memstore, the fake, a manual
// clock) with a RecordingStore between the service and memstore, the events
// every committed transition published (outbox.InPath), and a sweep over
// the service.
type world struct {
	*env
	rec     *reliability.RecordingStore
	log     *reliability.EventLog
	sweeper *sweep.Sweeper
}

// MustWorld builds a world whose service never waits between retries.
func MustWorld(t *testing.T) *world {
	t.Helper()
	w := &world{env: newEnv(t), log: &reliability.EventLog{}}
	w.rec = reliability.NewRecordingStore(w.store)
	w.rewire(t, func(c *lifecycle.Config) { c.Store = outbox.InPath(w.rec, w.log) })
	return w
}

// rewire rebuilds w's service from its configuration as edit changes it,
// and the sweep over the new service.
func (w *world) rewire(tb testing.TB, edit func(*lifecycle.Config)) {
	tb.Helper()
	cfg := w.svc.Config()
	edit(&cfg)
	w.svc = lifecycle.NewService(cfg)
	w.sweeper = MustSweeper(tb, w.svc)
}

// MustSweeper returns a sweeper on svc without a rate limit and with
// provider-list reconciling over every sandbox.
func MustSweeper(tb testing.TB, svc *lifecycle.Service) *sweep.Sweeper {
	tb.Helper()
	return sweep.New(svc, sweep.Config{Rate: rate.Inf, Concurrency: 4, ReconcileSample: 10_000}, quiet)
}

// MustRun runs sw once and fails the test if the run could not start.
func MustRun(tb testing.TB, sw *sweep.Sweeper) sweep.Summary {
	tb.Helper()
	sum, err := sw.Run(tb.Context())
	if err != nil {
		tb.Fatalf("sweep: %v", err)
	}
	return sum
}

// mustIdle creates a running session with an idle timeout of idleSeconds.
func (w *world) mustIdle(t *testing.T, idleSeconds int64) *lifecycle.Session {
	t.Helper()
	return w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: idleSeconds})
}

// wantStates fails the test unless sess is in state table in the store and
// its sandbox in state provider at the provider.
func (w *world) wantStates(t *testing.T, sess *lifecycle.Session, table lifecycle.State, provider lifecycle.SandboxState) {
	t.Helper()
	if got := w.mustGet(t, sess.ID).State; got != table {
		t.Errorf("table %s, want %s", got, table)
	}
	if got := w.sandboxState(sess.SandboxID); got != provider {
		t.Errorf("provider %s, want %s", got, provider)
	}
}

// MustHistory fails the test unless a session's recorded writes form an
// unbroken version chain and its events match its transitions one to one.
func (w *world) MustHistory(tb testing.TB, id string) {
	tb.Helper()
	for _, p := range reliability.CheckSession(w.rec.Writes(id), w.log.For(id)) {
		tb.Errorf("session %s %s", id, p)
	}
}

// errorType returns the error_type err would carry in the API's envelope,
// or "" when err is not a *lifecycle.Error.
func errorType(err error) string {
	var e *lifecycle.Error
	if errors.As(err, &e) {
		return e.ErrorType()
	}
	return ""
}

// sandboxGone is sandboxState's answer for a sandbox the provider no
// longer has.
const sandboxGone lifecycle.SandboxState = "gone"
