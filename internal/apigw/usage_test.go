package apigw_test

import (
	"context"
	"math"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"testing"

	"github.com/sandmanhq/sandman/internal/apigw"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
)

// withUsage rebuilds h's handlers on a service over the bare store (a
// lifecycle.UsageStore, which the harness's in-path wrapper hides) with
// prices.
func (h *harness) withUsage(tb testing.TB, prices map[string]lifecycle.Price) {
	tb.Helper()
	cfg := h.svc.Config()
	cfg.Store, cfg.Prices = h.store, prices
	h.svc = lifecycle.NewService(cfg)
	for _, fn := range apiFunctions {
		o := h.apiCfg
		o.Function, o.Service = fn, h.svc
		o.PreviewProber = func(context.Context, string) (int, error) { return 200, nil }
		hd, err := apigw.New(o)
		if err != nil {
			tb.Fatalf("apigw.New(%s): %v", fn, err)
		}
		h.handlers[fn] = hd
	}
}

type usageTotalsOut struct {
	RunningSeconds   float64 `json:"running_seconds"`
	PausedSeconds    float64 `json:"paused_seconds"`
	Pauses           int64   `json:"pauses"`
	Resumes          int64   `json:"resumes"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	StoredGBHours    struct {
		Paused, Archived, Checkpoints float64
	} `json:"stored_gb_hours"`
}

type usageOut struct {
	From     string `json:"from"`
	To       string `json:"to"`
	GroupBy  string `json:"group_by"`
	Currency string `json:"currency"`
	Usage    []struct {
		Day       string `json:"day"`
		SessionID string `json:"session_id"`
		Provider  string `json:"provider"`
		usageTotalsOut
	} `json:"usage"`
	Total      usageTotalsOut `json:"total"`
	NextCursor *string        `json:"next_cursor"`
}

// TestUsageRoute: GET /v1/usage answers the account's recorded usage by day
// and by session (paginated), with costs from the configured prices, only
// the caller's account, and 400 with the error envelope for bad input;
// every answer is validated against the OpenAPI document.
func TestUsageRoute(t *testing.T) {
	h := MustHarness(t)
	h.withUsage(t, map[string]lifecycle.Price{"e2b": {RunningPerHour: 0.36, PausedPerHour: 0.036, PausedGB: 2}})
	for _, id := range []string{storetest.SessionID(1), storetest.SessionID(2)} {
		for _, ev := range storetest.Replay(id, apigw.DevAccountID, "e2b") {
			if err := h.store.RecordTransition(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A third session, archived from 10:00 to 12:00 on 03-01 with 3 GB of
	// checkpoints: 6 archived GB-hours, and no time.
	unarchive := lifecycle.Event{EventID: storetest.SessionID(3) + ":9", SessionID: storetest.SessionID(3), AccountID: apigw.DevAccountID,
		Provider: "e2b", From: lifecycle.StateArchived, To: lifecycle.StateRestoring, Version: 9, Reason: lifecycle.ReasonUnarchive,
		Since: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), CheckpointBytes: 3e9}
	if err := h.store.RecordTransition(t.Context(), unarchive); err != nil {
		t.Fatal(err)
	}
	march := []func(*events.APIGatewayV2HTTPRequest){withQuery("from", "2026-03-01"), withQuery("to", "2026-03-02")}
	r := h.invoke(t, MustEvent(t, "usage.json", march...))
	wantStatus(t, r, 200)
	u := mustDecode[usageOut](t, r)
	if len(u.Usage) != 2 || u.GroupBy != "day" || u.Currency != "USD" || u.NextCursor != nil {
		t.Fatalf("by day: %+v", u)
	}
	// Two replays: 2 × (5,402 s running, 1,798 s paused) on 03-01.
	day1 := u.Usage[0]
	if day1.Day != "2026-03-01" || day1.RunningSeconds != 10804 || day1.PausedSeconds != 3596 || day1.Pauses != 2 || day1.Resumes != 2 {
		t.Errorf("2026-03-01 = %+v", day1)
	}
	if got, want := day1.EstimatedCostUSD, 10804.0/3600*0.36+3596.0/3600*0.036; got < want-1e-6 || got > want+1e-6 {
		t.Errorf("2026-03-01 cost = %v, want %v", got, want)
	}
	if got := day1.StoredGBHours; got.Archived != 6 || got.Checkpoints != 0 || math.Abs(got.Paused-3596.0/3600*2) > 1e-6 {
		t.Errorf("2026-03-01 stored GB-hours = %+v, want 6 archived and %.6f paused (paused seconds × paused_gb 2)", got, 3596.0/3600*2)
	}
	if got, want := u.Total.RunningSeconds, 2*(5402.0+601); got != want {
		t.Errorf("total running = %v s, want %v", got, want)
	}

	seen := 0
	cursor := ""
	for page := 0; ; page++ {
		patches := append([]func(*events.APIGatewayV2HTTPRequest){withQuery("group_by", "session"), withQuery("limit", "3")}, march...)
		if cursor != "" {
			patches = append(patches, withQuery("cursor", cursor))
		}
		u := mustDecode[usageOut](t, h.invoke(t, MustEvent(t, "usage.json", patches...)))
		for _, l := range u.Usage {
			if l.SessionID == "" || l.Provider != "e2b" {
				t.Errorf("session line %+v", l)
			}
		}
		seen += len(u.Usage)
		if u.NextCursor == nil {
			break
		}
		if cursor = *u.NextCursor; page > 3 {
			t.Fatal("pages do not end")
		}
	}
	if seen != 5 {
		t.Errorf("by session: %d lines, want 5 (2 sessions × 2 days, and the archived one's day)", seen)
	}

	other := mustDecode[usageOut](t, h.invoke(t, MustEvent(t, "usage.json", append(march, withKey(h.otherKey))...)))
	if len(other.Usage) != 0 || other.Total.RunningSeconds != 0 {
		t.Errorf("another account sees %+v", other)
	}
	today := mustDecode[usageOut](t, h.invoke(t, MustEvent(t, "usage.json", withoutQuery("from"), withoutQuery("to"))))
	if today.From != "2026-11-21" || today.To != "2026-11-21" {
		t.Errorf("default range %s..%s, want the harness's today", today.From, today.To)
	}

	for name, patches := range map[string][]func(*events.APIGatewayV2HTTPRequest){
		"BadDay":       {withQuery("from", "2026-13-01")},
		"NotADay":      {withQuery("to", "yesterday")},
		"FromAfterTo":  {withQuery("from", "2026-03-02"), withQuery("to", "2026-03-01")},
		"TooLong":      {withQuery("from", "2025-01-01"), withQuery("to", "2026-03-01")},
		"GroupBy":      {withQuery("group_by", "week")},
		"Limit":        {withQuery("group_by", "session"), withQuery("limit", "0")},
		"CraftedToken": {withQuery("group_by", "session"), withQuery("cursor", "bm90LW91cnM")},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, h.invoke(t, MustEvent(t, "usage.json", append(march, patches...)...)), 400, "invalid")
		})
	}
	wantError(t, h.invoke(t, MustEvent(t, "usage.json", withKey("sk_nope"))), 401, "unauthorized")
}

// TestDiagnoseRecentEvents: diagnose lists the session's recorded events,
// newest first, at most 10 (validated against the OpenAPI document).
func TestDiagnoseRecentEvents(t *testing.T) {
	h := MustHarness(t)
	s := h.mustCreate(t)
	for range 6 { // 2 + 6 × 4 transitions
		wantStatus(t, h.invoke(t, MustEvent(t, "snapshot.json", withID(s.ID))), 200)
		wantStatus(t, h.invoke(t, MustEvent(t, "resume.json", withID(s.ID))), 200)
	}
	evs := h.events.forSession(s.ID)
	if len(evs) != 26 {
		t.Fatalf("%d transitions, want 26", len(evs))
	}
	for _, ev := range evs { // what the stream publisher records
		if err := h.store.RecordTransition(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	h.withUsage(t, nil)
	d := mustDecode[diagnoseOut](t, h.invoke(t, MustEvent(t, "diagnose.json", withID(s.ID))))
	if len(d.Events) != lifecycle.DiagnoseEvents {
		t.Fatalf("%d events, want the last %d", len(d.Events), lifecycle.DiagnoseEvents)
	}
	last := evs[len(evs)-1]
	if got := d.Events[0]; got.EventID != last.EventID || got.From != "resuming" || got.To != "running" || got.Reason != "request" || got.Time == "" {
		t.Errorf("newest event %+v, want %s resuming→running", got, last.EventID)
	}
	for i := 1; i < len(d.Events); i++ {
		if d.Events[i].Version >= d.Events[i-1].Version {
			t.Errorf("events not newest first: %d after %d", d.Events[i].Version, d.Events[i-1].Version)
		}
	}
}

// withoutQuery removes a query parameter.
func withoutQuery(name string) func(*events.APIGatewayV2HTTPRequest) {
	return func(ev *events.APIGatewayV2HTTPRequest) { delete(ev.QueryStringParameters, name) }
}
