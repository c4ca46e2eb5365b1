package dynamo

import (
	"context"
	"errors"
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
	ExpiresAt   string `dynamodbav:"expires_at"` // timeLayout
	TTL         int64  `dynamodbav:"ttl"`        // epoch seconds (tabledef.TTLAttribute)
}

func (it connItem) conn() (lifecycle.ClientConn, error) {
	exp, err := parseTime("expires_at", it.ExpiresAt)
	return lifecycle.ClientConn{ID: it.ID, SessionID: it.ConnSession, AccountID: it.AccountID, Visible: it.Visible, ExpiresAt: exp}, err
}

// PutConn stores c (unconditionally: a connection has one writer, its own
// gateway events). Errors: invalid for a connection without an id or
// session, unavailable.
func (st *Store) PutConn(ctx context.Context, c lifecycle.ClientConn) error {
	if c.ID == "" || c.SessionID == "" || c.ExpiresAt.IsZero() {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "a connection needs an id, a session and an expiry")
	}
	av, err := attributevalue.MarshalMap(connItem{PK: connPrefix + c.ID, SK: connSort, ID: c.ID, ConnSession: c.SessionID,
		AccountID: c.AccountID, Visible: c.Visible, ExpiresAt: formatTime(c.ExpiresAt), TTL: c.ExpiresAt.Unix()})
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
		for _, raw := range page.Items {
			var it connItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil || !strings.HasPrefix(it.PK, connPrefix) {
				return nil, storeError("decode connection of %s: %w", sessionID, errors.Join(err, errors.New("not a connection item")))
			}
			c, err := it.conn()
			if err != nil {
				return nil, storeError("connection %s: %w", it.ID, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}
