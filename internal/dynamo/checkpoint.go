package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoints (lifecycle.CheckpointStore, docs/CHECKPOINTS.md):
//
//	checkpoint  pk "SESSION#<session id>"  sk "CHECKPOINT#<checkpoint id>"
//
// in the partition of their session, so listing one session's checkpoints
// is one Query on its key (sk begins_with "CHECKPOINT#", descending: the
// ids are time ordered, so newest first), never a scan. A saving
// checkpoint with a lease also carries the keys of the sparse
// checkpoint_lease index (ckpt_lease_shard: the session's shard,
// ckpt_lease_due_at: the lease's expiry in epoch milliseconds), which the
// sweep reads for saves that died; leaving saving removes them (every
// write is a whole PutItem). Writes are conditional on the item's state
// and version, and carry a write_id so an SDK retry of a write whose
// answer was lost is told apart from a lost race, as for sessions. None is
// a session item (sk "SESSION"), so the outbox reads them only for the
// checkpoint events (internal/outbox).
const (
	checkpointSortPrefix = "CHECKPOINT#"
	// checkpointList names the table itself in cursors (a session's list).
	checkpointList = "checkpoints"
)

var _ lifecycle.CheckpointStore = (*Store)(nil)

// checkpointItem is a lifecycle.Checkpoint as stored.
type checkpointItem struct {
	PK              string            `dynamodbav:"pk"`
	SK              string            `dynamodbav:"sk"`
	ID              string            `dynamodbav:"id"`
	SessionID       string            `dynamodbav:"session_id"`
	AccountID       string            `dynamodbav:"account_id"`
	CreatedAt       string            `dynamodbav:"created_at,omitempty"` // timeLayout
	UpdatedAt       string            `dynamodbav:"updated_at,omitempty"`
	Label           string            `dynamodbav:"label,omitempty"`
	Metadata        map[string]string `dynamodbav:"metadata,omitempty"`
	Kind            string            `dynamodbav:"kind"`
	Keeps           string            `dynamodbav:"keeps,omitempty"`
	SizeBytes       int64             `dynamodbav:"size_bytes,omitempty"`
	State           string            `dynamodbav:"state"`
	Reason          string            `dynamodbav:"reason,omitempty"`
	ExpiresAt       string            `dynamodbav:"expires_at,omitempty"`
	Pinned          bool              `dynamodbav:"pinned,omitempty"`
	Trigger         string            `dynamodbav:"trigger,omitempty"`
	Provider        string            `dynamodbav:"provider,omitempty"`
	Template        string            `dynamodbav:"template,omitempty"`
	SourceSandboxID string            `dynamodbav:"source_sandbox_id,omitempty"`
	ProviderRef     string            `dynamodbav:"provider_ref,omitempty"`
	ArchiveKey      string            `dynamodbav:"archive_key,omitempty"`
	LeaseExpiresAt  string            `dynamodbav:"lease_expires_at,omitempty"`
	Version         int64             `dynamodbav:"version"`
	WriteID         string            `dynamodbav:"write_id,omitempty"`
	// The checkpoint_lease index's keys, while saving with a lease.
	LeaseShard *int   `dynamodbav:"ckpt_lease_shard,omitempty"`
	LeaseDueAt *int64 `dynamodbav:"ckpt_lease_due_at,omitempty"` // epoch milliseconds
}

func checkpointSort(id string) string { return checkpointSortPrefix + id }

func (st *Store) toCheckpointItem(c *lifecycle.Checkpoint) checkpointItem {
	it := checkpointItem{PK: sessionPK(c.SessionID), SK: checkpointSort(c.ID), ID: c.ID, SessionID: c.SessionID,
		AccountID: c.AccountID, CreatedAt: formatTime(c.CreatedAt), UpdatedAt: formatTime(c.UpdatedAt), Label: c.Label,
		Kind: string(c.Kind), Keeps: string(c.Keeps), SizeBytes: c.SizeBytes, State: string(c.State), Reason: c.Reason,
		ExpiresAt: formatTime(c.ExpiresAt), Pinned: c.Pinned, Trigger: string(c.Trigger), Provider: c.Provider,
		Template: c.Template, SourceSandboxID: c.SourceSandboxID, ProviderRef: c.ProviderRef, ArchiveKey: c.ArchiveKey,
		LeaseExpiresAt: formatTime(c.LeaseExpiresAt), Version: c.Version}
	if len(c.Metadata) > 0 {
		it.Metadata = c.Metadata
	}
	if due, ok := c.LeaseDue(); ok {
		shard, ms := ShardOf(c.SessionID, st.shards), dueMillis(due)
		it.LeaseShard, it.LeaseDueAt = &shard, &ms
	}
	return it
}

