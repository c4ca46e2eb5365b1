package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// The Service's rules that a code review found broken, one test per
// finding, each built so that the code before its fix fails it (the comment
// marked "Old code:" says what that code did). They need no database: the
// store is internal/lifecycle/memstore behind a reliability.RecordingStore, which
// refuses chosen writes and records every committed one so each test can
// check the session's history. The findings that depend on DynamoDB itself
// (a lost write answer) stay in internal/reliability.

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

// sandboxGone is sandboxState's answer for a sandbox the provider no
// longer has.
const sandboxGone lifecycle.SandboxState = "gone"

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

// Finding 1: an Idempotency-Key claimed by a create whose CreateSession
// failed blocked every retry with that key for 24 h.
func TestIdempotencyKeyReleasedAfterStoreFailure(t *testing.T) {
	w := MustWorld(t)
	var once sync.Once
	w.rec.SetRefuse(func(_ *lifecycle.Session, from lifecycle.State) error {
		var err error
		if from == "" {
			once.Do(func() { err = errors.New("ProvisionedThroughputExceededException (injected)") })
		}
		return err
	})
	in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-store"}
	if _, _, err := w.svc.Create(t.Context(), acct, in); err == nil {
		t.Fatal("first create: want the injected store error")
	}
	// Old code: 409 "still in progress" for every retry until the claim expired.
	sess, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("retry with the same key: %v (code %s)", err, lifecycle.ErrorCode(err))
	}
	if replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("retry: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
	}
	again, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !replayed || again.ID != sess.ID {
		t.Errorf("replay: replayed=%v id=%s, want a replay of %s", replayed, again.ID, sess.ID)
	}
	if got, want := w.fake.Calls(fake.OpCreate), 1; got != want {
		t.Errorf("provider creates = %d, want %d", got, want)
	}
}

// Finding 2: retrying with the same Idempotency-Key a create that answered
// 503 replayed the failed session instead of trying again.
func TestIdempotencyKeyReleasedAfterProviderFailure(t *testing.T) {
	w := MustWorld(t)
	w.fake.FailNext(fake.OpCreate, nil)
	in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-provider"}
	_, _, err := w.svc.Create(t.Context(), acct, in)
	if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
		t.Fatalf("first create: code %s (%v), want %s", got, err, want)
	}
	// Old code: 200 with replayed=true and the failed session, no second provider create.
	sess, replayed, err := w.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("retry: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
	}
	if got, want := w.fake.Calls(fake.OpCreate), 2; got != want {
		t.Errorf("provider creates = %d, want %d", got, want)
	}
	running := 0
	page, err := w.store.ListSessions(t.Context(), acct, "", lifecycle.MaxListLimit)
	if err != nil {
		t.Fatalf("list sessions: %v", err)
	}
	for _, s := range page.Sessions {
		if s.State == lifecycle.StateRunning {
			running++
		}
	}
	if got, want := running, 1; got != want {
		t.Errorf("running sessions = %d, want %d", got, want)
	}
	if got, want := len(w.fake.Sandboxes()), 1; got != want {
		t.Errorf("provider sandboxes = %d, want %d", got, want)
	}
}

// cancelAfterCreate cancels the request's context right after the provider
// made the sandbox, as API Gateway's 29 s timeout or a client disconnect
// would.
type cancelAfterCreate struct {
	lifecycle.Provider
	cancel context.CancelFunc
}

func (p *cancelAfterCreate) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	sb, err := p.Provider.Create(ctx, req)
	p.cancel()
	return sb, err
}

