package dynamo

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Filtered lists (GET /v1/sessions?state=&provider=&template=&metadata=)
// read the by_owner_state index: one partition per account and state,
// sorted like by_owner_keys (created_at#id), carrying provider, template
// and metadata. A filtered page is one Query per state asked (every state
// when the filter names none), run at once, merged newest first (or oldest
// first: order=asc, the index read forward; an unfiltered list oldest first
// is served the same way, a Query per state, since by_owner_keys is read
// by ListSessions newest first only); provider,
// template and metadata are a FilterExpression on the index, so a session
// they leave out costs its index entry's bytes (a few hundred) and never a
// read of its item. Then one consistent BatchGetItem reads the page's
// items, and an item that no longer passes the filter (it changed state
// after the index, which is eventually consistent, was read) is left out.
//
// The Queries of one request evaluate at most Config.FindBudget index
// entries in all; a filter that skips more ends the page early, possibly empty, with
// a cursor at the point every Query has read up to (docs/CAPACITY.md "The
// by_owner_state index" has the costs).

// DefaultFindBudget bounds the index entries one filtered page evaluates
// across its states (Config.FindBudget): about 600 KB of index at a few
// hundred bytes an entry, 75 eventually consistent read units at worst.
const DefaultFindBudget = 2000

// findBatch is the Limit of a filtered Query that a FilterExpression may
// thin out: entries evaluated per round trip.
const findBatch = 200

var _ lifecycle.SessionFinder = (*Store)(nil)

// findCursor is a filtered list's page cursor: the index, the account, the
// filter's fingerprint, the order ("asc", or absent newest first) and the
// owner_sort the next page starts after. It travels as base64url (no
// padding) of its JSON.
type findCursor struct {
	Index   string `json:"i"`
	Account string `json:"a"`
	Filter  string `json:"f"`
	Order   string `json:"o,omitempty"`
	After   string `json:"s"`
}

// cursorOrder is how a findCursor names q's order.
func cursorOrder(q lifecycle.SessionQuery) string {
	if q.Order == lifecycle.OrderAsc {
		return string(lifecycle.OrderAsc)
	}
	return ""
}

func (c findCursor) encode() string {
	b, _ := json.Marshal(c) // strings only: never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeFindCursor reads a cursor issued for q. Errors: invalid.
func decodeFindCursor(text string, q lifecycle.SessionQuery) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return "", errBadCursor()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c findCursor
	if err := dec.Decode(&c); err != nil || dec.More() || c.Index != tabledef.IndexByOwnerState ||
		c.Account != q.AccountID || c.Filter != q.Filter.Fingerprint() || c.Order != cursorOrder(q) ||
		c.After == "" || len(c.After) > maxCursorValue || !strings.Contains(c.After, "#") {
		return "", errBadCursor()
	}
	return c.After, nil
}

// statePart is what the Query of one state found: the entries that pass the
// filter, in the query's order, and how far it read (frontier: the
// owner_sort of the last entry evaluated; "" when the partition was read to
// its end).
type statePart struct {
	matches  []map[string]types.AttributeValue
	frontier string
}

// FindSessions returns one page of q.AccountID's sessions that pass
// q.Filter, in q.Order, through the by_owner_state index (see above).
// Errors: invalid (an empty filter newest first, a limit out of range, a
// cursor not issued for this account, filter and order), the store's.
func (st *Store) FindSessions(ctx context.Context, q lifecycle.SessionQuery) (lifecycle.SessionPage, error) {
	switch {
	case q.Limit < 1 || q.Limit > maxListLimit:
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "limit must be between 1 and %d", maxListLimit)
	case q.AccountID == "":
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "account id is required")
	case q.Filter.Empty() && q.Order != lifecycle.OrderAsc:
		return lifecycle.SessionPage{}, lifecycle.Errorf(lifecycle.CodeInvalid, "a filter is required: list without one")
	}
	after := ""
	if q.Cursor != "" {
		var err error
		if after, err = decodeFindCursor(q.Cursor, q); err != nil {
			return lifecycle.SessionPage{}, err
		}
	}
	states := q.Filter.States
	if len(states) == 0 {
		states = lifecycle.States
	}
	budget := max(st.findBudget/len(states), 1)
	parts := make([]statePart, len(states))
	g, gctx := errgroup.WithContext(ctx)
	for i, state := range states {
		g.Go(func() error {
			var err error
			parts[i], err = st.findInState(gctx, q, state, after, budget)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return lifecycle.SessionPage{}, storeError("find sessions of account %s: %w", q.AccountID, err)
	}
	items, next := mergeParts(parts, q.Limit, q.Order == lifecycle.OrderAsc)
	full, err := st.getItems(ctx, items)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("find sessions of account %s: %w", q.AccountID, err)
	}
	page, err := decodePage(full)
	if err != nil {
		return lifecycle.SessionPage{}, storeError("find sessions of account %s: %w", q.AccountID, err)
	}
	kept := page.Sessions[:0]
	for _, s := range page.Sessions {
		if q.Filter.Match(s) {
			kept = append(kept, s)
		}
	}
	page.Sessions = kept
	if next != "" {
		page.Cursor = findCursor{Index: tabledef.IndexByOwnerState, Account: q.AccountID, Filter: q.Filter.Fingerprint(),
			Order: cursorOrder(q), After: next}.encode()
	}
	return page, nil
}

