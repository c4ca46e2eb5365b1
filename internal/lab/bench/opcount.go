package bench

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sandmanhq/sandman/internal/dynamo"
)

// targetHeader is the header that names a DynamoDB operation on the wire,
// e.g. "X-Amz-Target: DynamoDB_20120810.Scan".
const (
	targetHeader = "X-Amz-Target"
	targetPrefix = "DynamoDB_20120810."
)

// DynamoDB operation names as OpCounter reports them.
const (
	OpScan           = "Scan"
	OpQuery          = "Query"
	OpGetItem        = "GetItem"
	OpPutItem        = "PutItem"
	OpUpdateItem     = "UpdateItem"
	OpDeleteItem     = "DeleteItem"
	OpBatchWriteItem = "BatchWriteItem"
	// OpTransactWriteItems: a session write that takes or releases a
	// running slot (the quota counter moves with it, lifecycle.SlotCounter).
	OpTransactWriteItems = "TransactWriteItems"
)

// OpCounter counts DynamoDB requests by operation name, read from the
// X-Amz-Target header of each HTTP request the SDK sends. It counts what
// went on the wire: an SDK retry is a second request. It is safe for
// concurrent use.
type OpCounter struct {
	mu     sync.Mutex
	counts map[string]int64
}

// NewOpCounter returns a counter at zero.
func NewOpCounter() *OpCounter { return &OpCounter{counts: map[string]int64{}} }

// Wrap returns an SDK HTTP client that counts every request and then sends
// it through next.
func (c *OpCounter) Wrap(next dynamodb.HTTPClient) dynamodb.HTTPClient {
	return countingClient{next: next, counter: c}
}

// Add counts one request of op.
func (c *OpCounter) Add(op string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[op]++
}

// Count returns how many requests of op were counted.
func (c *OpCounter) Count(op string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Snapshot returns every count by operation name.
func (c *OpCounter) Snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset sets every count back to zero.
func (c *OpCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// Since returns the counts of after minus those of before, dropping zeros:
// the operations issued between two snapshots.
func Since(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for op, n := range after {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// countingClient is the HTTP client OpCounter.Wrap returns.
type countingClient struct {
	next    dynamodb.HTTPClient
	counter *OpCounter
}

// Do counts req by its X-Amz-Target and sends it.
func (cc countingClient) Do(req *http.Request) (*http.Response, error) {
	cc.counter.Add(operation(req.Header))
	return cc.next.Do(req)
}

// operation returns the DynamoDB operation a request's headers name
// (X-Amz-Target), "unknown" when they name none.
func operation(h http.Header) string {
	if op := strings.TrimPrefix(h.Get(targetHeader), targetPrefix); op != "" {
		return op
	}
	return "unknown"
}

// NewCountingClient returns a DynamoDB Local client built exactly as
// dynamo.NewClient builds it for endpoint, whose requests counter counts.
func NewCountingClient(ctx context.Context, endpoint string, counter *OpCounter) (*dynamodb.Client, error) {
	base, err := dynamo.NewClient(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("dynamodb client for %s: %w", endpoint, err)
	}
	return dynamodb.New(base.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = counter.Wrap(o.HTTPClient)
	}), nil
}
