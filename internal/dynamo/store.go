package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Page size bounds of the lifecycle.Store contract.
const (
	maxListLimit = lifecycle.MaxListLimit
	maxDueLimit  = lifecycle.MaxDuePageSize
)

// Store is the DynamoDB implementation of lifecycle.Store on one table laid
// out as the package doc describes. It is safe for concurrent use.
type Store struct {
	client *dynamodb.Client
	table  string
	log    *slog.Logger
	// noSlots: the account running-slot counter is not kept
	// (Config.WithoutRunningSlots).
	noSlots bool
	// shards is Config.Shards.
	shards int
	// eventRetention is Config.EventRetention.
	eventRetention time.Duration
	// findBudget is Config.FindBudget.
	findBudget int
	// beforeRekey, when set (tests), runs between RekeyPausedIndex's read
	// of a session and its conditional write.
	beforeRekey func(id string)
}

var _ lifecycle.Store = (*Store)(nil)

// Config is what a Store is built from (New). Client and Table are
// required; every other zero field means the default named on it, filled in
// once by New.
type Config struct {
	// Client sends every request (see NewClient).
	Client *dynamodb.Client
	// Table is the name of the table, created with CreateTable or the CDK
	// stack.
	Table string
	// Log receives the few things the store reports without failing.
	// Default slog.Default().
	Log *slog.Logger
	// WithoutRunningSlots turns the per-account running-slot counter off: a
	// session write that takes or releases a slot is then one PutItem, not a
	// TransactWriteItems with the account's counter item. Set it when no
	// running quota is configured (lifecycle.Config.MaxRunning 0): the
	// counter is one item per account, so keeping it makes every start and
	// stop of an account's sessions contend on that item for nothing. A
	// session write with Session.RunningLimit set is refused (internal
	// error) on such a store, since it could not enforce the limit.
	// Default false: the counter is kept.
	WithoutRunningSlots bool
	// Shards is how many partitions each due index (idle, lease, paused) is
	// spread over: a session's shard is ShardOf(id, Shards). Default
	// DefaultShards; at most MaxShards. Every writer and the sweep must use
	// the same count; changing it on a table with data needs Reshard
	// (docs/CAPACITY.md "Changing the shard count").
	Shards int
	// EventRetention is how long a session's recorded events are kept
	// (their TTL from the event's time; RecordTransition). Default
	// lifecycle.DefaultEventRetention; at most lifecycle.MaxEventRetention.
	EventRetention time.Duration
	// FindBudget is how many by_owner_state index entries one filtered
	// page (FindSessions) evaluates at most across its states before it
	// ends early with a cursor. Default DefaultFindBudget.
	FindBudget int
}

// DefaultShards is the due indexes' shard count when Config.Shards is 0,
// sized by the capacity model for 1,000,000 running sessions heartbeating
// every 30 s (docs/CAPACITY.md): each written heartbeat moves the session's
// idle index entry, 2 WCU on its shard.
const DefaultShards = tabledef.Shards

// MaxShards bounds Config.Shards: the sweep queries every shard of an
// index in turn on each run.
const MaxShards = 1024

// New returns a Store on cfg.Table through cfg.Client, with the defaults of
// Config filled in.
func New(cfg Config) *Store {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	cfg.Shards = min(cfg.Shards, MaxShards)
	if cfg.EventRetention <= 0 {
		cfg.EventRetention = lifecycle.DefaultEventRetention
	}
	cfg.EventRetention = min(cfg.EventRetention, lifecycle.MaxEventRetention)
	if cfg.FindBudget <= 0 {
		cfg.FindBudget = DefaultFindBudget
	}
	return &Store{client: cfg.Client, table: cfg.Table, log: cfg.Log, noSlots: cfg.WithoutRunningSlots, shards: cfg.Shards,
		eventRetention: cfg.EventRetention, findBudget: cfg.FindBudget}
}

