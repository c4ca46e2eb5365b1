package dynamo

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// ReshardResult counts what Reshard did.
type ReshardResult struct {
	// Scanned is how many session items carry a due-index key.
	Scanned int
	// Moved is how many of them were rewritten into their shard at the
	// store's count; Raced how many changed under the backfill (the write
	// that won put them in the right shard itself).
	Moved, Raced int
}

// Reshard is the backfill that goes with a change of Config.Shards on a
// table with data (docs/CAPACITY.md "Changing the shard count"): it scans
// the table in segments parallel segments (1..64; 0: 4) and rewrites the
// shard attributes (idle_shard, lease_shard, paused_shard) of every session
// item whose stored shard is not ShardOf(id, Config.Shards). Each rewrite is
// conditional on the item's version, so a session write landing meanwhile
// wins (it stores the right shard itself); nothing else changes, so the
// outbox publishes no event for it. Running it again finds nothing to move.
// Errors: unavailable when the table cannot be read or written.
func (st *Store) Reshard(ctx context.Context, segments int) (ReshardResult, error) {
	filter := expression.BeginsWith(expression.Name(tabledef.PartitionKey), sessionPrefix).
		And(expression.Name(tabledef.SortKey).Equal(expression.Value(sessionSort))).
		And(expression.Or(expression.AttributeExists(expression.Name(tabledef.AttrIdleShard)),
			expression.AttributeExists(expression.Name(tabledef.AttrLeaseShard)),
			expression.AttributeExists(expression.Name(tabledef.AttrPausedShard))))
	proj := expression.NamesList(expression.Name(tabledef.PartitionKey), expression.Name(tabledef.SortKey),
		expression.Name(attrVersion), expression.Name(tabledef.AttrIdleShard),
		expression.Name(tabledef.AttrLeaseShard), expression.Name(tabledef.AttrPausedShard))
	expr, err := expression.NewBuilder().WithFilter(filter).WithProjection(proj).Build()
	if err != nil {
		return ReshardResult{}, storeError("reshard: build the scan: %w", err)
	}
	segments = scanSegments(segments)
	results := make([]ReshardResult, segments)
	err = st.scan(ctx, segments, "reshard", dynamodb.ScanInput{
		FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, func(ctx context.Context, seg int, item map[string]types.AttributeValue) error {
		results[seg].Scanned++
		moved, raced, err := st.reshardItem(ctx, item)
		if moved {
			results[seg].Moved++
		}
		if raced {
			results[seg].Raced++
		}
		return err
	})
	var total ReshardResult
	for _, r := range results {
		total.Scanned += r.Scanned
		total.Moved += r.Moved
		total.Raced += r.Raced
	}
	return total, err
}

// scanSegments is a backfill's count of parallel scan segments: 1..64, 4
// for 0 or less.
func scanSegments(n int) int {
	if n <= 0 {
		return 4
	}
	return min(n, 64)
}

// scan reads the whole table in segments parallel segments with in's
// filter and projection, calling each for every item from its segment's
// goroutine (seg 0..segments-1); the first error stops every segment.
// Errors: each's, or unavailable when the table cannot be read (what names
// the backfill).
func (st *Store) scan(ctx context.Context, segments int, what string, in dynamodb.ScanInput,
	each func(ctx context.Context, seg int, item map[string]types.AttributeValue) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for seg := range segments {
		g.Go(func() error {
			input := in
			input.TableName, input.Segment, input.TotalSegments = aws.String(st.table), aws.Int32(int32(seg)), aws.Int32(int32(segments))
			p := dynamodb.NewScanPaginator(st.client, &input)
			for p.HasMorePages() {
				page, err := p.NextPage(gctx)
				if err != nil {
					return storeError("%s: scan segment %d: %w", what, seg, err)
				}
				for _, item := range page.Items {
					if err := each(gctx, seg, item); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// reshardItem moves one scanned session item into its shard when it is not
// there: it reports whether it moved it, or lost the race to a session
// write.
func (st *Store) reshardItem(ctx context.Context, item map[string]types.AttributeValue) (moved, raced bool, err error) {
	pk, _ := item[tabledef.PartitionKey].(*types.AttributeValueMemberS)
	version, _ := item[attrVersion].(*types.AttributeValueMemberN)
	if pk == nil || version == nil {
		return false, false, nil
	}
	id := strings.TrimPrefix(pk.Value, sessionPrefix)
	want := ShardOf(id, st.shards)
	var update expression.UpdateBuilder
	n := 0
	for _, attr := range []string{tabledef.AttrIdleShard, tabledef.AttrLeaseShard, tabledef.AttrPausedShard} {
		v, ok := item[attr].(*types.AttributeValueMemberN)
		if !ok {
			continue
		}
		if got, err := strconv.Atoi(v.Value); err == nil && got == want {
			continue
		}
		update = update.Set(expression.Name(attr), expression.Value(want))
		n++
	}
	if n == 0 {
		return false, false, nil
	}
	return st.updateAtVersion(ctx, pk.Value, version, update, "reshard "+id)
}

// updateAtVersion applies update to the session item whose partition key
// is pk while its version is still version (the one read; the write does
// not move it, so no event follows and an operation holding that version
// still commits). It reports whether it applied, or lost the race to a
// write since the read. Errors: the build's and the table's, naming what.
func (st *Store) updateAtVersion(ctx context.Context, pk string, version any, update expression.UpdateBuilder, what string) (applied, raced bool, err error) {
	cond := expression.Name(attrVersion).Equal(expression.Value(version))
	expr, err := expression.NewBuilder().WithUpdate(update).WithCondition(cond).Build()
	if err != nil {
		return false, false, storeError("%s: build: %w", what, err)
	}
	_, err = st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: itemKey(pk, sessionSort),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return false, true, nil
	case err != nil:
		return false, false, storeError("%s: %w", what, err)
	}
	return true, false, nil
}

// Shards returns the store's due-index shard count (Config.Shards).
func (st *Store) Shards() int { return st.shards }

// ShardSkew returns how much busier the busiest due-index shard is than
// the mean one, for sessions random session ids (at most 200,000 drawn):
// the capacity model's factor for a shard's share of the writes.
func (st *Store) ShardSkew(sessions int) float64 {
	return ShardSkew(sessions, st.shards)
}

// ShardSkew is Store.ShardSkew for a shard count.
func ShardSkew(sessions, shards int) float64 {
	n := min(max(sessions, shards), 200_000)
	counts := make([]int, shards)
	for range n {
		counts[ShardOf(lifecycle.NewSessionID(), shards)]++
	}
	busiest := 0
	for _, c := range counts {
		busiest = max(busiest, c)
	}
	return float64(busiest) / (float64(n) / float64(shards))
}
