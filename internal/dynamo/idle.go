package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The learned idle policy's histograms (docs/COST.md): one small item per
// key, pk "IDLE#<key>" sk "IDLE", the histogram binary-encoded
// (lifecycle.IdleHistogram.MarshalBinary: at most 969 bytes, so an item
// stays within one 1 KB write unit with its key and version).
const idleSort = "IDLE"

func idlePK(key string) string { return "IDLE#" + key }

// idleItem is a lifecycle.IdleHistogramItem as stored.
type idleItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Histogram []byte `dynamodbav:"h"`
	Version   int64  `dynamodbav:"version"`
	UpdatedAt string `dynamodbav:"updated_at"`
}

var _ lifecycle.IdleHistogramStore = (*Store)(nil)

// GetIdleHistogram reads key's item with an eventually consistent read
// (half a read unit; a histogram a moment old plans as well); a key never
// written is an empty histogram at version 0.
func (st *Store) GetIdleHistogram(ctx context.Context, key string) (lifecycle.IdleHistogramItem, error) {
	out := lifecycle.IdleHistogramItem{Key: key}
	res, err := st.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(st.table),
		Key:       itemKey(idlePK(key), idleSort),
	})
	if err != nil {
		return out, storeError("get idle histogram %s: %w", key, err)
	}
	if len(res.Item) == 0 {
		return out, nil
	}
	var it idleItem
	if err := attributevalue.UnmarshalMap(res.Item, &it); err != nil {
		return out, storeError("decode idle histogram %s: %w", key, err)
	}
	if err := out.Histogram.UnmarshalBinary(it.Histogram); err != nil {
		return out, storeError("decode idle histogram %s: %w", key, err)
	}
	out.Version = it.Version
	if out.UpdatedAt, err = parseTime("updated_at", it.UpdatedAt); err != nil {
		return out, storeError("decode idle histogram %s: %w", key, err)
	}
	return out, nil
}

// PutIdleHistogram writes it if the stored version is still it.Version (0:
// none stored). Errors: invalid (no key), conflict.
func (st *Store) PutIdleHistogram(ctx context.Context, it *lifecycle.IdleHistogramItem) error {
	if it.Key == "" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "idle histogram key is required")
	}
	h, err := it.Histogram.MarshalBinary()
	if err != nil {
		return storeError("encode idle histogram %s: %w", it.Key, err)
	}
	cond := expression.Name("version").Equal(expression.Value(it.Version))
	if it.Version == 0 {
		cond = expression.AttributeNotExists(expression.Name(tabledef.PartitionKey))
	}
	item := idleItem{PK: idlePK(it.Key), SK: idleSort, Histogram: h, Version: it.Version + 1, UpdatedAt: formatTime(it.UpdatedAt)}
	err = st.put(ctx, item, cond, false)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return lifecycle.Errorf(lifecycle.CodeConflict, "idle histogram %s was written meanwhile", it.Key)
	}
	if err != nil {
		return storeError("put idle histogram %s: %w", it.Key, err)
	}
	it.Version++
	return nil
}

// idleStateItem is a lifecycle.IdleState as stored on its session (a map
// attribute; absent: the fixed idle policy). Durations in milliseconds,
// times in timeLayout.
type idleStateItem struct {
	Policy           string `dynamodbav:"policy"`
	Key              string `dynamodbav:"key,omitempty"`
	Why              string `dynamodbav:"why,omitempty"`
	PauseAfterMS     int64  `dynamodbav:"pause_after_ms,omitempty"`
	PreResumeAfterMS int64  `dynamodbav:"pre_resume_after_ms,omitempty"`
	PreResumeKeepMS  int64  `dynamodbav:"pre_resume_keep_ms,omitempty"`
	PreResume        bool   `dynamodbav:"pre_resume,omitempty"`
	Level            int    `dynamodbav:"level"`
	Returns          int    `dynamodbav:"returns,omitempty"`
	PreResumeAt      string `dynamodbav:"pre_resume_at,omitempty"`
	PreResumed       bool   `dynamodbav:"pre_resumed,omitempty"`
}

func toIdleStateItem(s *lifecycle.IdleState) *idleStateItem {
	if s == nil {
		return nil
	}
	p := s.Plan
	return &idleStateItem{Policy: string(s.Policy), Key: s.Key, Why: string(p.Why),
		PauseAfterMS: p.PauseAfter.Milliseconds(), PreResumeAfterMS: p.PreResumeAfter.Milliseconds(),
		PreResumeKeepMS: p.PreResumeKeep.Milliseconds(), PreResume: p.PreResume, Level: p.Level, Returns: p.Returns,
		PreResumeAt: formatTime(s.PreResumeAt), PreResumed: s.PreResumed}
}

func (it *idleStateItem) state() (*lifecycle.IdleState, error) {
	if it == nil {
		return nil, nil
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	at, err := parseTime("idle.pre_resume_at", it.PreResumeAt)
	if err != nil {
		return nil, err
	}
	return &lifecycle.IdleState{Policy: lifecycle.IdlePolicy(it.Policy), Key: it.Key,
		Plan: lifecycle.IdlePlan{Why: lifecycle.PlanWhy(it.Why), PauseAfter: ms(it.PauseAfterMS),
			PreResumeAfter: ms(it.PreResumeAfterMS), PreResumeKeep: ms(it.PreResumeKeepMS), PreResume: it.PreResume,
			Level: it.Level, Returns: it.Returns},
		PreResumeAt: at, PreResumed: it.PreResumed}, nil
}
