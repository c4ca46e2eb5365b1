package lifecycle_test

import (
	"context"
	"slices"
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
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
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

// goJobs is a lifecycle.ReadinessJobs running each job (Service.BringUp)
// in a goroutine, as the local worker does. With refuse set Enqueue fails;
// with drop set it takes the job and never runs it (a crash between the
// write and the queue). With run set it runs that instead of BringUp.
type goJobs struct {
	svc          *lifecycle.Service
	run          func(ctx context.Context, id string) (lifecycle.BringUpOutcome, error)
	refuse, drop bool
	wg           sync.WaitGroup
	mu           sync.Mutex
	queued, ran  int
	lastOutcome  lifecycle.BringUpOutcome
}

func (j *goJobs) Enqueue(_ context.Context, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refuse {
		return lifecycle.Errorf(lifecycle.CodeUnavailable, "the queue is down")
	}
	j.queued++
	if j.drop {
		return nil
	}
	run := j.run
	if run == nil {
		run = j.svc.BringUp
	}
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		out, err := run(context.Background(), id)
		j.mu.Lock()
		defer j.mu.Unlock()
		j.ran++
		if err == nil {
			j.lastOutcome = out
		}
	}()
	return nil
}

// withJobs rewires w's service with jobs as its ReadinessJobs.
func (w *world) withJobs(t *testing.T, jobs *goJobs) {
	t.Helper()
	w.rewire(t, func(c *lifecycle.Config) { c.ReadinessJobs = jobs })
	jobs.svc = w.svc
}

// holdResumes makes the fake's resume wait until the returned func is
// called (also at cleanup) and counts the provider's resumes.
func (w *world) holdResumes(t *testing.T) (release func(), resumes func() int) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	n := 0
	w.fake.SetOnCall(func(op fake.Op, _ string) {
		if op != fake.OpResume {
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		<-ch
	})
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// resumeEvents counts id's paused → resuming and resuming → running events.
func (w *world) resumeEvents(id string) (resuming, resumed int) {
	for _, ev := range w.log.For(id) {
		switch {
		case ev.From == lifecycle.StatePaused && ev.To == lifecycle.StateResuming:
			resuming++
		case ev.From == lifecycle.StateResuming && ev.To == lifecycle.StateRunning:
			resumed++
		}
	}
	return resuming, resumed
}

// TestConcurrentOpensAnswerBeforeTheQueuedResume: with a job queue, twenty
// concurrent opens of a paused session all answer while the provider's
// resume is still under way (the winner hands it to a job), find the
// session resuming, and the job's one resume takes it to running: one
// provider resume, one event each way.
func TestConcurrentOpensAnswerBeforeTheQueuedResume(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{}
	w.withJobs(t, jobs)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	release, resumes := w.holdResumes(t)
	const opens = 20
	got := make([]*lifecycle.Session, opens)
	var wg sync.WaitGroup
	for i := range opens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := w.svc.Open(context.Background(), acct, sess.ID)
			if err != nil {
				t.Errorf("open %d: %v", i, err)
			}
			got[i] = s
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the opens waited for the provider's resume")
	}
	for i, s := range got {
		if s == nil || s.State != lifecycle.StateResuming {
			t.Errorf("open %d answered %+v, want the session resuming", i, s)
		}
	}
	release()
	jobs.wg.Wait()
	w.fake.SetOnCall(nil)

	now := w.mustGet(t, sess.ID)
	if !now.Opened() || now.ResumeQueued {
		t.Errorf("after the job: state %s, opened %v, resume_queued %v; want running, opened, not queued", now.State, now.Opened(), now.ResumeQueued)
	}
	if n := resumes(); n != 1 {
		t.Errorf("provider resumes = %d, want 1", n)
	}
	if jobs.queued != 1 || jobs.lastOutcome != lifecycle.BringUpResumed {
		t.Errorf("jobs queued %d, last outcome %q; want 1, resumed", jobs.queued, jobs.lastOutcome)
	}
	if resuming, resumed := w.resumeEvents(sess.ID); resuming != 1 || resumed != 1 {
		t.Errorf("events paused → resuming %d, resuming → running %d; want 1 each", resuming, resumed)
	}
	w.MustHistory(t, sess.ID)
}

