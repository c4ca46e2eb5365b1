package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Warm pools (lifecycle.PoolStore, docs/POOLS.md):
//
//	spare          pk "POOL#<pool id>"  sk "SPARE#<sandbox id>"    status making|ready, version, times
//	claimed marker pk "POOL#<pool id>"  sk "CLAIMED#<sandbox id>"  session_id, ttl (lifecycle.ClaimedMarkerTTL)
//	pool status    pk "POOL#<pool id>"  sk "STATUS"                claims, hits, misses, lost, failed, running_ms, paused_ms (ADD);
//	                                                                health fields and health_version (SET)
//
// None of them carries a session's attributes or index keys, so a spare is
// never listed as a session, never in the by_owner, by_sandbox or due
// indexes, and never in the stream publisher's transitions (it reads
// session items only). A claim is one TransactWriteItems: delete the spare
// (status ready, its version), put the claimed marker, put the session
// (attribute_not_exists) and, with a running-slot counter, ADD 1 to the
// account's counter under its limit. All or nothing.
const (
	poolPrefix    = "POOL#"
	spareSort     = "SPARE#"
	claimedSort   = "CLAIMED#"
	poolStatusKey = "STATUS"
	attrStatus    = "status"
)

var _ lifecycle.PoolStore = (*Store)(nil)

// spareItem is a lifecycle.Spare as stored.
type spareItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	PoolID     string `dynamodbav:"pool_id"`
	SandboxID  string `dynamodbav:"sandbox_id"`
	Provider   string `dynamodbav:"provider,omitempty"`
	Status     string `dynamodbav:"status"`
	Version    int64  `dynamodbav:"version"`
	CreatedAt  string `dynamodbav:"created_at,omitempty"` // timeLayout
	UpdatedAt  string `dynamodbav:"updated_at,omitempty"`
	ReadyAt    string `dynamodbav:"ready_at,omitempty"`
	PreviewURL string `dynamodbav:"preview_url,omitempty"`
	ExpiresAt  string `dynamodbav:"expires_at,omitempty"`
	SessionID  string `dynamodbav:"session_id,omitempty"`
	TTL        int64  `dynamodbav:"ttl,omitempty"` // claimed markers only, epoch seconds
}

func poolPK(poolID string) string { return poolPrefix + poolID }

func toSpareItem(sp *lifecycle.Spare) spareItem {
	sk := spareSort + sp.SandboxID
	if sp.Status == lifecycle.SpareClaimed {
		sk = claimedSort + sp.SandboxID
	}
	return spareItem{PK: poolPK(sp.PoolID), SK: sk, PoolID: sp.PoolID, SandboxID: sp.SandboxID, Provider: sp.Provider,
		Status: string(sp.Status), Version: sp.Version, CreatedAt: formatTime(sp.CreatedAt), UpdatedAt: formatTime(sp.UpdatedAt),
		ReadyAt: formatTime(sp.ReadyAt), PreviewURL: sp.PreviewURL, ExpiresAt: formatTime(sp.ExpiresAt), SessionID: sp.SessionID}
}

func (it spareItem) spare() (*lifecycle.Spare, error) {
	sp := &lifecycle.Spare{PoolID: it.PoolID, SandboxID: it.SandboxID, Provider: it.Provider,
		Status: lifecycle.SpareStatus(it.Status), Version: it.Version, PreviewURL: it.PreviewURL, SessionID: it.SessionID}
	for _, f := range []struct {
		name string
		v    string
		dst  *time.Time
	}{{"created_at", it.CreatedAt, &sp.CreatedAt}, {"updated_at", it.UpdatedAt, &sp.UpdatedAt},
		{"ready_at", it.ReadyAt, &sp.ReadyAt}, {"expires_at", it.ExpiresAt, &sp.ExpiresAt}} {
		var err error
		if *f.dst, err = parseTime(f.name, f.v); err != nil {
			return nil, fmt.Errorf("spare %s: %w", it.SandboxID, err)
		}
	}
	return sp, nil
}

// spareCond is the condition that the stored spare has status and version.
func spareCond(status lifecycle.SpareStatus, version int64) expression.ConditionBuilder {
	return expression.Name(attrStatus).Equal(expression.Value(string(status))).
		And(expression.Name(attrVersion).Equal(expression.Value(version)))
}

