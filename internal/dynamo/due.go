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
// and the exact due time its sort key holds in milliseconds.
type dueIndex struct {
	name, shardAttr, dueAttr string
	due                      func(*lifecycle.Session) time.Time
}

var dueIndexes = map[lifecycle.DueIndex]dueIndex{
	lifecycle.IndexIdle: {tabledef.IndexIdle, tabledef.AttrIdleShard, tabledef.AttrIdleDue,
		(*lifecycle.Session).PauseDeadline},
	lifecycle.IndexLease: {tabledef.IndexLease, tabledef.AttrLeaseShard, tabledef.AttrLeaseDue,
		func(s *lifecycle.Session) time.Time { d, _ := s.LeaseDue(); return d }},
	lifecycle.IndexPaused: {tabledef.IndexPaused, tabledef.AttrPausedShard, tabledef.AttrPausedDue,
		func(s *lifecycle.Session) time.Time { return s.PausedAt }},
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
	items, next, err := st.queryDue(ctx, ix.name, ix.shardAttr, ix.dueAttr, q.Cursor, q.Before, q.Limit)
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
func (st *Store) queryDue(ctx context.Context, name, shardAttr, dueAttr, cursorText string, before time.Time,
	limit int) ([]map[string]types.AttributeValue, string, error) {
	c := cursor{Index: name}
	if cursorText != "" {
		var err error
		if c, err = decodeCursor(cursorText, name); err != nil {
			return nil, "", err
		}
		if c.Shard < 0 || c.Shard >= st.shards {
			return nil, "", errBadCursor()
		}
		if n, ok := c.numberKey(shardAttr); c.Key != nil && (!ok || n != int64(c.Shard)) {
			return nil, "", errBadCursor()
		}
	}
	bound := dueMillis(before)
	var items []map[string]types.AttributeValue
	for shard, start := c.Shard, c.startKey(); shard < st.shards; shard, start = shard+1, nil {
		keyCond := expression.Key(shardAttr).Equal(expression.Value(shard)).
			And(expression.Key(dueAttr).LessThanEqual(expression.Value(bound)))
		got, more, err := st.query(ctx, name, keyCond, true, start, limit-len(items))
		if err != nil {
			return nil, "", storeError("find due items in %s shard %d: %w", name, shard, err)
		}
		items = append(items, got...)
		next := ""
		switch {
		case more:
			next, err = cursorAfter(name, shard, got[len(got)-1])
		case len(items) == limit && shard+1 < st.shards:
			// Full page at the end of a shard: the next page starts with
			// the next shard (it may turn out empty).
			next, err = cursor{Index: name, Shard: shard + 1}.encode()
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
