package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/routes"
)

// ChannelInvocation is what `sandman invoke` prints for the channel and
// notifier functions: the handler's response (the channel's; none for the
// notifier) and the pushes it made, which in AWS would have gone through
// the Management API.
type ChannelInvocation struct {
	Response *events.APIGatewayProxyResponse `json:"response,omitempty"`
	Pushes   []RecordedPush                  `json:"pushes"`
}

// RecordedPush is one push: the connection and the message.
type RecordedPush struct {
	ConnectionID string          `json:"connection_id"`
	Message      json.RawMessage `json:"message"`
}

// recordingPusher is a channel.Pusher that keeps every push; no connection
// is ever gone.
type recordingPusher struct {
	mu     sync.Mutex
	pushes []RecordedPush
}

func (p *recordingPusher) Push(_ context.Context, connID string, msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, RecordedPush{ConnectionID: connID, Message: append(json.RawMessage(nil), msg...)})
	return nil
}

// invokeChannel runs the channel function's handler on a WebSocket event
// (events/ws) or the notifier's on an EventBridge lifecycle event
// (events/bus), as functions/channel and functions/notifier wire them, with
// the pushes recorded instead of posted.
func invokeChannel(ctx context.Context, a *app.App, fn string, raw []byte) (ChannelInvocation, error) {
	rec := &recordingPusher{}
	out := ChannelInvocation{}
	if fn == routes.Channel {
		var ev events.APIGatewayWebsocketProxyRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			return out, fmt.Errorf("decode WebSocket event: %w", err)
		}
		h, err := channel.New(a.Service, a.Tokens, a.Store, rec, a.Log)
		if err != nil {
			return out, err
		}
		resp, err := h.Handle(ctx, ev)
		if err != nil {
			return out, err
		}
		out.Response = &resp
	} else {
		var ev events.CloudWatchEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return out, fmt.Errorf("decode EventBridge event: %w", err)
		}
		n, err := channel.NewNotifier(a.Service, a.Store, rec, a.Log)
		if err != nil {
			return out, err
		}
		if err := n.HandleEvent(ctx, ev); err != nil {
			return out, err
		}
	}
	out.Pushes = rec.pushes
	if out.Pushes == nil {
		out.Pushes = []RecordedPush{}
	}
	return out, nil
}
