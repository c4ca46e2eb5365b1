package apigw

import (
	"context"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// pools serves GET /v1/pools: the deployment's warm pools with their
// spares, counters, health and usage (lifecycle.Service.PoolViews,
// docs/POOLS.md). Any API key may read it: pools are the deployment's, not
// an account's, and hold nothing of any account.
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
		ID: v.ID, Provider: v.Provider, Template: v.Template, App: newAppJSON(v.App), Size: v.Size, Tier: string(v.Tier),
		MaxAgeSeconds: int64(v.MaxAge / time.Second), Ready: v.Ready, Making: v.Making, Failed: v.Status.Failed,
		Claims: v.Status.Claims, Hits: v.Status.Hits, Misses: v.Status.Misses, Lost: v.Status.Lost, HitRate: v.HitRate(),
		ConsecutiveFailures: v.Status.ConsecutiveFailures, LastError: nullable(v.Status.LastError),
		LastErrorAt: api.Time(v.Status.LastErrorAt), BackoffUntil: api.Time(v.Status.BackoffUntil),
		Usage: api.PoolUsage{RunningSeconds: v.Usage.RunningSeconds, PausedSeconds: v.Usage.PausedSeconds,
			EstimatedCostUSD: v.Usage.EstimatedCostUSD},
	}
}
