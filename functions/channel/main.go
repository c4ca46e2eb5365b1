// Command channel is the Lambda function behind the API Gateway WebSocket
// API's three route keys, $connect (authorises the client token),
// $disconnect and $default (hello, heartbeat and resume messages): one
// channel.Handler dispatching by route key (internal/channel, docs/DESIGN.md
// "Client channel"). One function and not three: the three share every
// dependency (the table, the client-token keys, the provider for resume,
// the Management API for hello's answer), so one role holds the same grants
// three would, and one pool of warm instances serves a client's connect,
// messages and disconnect. Configuration comes from the environment once
// per cold start (internal/app).
package main

import (
	"context"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/channel"
	"github.com/sandmanhq/sandman/internal/channel/apigwmgmt"
	"github.com/sandmanhq/sandman/internal/metrics"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Channel, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()},
		func(ctx context.Context, a *app.App, m *metrics.Emitter) (any, error) {
			push, err := apigwmgmt.Load(ctx, a.Config.WSManagementURL)
			if err != nil {
				return nil, err
			}
			h, err := channel.New(a.Service, a.Tokens, a.Store, m.CountPushes(push), a.Log)
			if err != nil {
				return nil, err
			}
			return metrics.Handler(m, h.Handle), nil
		})
}
