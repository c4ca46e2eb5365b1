package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Finding due sessions: FindDue reads the due indexes (pause deadlines,
// expiries) for the sessions whose time falls before a bound.

// dueIndex names the table index and key attributes of a lifecycle.DueIndex
// and the exact due time its sort key holds in milliseconds. Two
// lifecycle indexes share the table's paused index (pausedIndexKey):
// cursor names the one a cursor was issued for, offset is subtracted
// from the due time in its sort key, and from0 bounds its keys below by 0.
type dueIndex struct {
	name, shardAttr, dueAttr string
	due                      func(*lifecycle.Session) time.Time
	cursor                   string
	offset                   int64
	from0                    bool
}

// DormantOffset (milliseconds) is subtracted from PausedAt in the sort key of a paused
// session without a tier deadline (lifecycle.IndexPaused), so that those
// keys are all negative and the tier deadlines (lifecycle.IndexTier) all
// positive: one table index serves both, and neither query reads the
// other's sessions. 10^14 ms is about 3,170 years.
const DormantOffset int64 = 100_000_000_000_000

// pausedIndexKey returns the sort key of s in the table's paused index:
// its next tier deadline (lifecycle.Session.NextTier) when it has one,
// else PausedAt - DormantOffset while paused (lifecycle.Session.DormantDue),
// and whether it belongs to the index at all.
func pausedIndexKey(s *lifecycle.Session) (int64, bool) {
	if to, at := s.NextTier(); to != "" {
		return max(dueMillis(at), 0), true
	}
	if at, ok := s.DormantDue(); ok {
		return dueMillis(at) - DormantOffset, true
	}
	return 0, false
}

// cursorScopes maps the cursor scopes of the queries that share a table
// index with another (dueIndex.cursor) to that index, whose keys their
// cursors hold.
var cursorScopes = map[string]string{"tier": tabledef.IndexPaused, "rekey": tabledef.IndexPaused}

var dueIndexes = map[lifecycle.DueIndex]dueIndex{
	lifecycle.IndexIdle: {name: tabledef.IndexIdle, shardAttr: tabledef.AttrIdleShard, dueAttr: tabledef.AttrIdleDue,
		due: (*lifecycle.Session).PauseDeadline},
	lifecycle.IndexLease: {name: tabledef.IndexLease, shardAttr: tabledef.AttrLeaseShard, dueAttr: tabledef.AttrLeaseDue,
		due: func(s *lifecycle.Session) time.Time { d, _ := s.LeaseDue(); return d }},
	lifecycle.IndexPaused: {name: tabledef.IndexPaused, shardAttr: tabledef.AttrPausedShard, dueAttr: tabledef.AttrPausedDue,
		due: func(s *lifecycle.Session) time.Time { d, _ := s.DormantDue(); return d }, offset: DormantOffset},
	lifecycle.IndexTier: {name: tabledef.IndexPaused, shardAttr: tabledef.AttrPausedShard, dueAttr: tabledef.AttrPausedDue,
		due: func(s *lifecycle.Session) time.Time { _, at := s.NextTier(); return at }, cursor: "tier", from0: true},
}

// FindDue returns sessions of the due index q.Index whose due time is at or
// before q.Before, querying the index's shards 0..Config.Shards-1 in turn
// (never a scan), in due order within a shard. A page holds at most q.Limit
// (1..1000) sessions and may hold fewer; its Cursor is "" only when every
// shard is exhausted. The cursor holds the shard and the last key read, so
// callers should pass the same Before on every page. Errors: invalid for an
// unknown index, a limit out of range or a cursor this store did not issue
// for the index ("cursor is not valid").
func (st *Store) FindDue(ctx context.Context, q lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	ix, ok := dueIndexes[q.Index]
	if !ok {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "unknown due index %q", q.Index)
	}
	if q.Limit < 1 || q.Limit > maxDueLimit {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxDueLimit)
	}
	items, next, err := st.queryDue(ctx, ix, q.Cursor, q.Before, q.Limit)
	if err != nil {
		return lifecycle.SessionPage{}, err
	}
	return dueInTime(ix, items, q.Before, next)
}

// queryDue reads up to limit items of the sharded due index name (shard
// attribute shardAttr, due attribute dueAttr in epoch milliseconds) due at
// or before before, from cursorText on, shard after shard, and returns
// them with the cursor of the next page ("" when every shard is
// exhausted). Errors: invalid for a cursor this store did not issue for
// the index, the store's.
func (st *Store) queryDue(ctx context.Context, ix dueIndex, cursorText string, before time.Time,
	limit int) ([]map[string]types.AttributeValue, string, error) {
	name, shardAttr, dueAttr, scope := ix.name, ix.shardAttr, ix.dueAttr, ix.name
	if ix.cursor != "" {
		scope = ix.cursor
	}
	c := cursor{Index: scope}
	if cursorText != "" {
		var err error
		if c, err = decodeCursor(cursorText, scope); err != nil {
			return nil, "", err
		}
		if c.Shard < 0 || c.Shard >= st.shards {
			return nil, "", errBadCursor()
		}
		if n, ok := c.numberKey(shardAttr); c.Key != nil && (!ok || n != int64(c.Shard)) {
			return nil, "", errBadCursor()
		}
	}
	bound := dueMillis(before) - ix.offset
	var items []map[string]types.AttributeValue
	for shard, start := c.Shard, c.startKey(); shard < st.shards; shard, start = shard+1, nil {
		due := expression.Key(dueAttr).LessThanEqual(expression.Value(bound))
		if ix.from0 {
			due = expression.Key(dueAttr).Between(expression.Value(0), expression.Value(max(bound, 0)))
		}
		keyCond := expression.Key(shardAttr).Equal(expression.Value(shard)).And(due)
		got, more, err := st.query(ctx, name, keyCond, true, start, limit-len(items))
		if err != nil {
			return nil, "", storeError("find due items in %s shard %d: %w", name, shard, err)
		}
		items = append(items, got...)
		next := ""
		switch {
		case more:
			next, err = cursorAfter(scope, shard, got[len(got)-1])
		case len(items) == limit && shard+1 < st.shards:
			// Full page at the end of a shard: the next page starts with
			// the next shard (it may turn out empty).
			next, err = cursor{Index: scope, Shard: shard + 1}.encode()
		}
		if err != nil {
			return nil, "", err
		}
		if next != "" || len(items) == limit {
			return items, next, nil
		}
	}
	return items, "", nil
}

// dueInTime decodes a FindDue page and drops the sessions that the index
// holds in Before's millisecond but are due after Before.
func dueInTime(ix dueIndex, items []map[string]types.AttributeValue, before time.Time, next string) (lifecycle.SessionPage, error) {
	page, err := decodePage(items)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("find due sessions in %s: %w", ix.name, err)
	}
	kept := page.Sessions[:0]
	for _, s := range page.Sessions {
		if !ix.due(s).After(before) {
			kept = append(kept, s)
		}
	}
	return lifecycle.SessionPage{Sessions: kept, Cursor: next}, nil
}