// CreateSession writes s as a new session with version 1 and sets s.Version
// to 1. Errors: invalid (no id or account, unknown state), conflict when a
// session with the id exists.
func (st *Store) CreateSession(ctx context.Context, s *lifecycle.Session) error {
	if err := validSession(s); err != nil {
		return err
	}
	next := s.Clone()
	next.Version = 1
	cond := expression.AttributeNotExists(expression.Name(tabledef.PartitionKey))
	it := toSessionItem(next, st.shards)
	it.WriteID = newWriteID()
	old, condFailed, err := st.write(ctx, s, it, cond, lifecycle.RunningSlotDelta("", s.State))
	if condFailed && !wroteIt(old, it.WriteID) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s already exists", s.ID)
	}
	if err != nil {
		return storeError("create session %s: %w", s.ID, err)
	}
	s.Version = 1
	return nil
}

// GetSession reads a session with a strongly consistent read.
// Errors: not_found.
func (st *Store) GetSession(ctx context.Context, id string) (*lifecycle.Session, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            itemKey(sessionPK(id), sessionSort),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, storeError("get session %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return nil, errSessionNotFound(id)
	}
	return decodeSession(out.Item)
}

// ListSessions returns accountID's sessions newest first (by created_at, then
// id), at most limit (1..100) of them, continuing after cursor ("" for the
// first page). The returned Cursor is "" on the last page. It reads the
// keys from the by_owner_keys index and then the sessions themselves with a
// consistent BatchGetItem (a session deleted in between is left out).
// Errors: invalid for a limit out of range or a cursor that
// this store did not issue for accountID ("cursor is not valid").
func (st *Store) ListSessions(ctx context.Context, accountID, cursorText string, limit int) (lifecycle.SessionPage, error) {
	if limit < 1 || limit > maxListLimit {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxListLimit)
	}
	if accountID == "" {
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	}
	var start map[string]types.AttributeValue
	if cursorText != "" {
		c, err := decodeCursor(cursorText, tabledef.IndexByOwner)
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		if c.Key == nil || c.stringKey(tabledef.AttrOwnerKey) != accountID {
			return lifecycle.SessionPage{}, errBadCursor()
		}
		start = c.startKey()
	}
	keyCond := expression.Key(tabledef.AttrOwnerKey).Equal(expression.Value(accountID))
	items, more, err := st.query(ctx, tabledef.IndexByOwner, keyCond, false, start, limit)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("list sessions of account %s: %w", accountID, err)
	}
	full, err := st.getItems(ctx, items)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("list sessions of account %s: %w", accountID, err)
	}
	page, err := decodePage(full)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("list sessions of account %s: %w", accountID, err)
	}
	if more {
		if page.Cursor, err = cursorAfter(tabledef.IndexByOwner, 0, items[len(items)-1]); err != nil {
			return lifecycle.SessionPage{}, err
		}
	}
	return page, nil
}

// FindBySandbox returns the session that holds provider's sandbox sandboxID,
// read from the by_sandbox index. Should two sessions name the same sandbox
// (a provider reusing ids), the newest wins and a warning is logged.
// Errors: invalid for an empty sandbox id, not_found.
func (st *Store) FindBySandbox(ctx context.Context, provider, sandboxID string) (*lifecycle.Session, error) {
	if sandboxID == "" {
		return nil, lifecycle.Errorf(lifecycle.CodeInvalid, "sandbox id is required")
	}
	keyCond := expression.Key(tabledef.AttrSandboxKey).Equal(expression.Value(sandboxKey(provider, sandboxID)))
	items, _, err := st.query(ctx, tabledef.IndexBySandbox, keyCond, true, nil, 10)
	if err != nil {
		return nil, storeError("find session of sandbox %s/%s: %w", provider, sandboxID, err)
	}
	page, err := decodePage(items)
	if err != nil {
		return nil, storeError("find session of sandbox %s/%s: %w", provider, sandboxID, err)
	}
	if len(page.Sessions) == 0 {
		return nil, lifecycle.Errorf(lifecycle.CodeNotFound, "no session holds %s sandbox %s", provider, sandboxID)
	}
	found := page.Sessions[0]
	for _, s := range page.Sessions[1:] {
		if s.CreatedAt.After(found.CreatedAt) {
			found = s
		}
	}
	if len(page.Sessions) > 1 {
		st.log.WarnContext(ctx, "several sessions hold one sandbox; using the newest",
			"provider", provider, "sandbox_id", sandboxID, "sessions", len(page.Sessions), "session_id", found.ID)
	}
	return found, nil
}

