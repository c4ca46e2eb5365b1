// Command snapshot is the Lambda function behind the snapshot routes of
// internal/routes (API Gateway HTTP API, payload 2.0): pause a session now (idempotent).
// Configuration comes from the environment once per cold start (internal/app).
package main

import (
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Snapshot, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()}, lambdamain.HTTP(routes.Snapshot))
}
