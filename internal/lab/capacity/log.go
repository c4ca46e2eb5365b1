package capacity

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
)

// Log sums the capacity units DynamoDB reports as consumed, by key
// family (Family), for the requests a bench.CountingProxy carries. As the
// proxy's observer it asks for them: it adds
// "ReturnConsumedCapacity":"INDEXES" to every request that takes it
// (DynamoDB Local answers with the table's and each index's units, as
// DynamoDB does) and reads the answer. Build it with NewLog and hand it to
// bench.NewObservedProxy. Safe for concurrent use.
//
// A request that writes several items (TransactWriteItems, BatchWriteItem)
// gets one figure for the table; it is split between them as DynamoDB
// bills them: every item other than a session item counts ceil(size / 1 KB)
// units (size known for a put, else taken as under 1 KB; doubled in a
// transaction) and the session items share the rest. Index units go to the
// session items (only they, and connections, carry index keys).
type Log struct {
	mu   sync.Mutex
	sums map[Family]*Units
}

// Units are capacity units consumed: Read in RCU, Write in WCU.
type Units struct {
	Read, Write float64
}

// Family names a kind of key the model reports on: an item family (one item
// per key) or a partition family (every item under one partition key, or
// one partition of an index).
type Family string

// The key families of the sessions table (internal/tabledef).
const (
	FamSessionItem      Family = "session item"
	FamSessionPartition Family = "session partition (SESSION#id)"
	FamSessionOther     Family = "session's event and usage-marker items"
	FamSlotCounter      Family = "running-slot counter item"
	FamUsageDay         Family = "usage day row"
	FamUsageSession     Family = "usage session row"
	FamAccountPartition Family = "account partition (ACCOUNT#id)"
	FamConnection       Family = "connection item"
	FamClaim            Family = "claim item"
	FamAPIKey           Family = "API key item"
	// The learned idle policy's histograms (lifecycle.IdleKeys): one item
	// per user key, per account's template, per template.
	FamIdleUser       Family = "idle histogram item (user key)"
	FamIdleAccount    Family = "idle histogram item (account's template)"
	FamIdleTemplate   Family = "idle histogram item (template)"
	FamGovernorBucket Family = "governor bucket item (GOV#provider#shard)"
	// FamCheckpoint is a checkpoint's item, under its session's partition
	// (SESSION#id, CHECKPOINT#chk_…).
	FamCheckpoint Family = "checkpoint item"
	FamOther      Family = "other items"
	// Index partitions: the due indexes are keyed by a shard, by_owner by
	// the account, the rest by one session or sandbox.
	FamIdleShard   Family = "idle index shard"
	FamLeaseShard  Family = "lease index shard"
	FamPausedShard Family = "paused index shard"
	// FamCheckpointLeaseShard is the checkpoint_lease index's: saving
	// checkpoints, keyed by their session's shard.
	FamCheckpointLeaseShard Family = "checkpoint_lease index shard"
	FamOwnerIndex           Family = "by_owner index partition (account)"
	// FamOwnerStateIndex is by_owner_state's: one per account and state,
	// written when a session enters or leaves the state.
	FamOwnerStateIndex Family = "by_owner_state index partition (account, state)"
	FamSandboxIndex    Family = "by_sandbox index partition"
	FamConnSessIndex   Family = "by_conn_session index partition"
)

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{sums: map[Family]*Units{}} }

// Reset forgets everything recorded.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sums = map[Family]*Units{}
}

// Snapshot returns the units recorded per family since the last Reset.
func (l *Log) Snapshot() map[Family]Units {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Family]Units, len(l.sums))
	for f, u := range l.sums {
		out[f] = *u
	}
	return out
}

func (l *Log) add(f Family, read bool, units float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.sums[f]
	if u == nil {
		u = &Units{}
		l.sums[f] = u
	}
	if read {
		u.Read += units
	} else {
		u.Write += units
	}
}

// capacityOps are the operations that take ReturnConsumedCapacity, with
// whether they read.
var capacityOps = map[string]bool{
	"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true,
	"PutItem": false, "UpdateItem": false, "DeleteItem": false, "BatchWriteItem": false, "TransactWriteItems": false,
}

// Request implements bench.ProxyObserver: it rewrites a request whose
// operation takes ReturnConsumedCapacity to ask for it, and returns the
// parsed body for Response (nil: the request is not observed).
func (l *Log) Request(op string, r *http.Request) any {
	if body := l.request(op, r); body != nil {
		return body
	}
	return nil
}

// Response implements bench.ProxyObserver: it records the units of the
// answer to a request Request observed (state is its parsed body).
func (l *Log) Response(op string, state any, resp *http.Response) {
	body, _ := state.(map[string]json.RawMessage)
	l.response(op, body, resp)
}