// TestQueuedResumeJobFinishesOnlyItsOwn: a job that finds the session
// resuming by a request's own resume (not handed to a job) does nothing,
// and a job run again after its resume finished does nothing either: the
// provider resumes once each time.
func TestQueuedResumeJobFinishesOnlyItsOwn(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{}
	w.withJobs(t, jobs)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	release, resumes := w.holdResumes(t)
	resumed := make(chan error, 1)
	go func() {
		_, err := w.svc.Resume(context.Background(), acct, sess.ID)
		resumed <- err
	}()
	for w.mustGet(t, sess.ID).State != lifecycle.StateResuming {
		time.Sleep(time.Millisecond) // the resume's first write, real time
	}
	if out, err := w.svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpNothing {
		t.Errorf("job during a request's resume: %q, %v; want nothing", out, err)
	}
	release()
	if err := <-resumed; err != nil {
		t.Fatalf("resume: %v", err)
	}
	if out, err := w.svc.BringUp(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpNothing {
		t.Errorf("job run again on the running session: %q, %v; want nothing", out, err)
	}
	if n := resumes(); n != 1 {
		t.Errorf("provider resumes = %d, want 1", n)
	}
	w.MustHistory(t, sess.ID)
}

// TestOpenResumesItselfWhenTheJobCannotBeQueued: the queue refusing the
// job, the open finishes the resume in the request.
func TestOpenResumesItselfWhenTheJobCannotBeQueued(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{refuse: true}
	w.withJobs(t, jobs)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	got, err := w.svc.Open(t.Context(), acct, sess.ID)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if !got.Opened() || got.ResumeQueued {
		t.Errorf("open answered state %s, resume_queued %v; want running, not queued", got.State, got.ResumeQueued)
	}
	if resuming, resumed := w.resumeEvents(sess.ID); resuming != 1 || resumed != 1 {
		t.Errorf("events paused → resuming %d, resuming → running %d; want 1 each", resuming, resumed)
	}
	w.MustHistory(t, sess.ID)
}

// TestQueuedResumeLostToACrashIsReconciled: a job that never runs leaves
// the session resuming, marked queued, until its lease ends; the sweep then
// settles it from the provider (still paused), and the next open resumes
// it.
func TestQueuedResumeLostToACrashIsReconciled(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{drop: true}
	w.withJobs(t, jobs)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("open: %v", err)
	}
	stuck := w.mustGet(t, sess.ID)
	if stuck.State != lifecycle.StateResuming || !stuck.ResumeQueued {
		t.Fatalf("after an open whose job is lost: state %s, resume_queued %v; want resuming, queued", stuck.State, stuck.ResumeQueued)
	}
	w.clock.Advance(w.svc.Config().Policy.LeaseDuration + time.Second)
	MustRun(t, w.sweeper)
	settled := w.mustGet(t, sess.ID)
	if settled.State != lifecycle.StatePaused || settled.ResumeQueued {
		t.Fatalf("after the sweep: state %s, resume_queued %v; want paused, not queued", settled.State, settled.ResumeQueued)
	}
	jobs.mu.Lock()
	jobs.drop = false
	jobs.mu.Unlock()
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("open again: %v", err)
	}
	jobs.wg.Wait()
	if got := w.mustGet(t, sess.ID); !got.Opened() {
		t.Errorf("after the second open's job: %s, want running", got.State)
	}
	w.MustHistory(t, sess.ID)
}

// TestTwoCopiesOfAQueuedResumeJobCommitOnce: two copies of one queued
// resume job at once (SQS delivers at least once) may both ask the
// provider, but one resuming → running write commits and the session's
// history stays one resume.
func TestTwoCopiesOfAQueuedResumeJobCommitOnce(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{drop: true} // the copies are run by hand below
	w.withJobs(t, jobs)
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("open: %v", err)
	}
	release, resumes := w.holdResumes(t)
	outs := make(chan lifecycle.BringUpOutcome, 2)
	for range 2 {
		go func() {
			out, err := w.svc.BringUp(context.Background(), sess.ID)
			if err != nil {
				t.Errorf("job: %v", err)
			}
			outs <- out
		}()
	}
	for resumes() < 2 {
		time.Sleep(time.Millisecond) // both copies at the provider, real time
	}
	release()
	got := []lifecycle.BringUpOutcome{<-outs, <-outs}
	if !slices.Contains(got, lifecycle.BringUpResumed) {
		t.Errorf("outcomes %v, want one resumed", got)
	}
	if now := w.mustGet(t, sess.ID); !now.Opened() {
		t.Errorf("state %s after both copies, want running", now.State)
	}
	if resuming, resumed := w.resumeEvents(sess.ID); resuming != 1 || resumed != 1 {
		t.Errorf("events paused → resuming %d, resuming → running %d; want 1 each", resuming, resumed)
	}
	w.MustHistory(t, sess.ID)
}

// TestHandedOffResumesGoToResumeJobs: with ResumeJobs set, an open hands
// its resume to them, not to the app jobs (ReadinessJobs); their job
// (FinishResume) takes the session to running and does nothing once it
// runs (it never waits on an app); and the sweep queues a lost resume's
// job on ResumeJobs again.
func TestHandedOffResumesGoToResumeJobs(t *testing.T) {
	w := MustWorld(t)
	apps, resumes := &goJobs{drop: true}, &goJobs{}
	w.rewire(t, func(c *lifecycle.Config) { c.ReadinessJobs, c.ResumeJobs = apps, resumes })
	apps.svc, resumes.svc, resumes.run = w.svc, w.svc, w.svc.FinishResume
	sess := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if _, err := w.svc.Open(t.Context(), acct, sess.ID); err != nil {
		t.Fatalf("open: %v", err)
	}
	resumes.wg.Wait()
	if got := w.mustGet(t, sess.ID); !got.Opened() {
		t.Fatalf("after the resume job: %s, want running", got.State)
	}
	if apps.queued != 0 || resumes.queued != 1 || resumes.lastOutcome != lifecycle.BringUpResumed {
		t.Errorf("app jobs %d, resume jobs %d (last %q); want 0, 1 resumed", apps.queued, resumes.queued, resumes.lastOutcome)
	}
	if out, err := w.svc.FinishResume(t.Context(), sess.ID); err != nil || out != lifecycle.BringUpNothing {
		t.Errorf("a resume job on the running session: %q, %v; want nothing", out, err)
	}

	lost := w.mustIdle(t, 600)
	if _, err := w.svc.PauseNow(t.Context(), acct, lost.ID); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	resumes.mu.Lock()
	resumes.drop = true
	resumes.mu.Unlock()
	if _, err := w.svc.Open(t.Context(), acct, lost.ID); err != nil {
		t.Fatalf("open: %v", err)
	}
	w.clock.Advance(lifecycle.ResumeRequeueAfter + time.Second)
	MustRun(t, w.sweeper)
	if apps.queued != 0 || resumes.queued != 3 {
		t.Errorf("after the sweep: app jobs %d, resume jobs %d; want 0, 3 (the lost one queued again)", apps.queued, resumes.queued)
	}
	w.MustHistory(t, sess.ID)
}
