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
	c := cursor{Index: ix.name}
	if q.Cursor != "" {
		var err error
		if c, err = decodeCursor(q.Cursor, ix.name); err != nil {
			return lifecycle.SessionPage{}, err
		}
		if c.Shard < 0 || c.Shard >= st.shards {
			return lifecycle.SessionPage{}, errBadCursor()
		}
		if n, ok := c.numberKey(ix.shardAttr); c.Key != nil && (!ok || n != int64(c.Shard)) {
			return lifecycle.SessionPage{}, errBadCursor()
		}
	}
	before := dueMillis(q.Before)
	var items []map[string]types.AttributeValue
	for shard, start := c.Shard, c.startKey(); shard < st.shards; shard, start = shard+1, nil {
		keyCond := expression.Key(ix.shardAttr).Equal(expression.Value(shard)).
			And(expression.Key(ix.dueAttr).LessThanEqual(expression.Value(before)))
		need := q.Limit - len(items)
		got, more, err := st.query(ctx, ix.name, keyCond, true, start, need)
		if err != nil {
			return lifecycle.SessionPage{}, storeError("find due sessions in %s shard %d: %w", ix.name, shard, err)
		}
		items = append(items, got...)
		next := ""
		switch {
		case more:
			next, err = cursorAfter(ix.name, shard, got[len(got)-1])
		case len(items) == q.Limit && shard+1 < st.shards:
			// Full page at the end of a shard: the next page starts with
			// the next shard (it may turn out empty).
			next, err = cursor{Index: ix.name, Shard: shard + 1}.encode()
		}
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		if next != "" || len(items) == q.Limit {
			return dueInTime(ix, items, q.Before, next)
		}
	}
	return dueInTime(ix, items, q.Before, "")
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
