package dynamostore

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
)

// Parking (delivery.Engine parks a delivery whose endpoint is at its cap):
//
//	parked delivery pk "WHPARK#<endpoint id>" sk "<delivery id>"   (ttl: the delivery's)
//	endpoint watch  pk "WHPARK#<endpoint id>" sk "WATCH"           (ttl: 30 days after its start)
//
// An endpoint's parked deliveries are one partition, oldest first by
// delivery id, so a wake is one Query of a few small items; the watch record
// sorts after them and is left out of that Query ("dlv_" prefix).
const (
	parkPrefix = "WHPARK#"
	watchSort  = "WATCH"
	parkedSort = "dlv_" // every delivery id starts so (delivery.DeliveryID)
)

type parkedItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	AccountID  string `dynamodbav:"account_id"`
	EndpointID string `dynamodbav:"endpoint_id"`
	Seq        int    `dynamodbav:"seq"`
	ParkedAt   string `dynamodbav:"parked_at"`
	WokenAt    string `dynamodbav:"woken_at,omitempty"`
	TTL        int64  `dynamodbav:"ttl"` // epoch seconds (tabledef.TTLAttribute)
}

type watchItem struct {
	PK    string `dynamodbav:"pk"`
	SK    string `dynamodbav:"sk"`
	Since string `dynamodbav:"since"`
	TTL   int64  `dynamodbav:"ttl"`
}

// ParkDelivery implements delivery.Store: a PutItem replacing the earlier
// parking of the delivery.
func (s *Store) ParkDelivery(ctx context.Context, p *delivery.Parked) error {
	av, err := attributevalue.MarshalMap(parkedItem{PK: parkPrefix + p.EndpointID, SK: p.DeliveryID, AccountID: p.AccountID,
		EndpointID: p.EndpointID, Seq: p.Seq, ParkedAt: formatTime(p.ParkedAt), TTL: p.ExpiresAt.Unix()})
	if err != nil {
		return fmt.Errorf("encode parked delivery: %w", err)
	}
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: av}); err != nil {
		return storeError("park delivery %s: %w", p.DeliveryID, err)
	}
	return nil
}

// ParkedDeliveries implements delivery.Store: one strongly consistent
// Query, ascending.
func (s *Store) ParkedDeliveries(ctx context.Context, endpointID string, limit int) ([]*delivery.Parked, error) {
	if limit <= 0 {
		return nil, nil
	}
	kc := expression.Key(tabledef.PartitionKey).Equal(expression.Value(parkPrefix + endpointID)).
		And(expression.Key(tabledef.SortKey).BeginsWith(parkedSort))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, err
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(s.table), KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true),
		Limit: aws.Int32(int32(limit))})
	if err != nil {
		return nil, storeError("list parked deliveries of %s: %w", endpointID, err)
	}
	var items []parkedItem
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
		return nil, fmt.Errorf("decode parked deliveries: %w", err)
	}
	ps := make([]*delivery.Parked, 0, len(items))
	for _, it := range items {
		ps = append(ps, &delivery.Parked{EndpointID: it.EndpointID, AccountID: it.AccountID, DeliveryID: it.SK, Seq: it.Seq,
			ParkedAt: parseTime(it.ParkedAt), ExpiresAt: time.Unix(it.TTL, 0).UTC(), WokenAt: parseTime(it.WokenAt)})
	}
	return ps, nil
}

// ClaimParked implements delivery.Store: an UpdateItem on the parking's
// time and its last claim (times as stored sort as they compare).
func (s *Store) ClaimParked(ctx context.Context, p *delivery.Parked, now, before time.Time) (bool, error) {
	cond := expression.Name("parked_at").Equal(expression.Value(formatTime(p.ParkedAt))).
		And(expression.Or(expression.AttributeNotExists(expression.Name("woken_at")),
			expression.Name("woken_at").LessThanEqual(expression.Value(formatTime(before)))))
	expr, err := expression.NewBuilder().WithCondition(cond).
		WithUpdate(expression.Set(expression.Name("woken_at"), expression.Value(formatTime(now)))).Build()
	if err != nil {
		return false, err
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.table), Key: key(parkPrefix+p.EndpointID, p.DeliveryID),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(),
		ExpressionAttributeValues: expr.Values()})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, storeError("claim parked delivery %s: %w", p.DeliveryID, err)
	}
	return true, nil
}

// UnparkDelivery implements delivery.Store: a DeleteItem on the parking's
// time.
func (s *Store) UnparkDelivery(ctx context.Context, p *delivery.Parked) error {
	return s.deleteIf(ctx, parkPrefix+p.EndpointID, p.DeliveryID, "parked_at", formatTime(p.ParkedAt), "unpark delivery "+p.DeliveryID)
}

// StartWatch implements delivery.Store: a PutItem on the record's absence.
func (s *Store) StartWatch(ctx context.Context, endpointID string, since time.Time) (bool, error) {
	err := s.put(ctx, watchItem{PK: parkPrefix + endpointID, SK: watchSort, Since: formatTime(since),
		TTL: since.Add(delivery.LogRetention).Unix()}, notExists())
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, storeError("start the watch of endpoint %s: %w", endpointID, err)
	}
	return true, nil
}

// Watching implements delivery.Store: a strongly consistent GetItem.
func (s *Store) Watching(ctx context.Context, endpointID string) (time.Time, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: key(parkPrefix+endpointID, watchSort), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return time.Time{}, storeError("read the watch of endpoint %s: %w", endpointID, err)
	}
	var it watchItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return time.Time{}, fmt.Errorf("decode the watch of endpoint %s: %w", endpointID, err)
	}
	return parseTime(it.Since), nil
}

// EndWatch implements delivery.Store: a DeleteItem on the watch's start.
func (s *Store) EndWatch(ctx context.Context, endpointID string, since time.Time) error {
	return s.deleteIf(ctx, parkPrefix+endpointID, watchSort, "since", formatTime(since), "end the watch of endpoint "+endpointID)
}

// deleteIf deletes the item pk/sk when its attribute attr is value; an
// item that is gone or holds another value is left as it is.
func (s *Store) deleteIf(ctx context.Context, pk, sk, attr, value, what string) error {
	expr, err := expression.NewBuilder().WithCondition(expression.Name(attr).Equal(expression.Value(value))).Build()
	if err != nil {
		return err
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: key(pk, sk),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if err != nil && !conditionFailed(err) {
		return storeError("%s: %w", what, err)
	}
	return nil
}
