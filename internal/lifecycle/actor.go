package lifecycle

import "context"

// Actors: who made a session's last write (Session.Actor) and so who caused
// a transition (the timeline of GET /v1/sessions/{id}/events). The edge that
// serves a request says who its caller is (WithActor); work that no caller
// asked for is ActorSandman's.
const (
	// ActorAPI is a call with the account's API key (the customer's
	// backend, an operator's CLI).
	ActorAPI = "api"
	// ActorClient is a browser with a session's client token: the client
	// channel, the stable link, the client-token routes.
	ActorClient = "client"
	// ActorProvider is a provider's webhook reporting a change.
	ActorProvider = "provider"
	// ActorSweep is the sweep: idle, away and lifetime deadlines, dormancy,
	// reconcile, reaping.
	ActorSweep = "sweep"
	// ActorTimer is a pause timer firing at a pause deadline
	// (docs/DESIGN.md "Precise pausing").
	ActorTimer = "timer"
	// ActorSandman is Sandman's own background work: readiness, a resume
	// handed to a job, warm pools. The default when no edge said.
	ActorSandman = "sandman"
)

type actorKey struct{}

// WithActor returns ctx carrying actor (one of the Actor constants): every
// session write made under it records actor as the session's Actor.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorOf returns the actor ctx carries (WithActor), ActorSandman when none.
func ActorOf(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return ActorSandman
}
