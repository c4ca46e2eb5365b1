package dynamo

import (
	"context"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The paused index's backfill for the retention tiers. Before the tiers,
// a paused session's key in the paused index was its PausedAt (epoch ms,
// positive); now the index holds two ranges (pausedIndexKey): the tier
// deadlines at 0 and above, and the dormancy keys below 0 (PausedAt -
// DormantOffset). A session written before the tiers keeps its old key
// until its next write, so it sits in the tier range, where the sweep's
// tier phase finds it "due" and rewrites it (lifecycle ApplyTier's rekey),
// and the dormancy sweep, which reads only the range below 0, does not
// see it until then. RekeyPausedIndex rewrites those keys ahead of the
// sweep, one page at a time.

// RekeyResult counts what one page of RekeyPausedIndex did.
type RekeyResult struct {
	// Read is how many items of the tier range (keys 0 and above) the page
	// read; Rekeyed how many of them were rewritten under the key their
	// session has now (a dormancy key, a tier deadline, or out of the
	// index), Raced how many a session write changed meanwhile (the write
	// that won keyed the session itself). Read - Rekeyed - Raced were
	// keyed right already.
	Read, Rekeyed, Raced int
	// Cursor is where the next page starts (pass it back to go on, also
	// from another process after a crash); "" when every shard is done.
	Cursor string
}

// rekeyHorizon bounds the tier range from above: every key.
var rekeyHorizon = time.UnixMilli(math.MaxInt64)

// rekeyIndex is the tier range of the paused index, with a cursor of its
// own (a sweep's tier cursor is not one of the backfill's).
var rekeyIndex = func() dueIndex {
	ix := dueIndexes[lifecycle.IndexTier]
	ix.cursor = "rekey"
	return ix
}()

// RekeyPausedIndex reads one page of at most limit (1..1000) items of the
// paused index's tier range (keys 0 and above), from cursor ("" to
// start), with a Query per shard in turn (never a scan: the range holds
// only the paused and archived sessions that have a tier deadline or an
// old key), and rewrites each item whose stored key is not the one its
// session has now (pausedIndexKey; out of the index: the key removed).
// Each rewrite sets only the paused index's attributes, conditional on the
// version the page read, so a session write landing meanwhile wins (it
// stores the right key itself) and the outbox publishes no event (the
// version does not move). An item keyed right is left alone, so running
// it again, or two at once, is safe: the second finds nothing to do.
// Errors: invalid (limit, a cursor it did not issue), unavailable when the
// table cannot be read or written.
func (st *Store) RekeyPausedIndex(ctx context.Context, cursor string, limit int) (RekeyResult, error) {
	if limit < 1 || limit > maxDueLimit {
		return RekeyResult{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxDueLimit)
	}
	items, next, err := st.queryDue(ctx, rekeyIndex, cursor, rekeyHorizon, limit)
	if err != nil {
		return RekeyResult{}, err
	}
	res := RekeyResult{Cursor: next}
	for _, item := range items {
		res.Read++
		rekeyed, raced, err := st.rekeyItem(ctx, item)
		if err != nil {
			return res, err
		}
		if rekeyed {
			res.Rekeyed++
		}
		if raced {
			res.Raced++
		}
	}
	return res, nil
}

// rekeyItem rewrites one item's paused-index key when it is not the one
// its session has now: it reports whether it did, or lost the race to a
// session write.
func (st *Store) rekeyItem(ctx context.Context, item map[string]types.AttributeValue) (rekeyed, raced bool, err error) {
	var it sessionItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return false, false, storeError("rekey the paused index: decode: %w", err)
	}
	s, err := it.session()
	if err != nil {
		return false, false, storeError("rekey the paused index: %w", err)
	}
	shard := ShardOf(s.ID, st.shards)
	want, in := pausedIndexKey(s)
	if in && it.PausedDueAt != nil && *it.PausedDueAt == want && it.PausedShard != nil && *it.PausedShard == shard {
		return false, false, nil
	}
	if st.beforeRekey != nil {
		st.beforeRekey(s.ID)
	}
	var update expression.UpdateBuilder
	if in {
		update = update.Set(expression.Name(tabledef.AttrPausedShard), expression.Value(shard)).
			Set(expression.Name(tabledef.AttrPausedDue), expression.Value(want))
	} else {
		update = update.Remove(expression.Name(tabledef.AttrPausedShard)).Remove(expression.Name(tabledef.AttrPausedDue))
	}
	return st.updateAtVersion(ctx, sessionPrefix+s.ID, it.Version, update, "rekey "+s.ID)
}