// mergeParts merges the states' matches newest first (asc: oldest first)
// and cuts one page of limit: it returns the page's index entries and the
// owner_sort the next page starts after ("" when there is none). Only
// entries every unfinished Query has read past are certain to be in order,
// so the page stops at the highest frontier (asc: the lowest).
func mergeParts(parts []statePart, limit int, asc bool) ([]map[string]types.AttributeValue, string) {
	sign := -1 // newest first: the greater owner_sort first
	if asc {
		sign = 1
	}
	bound := ""
	for _, p := range parts {
		if p.frontier != "" && (bound == "" || sign*strings.Compare(p.frontier, bound) < 0) {
			bound = p.frontier
		}
	}
	type cand struct {
		sort string
		item map[string]types.AttributeValue
	}
	var all []cand
	for _, p := range parts {
		for _, m := range p.matches {
			if s := stringAttr(m, tabledef.AttrOwnerSort); bound == "" || sign*strings.Compare(s, bound) <= 0 {
				all = append(all, cand{s, m})
			}
		}
	}
	slices.SortFunc(all, func(a, b cand) int { return sign * strings.Compare(a.sort, b.sort) })
	next := bound
	if len(all) > limit {
		all, next = all[:limit], all[limit-1].sort
	}
	items := make([]map[string]types.AttributeValue, len(all))
	for i, c := range all {
		items[i] = c.item
	}
	return items, next
}

