package bench

import (
	"strings"
	"testing"
)

// TestRunCheckpoints runs the checkpoint figure on DynamoDB Local with
// short latencies, two rounds per model (every fake and the local
// provider), and checks what it reports happened: every round made a
// checkpoint and restored it, no sooner than the provider allows, and the
// section shows each row with its verdict.
func TestRunCheckpoints(t *testing.T) {
	env := MustEnv(t)
	const rounds = 2
	models := []CheckpointModel{
		{Name: "e2b", Provider: "e2b", SnapshotMS: 150, CreateMS: 100, BootMS: 100, KeepsMemory: true},
		{Name: "vercel", Provider: "vercel", SnapshotMS: 150, CreateMS: 100, BootMS: 100},
		{Name: "daytona", Provider: "daytona", SnapshotMS: 150, CreateMS: 100, BootMS: 100},
	}
	res, err := RunCheckpoints(t.Context(), env, CheckpointsConfig{Rounds: rounds, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(models)+1 {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(models)+1)
	}
	for _, r := range res.Rows {
		t.Run(r.Provider, func(t *testing.T) {
			if r.Failed != 0 || r.Checkpoint.N != rounds || r.Restore.N != rounds {
				t.Errorf("failed %d, samples %d and %d; want 0, %d and %d", r.Failed, r.Checkpoint.N, r.Restore.N, rounds, rounds)
			}
			wantKind := "snapshot"
			if r.Provider == "local" {
				wantKind = "archive"
			}
			if r.Kind != wantKind {
				t.Errorf("kind %q, want %q", r.Kind, wantKind)
			}
			if r.Provider != "local" && (r.Checkpoint.P50MS < r.SnapshotMS || r.Restore.P50MS < r.RestoreFloorMS) {
				t.Errorf("checkpoint p50 %.0f ms, restore p50 %.0f ms: under the model's %.0f and %.0f ms",
					r.Checkpoint.P50MS, r.Restore.P50MS, r.SnapshotMS, r.RestoreFloorMS)
			}
			if r.RestoreFloorMS <= 0 || r.CheckpointFloorMS <= 0 {
				t.Errorf("floors %.0f and %.0f ms, want both measured or modelled", r.CheckpointFloorMS, r.RestoreFloorMS)
			}
		})
	}
	var b strings.Builder
	(&Report{}).checkpointsSection(&b, &res)
	if !strings.Contains(b.String(), "| daytona | snapshot |") || !strings.Contains(b.String(), "| 200 |") {
		t.Errorf("the section lacks the daytona row or its restore floor (create + boot, 200 ms):\n%s", b.String())
	}
}
