package dynamo

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// cursor is the opaque page cursor of ListSessions and FindDue: the index it
// belongs to, the shard to continue in (FindDue only) and DynamoDB's
// LastEvaluatedKey (absent when the shard is to be read from its start). It
// travels as base64url (no padding) of its JSON.
type cursor struct {
	Index string              `json:"i"`
	Shard int                 `json:"s,omitempty"`
	Key   map[string]keyValue `json:"k,omitempty"`
}

// keyValue is one key attribute of a LastEvaluatedKey: a string or a number.
type keyValue struct {
	S *string `json:"S,omitempty"`
	N *string `json:"N,omitempty"`
}

// errBadCursor is returned for any cursor this store did not issue for the
// query at hand.
func errBadCursor() error { return lifecycle.Errorf(lifecycle.CodeInvalid, "cursor is not valid") }

// encode returns the cursor's wire form.
func (c cursor) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// newCursor builds a cursor from a LastEvaluatedKey.
func newCursor(index string, shard int, lek map[string]types.AttributeValue) (cursor, error) {
	c := cursor{Index: index, Shard: shard}
	if len(lek) == 0 {
		return c, nil
	}
	c.Key = make(map[string]keyValue, len(lek))
	for name, av := range lek {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			c.Key[name] = keyValue{S: &v.Value}
		case *types.AttributeValueMemberN:
			c.Key[name] = keyValue{N: &v.Value}
		default:
			return cursor{}, fmt.Errorf("encode cursor: key attribute %s has type %T", name, av)
		}
	}
	return c, nil
}

// decodeCursor parses s and checks that it was issued for index and holds
// exactly the key attributes of that index with their types. Errors:
// CodeInvalid "cursor is not valid".
func decodeCursor(s, index string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, errBadCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil || dec.More() || c.Index != index {
		return cursor{}, errBadCursor()
	}
	if c.Key == nil {
		return c, nil
	}
	want, err := keyTypes(index)
	if err != nil || len(c.Key) != len(want) {
		return cursor{}, errBadCursor()
	}
	for name, typ := range want {
		v, ok := c.Key[name]
		switch {
		case !ok:
			return cursor{}, errBadCursor()
		case typ == tabledef.TypeString && (v.S == nil || v.N != nil):
			return cursor{}, errBadCursor()
		case typ == tabledef.TypeString && (*v.S == "" || len(*v.S) > maxCursorValue):
			// DynamoDB would refuse it with a ValidationException (a 500).
			return cursor{}, errBadCursor()
		case typ == tabledef.TypeNumber && (v.N == nil || v.S != nil):
			return cursor{}, errBadCursor()
		case typ == tabledef.TypeNumber:
			if _, err := strconv.ParseInt(*v.N, 10, 64); err != nil {
				return cursor{}, errBadCursor()
			}
		}
	}
	// Every query returns session items only, but for the checkpoint ones
	// (a session's list, the checkpoint lease index): a key of anything
	// else was not issued by this store.
	pk, sk := *c.Key[tabledef.PartitionKey].S, *c.Key[tabledef.SortKey].S
	wantSort := sk == sessionSort
	if index == checkpointList || index == tabledef.IndexCheckpointLease {
		wantSort = lifecycle.ValidCheckpointID(strings.TrimPrefix(sk, checkpointSortPrefix)) && strings.HasPrefix(sk, checkpointSortPrefix)
	}
	if !strings.HasPrefix(pk, sessionPK("")) || len(pk) == len(sessionPK("")) || !wantSort {
		return cursor{}, errBadCursor()
	}
	return c, nil
}

// maxCursorValue bounds a string in a cursor's key, in bytes: far above any
// key this store writes, far below DynamoDB's 1,024-byte sort key limit.
const maxCursorValue = 512

// keyTypes returns the attributes of a LastEvaluatedKey of a query on index
// (or on the table index of a cursor scope, cursorScopes): the table's keys
// and the index's keys, with their types.
func keyTypes(index string) (map[string]string, error) {
	if name, ok := cursorScopes[index]; ok {
		index = name
	}
	if index == checkpointList { // the table itself
		return map[string]string{tabledef.PartitionKey: tabledef.TypeString, tabledef.SortKey: tabledef.TypeString}, nil
	}
	for _, ix := range tabledef.Indexes {
		if ix.Name != index {
			continue
		}
		m := map[string]string{
			tabledef.PartitionKey: tabledef.TypeString,
			tabledef.SortKey:      tabledef.TypeString,
			ix.PartitionKey:       ix.PartitionType,
		}
		if ix.SortKey != "" {
			m[ix.SortKey] = ix.SortType
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown index %q", index)
}

// startKey returns the cursor's key as DynamoDB's ExclusiveStartKey, nil when
// there is none.
func (c cursor) startKey() map[string]types.AttributeValue {
	if len(c.Key) == 0 {
		return nil
	}
	m := make(map[string]types.AttributeValue, len(c.Key))
	for name, v := range c.Key {
		if v.S != nil {
			m[name] = &types.AttributeValueMemberS{Value: *v.S}
		} else {
			m[name] = &types.AttributeValueMemberN{Value: *v.N}
		}
	}
	return m
}

// stringKey returns the value of the cursor's string key attribute name, or "".
func (c cursor) stringKey(name string) string {
	if v, ok := c.Key[name]; ok && v.S != nil {
		return *v.S
	}
	return ""
}

// numberKey returns the value of the cursor's number key attribute name and whether
// it is present.
func (c cursor) numberKey(name string) (int64, bool) {
	v, ok := c.Key[name]
	if !ok || v.N == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(*v.N, 10, 64)
	return n, err == nil
}
