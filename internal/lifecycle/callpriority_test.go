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

// classRecorder is the fake provider recording, per operation, the class
// each call's ctx sets for the provider call limiter ("-": none, the
// method's own class applies).
type classRecorder struct {
	*fake.Provider
	mu      sync.Mutex
	classes map[fake.Op][]string
}

func newClassRecorder(p *fake.Provider) *classRecorder {
	return &classRecorder{Provider: p, classes: map[fake.Op][]string{}}
}

func (r *classRecorder) record(ctx context.Context, op fake.Op) {
	class := "-"
	if p, ok := lifecycle.CallPriorityOf(ctx); ok {
		class = p.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.classes[op] = append(r.classes[op], class)
}

// took returns the classes op's calls set since the last take, and forgets them.
func (r *classRecorder) took(op fake.Op) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.classes[op]
	delete(r.classes, op)
	return c
}

func (r *classRecorder) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	r.record(ctx, fake.OpCreate)
	return r.Provider.Create(ctx, req)
}

func (r *classRecorder) Get(ctx context.Context, id string) (lifecycle.Sandbox, error) {
	r.record(ctx, fake.OpGet)
	return r.Provider.Get(ctx, id)
}

func (r *classRecorder) Pause(ctx context.Context, id string) error {
	r.record(ctx, fake.OpPause)
	return r.Provider.Pause(ctx, id)
}

func (r *classRecorder) Kill(ctx context.Context, id string) error {
	r.record(ctx, fake.OpKill)
	return r.Provider.Kill(ctx, id)
}

func (r *classRecorder) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	r.record(ctx, fake.OpSetTimeout)
	return r.Provider.SetTimeout(ctx, id, d)
}

// TestCallersSetTheirCallClass: the calls a user or an operator waits on
// but whose method is background work (a diagnosis's Get, a snapshot's
// Pause, a delete's Kill) are user calls; a reconcile's and a pool fill's
// calls are background; the sweep's pauses and a heartbeat's refresh keep
// their methods' own classes (docs/CAPACITY.md "Provider call limiter").
func TestCallersSetTheirCallClass(t *testing.T) {
	w := MustWorld(t)
	rec := newClassRecorder(w.fake)
	w.rewire(t, func(c *lifecycle.Config) {
		c.Provider = rec
		c.Policy.GuardHeadroom = 5 * time.Minute // the heartbeat 6 min in refreshes
	})
	user, background := []string{"user"}, []string{"background"}
	want := func(what string, op fake.Op, classes []string) {
		t.Helper()
		if got := rec.took(op); !slices.Equal(got, classes) {
			t.Errorf("%s: %s calls set classes %q, want %q", what, op, got, classes)
		}
	}

	sess := w.mustIdle(t, 600)
	w.clock.Advance(6 * time.Minute)
	if _, err := w.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	want("heartbeat", fake.OpSetTimeout, []string{"-"})
	if _, err := w.svc.Diagnose(t.Context(), acct, sess.ID, func(context.Context, string) (int, error) { return 200, nil }); err != nil {
		t.Fatal(err)
	}
	want("diagnose", fake.OpGet, user)
	if _, err := w.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	want("snapshot", fake.OpPause, user)
	if _, err := w.svc.Resume(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}

	// The provider paused it on its own: a reconcile reads it.
	w.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused)
	if _, err := w.svc.Reconcile(t.Context(), w.mustGet(t, sess.ID)); err != nil {
		t.Fatal(err)
	}
	want("reconcile", fake.OpGet, background)
	if _, err := w.svc.Delete(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	want("delete", fake.OpKill, user)

	idle := w.mustIdle(t, 600)
	w.clock.Advance(11 * time.Minute)
	if err := w.svc.PauseIfDue(t.Context(), w.mustGet(t, idle.ID), w.clock.Now()); err != nil {
		t.Fatal(err)
	}
	want("a due pause", fake.OpPause, []string{"-"})
}

// TestPoolFillCallsAreBackground: every provider call filling a pool is a
// background call.
func TestPoolFillCallsAreBackground(t *testing.T) {
	e, _ := poolEnv(t, 1, lifecycle.TierPaused)
	rec := newClassRecorder(e.fake)
	cfg := e.svc.Config()
	cfg.Provider = rec
	e.svc = lifecycle.NewService(cfg)
	if sum := e.svc.FillPools(t.Context()); sum.Made != 1 {
		t.Fatalf("fill = %+v, want 1 made", sum)
	}
	for _, op := range []fake.Op{fake.OpCreate, fake.OpPause} {
		if got := rec.took(op); len(got) == 0 || slices.ContainsFunc(got, func(c string) bool { return c != "background" }) {
			t.Errorf("pool fill: %s calls set classes %q, want background", op, got)
		}
	}
}
