package capacity

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lab/bench"
)

// TestCapacityLogSplitsATransaction: a transaction's one table figure is
// split as DynamoDB bills its items: 2 WCU per small item, the rest to the
// session item; index units go to the index families.
func TestCapacityLogSplitsATransaction(t *testing.T) {
	l := NewLog()
	body := map[string]json.RawMessage{"TransactItems": json.RawMessage(`[
		{"Update":{"Key":{"pk":{"S":"SESSION#ses_1"},"sk":{"S":"SESSION"}}}},
		{"Update":{"Key":{"pk":{"S":"ACCOUNT#a"},"sk":{"S":"RUNNING"}}}}]`)}
	keys, txn := requestKeys("TransactWriteItems", body)
	if !txn || len(keys) != 2 {
		t.Fatalf("keys = %+v, txn %v; want 2 keys of a transaction", keys, txn)
	}
	l.split(keys, txn, false, 8, map[string]float64{tabledef.IndexIdle: 2, tabledef.IndexByOwner: 1})
	got := l.Snapshot()
	for f, want := range map[Family]float64{
		FamSlotCounter: 2, FamSessionItem: 6, FamAccountPartition: 2, FamSessionPartition: 6,
		FamIdleShard: 2, FamOwnerIndex: 1,
	} {
		if got[f].Write != want {
			t.Errorf("%s = %v WCU, want %v", f, got[f].Write, want)
		}
	}
}

// TestCapacityLogKnowsCheckpoints: a checkpoint's item is its own family
// in its session's partition, the checkpoint_lease index a due index's
// shard.
func TestCapacityLogKnowsCheckpoints(t *testing.T) {
	item, part := keyFamilies(itemKey{pk: "SESSION#ses_1", sk: "CHECKPOINT#chk_1"})
	if item != FamCheckpoint || part != FamSessionPartition {
		t.Errorf("checkpoint key = %s, %s; want %s, %s", item, part, FamCheckpoint, FamSessionPartition)
	}
	if got := indexFamily(tabledef.IndexCheckpointLease); got != FamCheckpointLeaseShard {
		t.Errorf("checkpoint_lease = %s, want %s", got, FamCheckpointLeaseShard)
	}
	rows := scaleRows([]Op{{PerSecond: 100, Units: map[Family]Units{FamCheckpointLeaseShard: {Write: 2}}}}, DefaultTarget, 10, 1)
	if len(rows) != 1 || rows[0].WCU != 20 || rows[0].Keyed != "shard of 10" {
		t.Errorf("checkpoint_lease rows = %+v, want 20 WCU/s on a shard of 10", rows)
	}
}

// TestScaleCapacity: a family's busiest key gets the mean session's, the
// largest account's or one shard's share of each operation's rate.
func TestScaleCapacity(t *testing.T) {
	target := DefaultTarget
	ops := []Op{{Name: "heartbeat", PerSecond: 1000, Units: map[Family]Units{
		FamIdleShard: {Write: 2}, FamOwnerIndex: {Write: 1}, FamSessionItem: {Write: 1, Read: 1},
	}}}
	rows := scaleRows(ops, target, 10, 1)
	byFamily := map[Family]Row{}
	for _, r := range rows {
		byFamily[r.Family] = r
	}
	for f, want := range map[Family]float64{
		FamIdleShard:   200,                // 2 × 1000 / 10 shards
		FamOwnerIndex:  10,                 // 1 × 1000 × 10,000 / 1,000,000
		FamSessionItem: 1000.0 / 1_000_000, // one session's share
	} {
		if got := byFamily[f].WCU; got < want*0.999 || got > want*1.001 {
			t.Errorf("%s = %v WCU/s, want %v", f, got, want)
		}
	}
	if got, want := rows[0].Family, FamIdleShard; got != want {
		t.Errorf("busiest = %s, want %s", got, want)
	}
}

// TestRunCapacity runs the model on DynamoDB Local with a few calls of each
// operation: at the default target every key family stays under 80 % of
// DynamoDB's limits; at 10× the target the idle index's shards break first.
func TestRunCapacity(t *testing.T) {
	env := mustEnv(t)
	res, err := Run(t.Context(), env, Config{Ops: 3})
	if err != nil {
		t.Fatal(err)
	}
	if over := res.Over(0.8); len(over) != 0 {
		t.Errorf("over 80 %% at the target: %+v", over)
	}
	if len(res.Ops) == 0 || len(res.Rows) == 0 {
		t.Fatalf("nothing measured: %+v", res)
	}
	// A checkpoint on every automatic pause: its item and its lease index
	// are families of their own, and nothing falls in "other items".
	seen := map[Family]bool{}
	for _, r := range res.Rows {
		seen[r.Family] = true
	}
	if !seen[FamCheckpoint] || !seen[FamCheckpointLeaseShard] || seen[FamOther] {
		t.Errorf("families: checkpoint %v, checkpoint_lease %v, other items %v; want true, true, false",
			seen[FamCheckpoint], seen[FamCheckpointLeaseShard], seen[FamOther])
	}
	// A learned pause writes its user key's histogram item only: no
	// shared item takes a write per pause.
	learnedPause := false
	for _, op := range res.Ops {
		if op.Name != "pause by timer (idle), learned idle policy" {
			continue
		}
		learnedPause = true
		if u := op.Units[FamIdleUser]; u.Write <= 0 || op.Units[FamIdleAccount].Write != 0 || op.Units[FamIdleTemplate].Write != 0 {
			t.Errorf("learned pause units %+v: want a write on the user key's item only", op.Units)
		}
	}
	if !learnedPause {
		t.Error("no learned pause row")
	}
	// At 10× (the command's -scale 10): every rate ten times, the same
	// measured units per call.
	target := res.Target
	target.Scale = 10
	ops := make([]Op, len(res.Ops))
	for i, op := range res.Ops {
		op.PerSecond *= 10
		ops[i] = op
	}
	ten := Result{Rows: scaleRows(ops, target, res.Shards, 1)}
	if got, want := ten.Rows[0].Family, FamIdleShard; got != want || ten.Rows[0].Use <= 1 {
		t.Errorf("at 10×: busiest %s at %.0f %%, want %s over its limit", got, ten.Rows[0].Use*100, want)
	}
}

// mustEnv returns a bench.Env on the DynamoDB Local of $DYNAMODB_ENDPOINT
// (the test fails when it is unset), with the code under test's logs
// discarded and progress sent to the test log.
func mustEnv(tb testing.TB) *bench.Env {
	tb.Helper()
	dynamotest.MustClient(tb) // fails with instructions when DYNAMODB_ENDPOINT is unset
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		tb.Fatal(err)
	}
	env, err := bench.NewEnv(tb.Context(), os.Getenv(dynamotest.EndpointEnv), repo, io.Discard, testLog{tb})
	if err != nil {
		tb.Fatalf("bench env: %v", err)
	}
	return env
}

// testLog writes progress lines to the test log.
type testLog struct{ tb testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.tb.Log(string(p))
	return len(p), nil
}
