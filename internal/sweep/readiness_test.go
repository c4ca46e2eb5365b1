package sweep_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// lossyJobs is a job queue that loses the jobs it is sent while lose is
// set: with failSend the send fails (the writer died between its commit and
// the send, or SQS refused it), without it the send succeeds and the job is
// lost all the same (the queue gave up on the message). It keeps the jobs
// it did not lose.
type lossyJobs struct {
	mu             sync.Mutex
	lose, failSend bool
	jobs           []string
}

func (q *lossyJobs) Enqueue(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.lose && q.failSend:
		return errors.New("send failed")
	case q.lose:
		return nil
	}
	q.jobs = append(q.jobs, id)
	return nil
}

func (q *lossyJobs) setLose(lose bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lose = lose
}

func (q *lossyJobs) queued() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.jobs)
}

// mustRequeueAfter runs sw a second before grace has passed on clock, when
// it must queue nothing, and at grace, when it must queue id's job and no
// other.
func mustRequeueAfter(t *testing.T, sw *sweep.Sweeper, clock *lifecycle.ManualClock, grace time.Duration, jobs *lossyJobs, id string) {
	t.Helper()
	clock.Advance(grace - time.Second)
	if sum := MustRun(t, t.Context(), sw); sum.Requeued != 0 || len(jobs.queued()) != 0 {
		t.Fatalf("a tick before the grace re-queued: %+v, jobs %v", sum, jobs.queued())
	}
	clock.Advance(time.Second)
	if sum := MustRun(t, t.Context(), sw); sum.Requeued != 1 || !slices.Equal(jobs.queued(), []string{id}) {
		t.Fatalf("the tick after the grace: %+v, jobs %v; want the session's job queued", sum, jobs.queued())
	}
}

// TestSweepRequeuesALostReadinessJob: a create commits its session running
// with its app starting, and the job's send is lost. The sweep leaves the
// session alone for lifecycle.ReadinessRequeueAfter, then queues its job;
// the job brings the app up: ready, one server started. A session that is
// ready is not queued again.
func TestSweepRequeuesALostReadinessJob(t *testing.T) {
	clock := lifecycle.NewManualClock(t0)
	prov := fake.New(fake.Config{Clock: clock})
	store := memstore.New()
	jobs := &lossyJobs{lose: true, failSend: true}
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(),
		Log: quiet(), ReadinessJobs: jobs, ReadyHTTP: &http.Client{Transport: prov.Preview()},
		Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }})
	port, line, timeout := 3000, "npm run dev", int64(600)
	sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base",
		App: &lifecycle.AppInput{Port: &port, StartCommand: &line, ReadyTimeoutSeconds: &timeout}})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Readiness != lifecycle.ReadinessStarting || len(jobs.queued()) != 0 {
		t.Fatalf("after the create: readiness %q, jobs %v; want starting and no job (the send was lost)", sess.Readiness, jobs.queued())
	}
	jobs.setLose(false)
	sw := sweep.New(svc, sweep.Config{}, quiet())
	mustRequeueAfter(t, sw, clock, lifecycle.ReadinessRequeueAfter, jobs, sess.ID)
	if got := MustStateOf(t, store, sess.ID); got.State != lifecycle.StateRunning {
		t.Fatalf("the sweep moved the session to %s; want it left running", got.State)
	}

	out, err := svc.BringUp(t.Context(), sess.ID)
	if err != nil || out != lifecycle.BringUpReady {
		t.Fatalf("the re-queued job: %q, %v; want ready", out, err)
	}
	if n := prov.StartCalls(); n != 1 {
		t.Errorf("servers started = %d, want 1", n)
	}
	clock.Advance(lifecycle.ReadinessRequeueAfter)
	if sum := MustRun(t, t.Context(), sw); sum.Requeued != 0 || len(jobs.queued()) != 1 {
		t.Errorf("a ready session was queued again: %+v, jobs %v", sum, jobs.queued())
	}
}