// explainSpare turns a failed spare condition into not_found or conflict.
func explainSpare(sp *lifecycle.Spare, old map[string]types.AttributeValue) error {
	if len(old) == 0 {
		return lifecycle.Errorf(lifecycle.CodeNotFound, "spare %s of pool %s not found", sp.SandboxID, sp.PoolID)
	}
	return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s of pool %s changed meanwhile", sp.SandboxID, sp.PoolID)
}

// PutSpare writes a new spare with version 1. Errors: invalid, conflict
// when it exists.
func (st *Store) PutSpare(ctx context.Context, sp *lifecycle.Spare) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	next := sp.Clone()
	next.Version = 1
	err := st.put(ctx, toSpareItem(next), expression.AttributeNotExists(expression.Name(tabledef.PartitionKey)), false)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s of pool %s exists", sp.SandboxID, sp.PoolID)
	}
	if err != nil {
		return storeError("put spare %s: %w", sp.SandboxID, err)
	}
	sp.Version = 1
	return nil
}

// UpdateSpare writes sp in full if the stored spare has status from and
// version sp.Version. Errors: invalid, not_found, conflict.
func (st *Store) UpdateSpare(ctx context.Context, sp *lifecycle.Spare, from lifecycle.SpareStatus) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	next := sp.Clone()
	next.Version = sp.Version + 1
	err := st.put(ctx, toSpareItem(next), spareCond(from, sp.Version), true)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return explainSpare(sp, failed.Item)
	}
	if err != nil {
		return storeError("update spare %s: %w", sp.SandboxID, err)
	}
	sp.Version = next.Version
	return nil
}

// DeleteSpare deletes sp if it still has sp's status and version.
// Errors: invalid, not_found, conflict.
func (st *Store) DeleteSpare(ctx context.Context, sp *lifecycle.Spare) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	expr, err := expression.NewBuilder().WithCondition(spareCond(sp.Status, sp.Version)).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	it := toSpareItem(sp)
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                           aws.String(st.table),
		Key:                                 itemKey(it.PK, it.SK),
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return explainSpare(sp, failed.Item)
	}
	if err != nil {
		return storeError("delete spare %s: %w", sp.SandboxID, err)
	}
	return nil
}

// ListSpares returns the pool's making and ready spares, oldest first, with
// a strongly consistent query of the pool's partition.
func (st *Store) ListSpares(ctx context.Context, poolID string) ([]*lifecycle.Spare, error) {
	keyCond := expression.Key(tabledef.PartitionKey).Equal(expression.Value(poolPK(poolID))).
		And(expression.Key(tabledef.SortKey).BeginsWith(spareSort))
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, storeError("build key condition: %w", err)
	}
	out := []*lifecycle.Spare{}
	p := dynamodb.NewQueryPaginator(st.client, &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, storeError("list spares of pool %s: %w", poolID, err)
		}
		for _, av := range page.Items {
			var it spareItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return nil, storeError("decode spare: %w", err)
			}
			sp, err := it.spare()
			if err != nil {
				return nil, storeError("decode spare: %w", err)
			}
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b *lifecycle.Spare) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.SandboxID, b.SandboxID))
	})
	return out, nil
}

// GetSpare reads a spare, or its claimed marker, strongly. Errors: not_found.
func (st *Store) GetSpare(ctx context.Context, poolID, sandboxID string) (*lifecycle.Spare, error) {
	for _, sk := range []string{spareSort, claimedSort} {
		out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:      aws.String(st.table),
			Key:            itemKey(poolPK(poolID), sk+sandboxID),
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return nil, storeError("get spare %s: %w", sandboxID, err)
		}
		if len(out.Item) == 0 {
			continue
		}
		var it spareItem
		if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
			return nil, storeError("decode spare: %w", err)
		}
		return it.spare()
	}
	return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "spare %s of pool %s not found", sandboxID, poolID)
}

