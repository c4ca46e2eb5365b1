package apigw

import (
	"context"
	"net/http"

	"github.com/sandmanhq/sandman/internal/httpapi"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// usageJSON is the body of GET /v1/usage (lifecycle.UsageReport; docs/DESIGN.md
// "Operators").
type usageJSON struct {
	From       string          `json:"from"`     // UTC day, YYYY-MM-DD
	To         string          `json:"to"`       // UTC day, YYYY-MM-DD, included
	GroupBy    string          `json:"group_by"` // "day" or "session"
	Currency   string          `json:"currency"` // "USD"
	Usage      []usageLineJSON `json:"usage"`
	Total      usageTotalsJSON `json:"total"`
	NextCursor *string         `json:"next_cursor"`
	// Pools is the deployment's own line: its warm pools' usage, summed
	// over every pool and its life (docs/POOLS.md "Cost"); nil without
	// pools.
	Pools *api.PoolUsage `json:"pools,omitempty"`
}

// usageTotalsJSON: seconds (milliseconds as fractions), counts, dollars.
type usageTotalsJSON struct {
	RunningSeconds   float64 `json:"running_seconds"`
	PausedSeconds    float64 `json:"paused_seconds"`
	Pauses           int64   `json:"pauses"`
	Resumes          int64   `json:"resumes"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	// StoredGBHours: gigabyte-hours per retention tier
	// (lifecycle.StoredGBHours).
	StoredGBHours storedGBHoursJSON `json:"stored_gb_hours"`
}

type storedGBHoursJSON struct {
	Paused      float64 `json:"paused"`
	Archived    float64 `json:"archived"`
	Checkpoints float64 `json:"checkpoints"`
}

type usageLineJSON struct {
	Day       string `json:"day"`
	SessionID string `json:"session_id,omitempty"` // group_by=session only
	Provider  string `json:"provider,omitempty"`   // group_by=session only
	usageTotalsJSON
}

func newUsageTotalsJSON(t lifecycle.UsageTotals) usageTotalsJSON {
	return usageTotalsJSON{RunningSeconds: t.RunningSeconds, PausedSeconds: t.PausedSeconds,
		Pauses: t.Pauses, Resumes: t.Resumes, EstimatedCostUSD: t.EstimatedCostUSD,
		StoredGBHours: storedGBHoursJSON(t.Stored)}
}

// usage serves GET /v1/usage?from=&to=&group_by=day|session&limit=&cursor=:
// the caller's account's usage (lifecycle.Service.Usage); limit 1..1000,
// default 100, with group_by=session.
func (h *Handler) usage(ctx context.Context, r *request) (response, error) {
	q := r.event.QueryStringParameters
	limit, err := r.queryInt("limit", 0, 1, 1000)
	if err != nil {
		return response{}, err
	}
	rep, err := h.svc.Usage(ctx, r.accountID, lifecycle.UsageRequest{
		From: q["from"], To: q["to"], GroupBy: q["group_by"], Limit: limit, Cursor: q["cursor"]})
	if err != nil {
		return response{}, err
	}
	out := usageJSON{From: rep.From, To: rep.To, GroupBy: rep.GroupBy, Currency: "USD",
		Usage: make([]usageLineJSON, 0, len(rep.Lines)), Total: newUsageTotalsJSON(rep.Total), NextCursor: httpapi.Nullable(rep.Cursor)}
	for _, l := range rep.Lines {
		out.Usage = append(out.Usage, usageLineJSON{Day: l.Day, SessionID: l.SessionID, Provider: l.Provider,
			usageTotalsJSON: newUsageTotalsJSON(l.UsageTotals)})
	}
	if len(h.svc.Pools()) > 0 {
		views, err := h.svc.PoolViews(ctx)
		if err != nil {
			return response{}, err
		}
		var sum api.PoolUsage
		for _, v := range views {
			sum.RunningSeconds += v.Usage.RunningSeconds
			sum.PausedSeconds += v.Usage.PausedSeconds
			sum.EstimatedCostUSD += v.Usage.EstimatedCostUSD
		}
		out.Pools = &sum
	}
	return response{status: http.StatusOK, body: out}, nil
}