// Finding 3: the write recording a successful provider create ran on the
// request's context.
func TestCreateRecordsOutcomeAfterCallerCancels(t *testing.T) {
	w := MustWorld(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w.rewire(t, func(c *lifecycle.Config) { c.Provider = &cancelAfterCreate{Provider: c.Provider, cancel: cancel} })
	// Old code: the running write failed with "context canceled", Create killed the
	// sandbox and answered 500.
	sess, _, err := w.svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base"})
	if ctx.Err() == nil {
		t.Fatal("the request context was not cancelled: the test did not test anything")
	}
	if err != nil {
		t.Fatalf("create: %v (code %s)", err, lifecycle.ErrorCode(err))
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StateRunning || got.SandboxID == "" {
		t.Errorf("stored %s with sandbox %q, want running with its sandbox", got.State, got.SandboxID)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
		t.Errorf("provider sandbox %s, want running", st)
	}
	w.MustHistory(t, sess.ID)
}

// Finding 5: a pause that failed after the provider paused was rolled back
// to running.
func TestFailedPauseBelievesProviderState(t *testing.T) {
	t.Run("AnswerLost", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetFault(fake.OpPause, fake.Fault{Rate: 1, Applied: true})
		// Old code: 503 and the table rolled back to running while the sandbox was paused.
		_, err := w.svc.Snapshot(t.Context(), acct, sess.ID)
		w.fake.ClearFaults()
		if err != nil {
			t.Errorf("snapshot: %v, want success (the provider paused)", err)
		}
		w.wantStates(t, sess, lifecycle.StatePaused, lifecycle.SandboxPaused)
		w.MustHistory(t, sess.ID)
	})

	t.Run("PausedMeanwhile", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetOnCall(func(op fake.Op, id string) {
			if op == fake.OpPause {
				w.fake.SetState(id, lifecycle.SandboxPaused) // it paused itself (timeout) as we asked
				w.fake.FailNext(fake.OpPause, nil)           // and our call timed out
			}
		})
		// Old code: rolled back to running (503) though the sandbox was paused.
		_, err := w.svc.Snapshot(t.Context(), acct, sess.ID)
		w.fake.SetOnCall(nil)
		if err != nil {
			t.Errorf("snapshot: %v, want success (the sandbox is paused)", err)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePaused {
			t.Errorf("table %s, want paused", got)
		}
	})

	t.Run("StillRunning", func(t *testing.T) {
		// Old code did this too; this guards the fix against believing every failure.
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpPause, nil)
		_, err := w.svc.Snapshot(t.Context(), acct, sess.ID)
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
			t.Errorf("snapshot: code %s (%v), want %s", got, err, want)
		}
		if got, want := errorType(err), lifecycle.TypeSandboxUnreachable; got != want {
			t.Errorf("snapshot: error_type %q, want %q", got, want)
		}
		// The table rolled back.
		w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
		w.MustHistory(t, sess.ID)
	})

	t.Run("OutcomeUnknown", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.SetFault(fake.OpPause, fake.Fault{Rate: 1, Applied: true})
		w.fake.SetFault(fake.OpGet, fake.Fault{Rate: 1})
		// Old code: rolled back to running at once, never asking the provider.
		_, err := w.svc.Snapshot(t.Context(), acct, sess.ID)
		w.fake.ClearFaults()
		if got, want := lifecycle.ErrorCode(err), lifecycle.CodeUnavailable; got != want {
			t.Errorf("snapshot: code %s (%v), want %s", got, err, want)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePausing {
			t.Fatalf("table %s, want pausing until the lease runs out", got)
		}
		w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute)
		sum := MustRun(t, w.sweeper)
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StatePaused {
			t.Errorf("after the sweep: table %s, want paused (the provider paused)", got)
		}
		if sum.Reconciled != 1 {
			t.Errorf("sweep reconciled %d sessions, want 1 (%+v)", sum.Reconciled, sum)
		}
		w.MustHistory(t, sess.ID)
	})
}

