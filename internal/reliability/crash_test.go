package reliability_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// crashCase is one operation killed at one step.
type crashCase struct {
	name string
	// start brings a session to where the operation begins, through the
	// healthy service; "" means the operation creates the session.
	start lifecycle.State
	// at is the step the process dies at.
	at func(reliability.Step) bool
	// run is the operation, in the dying process.
	run func(ctx context.Context, w *world, dying *lifecycle.Service, id string) error
	// stuck is the state the crash leaves; mid what the provider holds then
	// ("" for no sandbox); want the state the next sweep reconciles it to.
	stuck, want lifecycle.State
	mid         lifecycle.SandboxState
}

func writeStep(from, to lifecycle.State) func(reliability.Step) bool {
	return func(s reliability.Step) bool { return s.Op == reliability.StepWrite && s.From == from && s.To == to }
}

func callStep(op string) func(reliability.Step) bool {
	return func(s reliability.Step) bool { return s.Op == op }
}

func snapshot(ctx context.Context, _ *world, dying *lifecycle.Service, id string) error {
	_, err := dying.PauseNow(ctx, account, id)
	return err
}

func resume(ctx context.Context, _ *world, dying *lifecycle.Service, id string) error {
	_, err := dying.Resume(ctx, account, id)
	return err
}

func create(ctx context.Context, _ *world, dying *lifecycle.Service, _ string) error {
	_, _, err := dying.Create(ctx, account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 600})
	return err
}

// idleSweep runs the sweep function's sweep in the dying process, once
// the session is past its idle deadline.
func idleSweep(ctx context.Context, w *world, dying *lifecycle.Service, _ string) error {
	// Past the idle timeout plus the heartbeat coalescing window.
	w.clock.Advance(10*time.Minute + w.svc.Policy().ActivityGranularity + time.Second)
	sum, err := sweep.New(dying, sweep.Config{Concurrency: 1}, quiet()).Run(ctx)
	if err != nil {
		return err
	}
	if sum.Paused != 0 || sum.Failed != 1 {
		return errors.New("the dying sweep did not fail its one pause")
	}
	return reliability.ErrCrashed
}

// TestCrash kills an operation between its provider call and its table
// write (and, for contrast, just before the provider call), as a Lambda
// timeout or a crash would, and checks what the next sweep makes of it:
//
//   - the crash leaves the session in its transitional state with a lease,
//     and the provider as far as the operation got;
//   - a webhook reporting the provider's side meanwhile is deferred (503, to
//     be delivered again) and changes nothing (the operation in flight owns
//     the session);
//   - a sweep before the lease runs out leaves it alone;
//   - the first sweep after the lease runs out reconciles it, reason
//     reconcile, to what the provider holds: pausing → paused or running,
//     resuming → running or paused, provisioning → failed with the sandbox
//     the dead create made (tagged with the session id, its id never
//     recorded) found by metadata and killed;
//   - the session's history is an unbroken version chain with one event per
//     transition.
func TestCrash(t *testing.T) {
	cases := []crashCase{
		{name: "SnapshotAfterProviderPause", start: lifecycle.StateRunning,
			at: writeStep(lifecycle.StatePausing, lifecycle.StatePaused), run: snapshot,
			stuck: lifecycle.StatePausing, mid: lifecycle.SandboxPaused, want: lifecycle.StatePaused},
		{name: "SnapshotBeforeProviderPause", start: lifecycle.StateRunning,
			at: callStep("pause"), run: snapshot,
			stuck: lifecycle.StatePausing, mid: lifecycle.SandboxRunning, want: lifecycle.StateRunning},
		{name: "IdleSweepAfterProviderPause", start: lifecycle.StateRunning,
			at: writeStep(lifecycle.StatePausing, lifecycle.StatePaused), run: idleSweep,
			stuck: lifecycle.StatePausing, mid: lifecycle.SandboxPaused, want: lifecycle.StatePaused},
		{name: "ResumeAfterProviderResume", start: lifecycle.StatePaused,
			at: writeStep(lifecycle.StateResuming, lifecycle.StateRunning), run: resume,
			stuck: lifecycle.StateResuming, mid: lifecycle.SandboxRunning, want: lifecycle.StateRunning},
		{name: "ResumeBeforeProviderResume", start: lifecycle.StatePaused,
			at: callStep("resume"), run: resume,
			stuck: lifecycle.StateResuming, mid: lifecycle.SandboxPaused, want: lifecycle.StatePaused},
		{name: "CreateAfterProviderCreate",
			at: writeStep(lifecycle.StateProvisioning, lifecycle.StateRunning), run: create,
			stuck: lifecycle.StateProvisioning, mid: lifecycle.SandboxRunning, want: lifecycle.StateFailed},
		{name: "CreateBeforeProviderCreate",
			at: callStep("create"), run: create,
			stuck: lifecycle.StateProvisioning, want: lifecycle.StateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCrash(t, tc) })
	}
}

