// Command sessions is the Lambda function behind the sessions routes of
// internal/routes (API Gateway HTTP API, payload 2.0): create, list, get, heartbeat and delete sessions.
// Configuration comes from the environment once per cold start (internal/app).
package main

import (
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/provider"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Sessions, Needs: app.Needs{Provider: true}, Adapters: provider.Lambda()}, lambdamain.HTTP(routes.Sessions))
}
