package reliability_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"errors"
	"fmt"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// MustLossyWorld returns a world whose store sits on a fresh table reached
// through a dynamotest.LostAnswerClient, with SDK retries that do not wait.
func MustLossyWorld(tb testing.TB) (*world, *dynamotest.LostAnswerClient) {
	tb.Helper()
	w := MustWorld(tb, 1)
	table := dynamotest.MustTable(tb)
	client, hc := dynamotest.MustLossyClient(tb)
	w.store = reliability.NewRecordingStore(dynamo.New(dynamo.Config{Client: client, Table: table, Log: quiet()}))
	streams, arn := dynamotest.MustStream(tb, table)
	w.outbox = outbox.NewPoller(outbox.PollerConfig{Streams: streams, StreamARN: arn, Publisher: w.events, Log: quiet()})
	w.rewire(tb, func(c *lifecycle.Config) { c.Store = w.store })
	return w, hc
}

// TestLostWriteAnswerIsOwnSuccess: a PutItem whose answer was lost after it
// committed is retried by the SDK and fails its own condition; the store
// recognises its own write instead of taking it for a lost race.
func TestLostWriteAnswerIsOwnSuccess(t *testing.T) {
	t.Run("CreateRunning", func(t *testing.T) {
		w, hc := MustLossyWorld(t)
		hc.Arm(`"state":{"S":"running"}`)
		// The provisioning → running write is our own: no conflict, the sandbox of
		// a session the table records as running lives on, and its event is published.
		sess, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		got := w.MustSession(t, sess.ID)
		if got.State != lifecycle.StateRunning || got.SandboxID != sess.SandboxID {
			t.Errorf("stored %s with sandbox %q, want running with %q", got.State, got.SandboxID, sess.SandboxID)
		}
		if st := w.sandboxState(sess.SandboxID); st != lifecycle.SandboxRunning {
			t.Errorf("provider sandbox %s, want running", st)
		}
		if got, want := len(w.EventsFor(t, sess.ID)), 2; got != want {
			t.Errorf("events = %d, want %d (created, provisioning → running)", got, want)
		}
		w.MustHistory(t, sess.ID)
	})

	t.Run("IdempotencyClaim", func(t *testing.T) {
		w, hc := MustLossyWorld(t)
		in := lifecycle.CreateInput{Template: "base", IdempotencyKey: "k-lost-claim"}
		hc.Arm("idempotency#")
		// The retried claim is recognised as our own, not as another create still
		// in progress (409).
		sess, replayed, err := w.svc.Create(t.Context(), account, in)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		if replayed || sess.State != lifecycle.StateRunning {
			t.Errorf("create: replayed=%v state=%s, want a fresh running session", replayed, sess.State)
		}
		again, replayed, err := w.svc.Create(t.Context(), account, in)
		if err != nil || !replayed || again.ID != sess.ID {
			t.Errorf("replay: id=%v replayed=%v err=%v, want a replay of %s", again, replayed, err, sess.ID)
		}
		if got, want := w.fake.Calls(fake.OpCreate), 1; got != want {
			t.Errorf("provider creates = %d, want %d", got, want)
		}
		w.MustHistory(t, sess.ID)
	})
}

// createCrashPoints are the steps of a create at which its process may die,
// each leaving its Idempotency-Key claimed: before the session is written,
// at the provider call, after the provider made the sandbox.
var createCrashPoints = []struct {
	name string
	at   func(reliability.Step) bool
}{
	{"BeforeSessionWritten", writeStep("", lifecycle.StateProvisioning)},
	{"AtProviderCreate", callStep("create")},
	{"AfterProviderCreate", writeStep(lifecycle.StateProvisioning, lifecycle.StateRunning)},
}

