package localstack_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestInvokeSweep: `sandman invoke -fn sweep` takes both of the
// function's events, as in AWS: the schedule's (a sweep, answering its
// summary) and a batch of the pool refill queue (answering the batch's
// failures: none, its pool is not configured and its other body is not a
// request).
func TestInvokeSweep(t *testing.T) {
	t.Setenv(envnames.Table, dynamotest.MustTable(t)) // needs DYNAMODB_ENDPOINT
	t.Setenv(envnames.StateDir, t.TempDir())
	t.Setenv(envnames.Provider, fake.DefaultName)
	for fixture, key := range map[string]string{"scheduled/sweep.json": "candidates", "queue/poolrefill.json": "batchItemFailures"} {
		var out bytes.Buffer
		path := filepath.Join("..", "..", "events", fixture)
		if err := localstack.InvokeCommand(t.Context(), []string{"-fn", "sweep", "-event", path}, &out); err != nil {
			t.Fatalf("invoke sweep %s: %v", fixture, err)
		}
		var resp map[string]any
		if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
			t.Fatalf("invoke output %s: %v", out.Bytes(), err)
		}
		if _, ok := resp[key]; !ok {
			t.Errorf("invoke sweep %s answered %s, want its %q", fixture, out.Bytes(), key)
		}
	}
}
