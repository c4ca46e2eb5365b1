// Command pause is the Lambda function behind the pause routes of
// internal/routes (API Gateway HTTP API, payload 2.0): POST
// /v1/sessions/{id}/pause and its alias …/snapshot, pause a session now
// (idempotent).
// Configuration comes from the environment once per cold start (internal/app).
package main

import (
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Pause, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()}, lambdamain.HTTP(routes.Pause))
}