// ClaimSpare is one TransactWriteItems: the ready spare sp is deleted
// (condition: status ready at sp.Version), a claimed marker naming sess is
// put with a TTL, sess is put as a new session (version 1) and, when the
// store keeps running slots and sess takes one, the account's counter is
// raised under sess.RunningLimit. Errors: invalid, conflict (the spare was
// taken or changed, or the session exists), quota_exceeded, unavailable
// (still contended after retries).
func (st *Store) ClaimSpare(ctx context.Context, sp *lifecycle.Spare, sess *lifecycle.Session) error {
	if err := lifecycle.ValidSpare(sp); err != nil {
		return err
	}
	if err := validSession(sess); err != nil {
		return err
	}
	delta := lifecycle.RunningSlotDelta("", sess.State)
	if st.noSlots && sess.RunningLimit > 0 {
		return fmt.Errorf("claim spare %s with a running limit of %d: this store keeps no running-slot counter", sp.SandboxID, sess.RunningLimit)
	}
	next := sess.Clone()
	next.Version = 1
	sessItem := toSessionItem(next, st.shards)
	sessItem.WriteID = newWriteID()
	sessAV, err := attributevalue.MarshalMap(sessItem)
	if err != nil {
		return storeError("encode session: %w", err)
	}
	marker := sp.Clone()
	marker.Status, marker.SessionID, marker.Version, marker.UpdatedAt = lifecycle.SpareClaimed, sess.ID, sp.Version+1, sess.CreatedAt
	markerIt := toSpareItem(marker)
	markerIt.TTL = sess.CreatedAt.Add(lifecycle.ClaimedMarkerTTL).Unix()
	markerAV, err := attributevalue.MarshalMap(markerIt)
	if err != nil {
		return storeError("encode claimed marker: %w", err)
	}
	spareExpr, err := expression.NewBuilder().WithCondition(spareCond(lifecycle.SpareReady, sp.Version)).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	newExpr, err := expression.NewBuilder().WithCondition(expression.AttributeNotExists(expression.Name(tabledef.PartitionKey))).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	items := []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(st.table), Key: itemKey(poolPK(sp.PoolID), spareSort+sp.SandboxID),
			ConditionExpression: spareExpr.Condition(), ExpressionAttributeNames: spareExpr.Names(),
			ExpressionAttributeValues: spareExpr.Values()}},
		{Put: &types.Put{TableName: aws.String(st.table), Item: markerAV}},
		{Put: &types.Put{TableName: aws.String(st.table), Item: sessAV, ConditionExpression: newExpr.Condition(),
			ExpressionAttributeNames: newExpr.Names()}},
	}
	if delta != 0 && !st.noSlots {
		upd := expression.Add(expression.Name(attrRunning), expression.Value(delta))
		b := expression.NewBuilder().WithUpdate(upd)
		limited := delta > 0 && sess.RunningLimit > 0
		if limited {
			b = b.WithCondition(expression.AttributeNotExists(expression.Name(attrRunning)).
				Or(expression.Name(attrRunning).LessThan(expression.Value(sess.RunningLimit))))
		}
		cnt, err := b.Build()
		if err != nil {
			return storeError("build counter update: %w", err)
		}
		u := &types.Update{TableName: aws.String(st.table), Key: itemKey(accountPrefix+sess.AccountID, runningSort),
			UpdateExpression: cnt.Update(), ExpressionAttributeNames: cnt.Names(), ExpressionAttributeValues: cnt.Values()}
		if limited {
			u.ConditionExpression = cnt.Condition()
		}
		items = append(items, types.TransactWriteItem{Update: u})
	}
	for attempt := 0; ; attempt++ {
		_, err = st.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(sessItem.WriteID), TransactItems: items})
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			if err != nil {
				return storeError("claim spare %s for session %s: %w", sp.SandboxID, sess.ID, err)
			}
			sess.Version = 1
			return nil
		}
		code := func(i int) string {
			if i < len(tc.CancellationReasons) {
				return aws.ToString(tc.CancellationReasons[i].Code)
			}
			return ""
		}
		conflict := false
		for i := range items {
			conflict = conflict || code(i) == reasonTxConflict
		}
		switch {
		case code(0) == reasonConditionFailed:
			return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s was taken", sp.SandboxID)
		case code(2) == reasonConditionFailed:
			return lifecycle.Errorf(lifecycle.CodeConflict, "session %s already exists", sess.ID)
		case code(3) == reasonConditionFailed:
			return lifecycle.ErrQuotaExceeded(sess.AccountID, sess.RunningLimit)
		case conflict && attempt < slotConflictRetries:
			// A concurrent claim of the same spare or the account's
			// counter: a fresh token and another try (the cancelled
			// transaction applied nothing). The spare's own condition
			// decides a lost race on the next try.
			sessItem.WriteID = newWriteID()
			if sessAV, err = attributevalue.MarshalMap(sessItem); err != nil {
				return storeError("encode session: %w", err)
			}
			items[2].Put.Item = sessAV
			if err := sleepJitter(ctx, attempt); err != nil {
				return storeError("claim spare %s: %w", sp.SandboxID, err)
			}
		case conflict:
			return lifecycle.Errorf(lifecycle.CodeConflict, "spare %s is contended", sp.SandboxID)
		default:
			return storeError("claim spare %s for session %s (reasons %v): %w", sp.SandboxID, sess.ID, tc.CancellationReasons, err)
		}
	}
}