// UpdateSession writes s in full if the stored session still has state from
// and version s.Version, its idle deadline does not move backwards (stored
// idle_deadline <= s.IdleDeadline, or none stored) and, when guard.DueBy is
// set, its stored pause deadline (pause_deadline, exact to the nanosecond;
// absent unless running) is at or before guard.DueBy.
// When s.State != from the transition must be allowed by
// lifecycle.CanTransition, else nothing is written. The item's index keys
// follow s's new state: leaving an index removes its keys. On success the
// stored version and s.Version are s.Version+1.
// Errors: invalid (malformed session), conflict (refused transition, lost
// race, deadline moved), not_found.
func (st *Store) UpdateSession(ctx context.Context, s *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if err := validSession(s); err != nil {
		return err
	}
	if s.State != from {
		if err := lifecycle.CheckTransition(from, s.State); err != nil {
			return err
		}
	}
	next := s.Clone()
	next.Version = s.Version + 1

	cond := expression.And(
		expression.Name(attrState).Equal(expression.Value(string(from))),
		expression.Name(attrVersion).Equal(expression.Value(s.Version)),
		idleNotBackwards(s.IdleDeadline),
	)
	if !guard.DueBy.IsZero() {
		cond = cond.And(expression.Name(attrPauseDeadline).LessThanEqual(expression.Value(formatTime(guard.DueBy))))
	}
	it := toSessionItem(next, st.shards)
	it.WriteID = newWriteID()
	old, condFailed, err := st.write(ctx, s, it, cond, lifecycle.RunningSlotDelta(from, s.State))
	if condFailed && !wroteIt(old, it.WriteID) {
		return explainUpdateFailure(s, from, guard, old)
	}
	if err != nil {
		return storeError("update session %s: %w", s.ID, err)
	}
	s.Version = next.Version
	return nil
}

// write stores session item it under cond, moving its account's running
// slots by delta in the same transaction when delta != 0 (quota.go). It
// returns condFailed and the stored item when cond failed (the caller tells
// its own retried write apart with wroteIt), else the store's error;
// quota_exceeded when the counter refused a slot.
func (st *Store) write(ctx context.Context, s *lifecycle.Session, it sessionItem, cond expression.ConditionBuilder, delta int) (map[string]types.AttributeValue, bool, error) {
	if delta != 0 && !st.noSlots {
		return st.putMovingSlots(ctx, s, it, cond, delta)
	}
	if st.noSlots && s.RunningLimit > 0 {
		return nil, false, fmt.Errorf("write session %s with a running limit of %d: this store keeps no running-slot counter (Config.WithoutRunningSlots)", s.ID, s.RunningLimit)
	}
	err := st.put(ctx, it, cond, true)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return failed.Item, true, nil
	}
	return nil, false, err
}

// newWriteID returns a random id for one logical write. The SDK retries a
// PutItem whose answer was lost (a timeout, a 5xx) even when the first
// attempt committed; the retry then fails its own condition. Every item
// carries the write_id of the write that stored it, so such a failure is
// recognised as our own success instead of a lost race (which would make
// Create kill a sandbox the table records as running, or drop the event of a
// committed transition).
func newWriteID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// wroteIt reports whether old, an item returned by a failed condition
// (ALL_OLD), was stored by the write with id writeID.
func wroteIt(old map[string]types.AttributeValue, writeID string) bool {
	var v struct {
		WriteID string `dynamodbav:"write_id"`
	}
	if len(old) == 0 || attributevalue.UnmarshalMap(old, &v) != nil {
		return false
	}
	return v.WriteID == writeID
}