func runCrash(t *testing.T, tc crashCase) {
	ctx := t.Context()
	w := MustWorld(t, 1)
	var id string
	if tc.start != "" {
		id = w.MustCreate(t, 600).ID
		if tc.start == lifecycle.StatePaused {
			if _, err := w.svc.PauseNow(ctx, account, id); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		}
	}

	// The dying process: the same table, provider and clock,
	// seen through the Crasher.
	crasher := &reliability.Crasher{At: tc.at}
	cfg := w.svc.Config()
	cfg.Store, cfg.Provider, cfg.Log = crasher.Store(w.store), crasher.Provider(w.fake), quiet()
	cfg.NewID = func() string { id = lifecycle.NewSessionID(); return id }
	dying := lifecycle.NewService(cfg)
	if err := tc.run(ctx, w, dying, id); !errors.Is(err, reliability.ErrCrashed) {
		t.Fatalf("operation returned %v, want the crash", err)
	}
	if _, dead := crasher.Dead(); !dead {
		t.Fatal("the process did not die")
	}

	stuck := w.MustSession(t, id)
	if got, want := stuck.State, tc.stuck; got != want {
		t.Fatalf("after the crash the session is %s, want %s", got, want)
	}
	if !stuck.LeaseExpiresAt.After(w.clock.Now()) {
		t.Fatalf("lease %v is not after now %v", stuck.LeaseExpiresAt, w.clock.Now())
	}
	tagged := sandboxesTagged(w, id)
	if got, want := sandboxStates(tagged), statesOf(tc.mid); !slices.Equal(got, want) {
		t.Fatalf("after the crash the provider holds %v, want %v", got, want)
	}

	t.Run("WebhookDeferred", func(t *testing.T) {
		deliveries := w.observer.Observe()
		if got, want := len(deliveries) > 0, tc.mid != ""; got != want {
			t.Fatalf("%d webhooks to deliver, want some: %v", len(deliveries), want)
		}
		for _, d := range deliveries {
			status, outcome, err := w.deliver(ctx, d, "req_"+d.Event.ID)
			if err != nil {
				t.Fatal(err)
			}
			deferred := status == 503 && outcome == "error:unavailable"
			unknown := status == 200 && outcome == string(lifecycle.WebhookUnknownSandbox)
			if !deferred && !unknown {
				t.Errorf("webhook %s answered %d %s, want 503 (deferred: deliver again) or 200 unknown_sandbox", d.Event.Type, status, outcome)
			}
		}
		if got, want := w.MustSession(t, id).Version, stuck.Version; got != want {
			t.Errorf("version = %d after the webhooks, want %d (unchanged)", got, want)
		}
	})

	t.Run("SweepBeforeLeaseExpiry", func(t *testing.T) {
		w.clock.Set(stuck.LeaseExpiresAt.Add(-time.Second))
		sum := w.MustSweep(t)
		if got, want := sum.Leases, 0; got != want {
			t.Errorf("leases = %d, want %d", got, want)
		}
		if got, want := w.MustSession(t, id).Version, stuck.Version; got != want {
			t.Errorf("version = %d, want %d (untouched)", got, want)
		}
		if got, want := len(sandboxesTagged(w, id)), len(tagged); got != want {
			t.Errorf("%d sandboxes tagged with the session, want %d (an unknown sandbox is never killed)", got, want)
		}
	})

	t.Run("SweepAfterLeaseExpiry", func(t *testing.T) {
		w.clock.Set(stuck.LeaseExpiresAt.Add(time.Second))
		sum := w.MustSweep(t)
		if sum.Leases != 1 || sum.Reconciled != 1 || sum.ReconcileFailed != 0 {
			t.Errorf("summary = %+v, want leases 1, reconciled 1, reconcile_failed 0", sum)
		}
		got := w.MustSession(t, id)
		if got.State != tc.want || got.Reason != lifecycle.ReasonReconcile || !got.LeaseExpiresAt.IsZero() {
			t.Fatalf("session = %s (reason %s, lease %v), want %s, reason reconcile, no lease",
				got.State, got.Reason, got.LeaseExpiresAt, tc.want)
		}
		switch tc.want {
		case lifecycle.StateFailed:
			if left := sandboxesTagged(w, id); len(left) != 0 {
				t.Errorf("sandboxes %v tagged with the failed session are still there", left)
			}
		default:
			sb, ok := w.fake.Sandbox(got.SandboxID)
			if !ok || string(sb.State) != string(got.State) {
				t.Errorf("the table says %s, the provider %v (exists %v)", got.State, sb.State, ok)
			}
		}
		evs := w.EventsFor(t, id)
		if len(evs) == 0 {
			t.Fatal("no events published")
		}
		if last := evs[len(evs)-1]; last.From != tc.stuck || last.To != tc.want || last.Reason != lifecycle.ReasonReconcile {
			t.Errorf("last event = %s→%s (%s), want %s→%s (reconcile)", last.From, last.To, last.Reason, tc.stuck, tc.want)
		}
		w.MustHistory(t, id)
	})
}

// sandboxesTagged returns the provider's sandboxes tagged with session id.
func sandboxesTagged(w *world, id string) []lifecycle.Sandbox {
	var out []lifecycle.Sandbox
	for _, sb := range w.fake.Sandboxes() {
		if sb.Metadata[lifecycle.MetadataSessionID] == id {
			out = append(out, sb)
		}
	}
	return out
}

func sandboxStates(sbs []lifecycle.Sandbox) []lifecycle.SandboxState {
	out := []lifecycle.SandboxState{}
	for _, sb := range sbs {
		out = append(out, sb.State)
	}
	return out
}

func statesOf(s lifecycle.SandboxState) []lifecycle.SandboxState {
	if s == "" {
		return []lifecycle.SandboxState{}
	}
	return []lifecycle.SandboxState{s}
}
