// Command status is the Lambda function behind the status routes of
// internal/routes (API Gateway HTTP API, payload 2.0): report a session's
// status from the table alone (it has no provider credentials).
// Configuration comes from the environment once per cold start (internal/app).
package main

import (
	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/app/lambdamain"
	"github.com/sandmanhq/sandman/internal/routes"
)

func main() {
	lambdamain.Start(lambdamain.Function{Name: routes.Status, Needs: app.Needs{}}, lambdamain.HTTP(routes.Status))
}