// findInState queries state's partition of q.AccountID in by_owner_state,
// in q.Order, after after, with q's other filters, until it holds more
// than q.Limit matches, has evaluated budget entries or reaches the
// partition's end.
func (st *Store) findInState(ctx context.Context, q lifecycle.SessionQuery, state lifecycle.State, after string, budget int) (statePart, error) {
	names := map[string]string{"#os": tabledef.AttrOwnerState}
	values := map[string]types.AttributeValue{":os": &types.AttributeValueMemberS{Value: ownerState(q.AccountID, state)}}
	keyCond := "#os = :os"
	if after != "" {
		names["#sort"] = tabledef.AttrOwnerSort
		values[":after"] = &types.AttributeValueMemberS{Value: after}
		keyCond += " AND #sort < :after"
		if q.Order == lifecycle.OrderAsc {
			keyCond = "#os = :os AND #sort > :after"
		}
	}
	var filters []string
	eq := func(path, value string) {
		v := ":v" + strconv.Itoa(len(filters))
		values[v] = &types.AttributeValueMemberS{Value: value}
		filters = append(filters, path+" = "+v)
	}
	if q.Filter.Provider != "" {
		names["#provider"] = attrProvider
		eq("#provider", q.Filter.Provider)
	}
	if q.Filter.Template != "" {
		names["#template"] = "template"
		eq("#template", q.Filter.Template)
	}
	for i, k := range slices.Sorted(maps.Keys(q.Filter.Metadata)) {
		names["#metadata"], names["#mk"+strconv.Itoa(i)] = "metadata", k
		eq("#metadata.#mk"+strconv.Itoa(i), q.Filter.Metadata[k])
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(st.table),
		IndexName:                 aws.String(tabledef.IndexByOwnerState),
		KeyConditionExpression:    aws.String(keyCond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(q.Order == lifecycle.OrderAsc),
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	var part statePart
	evaluated := 0
	for {
		n := q.Limit + 1 - len(part.matches)
		if len(filters) > 0 {
			n = findBatch
		}
		in.Limit = aws.Int32(int32(min(n, budget-evaluated)))
		out, err := st.client.Query(ctx, in)
		if err != nil {
			return statePart{}, fmt.Errorf("query %s sessions: %w", state, err)
		}
		evaluated += int(out.ScannedCount)
		part.matches = append(part.matches, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			return part, nil // the partition's end
		}
		if len(part.matches) > q.Limit || evaluated >= budget {
			part.frontier = stringAttr(out.LastEvaluatedKey, tabledef.AttrOwnerSort)
			return part, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// stringAttr returns item's string attribute name, or "".
func stringAttr(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// BackfillResult counts what BackfillStateIndex did.
type BackfillResult struct {
	// Scanned is how many session items lacked their by_owner_state key;
	// Filled how many of them were given it, Raced how many a session
	// write rewrote meanwhile (the write that won set the key itself).
	Scanned, Filled, Raced int
}

// BackfillStateIndex gives every session item written before the
// by_owner_state index existed its key (owner_state), so that filtered
// lists find it: a table deployed before the index gets the index empty of
// its old sessions, and a session that is never written again (a killed
// one) would stay out of it for ever. It scans the table in segments
// parallel segments (1..64; 0: 4) for session items without owner_state and
// sets it, conditional on the item's version, so a session write landing
// meanwhile wins; nothing else changes, so the outbox publishes no event.
// Running it again finds nothing to fill. Errors: unavailable when the
// table cannot be read or written.
func (st *Store) BackfillStateIndex(ctx context.Context, segments int) (BackfillResult, error) {
	values := map[string]types.AttributeValue{":prefix": &types.AttributeValueMemberS{Value: sessionPrefix},
		":sort": &types.AttributeValueMemberS{Value: sessionSort}}
	segments = scanSegments(segments)
	results := make([]BackfillResult, segments)
	err := st.scan(ctx, segments, "backfill the state index", dynamodb.ScanInput{
		FilterExpression:     aws.String("begins_with(#pk, :prefix) AND #sk = :sort AND attribute_not_exists(#os)"),
		ProjectionExpression: aws.String("#pk, #v, #st, #acct"),
		ExpressionAttributeNames: map[string]string{"#pk": tabledef.PartitionKey, "#sk": tabledef.SortKey,
			"#os": tabledef.AttrOwnerState, "#v": attrVersion, "#st": attrState, "#acct": "account_id"},
		ExpressionAttributeValues: values,
	}, func(ctx context.Context, seg int, item map[string]types.AttributeValue) error {
		results[seg].Scanned++
		raced, err := st.fillOwnerState(ctx, item)
		switch {
		case err != nil:
			return err
		case raced:
			results[seg].Raced++
		default:
			results[seg].Filled++
		}
		return nil
	})
	var total BackfillResult
	for _, r := range results {
		total.Scanned += r.Scanned
		total.Filled += r.Filled
		total.Raced += r.Raced
	}
	return total, err
}

// fillOwnerState sets one scanned item's owner_state from its account and
// state, unless a session write changed it meanwhile (raced).
func (st *Store) fillOwnerState(ctx context.Context, item map[string]types.AttributeValue) (raced bool, err error) {
	pk, version := stringAttr(item, tabledef.PartitionKey), item[attrVersion]
	if pk == "" || version == nil {
		return false, nil
	}
	_, err = st.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(st.table), Key: itemKey(pk, sessionSort),
		UpdateExpression:         aws.String("SET #os = :os"),
		ConditionExpression:      aws.String("#v = :v"),
		ExpressionAttributeNames: map[string]string{"#os": tabledef.AttrOwnerState, "#v": attrVersion},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": version,
			":os": &types.AttributeValueMemberS{Value: ownerState(stringAttr(item, "account_id"), lifecycle.State(stringAttr(item, attrState)))}},
	})
	var failed *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &failed):
		return true, nil
	case err != nil:
		return false, storeError("backfill the state index: %s: %w", pk, err)
	}
	return false, nil
}
