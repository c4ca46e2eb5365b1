package dynamo_test

import (
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Writes whose answer is lost after DynamoDB committed them: the SDK retries such a PutItem, the retry fails its own
// condition, and the store must recognise the stored item as its own write
// (write_id) instead of reporting a lost race.

// MustLossyFixture returns a Store on a fresh table whose client goes
// through a dynamotest.LostAnswerClient and retries without waiting.
func MustLossyFixture(tb testing.TB) (fixture, *dynamotest.LostAnswerClient) {
	tb.Helper()
	table := dynamotest.MustTable(tb)
	client, hc := dynamotest.MustLossyClient(tb)
	return fixture{store: dynamo.New(dynamo.Config{Client: client, Table: table}), client: client, table: table}, hc
}

func TestWriteRetriedAfterLostAnswer(t *testing.T) {
	t.Run("CreateSession", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		s := runningSession(sessionID(1), "acct_1", t0)
		hc.Arm(s.ID)
		// The retry's failed condition is our own write, not "session already exists" (409).
		if err := f.store.CreateSession(t.Context(), s); err != nil {
			t.Fatalf("create with a lost answer: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		if got, want := s.Version, int64(1); got != want {
			t.Errorf("version = %d, want %d", got, want)
		}
		got := f.MustGet(t, s.ID)
		if got.State != lifecycle.StateRunning || got.Version != 1 {
			t.Errorf("stored %s at version %d, want running at version 1", got.State, got.Version)
		}
		// A real duplicate is still refused: only our own write id counts.
		dup := runningSession(sessionID(1), "acct_1", t0)
		if err := f.store.CreateSession(t.Context(), dup); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("second create of %s: err = %v, want conflict", dup.ID, err)
		}
	})

	t.Run("UpdateSession", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		s := runningSession(sessionID(2), "acct_1", t0)
		f.MustCreate(t, s)
		stale := s.Clone()
		if err := s.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, t0.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		hc.Arm(`"state":{"S":"pausing"}`)
		// The retry's failed condition is our own write, not a lost race (409) that
		// would make the caller believe nothing was written.
		if err := f.store.UpdateSession(t.Context(), s, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatalf("update with a lost answer: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		if got, want := s.Version, int64(2); got != want {
			t.Errorf("version = %d, want %d", got, want)
		}
		got := f.MustGet(t, s.ID)
		if got.State != lifecycle.StatePausing || got.Version != 2 {
			t.Errorf("stored %s at version %d, want pausing at version 2", got.State, got.Version)
		}
		// Another writer holding the old version still loses the race.
		if err := stale.Transition(lifecycle.StatePaused, lifecycle.ReasonWebhook, t0.Add(time.Minute), lifecycle.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
		if err := f.store.UpdateSession(t.Context(), stale, lifecycle.StateRunning, lifecycle.Guard{}); !lifecycle.IsCode(err, lifecycle.CodeConflict) {
			t.Errorf("stale update: err = %v, want conflict", err)
		}
	})

	t.Run("Claim", func(t *testing.T) {
		f, hc := MustLossyFixture(t)
		const key, value = "idempotency#acct_1#k1", "ses_lost_answer_owner"
		hc.Arm(value)
		// The retried claim answers claimed=true: our own value is not another
		// create's key (which Create would answer with 409).
		claimed, stored, err := f.store.Claim(t.Context(), key, value, time.Hour, t0)
		if err != nil {
			t.Fatalf("claim with a lost answer: %v", err)
		}
		dynamotest.MustHaveRetried(t, hc)
		if !claimed || stored != value {
			t.Errorf("claim = (%v, %q), want (true, %q)", claimed, stored, value)
		}
		// Another claimant of the key is still refused and told the owner.
		claimed, stored, err = f.store.Claim(t.Context(), key, "ses_other", time.Hour, t0.Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if claimed || stored != value {
			t.Errorf("second claim = (%v, %q), want (false, %q)", claimed, stored, value)
		}
	})
}
