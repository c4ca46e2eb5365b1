package lifecycle_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
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
		"NoSince": {lifecycle.Event{From: lifecycle.StateRunning, To: lifecycle.StatePausing, Time: at("2026-03-01", "10:00:00")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if got := lifecycle.UsageDeltas(c.ev); !reflect.DeepEqual(got, c.want) {
				t.Errorf("UsageDeltas = %+v, want %+v", got, c.want)
			}
		})
	}
}