// poolStatusItem is a pool's status as stored.
type poolStatusItem struct {
	Claims              int64  `dynamodbav:"claims"`
	Hits                int64  `dynamodbav:"hits"`
	Misses              int64  `dynamodbav:"misses"`
	Lost                int64  `dynamodbav:"lost"`
	Failed              int64  `dynamodbav:"failed"`
	RunningMS           int64  `dynamodbav:"running_ms"` // milliseconds
	PausedMS            int64  `dynamodbav:"paused_ms"`  // milliseconds
	ConsecutiveFailures int    `dynamodbav:"consecutive_failures"`
	LastError           string `dynamodbav:"last_error"`
	LastErrorAt         string `dynamodbav:"last_error_at"`
	BackoffUntil        string `dynamodbav:"backoff_until"`
	HealthVersion       int64  `dynamodbav:"health_version"`
}

// PoolStatus reads a pool's status strongly (zero values when none).
func (st *Store) PoolStatus(ctx context.Context, poolID string) (lifecycle.PoolStatus, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            itemKey(poolPK(poolID), poolStatusKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return lifecycle.PoolStatus{}, storeError("get status of pool %s: %w", poolID, err)
	}
	var it poolStatusItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return lifecycle.PoolStatus{}, storeError("decode status of pool %s: %w", poolID, err)
	}
	s := lifecycle.PoolStatus{PoolID: poolID, Claims: it.Claims, Hits: it.Hits, Misses: it.Misses, Lost: it.Lost, Failed: it.Failed,
		RunningMS: it.RunningMS, PausedMS: it.PausedMS,
		Version: it.HealthVersion, PoolHealth: lifecycle.PoolHealth{ConsecutiveFailures: it.ConsecutiveFailures, LastError: it.LastError}}
	if s.LastErrorAt, err = parseTime("last_error_at", it.LastErrorAt); err == nil {
		s.BackoffUntil, err = parseTime("backoff_until", it.BackoffUntil)
	}
	if err != nil {
		return lifecycle.PoolStatus{}, storeError("decode status of pool %s: %w", poolID, err)
	}
	return s, nil
}

// CountPool adds c to the pool's counters with one UpdateItem (ADD).
func (st *Store) CountPool(ctx context.Context, poolID string, c lifecycle.PoolCounts) error {
	upd := expression.Add(expression.Name("claims"), expression.Value(c.Claims)).
		Add(expression.Name("hits"), expression.Value(c.Hits)).
		Add(expression.Name("misses"), expression.Value(c.Misses)).
		Add(expression.Name("lost"), expression.Value(c.Lost)).
		Add(expression.Name("failed"), expression.Value(c.Failed)).
		Add(expression.Name("running_ms"), expression.Value(c.RunningMS)).
		Add(expression.Name("paused_ms"), expression.Value(c.PausedMS))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return storeError("build update: %w", err)
	}
	_, err = st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: itemKey(poolPK(poolID), poolStatusKey),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		return storeError("count pool %s: %w", poolID, err)
	}
	return nil
}

// SavePoolHealth sets the pool's health fields if its health_version is
// still version (absent counts as 0), leaving the counters alone.
// Errors: conflict.
func (st *Store) SavePoolHealth(ctx context.Context, poolID string, h lifecycle.PoolHealth, version int64) (int64, error) {
	upd := expression.Set(expression.Name("consecutive_failures"), expression.Value(h.ConsecutiveFailures)).
		Set(expression.Name("last_error"), expression.Value(h.LastError)).
		Set(expression.Name("last_error_at"), expression.Value(formatTime(h.LastErrorAt))).
		Set(expression.Name("backoff_until"), expression.Value(formatTime(h.BackoffUntil))).
		Set(expression.Name("health_version"), expression.Value(version+1))
	cond := expression.Name("health_version").Equal(expression.Value(version))
	if version == 0 {
		cond = expression.AttributeNotExists(expression.Name("health_version")).Or(cond)
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return 0, storeError("build update: %w", err)
	}
	_, err = st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: itemKey(poolPK(poolID), poolStatusKey),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return 0, lifecycle.Errorf(lifecycle.CodeConflict, "the health of pool %s changed meanwhile", poolID)
	}
	if err != nil {
		return 0, storeError("save health of pool %s: %w", poolID, err)
	}
	return version + 1, nil
}
