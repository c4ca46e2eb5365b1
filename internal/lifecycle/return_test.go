package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// mustPausedFor creates a session (resume on return as flag says; nil:
// the default) and pauses it with reason.
func (w *world) mustPausedFor(t *testing.T, flag *bool, reason string) *lifecycle.Session {
	t.Helper()
	sess := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600, ResumeOnReturn: flag})
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), reason, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	return w.mustGet(t, sess.ID)
}

// mustResumeReasons fails unless id's resume events (paused → resuming,
// resuming → running) are one of each, both with reason.
func (w *world) mustResumeReasons(t *testing.T, id, reason string) {
	t.Helper()
	var reasons []string
	for _, ev := range w.log.For(id) {
		if ev.From == lifecycle.StatePaused || ev.From == lifecycle.StateResuming {
			reasons = append(reasons, ev.Reason)
		}
	}
	if len(reasons) != 2 || reasons[0] != reason || reasons[1] != reason {
		t.Errorf("resume events' reasons %v, want [%s %s]", reasons, reason, reason)
	}
}

func TestResumeOnReturnDefaultsToPresence(t *testing.T) {
	w := MustWorld(t)
	on := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600})
	off := int64(0)
	noPresence := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600, AwayTimeoutSeconds: &off})
	no := false
	refused := w.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 600, ResumeOnReturn: &no})
	if !w.mustGet(t, on.ID).ResumeOnReturn {
		t.Error("presence on, flag absent: resume on return is off, want on")
	}
	if w.mustGet(t, noPresence.ID).ResumeOnReturn {
		t.Error("presence off, flag absent: resume on return is on, want off")
	}
	if w.mustGet(t, refused.ID).ResumeOnReturn {
		t.Error("flag false: resume on return is on, want off")
	}
}

func TestVisibleClientResumesAwayPausedSessionWithReasonReturn(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustPausedFor(t, nil, lifecycle.ReasonAway)
	got, resumed, err := w.svc.ReturnVisible(t.Context(), acct, sess.ID)
	if err != nil || !resumed {
		t.Fatalf("return visible: resumed %v, err %v; want a resume", resumed, err)
	}
	if got.State != lifecycle.StateRunning || got.Reason != lifecycle.ReasonReturn {
		t.Errorf("session %s (%s), want running (return)", got.State, got.Reason)
	}
	if !got.ReturnResumedAt.Equal(w.clock.Now()) {
		t.Errorf("return resumed at %v, want %v", got.ReturnResumedAt, w.clock.Now())
	}
	w.mustResumeReasons(t, sess.ID, lifecycle.ReasonReturn)
	w.MustHistory(t, sess.ID)
}

// TestReturnVisibleHandsTheResumeToAJob: with a job queue the channel's
// call answers while the provider's resume is still under way, the session
// resuming; the job finishes it, and both resume events say return.
func TestReturnVisibleHandsTheResumeToAJob(t *testing.T) {
	w := MustWorld(t)
	jobs := &goJobs{}
	w.withJobs(t, jobs)
	sess := w.mustPausedFor(t, nil, lifecycle.ReasonAway)
	release, resumes := w.holdResumes(t)
	answered := make(chan *lifecycle.Session, 1)
	go func() {
		got, resumed, err := w.svc.ReturnVisible(context.Background(), acct, sess.ID)
		if err != nil || !resumed {
			t.Errorf("return visible: resumed %v, err %v; want a resume", resumed, err)
		}
		answered <- got
	}()
	select {
	case got := <-answered:
		if got == nil || got.State != lifecycle.StateResuming {
			t.Errorf("return visible answered %+v, want the session resuming", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("return visible waited for the provider's resume")
	}
	release()
	jobs.wg.Wait()
	w.fake.SetOnCall(nil)
	if now := w.mustGet(t, sess.ID); now.State != lifecycle.StateRunning || now.Reason != lifecycle.ReasonReturn {
		t.Errorf("after the job: %s (%s), want running (return)", now.State, now.Reason)
	}
	if n := resumes(); n != 1 {
		t.Errorf("provider resumes = %d, want 1", n)
	}
	w.mustResumeReasons(t, sess.ID, lifecycle.ReasonReturn)
	w.MustHistory(t, sess.ID)
}

func TestResumeOnReturnAtMostOncePerMinute(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustPausedFor(t, nil, lifecycle.ReasonAway)
	if _, resumed, err := w.svc.ReturnVisible(t.Context(), acct, sess.ID); err != nil || !resumed {
		t.Fatalf("first return: resumed %v, err %v", resumed, err)
	}
	w.clock.Advance(30 * time.Second)
	if err := w.svc.Pause(t.Context(), w.mustGet(t, sess.ID), lifecycle.ReasonAway, lifecycle.Guard{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	got, resumed, err := w.svc.ReturnVisible(t.Context(), acct, sess.ID)
	if err != nil || resumed || got.State != lifecycle.StatePaused {
		t.Fatalf("return 30 s after the last: resumed %v, state %s, err %v; want it left paused", resumed, got.State, err)
	}
	w.clock.Advance(lifecycle.ReturnResumeInterval - 30*time.Second)
	if got, resumed, err = w.svc.ReturnVisible(t.Context(), acct, sess.ID); err != nil || !resumed || got.State != lifecycle.StateRunning {
		t.Fatalf("return a minute after the last: resumed %v, state %s, err %v; want running", resumed, got.State, err)
	}
}

func TestNoResumeOnReturnAfterPauseTheAPIAskedFor(t *testing.T) {
	w := MustWorld(t)
	sess := w.mustPausedFor(t, nil, lifecycle.ReasonRequest)
	got, resumed, err := w.svc.ReturnVisible(t.Context(), acct, sess.ID)
	if err != nil || resumed || got.State != lifecycle.StatePaused {
		t.Errorf("resumed %v, state %s, err %v; want it left paused", resumed, got.State, err)
	}
}

func TestNoResumeOnReturnWhenFlagOff(t *testing.T) {
	w := MustWorld(t)
	no := false
	sess := w.mustPausedFor(t, &no, lifecycle.ReasonIdle)
	got, resumed, err := w.svc.ReturnVisible(t.Context(), acct, sess.ID)
	if err != nil || resumed || got.State != lifecycle.StatePaused {
		t.Errorf("resumed %v, state %s, err %v; want it left paused", resumed, got.State, err)
	}
}

func TestOpenResumesWithReasonReturnWhenFlagOn(t *testing.T) {
	w := MustWorld(t)
	on := w.mustPausedFor(t, nil, lifecycle.ReasonIdle)
	no := false
	off := w.mustPausedFor(t, &no, lifecycle.ReasonIdle)
	for _, c := range []struct {
		id, want string
	}{{on.ID, lifecycle.ReasonReturn}, {off.ID, lifecycle.ReasonRequest}} {
		got, err := w.svc.Open(t.Context(), acct, c.id)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if got.State != lifecycle.StateRunning || got.Reason != c.want {
			t.Errorf("opened session %s (%s), want running (%s)", got.State, got.Reason, c.want)
		}
	}
}
