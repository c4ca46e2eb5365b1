package bench

import (
	"os"
	"strconv"
	"testing"
)

// TestRecoveryRun is the recovery run at a smaller count (90 resumes, 4
// per fault kind, four at a time per fake; RECOVERY_RESUMES sets another): through the lifecycle service on
// DynamoDB Local and the three fakes behind their adapters, no silent
// adoption, at least 99.9 % of the sessions with a ready checkpoint end
// running, every loss is one lost event with the checkpoint's age, and no
// session is recovered twice (docs/RELIABILITY.md "Recovery").
func TestRecoveryRun(t *testing.T) {
	n := 90
	if v, err := strconv.Atoi(os.Getenv("RECOVERY_RESUMES")); err == nil && v > 0 {
		n = v
	}
	res, err := RunRecovery(t.Context(), MustEnv(t), RecoveryConfig{Resumes: n, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	for _, e := range res.Errors {
		t.Errorf("run error: %s", e)
	}
	faulted := 0
	for _, k := range recoveryFaults {
		if res.Faulted[k] == 0 {
			t.Errorf("no session got the %s fault", k)
		}
		faulted += res.Faulted[k]
	}
	switch {
	case res.SilentAdoptions != 0:
		t.Errorf("silent adoptions = %d, want 0", res.SilentAdoptions)
	case res.Share() < 0.999:
		t.Errorf("ended running %d of %d with a ready checkpoint (%.3f %%), want ≥ 99.9 %%", res.EndedRunning, res.WithCheckpoint, 100*res.Share())
	case res.Losses != faulted || res.LossesMissed != 0:
		t.Errorf("losses surfaced as one event with the age: %d of %d (%d missed)", res.Losses, faulted, res.LossesMissed)
	case res.DoubleRecoveries != 0:
		t.Errorf("double recoveries = %d, want 0", res.DoubleRecoveries)
	case res.ExpiredEnded != res.Faulted["expired"]:
		t.Errorf("expired-class sessions ended expired: %d of %d", res.ExpiredEnded, res.Faulted["expired"])
	}
}