func (it checkpointItem) checkpoint() (*lifecycle.Checkpoint, error) {
	c := &lifecycle.Checkpoint{ID: it.ID, SessionID: it.SessionID, AccountID: it.AccountID, Label: it.Label,
		Metadata: it.Metadata, Kind: lifecycle.CheckpointKind(it.Kind), Keeps: lifecycle.Keeps(it.Keeps),
		SizeBytes: it.SizeBytes, State: lifecycle.CheckpointState(it.State), Reason: it.Reason, Pinned: it.Pinned,
		Trigger: lifecycle.CheckpointTrigger(it.Trigger), Provider: it.Provider, Template: it.Template,
		SourceSandboxID: it.SourceSandboxID, ProviderRef: it.ProviderRef, ArchiveKey: it.ArchiveKey, Version: it.Version}
	for _, f := range []struct {
		name string
		v    string
		dst  *time.Time
	}{{"created_at", it.CreatedAt, &c.CreatedAt}, {"updated_at", it.UpdatedAt, &c.UpdatedAt},
		{"expires_at", it.ExpiresAt, &c.ExpiresAt}, {"lease_expires_at", it.LeaseExpiresAt, &c.LeaseExpiresAt}} {
		var err error
		if *f.dst, err = parseTime(f.name, f.v); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", it.ID, err)
		}
	}
	return c, nil
}

func decodeCheckpoint(av map[string]types.AttributeValue) (*lifecycle.Checkpoint, error) {
	var it checkpointItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, storeError("decode checkpoint item: %w", err)
	}
	return it.checkpoint()
}

func errCheckpointNotFound(sessionID, id string) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "checkpoint %s of session %s not found", id, sessionID)
}

// putCheckpoint writes next under cond with a fresh write id. It returns
// the stored item when cond failed on an item this write did not store
// (nil, true when there was none), else the store's error.
func (st *Store) putCheckpoint(ctx context.Context, next *lifecycle.Checkpoint, cond expression.ConditionBuilder) (map[string]types.AttributeValue, bool, error) {
	it := st.toCheckpointItem(next)
	it.WriteID = newWriteID()
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, false, storeError("encode checkpoint: %w", err)
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, false, storeError("build condition: %w", err)
	}
	_, err = st.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(st.table), Item: av, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if wroteIt(failed.Item, it.WriteID) {
			return nil, false, nil // our own write, retried by the SDK after a lost answer
		}
		return failed.Item, true, nil
	}
	if err != nil {
		return nil, false, storeError("write checkpoint %s: %w", next.ID, err)
	}
	return nil, false, nil
}

// CreateCheckpoint writes c as a new checkpoint with version 1 and sets
// c.Version to 1. Errors: invalid, conflict when its id exists.
func (st *Store) CreateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint) error {
	if err := lifecycle.ValidStoredCheckpoint(c); err != nil {
		return err
	}
	next := c.Clone()
	next.Version = 1
	_, failed, err := st.putCheckpoint(ctx, next, expression.AttributeNotExists(expression.Name(tabledef.PartitionKey)))
	if failed {
		return lifecycle.Errorf(lifecycle.CodeConflict, "checkpoint %s already exists", c.ID)
	}
	if err != nil {
		return err
	}
	c.Version = 1
	return nil
}

// GetCheckpoint reads one checkpoint with a strongly consistent read.
// Errors: not_found.
func (st *Store) GetCheckpoint(ctx context.Context, sessionID, id string) (*lifecycle.Checkpoint, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table), Key: itemKey(sessionPK(sessionID), checkpointSort(id)), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, storeError("get checkpoint %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, errCheckpointNotFound(sessionID, id)
	}
	return decodeCheckpoint(out.Item)
}

// checkpointCond is the condition that the stored checkpoint has version
// (and state from, when set).
func checkpointCond(from lifecycle.CheckpointState, version int64) expression.ConditionBuilder {
	cond := expression.Name(attrVersion).Equal(expression.Value(version))
	if from != "" {
		cond = cond.And(expression.Name(attrState).Equal(expression.Value(string(from))))
	}
	return cond
}

// explainCheckpoint turns a failed condition into not_found or conflict.
func explainCheckpoint(c *lifecycle.Checkpoint, old map[string]types.AttributeValue) error {
	if len(old) == 0 {
		return errCheckpointNotFound(c.SessionID, c.ID)
	}
	return lifecycle.Errorf(lifecycle.CodeConflict, "checkpoint %s changed meanwhile", c.ID)
}

