package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

var _ lifecycle.ClientConns = (*Store)(nil)

const (
	connPrefix = "CONN#"
	connSort   = "CONN"
)

// connItem is a client-channel connection as stored: in the
// by_conn_session index, deleted by DynamoDB's TTL some time after ttl.
type connItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	ID          string `dynamodbav:"id"`
	ConnSession string `dynamodbav:"conn_session"` // tabledef.AttrConnSession: the session id
	AccountID   string `dynamodbav:"account_id"`
	Visible     bool   `dynamodbav:"visible"`
	ExpiresAt   string `dynamodbav:"expires_at"`        // timeLayout
	SeenAt      string `dynamodbav:"seen_at,omitempty"` // timeLayout; absent on older records
	TTL         int64  `dynamodbav:"ttl"`               // epoch seconds (tabledef.TTLAttribute)
}

func (it connItem) conn() (lifecycle.ClientConn, error) {
	exp, err := parseTime("expires_at", it.ExpiresAt)
	c := lifecycle.ClientConn{ID: it.ID, SessionID: it.ConnSession, AccountID: it.AccountID, Visible: it.Visible, ExpiresAt: exp}
	if err == nil && it.SeenAt != "" {
		c.SeenAt, err = parseTime("seen_at", it.SeenAt)
	}
	return c, err
}

// PutConn stores c (unconditionally: a connection has one writer, its own
// gateway events). Errors: invalid for a connection without an id or
// session, unavailable.
func (st *Store) PutConn(ctx context.Context, c lifecycle.ClientConn) error {
	if c.ID == "" || c.SessionID == "" || c.ExpiresAt.IsZero() {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "a connection needs an id, a session and an expiry")
	}
	it := connItem{PK: connPrefix + c.ID, SK: connSort, ID: c.ID, ConnSession: c.SessionID,
		AccountID: c.AccountID, Visible: c.Visible, ExpiresAt: formatTime(c.ExpiresAt), TTL: c.ExpiresAt.Unix()}
	if !c.SeenAt.IsZero() {
		it.SeenAt = formatTime(c.SeenAt)
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return storeError("encode connection: %w", err)
	}
	if _, err := st.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(st.table), Item: av}); err != nil {
		return storeError("put connection %s: %w", c.ID, err)
	}
	return nil
}

func connKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tabledef.PartitionKey: &types.AttributeValueMemberS{Value: connPrefix + id},
		tabledef.SortKey:      &types.AttributeValueMemberS{Value: connSort},
	}
}

// GetConn reads one connection (strongly consistent). Errors: not_found,
// unavailable.
func (st *Store) GetConn(ctx context.Context, id string) (lifecycle.ClientConn, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(st.table), Key: connKey(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return lifecycle.ClientConn{}, storeError("get connection %s: %w", id, err)
	}
	if len(out.Item) == 0 {
		return lifecycle.ClientConn{}, lifecycle.Errorf(lifecycle.CodeNotFound, "no connection %s", id)
	}
	var it connItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return lifecycle.ClientConn{}, storeError("decode connection %s: %w", id, err)
	}
	return it.conn()
}

// DeleteConn removes a connection; a missing one is no error.
func (st *Store) DeleteConn(ctx context.Context, id string) error {
	if _, err := st.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(st.table), Key: connKey(id)}); err != nil {
		return storeError("delete connection %s: %w", id, err)
	}
	return nil
}

// AllConns returns every stored connection: a Scan of the by_conn_session
// index, which is sparse (only connection items carry its key), so it reads
// the open connections, not the sessions. Eventually consistent, like
// SessionConns; expired records not yet deleted are returned too. The
// local gateway drops them all at start, the sweep the stale ones
// (internal/channel Reaper). Errors: unavailable.
func (st *Store) AllConns(ctx context.Context) ([]lifecycle.ClientConn, error) {
	var out []lifecycle.ClientConn
	p := dynamodb.NewScanPaginator(st.client, &dynamodb.ScanInput{TableName: aws.String(st.table),
		IndexName: aws.String(tabledef.IndexByConnSession)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, storeError("scan connections: %w", err)
		}
		conns, err := decodeConns(page.Items)
		if err != nil {
			return nil, err
		}
		out = append(out, conns...)
	}
	return out, nil
}

// decodeConns decodes connection items of the by_conn_session index.
func decodeConns(items []map[string]types.AttributeValue) ([]lifecycle.ClientConn, error) {
	out := make([]lifecycle.ClientConn, 0, len(items))
	for _, raw := range items {
		var it connItem
		if err := attributevalue.UnmarshalMap(raw, &it); err != nil || !strings.HasPrefix(it.PK, connPrefix) {
			return nil, storeError("decode connection: %w", errors.Join(err, errors.New("not a connection item")))
		}
		c, err := it.conn()
		if err != nil {
			return nil, storeError("connection %s: %w", it.ID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// SessionConns returns the session's connections through the
// by_conn_session index (eventually consistent: a connection stored a
// moment ago may be missing, one deleted may linger). Records whose TTL has
// passed but which DynamoDB has not deleted yet (it may take days) are
// returned too: callers compare ExpiresAt with their clock. Errors:
// unavailable.
func (st *Store) SessionConns(ctx context.Context, sessionID string) ([]lifecycle.ClientConn, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(
		expression.Key(tabledef.AttrConnSession).Equal(expression.Value(sessionID))).Build()
	if err != nil {
		return nil, storeError("build query: %w", err)
	}
	var out []lifecycle.ClientConn
	p := dynamodb.NewQueryPaginator(st.client, &dynamodb.QueryInput{TableName: aws.String(st.table),
		IndexName: aws.String(tabledef.IndexByConnSession), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, storeError("query connections of %s: %w", sessionID, err)
		}
		conns, err := decodeConns(page.Items)
		if err != nil {
			return nil, fmt.Errorf("connections of %s: %w", sessionID, err)
		}
		out = append(out, conns...)
	}
	return out, nil
}