// idleNotBackwards is the condition that the stored idle deadline is not
// after the new one (string order is time order in timeLayout).
func idleNotBackwards(newDeadline time.Time) expression.ConditionBuilder {
	absent := expression.AttributeNotExists(expression.Name(attrIdleDeadline))
	if newDeadline.IsZero() {
		return absent
	}
	return absent.Or(expression.Name(attrIdleDeadline).LessThanEqual(expression.Value(formatTime(newDeadline))))
}

// explainUpdateFailure turns a failed update condition into the error to
// return, from the item as it was (ALL_OLD; empty when there is none).
func explainUpdateFailure(s *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard, old map[string]types.AttributeValue) error {
	if len(old) == 0 {
		return errSessionNotFound(s.ID)
	}
	var it sessionItem
	if err := attributevalue.UnmarshalMap(old, &it); err != nil {
		return storeError("update session %s: decode stored item: %w", s.ID, err)
	}
	switch {
	case it.State != string(from) || it.Version != s.Version:
		return lifecycle.Errorf(lifecycle.CodeConflict,
			"session %s changed meanwhile: expected %s at version %d, found %s at version %d",
			s.ID, from, s.Version, it.State, it.Version)
	case !guard.DueBy.IsZero() && (it.PauseDeadline == "" || it.PauseDeadline > formatTime(guard.DueBy)):
		return lifecycle.Errorf(lifecycle.CodeConflict, "session %s is no longer due to be paused", s.ID)
	default:
		return lifecycle.Errorf(lifecycle.CodeConflict,
			"the idle deadline of session %s cannot move backwards (stored %s, given %s)",
			s.ID, it.IdleDeadline, formatTime(s.IdleDeadline))
	}
}

// Claim records key with value unless an unexpired claim of key exists; the
// claim expires at now+ttl (rounded up to a whole second, the unit of
// DynamoDB's TTL) and counts as absent once now is past that second, even
// before DynamoDB's TTL deletes it. It returns claimed=false and the stored
// value when a live claim exists. Errors: invalid for an empty key or a ttl
// that is not positive.
func (st *Store) Claim(ctx context.Context, key, value string, ttl time.Duration, now time.Time) (bool, string, error) {
	if key == "" {
		return false, "", lifecycle.Errorf(lifecycle.CodeInvalid, "claim key is required")
	}
	if ttl <= 0 {
		return false, "", lifecycle.Errorf(lifecycle.CodeInvalid, "claim ttl must be positive")
	}
	expires := now.Add(ttl)
	expiresSec := expires.Unix()
	if time.Unix(expiresSec, 0).Before(expires) {
		expiresSec++
	}
	it := claimItem{PK: claimPK(key), SK: claimSort, Value: value, ClaimedAt: formatTime(now), TTL: expiresSec, WriteID: newWriteID()}
	cond := expression.AttributeNotExists(expression.Name(tabledef.PartitionKey)).
		Or(expression.Name(tabledef.TTLAttribute).LessThan(expression.Value(now.Unix())))
	err := st.put(ctx, it, cond, true)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) && wroteIt(failed.Item, it.WriteID) {
		return true, value, nil // our own claim, committed before the SDK retried it
	}
	if failed != nil {
		var old claimItem
		if len(failed.Item) == 0 {
			return false, "", fmt.Errorf("claim %s: condition failed without a stored claim", key)
		}
		if err := attributevalue.UnmarshalMap(failed.Item, &old); err != nil {
			return false, "", storeError("claim %s: decode stored claim: %w", key, err)
		}
		return false, old.Value, nil
	}
	if err != nil {
		return false, "", storeError("claim %s: %w", key, err)
	}
	return true, value, nil
}

// ReleaseClaim deletes the claim of key if it still holds value, so the key
// can be claimed again; a claim that is gone or holds another value is left
// as it is (no error).
func (st *Store) ReleaseClaim(ctx context.Context, key, value string) error {
	if key == "" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "claim key is required")
	}
	expr, err := expression.NewBuilder().WithCondition(expression.Name("value").Equal(expression.Value(value))).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	_, err = st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(st.table),
		Key:                       itemKey(claimPK(key), claimSort),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	var failed *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &failed) {
		return storeError("release claim %s: %w", key, err)
	}
	return nil
}

