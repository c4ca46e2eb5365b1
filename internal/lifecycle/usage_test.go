package lifecycle_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle/storetest"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

func TestUsageDeltas(t *testing.T) {
	at := func(day, clock string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, day+"T"+clock+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, c := range map[string]struct {
		ev   lifecycle.Event
		want []lifecycle.UsageDelta
	}{
		"Create": {lifecycle.Event{To: lifecycle.StateProvisioning, Time: at("2026-03-01", "10:00:00")}, nil},
		"RunningToPausing": {lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePausing,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "10:00:42.250")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", RunningMS: 42250}}},
		"PausedCountsAPause": {lifecycle.Event{From: lifecycle.StatePausing, To: lifecycle.StatePaused,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "10:00:01")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", RunningMS: 1000, Pauses: 1}}},
		"ResumeCounted": {lifecycle.Event{From: lifecycle.StateResuming, To: lifecycle.StateRunning,
			Since: at("2026-03-01", "23:59:59.5"), Time: at("2026-03-02", "00:00:00.7")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", RunningMS: 500}, {Day: "2026-03-02", RunningMS: 700, Resumes: 1}}},
		"PausedAcrossThreeDays": {lifecycle.Event{From: lifecycle.StatePaused, To: lifecycle.StateKilled,
			Since: at("2026-02-27", "12:00:00"), Time: at("2026-03-01", "06:00:00")},
			[]lifecycle.UsageDelta{{Day: "2026-02-27", PausedMS: 12 * 3600e3}, {Day: "2026-02-28", PausedMS: 24 * 3600e3}, {Day: "2026-03-01", PausedMS: 6 * 3600e3}}},
		"KilledFromFailedAccruesNothing": {lifecycle.Event{From: lifecycle.StateFailed, To: lifecycle.StateKilled,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "11:00:00")}, nil},
		"SinceAfterTime": {lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePausing,
			Since: at("2026-03-01", "11:00:00"), Time: at("2026-03-01", "10:00:00")}, nil},
		"PausedWithCheckpoints": {lifecycle.Event{From: lifecycle.StatePaused, To: lifecycle.StateResuming, CheckpointBytes: 2_500_000_000,
			Since: at("2026-03-01", "23:00:00"), Time: at("2026-03-02", "00:30:00")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", PausedMS: 3600e3, CheckpointMBMS: 2500 * 3600e3},
				{Day: "2026-03-02", PausedMS: 1800e3, CheckpointMBMS: 2500 * 1800e3}}},
		"ArchivedStoresNoTime": {lifecycle.Event{From: lifecycle.StateArchived, To: lifecycle.StateRestoring, CheckpointBytes: 1_000_000,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "10:00:01.5")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", ArchivedMBMS: 1500}}},
		"RunningWithCheckpoints": {lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePausing, CheckpointBytes: 1_500_000,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "10:00:02")},
			[]lifecycle.UsageDelta{{Day: "2026-03-01", RunningMS: 2000, CheckpointMBMS: 3000}}},
		"EndedStoresNothing": {lifecycle.Event{From: lifecycle.StateDeleted, To: lifecycle.StateDeleted, CheckpointBytes: 1e9,
			Since: at("2026-03-01", "10:00:00"), Time: at("2026-03-01", "11:00:00")}, nil},
		"NoSince": {lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePausing, Time: at("2026-03-01", "10:00:00")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := lifecycle.UsageDeltas(c.ev); !reflect.DeepEqual(got, c.want) {
				t.Errorf("UsageDeltas = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestServiceUsage: by day, rows of two providers on one day make one line
// priced per provider; by session,
// one line per session and day; bad requests are invalid.
func TestServiceUsage(t *testing.T) {
	store := memstore.New()
	clock := lifecycle.NewManualClock(time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC))
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: fake.New(fake.Config{}), Clock: clock,
		Prices: map[string]lifecycle.Price{"e2b": {RunningPerHour: 3.6, PausedPerHour: 0.36}, "vercel": {RunningPerHour: 0.2984}}})
	for i, provider := range []string{"e2b", "vercel"} {
		for _, ev := range storetest.Replay(storetest.SessionID(i+1), "acct", provider) {
			if err := store.RecordTransition(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep, err := svc.Usage(t.Context(), "acct", lifecycle.UsageRequest{From: "2026-03-01", To: "2026-03-02"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Lines) != 2 {
		t.Fatalf("lines %+v, want one per day", rep.Lines)
	}
	d := rep.Lines[0]
	vercel := svc.Config().Prices["vercel"]
	wantCost := 5402.0/3600*3.6 + 1798.0/3600*0.36 + 5402.0/3600*vercel.RunningPerHour + 1798.0/3600*vercel.PausedPerHour
	if d.Day != "2026-03-01" || d.RunningSeconds != 2*5402 || d.PausedSeconds != 2*1798 || d.Pauses != 2 || d.Resumes != 2 ||
		d.EstimatedCostUSD < wantCost-2e-6 || d.EstimatedCostUSD > wantCost+2e-6 {
		t.Errorf("2026-03-01 = %+v, want 10804 s running, 3596 s paused, cost %.6f", d, wantCost)
	}
	bySession, err := svc.Usage(t.Context(), "acct", lifecycle.UsageRequest{From: "2026-03-01", To: "2026-03-02", GroupBy: lifecycle.UsageBySession})
	if err != nil {
		t.Fatal(err)
	}
	if len(bySession.Lines) != 4 || bySession.Lines[0].SessionID == "" || bySession.Lines[0].Provider == "" || bySession.Cursor != "" {
		t.Errorf("by session: %+v", bySession)
	}
	if today, err := svc.Usage(t.Context(), "acct", lifecycle.UsageRequest{}); err != nil || today.From != "2026-03-05" || today.To != "2026-03-05" || len(today.Lines) != 0 {
		t.Errorf("default range: %+v, %v; want today, empty", today, err)
	}
	for name, req := range map[string]lifecycle.UsageRequest{
		"BadDay":      {From: "2026-02-30"},
		"NotADay":     {To: "03/01/2026"},
		"FromAfterTo": {From: "2026-03-02", To: "2026-03-01"},
		"TooLong":     {From: "2025-03-01", To: "2026-03-02"},
		"GroupBy":     {GroupBy: "week"},
		"Limit":       {GroupBy: lifecycle.UsageBySession, Limit: 1001},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := svc.Usage(t.Context(), "acct", req); !lifecycle.IsCode(err, lifecycle.CodeInvalid) {
				t.Errorf("err = %v, want invalid", err)
			}
		})
	}
}
