package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The running-slot counter of an account (lifecycle quota.go):
//
//	counter  pk "ACCOUNT#<account id>"  sk "RUNNING"  running (N)
//
// A session write that takes or releases a slot (lifecycle.RunningSlotDelta
// != 0) is one TransactWriteItems of the session's conditional put and an
// ADD on this counter, so the two commit together or not at all: no crash
// can leave a slot counted for a session that does not hold it. A write
// that takes a slot with Session.RunningLimit > 0 also requires
// running < limit. Writes that move no slot stay a single PutItem.
//
// The transaction carries a ClientRequestToken (the write id), so the SDK's
// retry of a call whose answer was lost is answered from DynamoDB's
// idempotency window instead of applying the ADD twice. Concurrent
// transactions on one account's counter can cancel each other
// (TransactionConflict); such a write is retried with a fresh token up to
// slotConflictRetries times with a short random wait.
const (
	accountPrefix       = "ACCOUNT#"
	runningSort         = "RUNNING"
	attrRunning         = "running"
	slotConflictRetries = 8
)

// cancellation reason codes of TransactionCanceledException.
const (
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonTxConflict      = "TransactionConflict"
	reasonThrottled       = "ThrottlingError"
)

// putMovingSlots writes session item it under cond together with a move of
// s's account counter by delta; it returns the session put's failed
// condition's old item (ok=false) or the error to return.
func (st *Store) putMovingSlots(ctx context.Context, s *lifecycle.Session, it sessionItem, cond expression.ConditionBuilder, delta int) (old map[string]types.AttributeValue, condFailed bool, err error) {
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, false, storeError("encode item: %w", err)
	}
	sessExpr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, false, storeError("build condition: %w", err)
	}
	upd := expression.Add(expression.Name(attrRunning), expression.Value(delta))
	b := expression.NewBuilder().WithUpdate(upd)
	limited := delta > 0 && s.RunningLimit > 0
	if limited {
		b = b.WithCondition(expression.AttributeNotExists(expression.Name(attrRunning)).
			Or(expression.Name(attrRunning).LessThan(expression.Value(s.RunningLimit))))
	}
	cntExpr, err := b.Build()
	if err != nil {
		return nil, false, storeError("build counter update: %w", err)
	}
	counter := &types.Update{
		TableName:                 aws.String(st.table),
		Key:                       itemKey(accountPrefix+s.AccountID, runningSort),
		UpdateExpression:          cntExpr.Update(),
		ExpressionAttributeNames:  cntExpr.Names(),
		ExpressionAttributeValues: cntExpr.Values(),
	}
	if limited {
		counter.ConditionExpression = cntExpr.Condition()
	}
	for attempt := 0; ; attempt++ {
		in := &dynamodb.TransactWriteItemsInput{
			ClientRequestToken: aws.String(it.WriteID),
			TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{
					TableName:                           aws.String(st.table),
					Item:                                av,
					ConditionExpression:                 sessExpr.Condition(),
					ExpressionAttributeNames:            sessExpr.Names(),
					ExpressionAttributeValues:           sessExpr.Values(),
					ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
				}},
				{Update: counter},
			},
		}
		_, err = st.client.TransactWriteItems(ctx, in)
		var tc *types.TransactionCanceledException
		if !errors.As(err, &tc) {
			if err != nil {
				return nil, false, storeError("write session %s with its running slot: %w", s.ID, err)
			}
			return nil, false, nil
		}
		reasons := tc.CancellationReasons
		code := func(i int) string {
			if i < len(reasons) {
				return aws.ToString(reasons[i].Code)
			}
			return ""
		}
		switch {
		case code(0) == reasonConditionFailed:
			return reasons[0].Item, true, nil
		case code(1) == reasonConditionFailed:
			return nil, false, lifecycle.ErrQuotaExceeded(s.AccountID, s.RunningLimit)
		case (code(0) == reasonTxConflict || code(1) == reasonTxConflict) && attempt < slotConflictRetries:
			// A new token: the cancelled transaction applied nothing.
			it.WriteID = newWriteID()
			if av, err = attributevalue.MarshalMap(it); err != nil {
				return nil, false, storeError("encode item: %w", err)
			}
			if err := sleepJitter(ctx, attempt); err != nil {
				return nil, false, storeError("write session %s with its running slot: %w", s.ID, err)
			}
		case code(0) == reasonTxConflict || code(1) == reasonTxConflict ||
			code(0) == reasonThrottled || code(1) == reasonThrottled:
			// Still contended (or throttled) after the retries: the table is
			// too busy for now, a 503 with Retry-After, never a 500.
			return nil, false, &lifecycle.Error{Code: lifecycle.CodeUnavailable, RetryAfter: StoreRetryAfter,
				Message: "the session store is busy; retry later",
				Err:     fmt.Errorf("write session %s with its running slot: reasons %s, %s: %w", s.ID, code(0), code(1), err)}
		default:
			return nil, false, storeError("write session %s with its running slot (reasons %s, %s): %w", s.ID, code(0), code(1), err)
		}
	}
}

// sleepJitter waits a random 5..(20·2^attempt) ms (at most 1 s), or until
// ctx ends.
func sleepJitter(ctx context.Context, attempt int) error {
	top := min(20*time.Millisecond<<attempt, time.Second)
	d := 5*time.Millisecond + rand.N(top)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RunningSlots returns how many running slots accountID holds (0 when its
// counter item does not exist), read with a strongly consistent read.
func (st *Store) RunningSlots(ctx context.Context, accountID string) (int, error) {
	out, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(st.table),
		Key:            itemKey(accountPrefix+accountID, runningSort),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, storeError("get running slots of account %s: %w", accountID, err)
	}
	var v struct {
		Running int `dynamodbav:"running"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &v); err != nil {
		return 0, fmt.Errorf("decode running slots of account %s: %w", accountID, err)
	}
	return v.Running, nil
}
