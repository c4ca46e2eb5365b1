// Package sqskittest is the SQS edges' test queue: a sqskit.API that keeps
// what it is sent, or refuses it, and hands it back as the batch SQS would
// deliver.
package sqskittest

import (
	"context"
	"strconv"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Queue keeps the messages it is sent, or refuses every one with Fail.
// Safe for concurrent use.
type Queue struct {
	// Fail, when set, is every SendMessage's error.
	Fail error

	mu   sync.Mutex
	sent []*sqs.SendMessageInput
}

// SendMessage keeps in, or returns q.Fail.
func (q *Queue) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Fail != nil {
		return nil, q.Fail
	}
	q.sent = append(q.sent, in)
	return &sqs.SendMessageOutput{MessageId: aws.String("m" + strconv.Itoa(len(q.sent)))}, nil
}

// Sent returns the messages kept so far, in order.
func (q *Queue) Sent() []*sqs.SendMessageInput {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]*sqs.SendMessageInput(nil), q.sent...)
}

// Records returns the messages kept so far as one SQS batch, message ids
// m1, m2, … in order.
func (q *Queue) Records() events.SQSEvent {
	var ev events.SQSEvent
	for i, in := range q.Sent() {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: "m" + strconv.Itoa(i+1), Body: aws.ToString(in.MessageBody)})
	}
	return ev
}