// Finding 6: one spurious "gone" (E2B reports 1-3 % of sandboxes not found
// early) expired the session, and the reaper then killed its live sandbox.
func TestGoneConfirmedBeforeExpiry(t *testing.T) {
	reconnect := func(t *testing.T, w *world, id string) lifecycle.ReconnectResult {
		t.Helper()
		res, err := w.svc.Reconnect(t.Context(), acct, id)
		if err != nil {
			t.Fatalf("reconnect: %v", err)
		}
		return res
	}

	t.Run("ProbeGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		// Old code: status expired and the session's sandbox cleared for good.
		res := reconnect(t, w, sess.ID)
		if got, want := res.Status, lifecycle.ReconnectUnreachable; got != want {
			t.Errorf("reconnect status %s, want %s", got, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
	})

	t.Run("ProbeAndGetGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		// Old code: expired on the first gone.
		res := reconnect(t, w, sess.ID)
		if res.Status == lifecycle.ReconnectExpired {
			t.Errorf("reconnect status %s after gone answers that were not consecutive reads", res.Status)
		}
		if got := w.mustGet(t, sess.ID).State; got != lifecycle.StateRunning {
			t.Errorf("stored %s, want running", got)
		}
	})

	t.Run("PauseGoneOnce", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.FailNext(fake.OpPause, lifecycle.ErrSandboxGone)
		// Old code: 503 sandbox_expired and the session expired.
		_, err := w.svc.Snapshot(t.Context(), acct, sess.ID)
		if got, want := errorType(err), lifecycle.TypeSandboxUnreachable; got != want {
			t.Errorf("snapshot: error_type %q (%v), want %q", got, err, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("GoneTwice", func(t *testing.T) {
		// Old code did this too; this guards the fix against never expiring.
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		w.fake.Forget(sess.SandboxID)
		res := reconnect(t, w, sess.ID)
		if got, want := res.Status, lifecycle.ReconnectExpired; got != want {
			t.Errorf("reconnect status %s, want %s", got, want)
		}
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.SandboxID != "" {
			t.Errorf("stored %s with sandbox %q, want expired without one", got.State, got.SandboxID)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("ExpiredNotReaped", func(t *testing.T) {
		w := MustWorld(t)
		sess := w.mustIdle(t, 600)
		// Three wrong "gone" answers in a row: the session is expired though its
		// sandbox lives on.
		w.fake.FailNext(fake.OpProbe, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		w.fake.FailNext(fake.OpGet, lifecycle.ErrSandboxGone)
		if res := reconnect(t, w, sess.ID); res.Status != lifecycle.ReconnectExpired {
			t.Fatalf("reconnect status %s, want expired (setup)", res.Status)
		}
		w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute) // old enough to be reaped
		sb, ok := w.fake.Sandbox(sess.SandboxID)
		if !ok {
			t.Fatal("sandbox vanished (setup)")
		}
		// Old code: ReapOrphan killed it (its session is final), losing the user's files.
		killed, err := w.svc.ReapOrphan(t.Context(), sb)
		if err != nil || killed {
			t.Errorf("reap: killed=%v err=%v, want it left alone", killed, err)
		}
		sum := MustRun(t, w.sweeper)
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
			t.Errorf("after the sweep: provider %s, want running (left for an operator)", st)
		}
		if sum.OrphansKilled != 0 {
			t.Errorf("sweep killed %d orphans, want 0 (%+v)", sum.OrphansKilled, sum)
		}
	})
}

// MustDormantWorld returns a world holding one session paused 48 h ago and a
// sweeper that retires sessions paused longer than 24 h.
func MustDormantWorld(t *testing.T) (*world, *lifecycle.Session, *sweep.Sweeper) {
	t.Helper()
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.Snapshot(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	w.clock.Advance(48 * time.Hour)
	sw := sweep.New(w.svc, sweep.Config{Rate: rate.Inf, Concurrency: 4, ReconcileSample: 10_000, DormancyAge: 24 * time.Hour}, quiet)
	return w, sess, sw
}

// Finding 7: retiring a dormant session read it, killed its sandbox, then
// wrote: a resume in between was left running without a sandbox.
func TestDormantSessionExpiredBeforeKill(t *testing.T) {
	t.Run("ResumeBetweenReadAndWrite", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		var once sync.Once
		w.rec.SetRefuse(func(next *lifecycle.Session, from lifecycle.State) error {
			if from != lifecycle.StatePaused || next.State != lifecycle.StateExpired {
				return nil // the resume's own writes come through here too
			}
			once.Do(func() {
				if _, err := w.svc.Resume(context.Background(), acct, sess.ID); err != nil {
					t.Errorf("resume racing the sweep: %v", err)
				}
			})
			return nil
		})
		// Old code: the sandbox was killed before this write; the resume found it gone.
		sum := MustRun(t, sw)
		w.rec.SetRefuse(nil)
		// The resume won.
		w.wantStates(t, sess, lifecycle.StateRunning, lifecycle.SandboxRunning)
		if sum.DormantKilled != 0 {
			t.Errorf("sweep retired %d sessions, want 0 (%+v)", sum.DormantKilled, sum)
		}
	})

	t.Run("ResumeDuringKill", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		var once sync.Once
		w.fake.SetOnCall(func(op fake.Op, _ string) {
			if op != fake.OpKill {
				return
			}
			once.Do(func() {
				if _, err := w.svc.Resume(context.Background(), acct, sess.ID); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Errorf("resume of a retired session: %v, want conflict", err)
				}
			})
		})
		// Old code: the resume landed before the write: a running session whose sandbox was killed.
		MustRun(t, sw)
		w.fake.SetOnCall(nil)
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.Reason != lifecycle.ReasonDormant {
			t.Errorf("table %s (%s), want expired (dormant)", got.State, got.Reason)
		}
		if st := w.sandboxState(sess.SandboxID); st != "gone" {
			t.Errorf("provider %s, want gone", st)
		}
	})

	t.Run("KillFails", func(t *testing.T) {
		w, sess, sw := MustDormantWorld(t)
		w.fake.FailNext(fake.OpKill, nil)
		// Old code: a failed kill left the session paused and counted nothing as dormant;
		// there was no expired (dormant) session for phase 3 to reap the sandbox of.
		sum := MustRun(t, sw)
		got := w.mustGet(t, sess.ID)
		if got.State != lifecycle.StateExpired || got.Reason != lifecycle.ReasonDormant {
			t.Fatalf("after the first run: table %s (%s), want expired (dormant)", got.State, got.Reason)
		}
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxPaused {
			t.Fatalf("after the first run: provider %s, want paused (the kill failed)", st)
		}
		if sum.ReconcileFailed != 1 {
			t.Errorf("first run: reconcile_failed %d, want 1 (%+v)", sum.ReconcileFailed, sum)
		}
		sum = MustRun(t, sw)
		if st := w.sandboxState(sess.SandboxID); st != "gone" {
			t.Errorf("after the second run: provider %s, want gone (reaped by phase 3)", st)
		}
		if sum.OrphansKilled != 1 {
			t.Errorf("second run killed %d orphans, want 1 (%+v)", sum.OrphansKilled, sum)
		}
	})
}

// Finding 8: the sweep listed and reaped every sandbox of the provider
// account, those of other deployments sharing it included.
func TestSweepReapsOnlyItsDeployment(t *testing.T) {
	w := MustWorld(t)
	w.rewire(t, func(c *lifecycle.Config) { c.Deployment = "a" })
	sess := w.mustIdle(t, 600)
	sb, ok := w.fake.Sandbox(sess.SandboxID)
	if !ok {
		t.Fatal("sandbox missing")
	}
	if got, want := sb.Metadata[lifecycle.MetadataDeployment], "a"; got != want {
		t.Errorf("sandbox metadata %s = %q, want %q", lifecycle.MetadataDeployment, got, want)
	}
	// An orphan of deployment a: tagged with a session its table never recorded.
	orphan, err := w.fake.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour, AutoPause: true,
		Metadata: map[string]string{lifecycle.MetadataSessionID: "ses_never_written", lifecycle.MetadataDeployment: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(w.svc.Policy().LeaseDuration + time.Minute) // old enough to be reaped

	svcB := lifecycle.NewService(lifecycle.Config{Store: w.rec, Provider: w.fake, Clock: w.clock, Policy: lifecycle.DefaultPolicy(), Log: quiet, Deployment: "b"})
	// Old code: deployment b's sweep listed a's sandboxes and killed a's orphan.
	sumB := MustRun(t, MustSweeper(t, svcB))
	if sumB.Listed != 0 || sumB.OrphansKilled != 0 {
		t.Errorf("deployment b's sweep listed %d and killed %d, want 0 and 0 (%+v)", sumB.Listed, sumB.OrphansKilled, sumB)
	}
	if killed, err := svcB.ReapOrphan(t.Context(), orphan); err != nil || killed {
		t.Errorf("deployment b reaping a's orphan: killed=%v err=%v, want left alone", killed, err)
	}
	if st := w.sandboxState(orphan.ID); st != lifecycle.SandboxRunning {
		t.Fatalf("a's orphan after b's sweep: %s, want running", st)
	}
	// Deployment a's own sweep reaps it: the orphan was reapable all along.
	sumA := MustRun(t, w.sweeper)
	if st := w.sandboxState(orphan.ID); st != "gone" {
		t.Errorf("a's orphan after a's sweep: %s, want gone (%+v)", st, sumA)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
		t.Errorf("a's session sandbox: %s, want running", st)
	}
}

// Finding 9: a resume whose provider call succeeded after the session was
// deleted left a running sandbox behind a killed session.
func TestResumeRacingDeleteKillsSandbox(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.Snapshot(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	var once sync.Once
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpResume {
			return
		}
		once.Do(func() {
			// The delete's kill is answered as done, yet the sandbox survives it (E2B).
			w.fake.FailNext(fake.OpKill, lifecycle.ErrSandboxGone)
			if _, err := w.svc.Delete(context.Background(), acct, sess.ID); err != nil {
				t.Errorf("delete racing the resume: %v", err)
			}
		})
	})
	// Old code: the resume's write lost to the delete and the resumed sandbox ran on.
	_, err := w.svc.Resume(t.Context(), acct, sess.ID)
	w.fake.SetOnCall(nil)
	if !lifecycle.IsCode(err, lifecycle.CodeConflict) {
		t.Errorf("resume: %v, want conflict (deleted meanwhile)", err)
	}
	// Gone: otherwise a running sandbox sits behind a killed session.
	w.wantStates(t, sess, lifecycle.StateKilled, sandboxGone)
	w.MustHistory(t, sess.ID)
}

// Finding 10: a heartbeat whose timeout refresh found the sandbox paused
// (E2B answers 404 for a paused sandbox) treated it as gone.
func TestHeartbeatOnSelfPausedSandbox(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustIdle(t, 600)
	// Past half the idle timeout the provider's timeout must be pushed out.
	now := w.clock.Advance(6 * time.Minute)
	probe := w.mustGet(t, sess.ID)
	probe.RecordActivity(now, 0)
	if !w.svc.Policy().NeedsProviderRefresh(probe, now) {
		t.Fatal("setup: the heartbeat would not refresh the provider timeout")
	}
	w.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused)
	// The fake's SetTimeout on a paused sandbox succeeds; E2B answers 404.
	w.fake.FailNext(fake.OpSetTimeout, lifecycle.ErrSandboxGone)
	// Old code: the refresh failure was only logged; the heartbeat answered 204 and the
	// table stayed running behind a paused sandbox.
	_, err := w.svc.Heartbeat(t.Context(), acct, sess.ID)
	if got, want := lifecycle.ErrorCode(err), lifecycle.CodeConflict; got != want {
		t.Errorf("heartbeat: code %s (%v), want %s", got, err, want)
	}
	if got, want := errorType(err), lifecycle.TypeSandboxPaused; got != want {
		t.Errorf("heartbeat: error_type %q, want %q", got, want)
	}
	if got, want := w.fake.Calls(fake.OpSetTimeout), 1; got != want {
		t.Errorf("set_timeout calls = %d, want %d", got, want)
	}
	got := w.mustGet(t, sess.ID)
	if got.State != lifecycle.StatePaused || got.SandboxID != sess.SandboxID {
		t.Errorf("stored %s with sandbox %q, want paused with %q", got.State, got.SandboxID, sess.SandboxID)
	}
	if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxPaused {
		t.Errorf("provider %s, want paused", st)
	}
	w.MustHistory(t, sess.ID)
}