// request rewrites a request's body to ask for the consumed capacity and
// returns the parsed body (nil when the operation takes none).
func (l *Log) request(op string, r *http.Request) map[string]json.RawMessage {
	if _, ok := capacityOps[op]; !ok || r.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	var body map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &body) != nil {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		return nil
	}
	body["ReturnConsumedCapacity"] = json.RawMessage(`"INDEXES"`)
	out, _ := json.Marshal(body)
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(out)), int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return body
}

// consumed is DynamoDB's ConsumedCapacity.
type consumed struct {
	CapacityUnits          float64 `json:"CapacityUnits"`
	Table                  *struct{ CapacityUnits float64 }
	GlobalSecondaryIndexes map[string]struct{ CapacityUnits float64 }
}

// response records the units of one answer to a request parsed by request.
func (l *Log) response(op string, body map[string]json.RawMessage, resp *http.Response) {
	if body == nil || resp.StatusCode != http.StatusOK {
		return
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	if err != nil {
		return
	}
	var out struct {
		ConsumedCapacity json.RawMessage
	}
	if json.Unmarshal(raw, &out) != nil || len(out.ConsumedCapacity) == 0 {
		return
	}
	var list []consumed
	if out.ConsumedCapacity[0] == '[' {
		_ = json.Unmarshal(out.ConsumedCapacity, &list)
	} else {
		var one consumed
		_ = json.Unmarshal(out.ConsumedCapacity, &one)
		list = []consumed{one}
	}
	read := capacityOps[op]
	keys, txn := requestKeys(op, body)
	for _, c := range list {
		table := c.CapacityUnits
		if c.Table != nil {
			table = c.Table.CapacityUnits
		}
		gsi := map[string]float64{}
		for name, u := range c.GlobalSecondaryIndexes {
			gsi[name] = u.CapacityUnits
			if c.Table == nil {
				table -= u.CapacityUnits
			}
		}
		if op == "Query" || op == "Scan" {
			l.query(body, table, gsi)
			continue
		}
		l.split(keys, txn, read, table, gsi)
	}
}

// itemKey is one item a request touches: its key and, for a put, its size
// in bytes (0: unknown).
type itemKey struct {
	pk, sk string
	size   int
}

// split attributes one request's units to the items it touched.
func (l *Log) split(keys []itemKey, txn, read bool, table float64, gsi map[string]float64) {
	if len(keys) == 0 {
		l.add(FamOther, read, table)
		return
	}
	per := 1.0
	if txn {
		per = 2
	}
	var sessions, others []itemKey
	var weights []float64
	sum := 0.0
	for _, k := range keys {
		if len(keys) > 1 && !isSessionItem(k) {
			u := per
			if k.size > 0 {
				u = per * math.Ceil(float64(k.size)/1024)
			}
			others, weights, sum = append(others, k), append(weights, u), sum+u
			continue
		}
		sessions = append(sessions, k)
	}
	// The session items take what the others leave; with none, the others
	// share the figure in proportion to their weights.
	scale := 1.0
	if len(sessions) == 0 && sum > 0 {
		scale = table / sum
	} else if sum > table {
		scale = table / sum
	}
	rest := table
	for i, k := range others {
		l.addItem(k, read, weights[i]*scale)
		rest -= weights[i] * scale
	}
	for _, k := range sessions {
		l.addItem(k, read, rest/float64(len(sessions)))
	}
	for name, u := range gsi {
		l.add(indexFamily(name), read, u)
	}
}

// addItem adds units to an item's family and its partition's family.
func (l *Log) addItem(k itemKey, read bool, u float64) {
	item, part := keyFamilies(k)
	l.add(item, read, u)
	if part != "" {
		l.add(part, read, u)
	}
}

// query attributes a Query's units: to the index partition it read, or to
// the table partition.
func (l *Log) query(body map[string]json.RawMessage, table float64, gsi map[string]float64) {
	var index string
	_ = json.Unmarshal(body["IndexName"], &index)
	if index != "" {
		u := table
		for _, v := range gsi {
			u += v
		}
		l.add(indexFamily(index), true, u)
		return
	}
	var values map[string]map[string]string
	_ = json.Unmarshal(body["ExpressionAttributeValues"], &values)
	// The store's key conditions name the partition key's value first
	// (expression builder: ":0").
	pk := values[":0"]["S"]
	_, part := keyFamilies(itemKey{pk: pk})
	if part == "" {
		part = FamOther
	}
	l.add(part, true, table)
}

// requestKeys returns the items a request names and whether it is a
// transaction.
func requestKeys(op string, body map[string]json.RawMessage) ([]itemKey, bool) {
	type attrs map[string]json.RawMessage
	key := func(raw json.RawMessage) itemKey {
		var a attrs
		if json.Unmarshal(raw, &a) != nil {
			return itemKey{}
		}
		var pk, sk map[string]string
		_ = json.Unmarshal(a[tabledef.PartitionKey], &pk)
		_ = json.Unmarshal(a[tabledef.SortKey], &sk)
		return itemKey{pk: pk["S"], sk: sk["S"]}
	}
	put := func(raw json.RawMessage) itemKey {
		k := key(raw)
		k.size = len(raw) // JSON is a little larger than DynamoDB's measure: errs on the safe side
		return k
	}
	switch op {
	case "GetItem", "UpdateItem", "DeleteItem":
		return []itemKey{key(body["Key"])}, false
	case "PutItem":
		return []itemKey{put(body["Item"])}, false
	case "TransactWriteItems", "TransactGetItems":
		var items []map[string]struct {
			Key  json.RawMessage
			Item json.RawMessage
		}
		_ = json.Unmarshal(body["TransactItems"], &items)
		var keys []itemKey
		for _, it := range items {
			for _, v := range it {
				if v.Item != nil {
					keys = append(keys, put(v.Item))
				} else {
					keys = append(keys, key(v.Key))
				}
			}
		}
		return keys, true
	case "BatchWriteItem":
		var req map[string][]struct {
			PutRequest    *struct{ Item json.RawMessage }
			DeleteRequest *struct{ Key json.RawMessage }
		}
		_ = json.Unmarshal(body["RequestItems"], &req)
		var keys []itemKey
		for _, list := range req {
			for _, w := range list {
				switch {
				case w.PutRequest != nil:
					keys = append(keys, put(w.PutRequest.Item))
				case w.DeleteRequest != nil:
					keys = append(keys, key(w.DeleteRequest.Key))
				}
			}
		}
		return keys, false
	case "BatchGetItem":
		var req map[string]struct{ Keys []json.RawMessage }
		_ = json.Unmarshal(body["RequestItems"], &req)
		var keys []itemKey
		for _, t := range req {
			for _, k := range t.Keys {
				keys = append(keys, key(k))
			}
		}
		return keys, false
	}
	return nil, false
}

func isSessionItem(k itemKey) bool {
	return strings.HasPrefix(k.pk, "SESSION#") && k.sk == "SESSION"
}

// keyFamilies returns an item's family and its partition's ("" when the
// partition holds one item only, so the item family says it all).
func keyFamilies(k itemKey) (item, partition Family) {
	switch {
	case strings.HasPrefix(k.pk, "SESSION#"):
		switch {
		case k.sk == "SESSION":
			return FamSessionItem, FamSessionPartition
		case strings.HasPrefix(k.sk, "CHECKPOINT#"):
			return FamCheckpoint, FamSessionPartition
		default:
			return FamSessionOther, FamSessionPartition
		}
	case strings.HasPrefix(k.pk, "ACCOUNT#"):
		switch {
		case strings.HasPrefix(k.sk, "RUNNING"):
			return FamSlotCounter, FamAccountPartition
		case strings.HasPrefix(k.sk, "USAGE#D#"):
			return FamUsageDay, FamAccountPartition
		case strings.HasPrefix(k.sk, "USAGE#S#"):
			return FamUsageSession, FamAccountPartition
		default:
			return FamOther, FamAccountPartition
		}
	case strings.HasPrefix(k.pk, "CONN#"):
		return FamConnection, ""
	case strings.HasPrefix(k.pk, "CLAIM#"):
		return FamClaim, ""
	case strings.HasPrefix(k.pk, "APIKEY#"):
		return FamAPIKey, ""
	case strings.HasPrefix(k.pk, "IDLE#user#"):
		return FamIdleUser, ""
	case strings.HasPrefix(k.pk, "IDLE#account#"):
		return FamIdleAccount, ""
	case strings.HasPrefix(k.pk, "IDLE#template#"):
		return FamIdleTemplate, ""
	case strings.HasPrefix(k.pk, "GOV#"):
		return FamGovernorBucket, ""
	}
	return FamOther, ""
}

// indexFamily returns the family of an index's partitions.
func indexFamily(name string) Family {
	switch name {
	case tabledef.IndexIdle:
		return FamIdleShard
	case tabledef.IndexLease:
		return FamLeaseShard
	case tabledef.IndexPaused:
		return FamPausedShard
	case tabledef.IndexCheckpointLease:
		return FamCheckpointLeaseShard
	case tabledef.IndexByOwner:
		return FamOwnerIndex
	case tabledef.IndexByOwnerState:
		return FamOwnerStateIndex
	case tabledef.IndexBySandbox:
		return FamSandboxIndex
	case tabledef.IndexByConnSession:
		return FamConnSessIndex
	}
	return FamOther
}
