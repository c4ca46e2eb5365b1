// Package dynamostore keeps the fleet's provider buckets
// (internal/governor) in the sessions table (internal/tabledef), one item
// per provider and shard:
//
//	bucket  pk "GOV#<provider>#<shard>"  sk "BUCKET"
//	        tat     N  the theoretical arrival time, µs since the epoch (absent: full)
//	        cut_at  N  the last cut of the rate (a provider's 429), µs (0: never)
//	        cut_to  N  the share of the limit it was cut to
//
// A lease is one UpdateItem built with the expression builder: "SET tat =
// tat + :delta" under "tat BETWEEN :now AND :max" (or, for a full bucket,
// "SET tat = :now + :delta" under "tat <= :now"), both under the last cut
// the lessee saw. Adding to the TAT commutes, so leases of many processes
// at once do not conflict while the bucket has room; a failed condition
// returns the item as it was (ReturnValuesOnConditionCheckFailure), so
// the lessee plans again without a read. The outbox ignores these items.
package dynamostore

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
	"github.com/sandmanhq/sandman/internal/governor"
)

// Key prefix and sort key of a bucket item.
const (
	bucketPrefix = "GOV#"
	bucketSort   = "BUCKET"
)

// API is the part of the DynamoDB client the Table uses; *dynamodb.Client
// implements it.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Table is a governor.Table on the sessions table.
type Table struct {
	client API
	table  string
}

var _ governor.Table = (*Table)(nil)

// New returns a Table on table through client.
func New(client API, table string) *Table { return &Table{client: client, table: table} }

type bucketItem struct {
	TAT   int64   `dynamodbav:"tat"`
	CutAt int64   `dynamodbav:"cut_at"`
	CutTo float64 `dynamodbav:"cut_to"`
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func stateOf(item map[string]types.AttributeValue) (governor.State, error) {
	var it bucketItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return governor.State{}, fmt.Errorf("decode governor bucket: %w", err)
	}
	return governor.State{TAT: fromMicros(it.TAT), CutAt: fromMicros(it.CutAt), CutTo: it.CutTo}, nil
}

func key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tabledef.PartitionKey: &types.AttributeValueMemberS{Value: bucketPrefix + k},
		tabledef.SortKey:      &types.AttributeValueMemberS{Value: bucketSort},
	}
}

var (
	tat   = expression.Name("tat")
	cutAt = expression.Name("cut_at")
	cutTo = expression.Name("cut_to")
)

// lastCut is the condition that the bucket's last cut is at (zero: none).
func lastCut(at time.Time) expression.ConditionBuilder {
	if at.IsZero() {
		return expression.Or(expression.AttributeNotExists(cutAt), cutAt.Equal(expression.Value(int64(0))))
	}
	return cutAt.Equal(expression.Value(micros(at)))
}

// Take implements governor.Table with one UpdateItem.
func (t *Table) Take(ctx context.Context, tk governor.Take) (governor.State, bool, error) {
	now := micros(tk.Now)
	upd := expression.Set(cutAt, expression.IfNotExists(cutAt, expression.Value(int64(0)))).
		Set(cutTo, expression.IfNotExists(cutTo, expression.Value(1.0)))
	var cond expression.ConditionBuilder
	if tk.Full {
		upd = upd.Set(tat, expression.Value(now+tk.Delta.Microseconds()))
		cond = expression.Or(expression.AttributeNotExists(tat), tat.LessThanEqual(expression.Value(now)))
	} else {
		upd = upd.Set(tat, tat.Plus(expression.Value(tk.Delta.Microseconds())))
		cond = tat.Between(expression.Value(now), expression.Value(micros(tk.Max)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(expression.And(cond, lastCut(tk.CutAt))).Build()
	if err != nil {
		return governor.State{}, false, err
	}
	out, err := t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(t.table), Key: key(tk.Key),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values(), ReturnValues: types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if ccf.Item == nil { // a table that does not return the item: read it
			s, err := t.read(ctx, tk.Key)
			return s, false, err
		}
		s, err := stateOf(ccf.Item)
		return s, false, err
	}
	if err != nil {
		return governor.State{}, false, fmt.Errorf("lease from governor bucket %s: %w", tk.Key, err)
	}
	s, err := stateOf(out.Attributes)
	return s, err == nil, err
}

// Cut implements governor.Table: an UpdateItem for the cut (under its
// hold-off), one for the Retry-After (when the TAT is before it), then a
// strongly consistent read of the result. A 429 is rare; this is its cost.
func (t *Table) Cut(ctx context.Context, c governor.Cut) (governor.State, error) {
	cut := expression.Set(cutAt, expression.Value(micros(c.At))).Set(cutTo, expression.Value(c.To))
	if err := t.update(ctx, c.Key, cut,
		expression.Or(expression.AttributeNotExists(cutAt), cutAt.LessThanEqual(expression.Value(micros(c.NotAfter))))); err != nil {
		return governor.State{}, err
	}
	if !c.Until.IsZero() {
		hold := expression.Set(tat, expression.Value(micros(c.Until))).
			Set(cutAt, expression.IfNotExists(cutAt, expression.Value(int64(0)))).
			Set(cutTo, expression.IfNotExists(cutTo, expression.Value(1.0)))
		if err := t.update(ctx, c.Key, hold,
			expression.Or(expression.AttributeNotExists(tat), tat.LessThan(expression.Value(micros(c.Until))))); err != nil {
			return governor.State{}, err
		}
	}
	return t.read(ctx, c.Key)
}

// update applies upd under cond; a failed condition is no error.
func (t *Table) update(ctx context.Context, k string, upd expression.UpdateBuilder, cond expression.ConditionBuilder) error {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = t.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(t.table), Key: key(k),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values()})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("cut governor bucket %s: %w", k, err)
	}
	return nil
}

// read returns a bucket's state, strongly consistent.
func (t *Table) read(ctx context.Context, k string) (governor.State, error) {
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t.table), Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return governor.State{}, fmt.Errorf("read governor bucket %s: %w", k, err)
	}
	return stateOf(out.Item)
}