// PutAPIKey stores k under its hash. Errors: invalid (lifecycle.ValidAPIKey),
// conflict when the hash exists.
func (st *Store) PutAPIKey(ctx context.Context, k lifecycle.APIKey) error {
	if err := lifecycle.ValidAPIKey(k); err != nil {
		return err
	}
	it := apiKeyItem{PK: apiKeyPK(k.Hash), SK: apiKeySort, Hash: k.Hash, AccountID: k.AccountID, CreatedAt: formatTime(k.CreatedAt),
		MaxRunning: k.MaxRunning, ArchiveAfterMS: durationMS(k.Tiers.ArchiveAfter), DeleteAfterMS: durationMS(k.Tiers.DeleteAfter)}
	err := st.put(ctx, it, expression.AttributeNotExists(expression.Name(tabledef.PartitionKey)), false)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "api key exists")
	}
	if err != nil {
		return storeError("put api key: %w", err)
	}
	return nil
}

// GetAPIKey reads an API key by the hash of its secret with a strongly
// consistent read. Errors: not_found.
func (st *Store) GetAPIKey(ctx context.Context, hash string) (lifecycle.APIKey, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            itemKey(apiKeyPK(hash), apiKeySort),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return lifecycle.APIKey{}, storeError("get api key: %w", err)
	}
	if len(out.Item) == 0 {
		return lifecycle.APIKey{}, lifecycle.Errorf(lifecycle.CodeNotFound, "api key not found")
	}
	var it apiKeyItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return lifecycle.APIKey{}, storeError("decode api key: %w", err)
	}
	created, err := parseTime("created_at", it.CreatedAt)
	if err != nil {
		return lifecycle.APIKey{}, storeError("decode api key: %w", err)
	}
	return lifecycle.APIKey{Hash: it.Hash, AccountID: it.AccountID, CreatedAt: created, MaxRunning: it.MaxRunning,
		Tiers: lifecycle.Tiers{ArchiveAfter: msDuration(it.ArchiveAfterMS), DeleteAfter: msDuration(it.DeleteAfterMS)}}, nil
}