// dyingCreate runs one create with an Idempotency-Key in a process that dies
// at step at, and returns the id of the session it meant to write.
func dyingCreate(t *testing.T, w *world, key string, at func(reliability.Step) bool) string {
	t.Helper()
	crasher := &reliability.Crasher{At: at}
	var id string
	var mu sync.Mutex
	dying := lifecycle.NewService(lifecycle.Config{Store: crasher.Store(w.store), Provider: crasher.Provider(w.fake),
		Clock: w.clock, Policy: w.svc.Policy(), Log: quiet(),
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			id = lifecycle.NewSessionID()
			return id
		}})
	_, _, err := dying.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	if !errors.Is(err, reliability.ErrCrashed) {
		t.Errorf("create %s returned %v, want the crash", key, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return id
}

// checkKeyResolved retries a create with key and fails the test unless the
// key replays a live session or accepts a fresh create.
func checkKeyResolved(t *testing.T, w *world, key string) *lifecycle.Session {
	t.Helper()
	sess, replayed, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	switch {
	case err != nil:
		t.Errorf("key %s after the lease: %v (code %s), want a replay of a live session or a fresh create", key, err, lifecycle.ErrorCode(err))
		return nil
	case sess.State != lifecycle.StateRunning:
		t.Errorf("key %s after the lease: replayed=%v a %s session (reason %s), want running", key, replayed, sess.State, sess.Reason)
	}
	again, replayed, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
	if err != nil || !replayed || again.ID != sess.ID {
		t.Errorf("key %s retried once more: %v replayed=%v, want a replay of %s", key, err, replayed, sess.ID)
	}
	return sess
}

// TestCreateClaimReleasedWhenSessionNeverWritten: a create that dies after
// claiming its Idempotency-Key (before its session is written, at the
// provider, or after the provider made the sandbox) no longer strands the
// key: before the lease a retry hears "still in progress", after it the key
// replays a live session or takes a fresh create, with or without a sweep
// in between, and no sandbox of the dead create is left.
func TestCreateClaimReleasedWhenSessionNeverWritten(t *testing.T) {
	for _, cp := range createCrashPoints {
		for _, sweepFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/Sweep=%v", cp.name, sweepFirst), func(t *testing.T) {
				w := MustWorld(t, 1)
				key := "key-" + cp.name
				dead := dyingCreate(t, w, key, cp.at)

				_, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: key})
				if !lifecycle.IsCode(err, lifecycle.CodeConflict) {
					t.Fatalf("retry within the lease: %v, want conflict (still in progress)", err)
				}

				w.clock.Advance(w.svc.Policy().LeaseDuration + time.Second)
				if sweepFirst {
					w.MustSweep(t)
				}
				sess := checkKeyResolved(t, w, key)
				if sess != nil && sess.ID == dead {
					t.Errorf("the key replays the dead create's session %s", dead)
				}
				if left := sandboxesTagged(w, dead); len(left) != 0 {
					t.Errorf("sandboxes %v of the dead create are left", left)
				}
			})
		}
	}
}

// TestCrashMidCreateEveryKeyResolves is the crash test of Idempotency-Key claims: many
// creates, each with its own Idempotency-Key, are in flight when their
// process dies (at every crash point); after the lease every key either
// replays a live session or accepts a fresh create, and no sandbox leaks.
func TestCrashMidCreateEveryKeyResolves(t *testing.T) {
	w := MustWorld(t, 1)
	const clients = 24
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			dyingCreate(t, w, fmt.Sprintf("burst-%d", i), createCrashPoints[i%len(createCrashPoints)].at)
		})
	}
	wg.Wait()
	w.clock.Advance(w.svc.Policy().LeaseDuration + time.Second)
	w.MustSweep(t)
	live := map[string]bool{}
	var mu sync.Mutex
	for i := range clients {
		wg.Go(func() {
			if sess := checkKeyResolved(t, w, fmt.Sprintf("burst-%d", i)); sess != nil {
				mu.Lock()
				live[sess.SandboxID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, sb := range w.fake.Sandboxes() {
		if sb.State != "gone" && !live[sb.ID] {
			t.Errorf("sandbox %s (%s, session %s) belongs to no live session", sb.ID, sb.State, sb.Metadata[lifecycle.MetadataSessionID])
		}
	}
}

// templateProvider is the fake provider with a fixed list of templates it
// can check up front, as the local provider does.
type templateProvider struct{ *fake.Provider }

func (p templateProvider) CheckTemplate(_ context.Context, template string) error {
	if template != "base" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "unknown template %q", template)
	}
	return nil
}

// TestUnknownTemplateLeavesNoSession: a create naming a template the
// provider does not have is refused before anything is written: no session
// in the list, no provider call, the Idempotency-Key still free.
func TestUnknownTemplateLeavesNoSession(t *testing.T) {
	w := MustWorld(t, 1)
	svc := lifecycle.NewService(lifecycle.Config{Store: w.store, Provider: templateProvider{w.fake}, Clock: w.clock, Policy: w.svc.Policy(), Log: quiet()})
	_, _, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "nope", IdempotencyKey: "k"})
	if !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
		t.Fatalf("create with an unknown template: %v, want invalid", err)
	}
	page, err := svc.List(t.Context(), account, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 0 {
		t.Errorf("list holds %d sessions (first %s, %s), want none", len(page.Sessions), page.Sessions[0].ID, page.Sessions[0].State)
	}
	if got := w.fake.Calls(fake.OpCreate); got != 0 {
		t.Errorf("provider creates = %d, want 0", got)
	}
	sess, replayed, err := svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base", IdempotencyKey: "k"})
	if err != nil || replayed || sess.State != lifecycle.StateRunning {
		t.Errorf("create with the same key and a real template: %v, replayed %v", err, replayed)
	}
}

// TestCreateWithLostAnswerLeaksNothing: a provider create that took effect
// but answered an error leaves no sandbox behind (found by TestChaos).
func TestCreateWithLostAnswerLeaksNothing(t *testing.T) {
	w := MustWorld(t, 1)
	w.fake.SetFault(fake.OpCreate, fake.Fault{Rate: 1, Applied: true})
	_, _, err := w.svc.Create(t.Context(), account, lifecycle.CreateInput{Template: "base"})
	t.Logf("create: %v", err)
	w.fake.ClearFaults()
	w.clock.Advance(time.Hour)
	t.Logf("sweep: %+v", w.MustSweep(t))
	if sbs := w.fake.Sandboxes(); len(sbs) != 0 {
		t.Errorf("leaked: %+v", sbs)
	}
}
