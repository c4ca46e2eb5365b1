package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/calllimit"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/registry"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// queuedJobs keeps the checkpoint jobs the service queues, for the test to
// run.
type queuedJobs struct {
	mu   sync.Mutex
	jobs []lifecycle.CheckpointJob
}

func (q *queuedJobs) EnqueueCheckpoint(_ context.Context, job lifecycle.CheckpointJob) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, job)
	return nil
}

func (q *queuedJobs) take() []lifecycle.CheckpointJob {
	q.mu.Lock()
	defer q.mu.Unlock()
	jobs := q.jobs
	q.jobs = nil
	return jobs
}

// grants counts the governor's grants by class (governor.Metrics) and
// ignores the rest.
type grants struct {
	mu sync.Mutex
	n  map[lifecycle.CallPriority]int
}

func (g *grants) CallGranted(_ string, class lifecycle.CallPriority, _ time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n[class]++
}
func (g *grants) of(class lifecycle.CallPriority) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[class]
}
func (*grants) CallRefused(string, lifecycle.CallPriority) {}
func (*grants) Leased(string, int, time.Duration)          {}
func (*grants) Throttled(string, lifecycle.CallPriority)   {}
func (*grants) Fallback(string, bool)                      {}
func (*grants) Paused(string)                              {}
func (*grants) Resumed()                                   {}
func (*grants) ProviderError(string, string)               {}
func (*grants) PauseLag(time.Duration)                     {}

// TestTheAssembledProviderCheckpoints: a provider with snapshots and a
// file API, built by New behind the fleet's governor (on by default) and
// wrapped by the service's metrics and a session's account, still offers
// both: a create writes the identity marker, a checkpoint is a provider
// snapshot (not "no snapshots"), and its save job's calls take governor
// tokens as background calls.
func TestTheAssembledProviderCheckpoints(t *testing.T) {
	var snaps *reliability.SnapshotProvider
	adapter := registry.Adapter{Name: "snaps", Calls: calllimit.Limit{PerSecond: 1000},
		Read: func(func(string) string) (any, error) { return nil, nil },
		New: func(p registry.Params) (lifecycle.Provider, func(context.Context) error, error) {
			snaps = reliability.NewSnapshotProvider(fake.New(fake.Config{Name: "snaps", Clock: p.Clock}), p.Clock)
			return snaps, nil, nil
		}}
	set := registry.Set{adapter}
	base := baseConfig(t, "fake")
	cfg, err := app.ConfigFromEnv(env(map[string]string{app.EnvTable: base.Table, app.EnvDynamoEndpoint: base.DynamoEndpoint,
		app.EnvProvider: "snaps"}), set...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GovernorOff {
		t.Fatal("the governor is off by default")
	}
	jobs, m := &queuedJobs{}, &grants{n: map[lifecycle.CallPriority]int{}}
	a := MustApp(t, cfg, app.Needs{Provider: true}, app.Deps{Adapters: set, CheckpointJobs: jobs, Metrics: m})
	if a.Provider == lifecycle.Provider(snaps) {
		t.Fatal("the provider is not behind its budget")
	}
	ctx := t.Context()
	sess, _, err := a.Service.Create(ctx, "acc_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if !sess.Marked {
		t.Error("no identity marker written: the file API is hidden behind the wrappers")
	}
	c, _, err := a.Service.CreateCheckpoint(ctx, "acc_1", sess.ID, lifecycle.CheckpointInput{})
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if c.Kind != lifecycle.KindSnapshot {
		t.Errorf("checkpoint kind %q, want %q", c.Kind, lifecycle.KindSnapshot)
	}
	background := m.of(lifecycle.PriorityBackground)
	for _, job := range jobs.take() {
		if err := a.Service.RunCheckpointJob(ctx, job); err != nil {
			t.Fatalf("run %+v: %v", job, err)
		}
	}
	got, err := a.Service.GetCheckpoint(ctx, "acc_1", sess.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != lifecycle.CheckpointReady || len(snaps.Snapshots()) != 1 {
		t.Errorf("checkpoint %s with %d provider snapshots, want ready with one", got.State, len(snaps.Snapshots()))
	}
	if m.of(lifecycle.PriorityBackground) == background {
		t.Error("the save job's provider calls took no governor token of the background class")
	}
}