// durationMS is d in milliseconds as an API key item keeps a tier
// setting; nil (not set) stays nil, so that 0 ("never") is stored.
func durationMS(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// msDuration is durationMS's inverse.
func msDuration(ms *int64) *time.Duration {
	if ms == nil {
		return nil
	}
	d := time.Duration(*ms) * time.Millisecond
	return &d
}

// put writes item with a condition; with returnOld a failed condition's
// error carries the stored item. The caller tells condition failures apart
// with errors.As(*types.ConditionalCheckFailedException).
func (st *Store) put(ctx context.Context, item any, cond expression.ConditionBuilder, returnOld bool) error {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return storeError("encode item: %w", err)
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return storeError("build condition: %w", err)
	}
	in := &dynamodb.PutItemInput{
		TableName:                 aws.String(st.table),
		Item:                      av,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	if returnOld {
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	_, err = st.client.PutItem(ctx, in)
	return err
}

// query reads up to limit items of index (checkpointList: the table
// itself, strongly consistent) matching keyCond from start,
// following DynamoDB's pages, and reports whether more items follow the last
// one returned (it reads one item ahead to know).
func (st *Store) query(ctx context.Context, index string, keyCond expression.KeyConditionBuilder, forward bool,
	start map[string]types.AttributeValue, limit int) ([]map[string]types.AttributeValue, bool, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(keyCond).Build()
	if err != nil {
		return nil, false, storeError("build key condition: %w", err)
	}
	var items []map[string]types.AttributeValue
	for {
		in := &dynamodb.QueryInput{
			TableName:                 aws.String(st.table),
			KeyConditionExpression:    expr.KeyCondition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
			ScanIndexForward:          aws.Bool(forward),
			ExclusiveStartKey:         start,
			Limit:                     aws.Int32(int32(limit + 1 - len(items))),
		}
		if index == checkpointList {
			in.ConsistentRead = aws.Bool(true) // the table itself: read strongly
		} else {
			in.IndexName = aws.String(index)
		}
		out, err := st.client.Query(ctx, in)
		if err != nil {
			return nil, false, err
		}
		items = append(items, out.Items...)
		if len(items) > limit {
			return items[:limit], true, nil
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, false, nil
		}
		start = out.LastEvaluatedKey
	}
}

// batchGetRounds bounds the BatchGetItem calls of getItems: DynamoDB may
// leave keys unprocessed (throttling, a large answer), and each round asks
// again for those only. The SDK has already retried a throttled call.
const batchGetRounds = 4

// getItems reads the table items whose keys (pk, sk) items hold (at most
// 100: BatchGetItem's limit, and maxListLimit), strongly consistent, and
// returns them in the order of items; an item no longer in the table is
// left out. Errors: the SDK's; keys still unprocessed after batchGetRounds.
func (st *Store) getItems(ctx context.Context, items []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	if len(items) == 0 {
		return nil, nil
	}
	keys := make([]map[string]types.AttributeValue, len(items))
	for i, it := range items {
		keys[i] = map[string]types.AttributeValue{tabledef.PartitionKey: it[tabledef.PartitionKey], tabledef.SortKey: it[tabledef.SortKey]}
	}
	got := make(map[string]map[string]types.AttributeValue, len(items))
	todo := keys
	for round := 0; len(todo) > 0; round++ {
		if round == batchGetRounds {
			return nil, fmt.Errorf("batch get: %d of %d items unprocessed after %d rounds", len(todo), len(keys), batchGetRounds)
		}
		out, err := st.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			st.table: {Keys: todo, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, fmt.Errorf("batch get: %w", err)
		}
		for _, it := range out.Responses[st.table] {
			got[keyString(it)] = it
		}
		todo = out.UnprocessedKeys[st.table].Keys
	}
	full := make([]map[string]types.AttributeValue, 0, len(items))
	for _, k := range keys {
		if it, ok := got[keyString(k)]; ok {
			full = append(full, it)
		}
	}
	return full, nil
}

// keyString is an item's table key as one string (pk, a zero byte, sk).
func keyString(item map[string]types.AttributeValue) string {
	str := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	return str(tabledef.PartitionKey) + "\x00" + str(tabledef.SortKey)
}

// cursorAfter returns the cursor that continues index after item.
func cursorAfter(index string, shard int, item map[string]types.AttributeValue) (string, error) {
	names, err := keyTypes(index)
	if err != nil {
		return "", err
	}
	key := make(map[string]types.AttributeValue, len(names))
	for name := range names {
		v, ok := item[name]
		if !ok {
			return "", fmt.Errorf("encode cursor: item lacks key attribute %s", name)
		}
		key[name] = v
	}
	c, err := newCursor(index, shard, key)
	if err != nil {
		return "", err
	}
	return c.encode()
}

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tabledef.PartitionKey: &types.AttributeValueMemberS{Value: pk},
		tabledef.SortKey:      &types.AttributeValueMemberS{Value: sk},
	}
}

func decodeSession(av map[string]types.AttributeValue) (*lifecycle.Session, error) {
	var it sessionItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, storeError("decode session item: %w", err)
	}
	return it.session()
}

func decodePage(items []map[string]types.AttributeValue) (lifecycle.SessionPage, error) {
	page := lifecycle.SessionPage{Sessions: make([]*lifecycle.Session, 0, len(items))}
	for _, av := range items {
		s, err := decodeSession(av)
		if err != nil {
			return lifecycle.SessionPage{}, err
		}
		page.Sessions = append(page.Sessions, s)
	}
	return page, nil
}

func errSessionNotFound(id string) error {
	return lifecycle.Errorf(lifecycle.CodeNotFound, "session %s not found", id)
}

// validSession checks what the store needs to write s
// (lifecycle.ValidStoredSession).
func validSession(s *lifecycle.Session) error { return lifecycle.ValidStoredSession(s) }
