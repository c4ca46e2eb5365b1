package lifecycle_test

import (
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestCanTransition(t *testing.T) {
	allowed := map[[2]lifecycle.State]bool{}
	for _, p := range [][2]lifecycle.State{
		{"provisioning", "running"}, {"provisioning", "failed"},
		{"running", "pausing"}, {"pausing", "paused"}, {"paused", "resuming"}, {"resuming", "running"},
		{"pausing", "running"}, {"resuming", "paused"}, {"running", "paused"}, {"paused", "running"},
		{"expired", "killed"}, {"failed", "killed"},
		{"running", "restoring"}, {"paused", "restoring"}, {"resuming", "restoring"},
		{"restoring", "running"}, {"restoring", "paused"},
		// retention tiers (tiers.go)
		{"paused", "archived"}, {"paused", "deleted"}, {"archived", "deleted"},
		{"archived", "restoring"}, {"restoring", "archived"},
	} {
		allowed[p] = true
	}
	for _, from := range lifecycle.States {
		if !from.Final() {
			allowed[[2]lifecycle.State{from, lifecycle.StateExpired}] = true
		}
		if from != lifecycle.StateKilled && from != lifecycle.StateDeleted {
			allowed[[2]lifecycle.State{from, lifecycle.StateKilled}] = true
		}
	}
	for _, from := range lifecycle.States {
		for _, to := range lifecycle.States {
			want := allowed[[2]lifecycle.State{from, to}]
			if got := lifecycle.CanTransition(from, to); got != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, got, want)
			}
			if err := lifecycle.CheckTransition(from, to); (err == nil) != want || (err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict)) {
				t.Errorf("CheckTransition(%s, %s) = %v", from, to, err)
			}
		}
	}
}
