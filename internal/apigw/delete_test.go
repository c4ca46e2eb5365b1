package apigw_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// call sends ev to its function's handler from any goroutine (no testing.TB,
// no contract check) and returns the status and the answered state, if any.
func (h *harness) call(ev events.APIGatewayV2HTTPRequest) (int, string, error) {
	fn, ok := h.byRouteKey[ev.RouteKey]
	if !ok {
		return 0, "", fmt.Errorf("no function serves %s", ev.RouteKey)
	}
	resp, err := h.handlers[fn].Handle(context.Background(), ev)
	if err != nil {
		return 0, "", err
	}
	var out struct {
		State   string `json:"state"`
		Session struct {
			State string `json:"state"`
		} `json:"session"`
	}
	_ = json.Unmarshal([]byte(resp.Body), &out)
	if out.State == "" {
		out.State = out.Session.State
	}
	return resp.StatusCode, out.State + " " + resp.Body, nil
}

// deleteTally counts DELETE answers by status.
type deleteTally struct {
	mu       sync.Mutex
	byStatus map[int]int
	bad      []string
}

func (d *deleteTally) add(status int, answer string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.bad = append(d.bad, err.Error())
		return
	}
	d.byStatus[status]++
	if status != 200 || answer[:len("killed ")] != "killed " {
		d.bad = append(d.bad, fmt.Sprintf("%d %s", status, answer))
	}
}

// TestDeleteWinsOverSnapshotAndResume: DELETE answers 200 with the session
// killed however it interleaves with a snapshot or a resume in flight, and
// the sandbox is killed (docs/DESIGN.md "Session states"). On memstore and
// on DynamoDB Local, with the provider's pause and resume taking a few milliseconds so
// that the delete lands mid-transition: 100 deletes racing a snapshot, and
// 60 deletes racing a storm of snapshots and resumes.
func TestDeleteWinsOverSnapshotAndResume(t *testing.T) {
	forEachStore(t, testDeleteWinsOverSnapshotAndResume)
}

func testDeleteWinsOverSnapshotAndResume(t *testing.T, newHarness harnessMaker) {
	if testing.Short() {
		t.Skip("a race of 160 trials: not in -short")
	}
	h := newHarness(t)
	h.prov.SetFault(fake.OpPause, fake.Fault{Delay: 3 * time.Millisecond})
	h.prov.SetFault(fake.OpResume, fake.Fault{Delay: 3 * time.Millisecond})
	rng := rand.New(rand.NewPCG(27, 1))

	race := func(t *testing.T, trials int, storm bool) {
		tally := &deleteTally{byStatus: map[int]int{}}
		for i := range trials {
			s := h.mustCreate(t)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			workers := 1
			if storm {
				workers = 4
			}
			for w := range workers {
				wg.Go(func() {
					for n := 0; ; n++ {
						name := "snapshot.json"
						if storm && (w+n)%2 == 1 {
							name = "resume.json"
						}
						_, _, _ = h.call(MustEvent(t, name, withID(s.ID)))
						if !storm {
							return
						}
						select {
						case <-stop:
							return
						default:
						}
					}
				})
			}
			time.Sleep(time.Duration(rng.IntN(int(6 * time.Millisecond))))
			status, answer, err := h.call(MustEvent(t, "sessions-delete.json", withID(s.ID)))
			tally.add(status, answer, err)
			close(stop)
			wg.Wait()
			if got := h.mustSession(t, s.ID).State; got != lifecycle.StateKilled {
				t.Errorf("trial %d: session %s after the race, want killed", i, got)
			}
			if _, ok := h.prov.Sandbox(*s.SandboxID); ok {
				t.Errorf("trial %d: the sandbox of the deleted session still exists", i)
			}
		}
		t.Logf("%d DELETEs (storm=%v): answers by status %v", trials, storm, tally.byStatus)
		if len(tally.bad) > 0 {
			t.Errorf("%d of %d DELETEs did not answer 200 killed, e.g. %s", len(tally.bad), trials, tally.bad[0])
		}
	}
	t.Run("RacingASnapshot", func(t *testing.T) { race(t, 100, false) })
	t.Run("RacingSnapshotsAndResumes", func(t *testing.T) { race(t, 60, true) })
}