// UpdateCheckpoint writes c in full if the stored checkpoint has state
// from and version c.Version and the transition is allowed; on success
// c.Version is incremented. Errors: invalid, not_found, conflict.
func (st *Store) UpdateCheckpoint(ctx context.Context, c *lifecycle.Checkpoint, from lifecycle.CheckpointState) error {
	if err := lifecycle.ValidStoredCheckpoint(c); err != nil {
		return err
	}
	if c.State != from && !lifecycle.CanCheckpointTransition(from, c.State) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "a %s checkpoint cannot become %s", from, c.State)
	}
	next := c.Clone()
	next.Version = c.Version + 1
	old, failed, err := st.putCheckpoint(ctx, next, checkpointCond(from, c.Version))
	if failed {
		return explainCheckpoint(c, old)
	}
	if err != nil {
		return err
	}
	c.Version = next.Version
	return nil
}

// DeleteCheckpoint deletes c if the stored checkpoint has c.Version.
// Errors: not_found, conflict.
func (st *Store) DeleteCheckpoint(ctx context.Context, c *lifecycle.Checkpoint) error {
	expr, err := expression.NewBuilder().WithCondition(checkpointCond("", c.Version)).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(st.table), Key: itemKey(sessionPK(c.SessionID), checkpointSort(c.ID)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return explainCheckpoint(c, failed.Item)
	}
	if err != nil {
		return storeError("delete checkpoint %s: %w", c.ID, err)
	}
	return nil
}

// ListCheckpoints returns a session's checkpoints newest first, at most
// limit (1..100), after cursor: one strongly consistent Query of the
// session's partition (sk begins_with "CHECKPOINT#", descending). Errors:
// invalid (limit, a cursor not issued for this session's list).
func (st *Store) ListCheckpoints(ctx context.Context, sessionID, cursorText string, limit int) (lifecycle.CheckpointPage, error) {
	if limit < 1 || limit > maxListLimit {
		return lifecycle.CheckpointPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxListLimit)
	}
	var start map[string]types.AttributeValue
	if cursorText != "" {
		c, err := decodeCursor(cursorText, checkpointList)
		if err != nil {
			return lifecycle.CheckpointPage{}, err
		}
		if c.Key == nil || c.stringKey(tabledef.PartitionKey) != sessionPK(sessionID) {
			return lifecycle.CheckpointPage{}, errBadCursor()
		}
		start = c.startKey()
	}
	keyCond := expression.Key(tabledef.PartitionKey).Equal(expression.Value(sessionPK(sessionID))).
		And(expression.Key(tabledef.SortKey).BeginsWith(checkpointSortPrefix))
	items, more, err := st.query(ctx, checkpointList, keyCond, false, start, limit)
	if err != nil {
		return lifecycle.CheckpointPage{}, storeError("list checkpoints of session %s: %w", sessionID, err)
	}
	page, err := decodeCheckpoints(items)
	if err != nil {
		return lifecycle.CheckpointPage{}, err
	}
	if more {
		if page.Cursor, err = cursorAfter(checkpointList, 0, items[len(items)-1]); err != nil {
			return lifecycle.CheckpointPage{}, err
		}
	}
	return page, nil
}

// FindCheckpointsDue returns the saving checkpoints whose lease expires at
// or before q.Before, reading the checkpoint_lease index shard after shard
// (never a scan). Errors: invalid for a limit out of range or a foreign
// cursor.
func (st *Store) FindCheckpointsDue(ctx context.Context, q lifecycle.CheckpointDueQuery) (lifecycle.CheckpointPage, error) {
	if q.Limit < 1 || q.Limit > maxDueLimit {
		return lifecycle.CheckpointPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxDueLimit)
	}
	items, next, err := st.queryDue(ctx, dueIndex{name: tabledef.IndexCheckpointLease, shardAttr: tabledef.AttrCheckpointShard,
		dueAttr: tabledef.AttrCheckpointDue}, q.Cursor, q.Before, q.Limit)
	if err != nil {
		return lifecycle.CheckpointPage{}, err
	}
	page, err := decodeCheckpoints(items)
	if err != nil {
		return lifecycle.CheckpointPage{}, err
	}
	kept := page.Checkpoints[:0]
	for _, c := range page.Checkpoints {
		if due, ok := c.LeaseDue(); ok && !due.After(q.Before) {
			kept = append(kept, c)
		}
	}
	return lifecycle.CheckpointPage{Checkpoints: kept, Cursor: next}, nil
}

func decodeCheckpoints(items []map[string]types.AttributeValue) (lifecycle.CheckpointPage, error) {
	page := lifecycle.CheckpointPage{Checkpoints: make([]*lifecycle.Checkpoint, 0, len(items))}
	for _, av := range items {
		c, err := decodeCheckpoint(av)
		if err != nil {
			return lifecycle.CheckpointPage{}, err
		}
		page.Checkpoints = append(page.Checkpoints, c)
	}
	return page, nil
}
