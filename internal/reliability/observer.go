package reliability

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/provider/hookwire/e2bhook"
	"github.com/sandmanhq/sandman/internal/routes"
)

// Delivery is one provider webhook to deliver: the event and the sandbox
// metadata its body carries.
type Delivery struct {
	Event    lifecycle.ProviderEvent
	Metadata map[string]string
}

// Observer turns what happened to a fake provider's sandboxes into the
// lifecycle webhooks E2B would send about them. Each Observe compares the
// provider's sandboxes (fake.Provider.Sandboxes, which applies
// their timeouts) with the previous look and returns one event per change:
// created for a new sandbox, paused and resumed for a change of state,
// killed for a sandbox that is gone. Observations are serialised, so the
// events' timestamps follow the order the changes were seen in: the
// clock's time, moved one millisecond past the previous event when the
// clock has not moved. Changes undone between two looks produce no event,
// as a provider may drop deliveries. It is safe for concurrent use.
type Observer struct {
	prov  *fake.Provider
	clock lifecycle.Clock

	mu   sync.Mutex
	seen map[string]lifecycle.Sandbox
	last time.Time
	n    int
}

// NewObserver returns an Observer of prov, stamping events by clock. Its
// first Observe reports every existing sandbox as created.
func NewObserver(prov *fake.Provider, clock lifecycle.Clock) *Observer {
	return &Observer{prov: prov, clock: clock, seen: map[string]lifecycle.Sandbox{}}
}

// Observe returns the events of the changes since the previous call.
func (o *Observer) Observe() []Delivery {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := map[string]lifecycle.Sandbox{}
	var out []Delivery
	for _, sb := range o.prov.Sandboxes() {
		now[sb.ID] = sb
		before, known := o.seen[sb.ID]
		switch {
		case !known:
			out = append(out, o.event(sb, lifecycle.ProviderEventCreated, ""))
			if sb.State == lifecycle.SandboxPaused {
				out = append(out, o.event(sb, lifecycle.ProviderEventPaused, ""))
			}
		case before.State == lifecycle.SandboxRunning && sb.State == lifecycle.SandboxPaused:
			out = append(out, o.event(sb, lifecycle.ProviderEventPaused, ""))
		case before.State == lifecycle.SandboxPaused && sb.State == lifecycle.SandboxRunning:
			out = append(out, o.event(sb, lifecycle.ProviderEventResumed, ""))
		}
	}
	for id, sb := range o.seen {
		if _, ok := now[id]; !ok {
			out = append(out, o.event(sb, lifecycle.ProviderEventKilled, e2bhook.KillUnknown))
		}
	}
	o.seen = now
	return out
}

// event returns the next event about sb. Callers hold o.mu.
func (o *Observer) event(sb lifecycle.Sandbox, typ lifecycle.ProviderEventType, killReason string) Delivery {
	at := o.clock.Now().UTC()
	if !at.After(o.last) {
		at = o.last.Add(time.Millisecond)
	}
	o.last = at
	o.n++
	return Delivery{
		Event: lifecycle.ProviderEvent{
			ID: fmt.Sprintf("evt_%06d", o.n), Provider: e2bhook.Provider, Type: typ,
			SandboxID: sb.ID, Timestamp: at, KillReason: killReason,
		},
		Metadata: maps.Clone(sb.Metadata),
	}
}

// SignedRequest returns the API Gateway (payload v2) request that delivers
// d to POST /v1/webhooks/e2b: an E2B v2 body built by e2bhook.NewBody and
// signed with secret (e2bhook.Sign) in the v1 scheme, lowercase headers as
// API Gateway sends them. Errors: a body e2bhook.Build refuses.
func SignedRequest(secret string, d Delivery, requestID string) (events.APIGatewayV2HTTPRequest, error) {
	body, err := e2bhook.Build(e2bhook.NewBody(d.Event, d.Metadata))
	if err != nil {
		return events.APIGatewayV2HTTPRequest{}, fmt.Errorf("build webhook body of %s: %w", d.Event.ID, err)
	}
	headers := map[string]string{"content-type": "application/json"}
	for k, vs := range e2bhook.Header(secret, "wh_reliability", "dl_"+requestID, body) {
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	const path = "/v1/webhooks/e2b"
	return events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       webhookRouteKey(),
		RawPath:        path,
		Headers:        headers,
		PathParameters: map[string]string{"provider": "e2b"},
		Body:           string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: requestID,
			HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: path},
		},
	}, nil
}

// webhookRouteKey returns the webhook function's route key from routes.Table.
func webhookRouteKey() string {
	for _, rt := range routes.Table {
		if rt.Function == routes.Webhook {
			return rt.Key()
		}
	}
	return "POST /v1/webhooks/{provider}"
}