// MustStateOf reads the stored session id.
func MustStateOf(tb testing.TB, store lifecycle.Store, id string) *lifecycle.Session {
	tb.Helper()
	sess, err := store.GetSession(tb.Context(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return sess
}

// TestAStartThatCannotSucceedEndsFailedOnce: an app whose start the
// provider refuses ends failed with the provider's reason, by the first
// job, within its ready timeout: refused for good (a cwd that does not
// exist) at once, refused transiently on every try at the ready timeout.
// The job is run as the local worker runs it (up to
// readiness.DefaultAttempts tries while it errs). After that the session
// leaves the lease index: the sweeps of the next minutes queue no job, and
// no provider call touches its sandbox.
func TestAStartThatCannotSucceedEndsFailedOnce(t *testing.T) {
	for _, c := range []struct {
		name, cwd  string
		fault      fake.Fault
		wantDetail string
	}{
		{"FolderMissing", fake.MissingFolder, fake.Fault{}, "chdir " + fake.MissingFolder},
		{"StartKeepsFailingTransiently", "", fake.Fault{Rate: 1}, "within 5 s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := lifecycle.NewManualClock(t0)
			prov := fake.New(fake.Config{Clock: clock})
			prov.SetFault(fake.OpStartCommand, c.fault)
			store := memstore.New()
			jobs := &lossyJobs{}
			svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock, Policy: lifecycle.DefaultPolicy(),
				Log: quiet(), ReadinessJobs: jobs, ReadyHTTP: &http.Client{Transport: prov.Preview()},
				Sleep: func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }})
			port, line, timeout := 3000, "npm run dev", int64(5)
			sess, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base",
				App: &lifecycle.AppInput{Port: &port, StartCommand: &line, Cwd: &c.cwd, ReadyTimeoutSeconds: &timeout}})
			if err != nil {
				t.Fatal(err)
			}

			var out lifecycle.BringUpOutcome
			for try := 0; try < 5; try++ { // the local worker's attempts (readiness.DefaultAttempts)
				if out, err = svc.BringUp(t.Context(), sess.ID); err == nil {
					break
				}
			}
			if err != nil || out != lifecycle.BringUpFailed {
				t.Fatalf("the job: %q, %v; want failed", out, err)
			}
			got := MustStateOf(t, store, sess.ID)
			if got.Readiness != lifecycle.ReadinessFailed || !strings.Contains(got.ReadinessDetail, "could not be started") ||
				!strings.Contains(got.ReadinessDetail, c.wantDetail) {
				t.Errorf("readiness %q, detail %q; want failed saying the start could not be made (%q)", got.Readiness, got.ReadinessDetail, c.wantDetail)
			}
			if got.Version != sess.Version+1 {
				t.Errorf("version %d after the job, want %d: one write, the failed one", got.Version, sess.Version+1)
			}
			if took, limit := clock.Now().Sub(sess.StateChangedAt), 5*time.Second+time.Millisecond; took > limit {
				t.Errorf("failed %v after the session became running, want within the 5 s ready timeout", took)
			}
			if n := prov.StartCalls(); n != 0 {
				t.Errorf("commands started = %d, want 0", n)
			}
			if n := prov.CallsFor(fake.OpStartCommand, sess.SandboxID); n > 5 {
				t.Errorf("starts asked for = %d in 5 s, want at most 5 (backing off from 1 s)", n)
			}

			calls := sandboxCalls(prov, sess.SandboxID)
			sw := sweep.New(svc, sweep.Config{}, quiet())
			for range 5 { // the sweeps of the next five minutes, past ReadinessRequeueAfter
				clock.Advance(lifecycle.ReadinessRequeueAfter)
				if sum := MustRun(t, t.Context(), sw); sum.Requeued != 0 {
					t.Errorf("a sweep %v after the create re-queued: %+v", clock.Now().Sub(t0), sum)
				}
			}
			if q := jobs.queued(); !slices.Equal(q, []string{sess.ID}) {
				t.Errorf("jobs queued = %v, want only the create's", q)
			}
			if after := sandboxCalls(prov, sess.SandboxID); after != calls {
				t.Errorf("provider calls on the sandbox went from %d to %d after it failed, want none", calls, after)
			}
			if got := MustStateOf(t, store, sess.ID); got.State != lifecycle.StateRunning || got.Readiness != lifecycle.ReadinessFailed {
				t.Errorf("after the sweeps: %s, readiness %q; want running and failed", got.State, got.Readiness)
			}
		})
	}
}

// sandboxCalls counts the fake's calls about one sandbox, every operation
// (the command API's included) and the preview's requests.
func sandboxCalls(prov *fake.Provider, sandboxID string) int {
	n := prov.PreviewHits()
	for _, op := range append(slices.Clone(fake.Ops), fake.OpStartCommand, fake.OpCommandStatus) {
		n += prov.CallsFor(op, sandboxID)
	}
	return n
}
