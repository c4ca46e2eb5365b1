package dynamo_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestDiagnose covers each disagreement kind of lifecycle.Service.Diagnose
// on DynamoDB Local and the fake provider, and that a diagnosis writes
// nothing and never wakes a sandbox.
func TestDiagnose(t *testing.T) {
	store := dynamo.New(dynamo.Config{Client: dynamotest.MustClient(t), Table: dynamotest.MustTable(t)})
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	prov := fake.New(fake.Config{Clock: clock})
	svc := lifecycle.NewService(lifecycle.Config{Store: store, Provider: prov, Clock: clock,
		Log: slog.New(slog.DiscardHandler)})
	const account = "acct-diag"
	ctx := t.Context()
	answers := func(context.Context, string) (int, error) { return 200, nil }
	silent := func(context.Context, string) (int, error) { return 0, errors.New("connection refused") }
	create := func(t *testing.T) *lifecycle.Session {
		t.Helper()
		s, _, err := svc.Create(ctx, account, lifecycle.CreateInput{Template: "base"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	diagnose := func(t *testing.T, id string, probe lifecycle.PreviewProber) *lifecycle.Diagnosis {
		t.Helper()
		before, err := store.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		resumes := prov.Calls(fake.OpResume)
		d, err := svc.Diagnose(ctx, account, id, probe)
		if err != nil {
			t.Fatalf("diagnose: %v", err)
		}
		after, err := store.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != before.Version || after.State != before.State {
			t.Errorf("diagnose wrote the session: %s v%d → %s v%d", before.State, before.Version, after.State, after.Version)
		}
		if prov.Calls(fake.OpResume) != resumes {
			t.Errorf("diagnose resumed the sandbox")
		}
		return d
	}
	want := func(t *testing.T, d *lifecycle.Diagnosis, agree bool, verdict string) {
		t.Helper()
		if d.Agree != agree || d.Verdict != verdict {
			t.Errorf("agree=%v verdict %q\nwant agree=%v verdict %q", d.Agree, d.Verdict, agree, verdict)
		}
	}

	t.Run("Agree", func(t *testing.T) {
		s := create(t)
		d := diagnose(t, s.ID, answers)
		want(t, d, true, lifecycle.VerdictAgreeRunning)
		if !d.Preview.Checked || d.Preview.Status != 200 || d.Provider.State != lifecycle.SandboxRunning {
			t.Errorf("views: provider %+v preview %+v", d.Provider, d.Preview)
		}
	})
	t.Run("TableRunningProviderPaused", func(t *testing.T) {
		s := create(t)
		prov.SetState(s.SandboxID, lifecycle.SandboxPaused)
		d := diagnose(t, s.ID, answers)
		want(t, d, false, lifecycle.VerdictRunningPaused)
		if d.Preview.Checked {
			t.Errorf("the preview was probed although the provider says paused")
		}
	})
	t.Run("TablePausedProviderGone", func(t *testing.T) {
		s := create(t)
		if _, err := svc.PauseNow(ctx, account, s.ID); err != nil {
			t.Fatal(err)
		}
		prov.Forget(s.SandboxID)
		d := diagnose(t, s.ID, answers)
		want(t, d, false, strings.Replace(lifecycle.VerdictGone, "%s", "paused", 1))
		if !d.Provider.Gone {
			t.Errorf("provider view %+v, want gone", d.Provider)
		}
	})
	t.Run("LeaseExpired", func(t *testing.T) {
		s := create(t)
		cur, err := store.GetSession(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := cur.Transition(lifecycle.StatePausing, lifecycle.ReasonIdle, clock.Now(), svc.Policy()); err != nil {
			t.Fatal(err)
		}
		if err := store.UpdateSession(ctx, cur, lifecycle.StateRunning, lifecycle.Guard{}); err != nil {
			t.Fatal(err)
		}
		d := diagnose(t, s.ID, answers)
		if d.LeaseExpired || !d.Agree {
			t.Errorf("within its lease: expired=%v agree=%v %q", d.LeaseExpired, d.Agree, d.Verdict)
		}
		clock.Advance(svc.Policy().LeaseDuration + time.Second)
		d = diagnose(t, s.ID, answers)
		if !d.LeaseExpired || d.Agree || !strings.Contains(d.Verdict, "lease ran out") ||
			!strings.Contains(d.Verdict, "the next sweep reconciles it") || !strings.Contains(d.Verdict, "which says running") {
			t.Errorf("lease expired: expired=%v agree=%v %q", d.LeaseExpired, d.Agree, d.Verdict)
		}
	})
	t.Run("PreviewNotAnswering", func(t *testing.T) {
		s := create(t)
		d := diagnose(t, s.ID, silent)
		want(t, d, false, strings.Replace(lifecycle.VerdictPreviewNotAnswered, "%s", "connection refused", 1))
		if !d.Preview.Checked || d.Preview.Answered {
			t.Errorf("preview view %+v", d.Preview)
		}
	})
	t.Run("OtherAccount", func(t *testing.T) {
		s := create(t)
		if _, err := svc.Diagnose(ctx, "acct-other", s.ID, answers); !lifecycle.IsCode(err, lifecycle.CodeForbidden) {
			t.Errorf("another account's diagnose: %v, want forbidden", err)
		}
	})
}
