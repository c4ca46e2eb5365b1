package apigw

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// pools serves GET /v1/pools: the deployment's warm pools with their
// spares, counters, health and usage (lifecycle.Service.PoolViews,
// docs/POOLS.md). Any API key may read it: pools are the deployment's, not
// an account's, and hold nothing of any account. Their app env may hold
// the deployment's secrets, so it shows the variables' names only.
func (h *Handler) pools(ctx context.Context, _ *request) (response, error) {
	views, err := h.svc.PoolViews(ctx)
	if err != nil {
		return response{}, err
	}
	out := api.PoolList{Pools: make([]api.Pool, 0, len(views))}
	for _, v := range views {
		out.Pools = append(out.Pools, newPoolJSON(v))
	}
	return response{status: http.StatusOK, body: out}, nil
}

func newPoolJSON(v lifecycle.PoolView) api.Pool {
	return api.Pool{
		ID: v.ID, Provider: v.Provider, Template: v.Template, App: newPoolAppJSON(v.App), Size: v.Size, Tier: string(v.Tier),
		MaxAgeSeconds: int64(v.MaxAge / time.Second), Ready: v.Ready, Making: v.Making, Failed: v.Status.Failed,
		Claims: v.Status.Claims, Hits: v.Status.Hits, Misses: v.Status.Misses, Lost: v.Status.Lost, HitRate: v.HitRate(),
		ConsecutiveFailures: v.Status.ConsecutiveFailures, LastError: httpapi.Nullable(v.Status.LastError),
		LastErrorAt: api.Time(v.Status.LastErrorAt), BackoffUntil: api.Time(v.Status.BackoffUntil),
		Usage: api.PoolUsage{RunningSeconds: v.Usage.RunningSeconds, PausedSeconds: v.Usage.PausedSeconds,
			EstimatedCostUSD: v.Usage.EstimatedCostUSD},
	}
}

// newPoolAppJSON is a's JSON for GET /v1/pools: its env reduced to the
// variables' names, sorted; nil without an app.
func newPoolAppJSON(a *lifecycle.AppSpec) *api.PoolApp {
	if a == nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(a.Env))
	if names == nil {
		names = []string{}
	}
	return &api.PoolApp{Port: a.Port, StartCommand: a.StartCommand, Cwd: a.Cwd, EnvNames: names, ReadyPath: a.ReadyPath,
		ReadyTimeoutSeconds: int64(a.ReadyTimeout / time.Second)}
}
