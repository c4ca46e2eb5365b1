package lifecycle_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/lifecycle/memstore"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// The Service's rules, tested in memory: the store is internal/lifecycle/memstore
// (the DynamoDB store's conditional-write rules, proven by
// internal/lifecycle/storetest), the provider the fake, time a ManualClock. No
// DynamoDB Local.

var svcT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const acct = "acct_1"

// env is one test's service over an in-memory store and the fake provider.
type env struct {
	clock  *lifecycle.ManualClock
	fake   *fake.Provider
	store  *memstore.Store
	events *eventLog
	svc    *lifecycle.Service
}

// eventLog is a lifecycle.Publisher that keeps what it was given; the
// service's store is wrapped in outbox.InPath, so it sees every committed
// transition as the table's stream would.
// Publish is safe for concurrent creates; read events once they are done.
type eventLog struct {
	mu     sync.Mutex
	events []lifecycle.Event
}

func (l *eventLog) Publish(_ context.Context, evs ...lifecycle.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, evs...)
	return nil
}

func (l *eventLog) to(id string) []lifecycle.State {
	var out []lifecycle.State
	for _, ev := range l.events {
		if ev.SessionID == id {
			out = append(out, ev.To)
		}
	}
	return out
}

func newEnv(t *testing.T, edit ...func(*lifecycle.Config)) *env {
	t.Helper()
	clock := lifecycle.NewManualClock(svcT0)
	e := &env{clock: clock, fake: fake.New(fake.Config{Clock: clock}), store: memstore.New(), events: &eventLog{}}
	cfg := lifecycle.Config{Store: outbox.InPath(e.store, e.events), Provider: e.fake, Clock: clock, Log: slog.New(slog.DiscardHandler),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	for _, f := range edit {
		f(&cfg)
	}
	e.svc = lifecycle.NewService(cfg)
	return e
}

func (e *env) mustCreate(t *testing.T, in lifecycle.CreateInput) *lifecycle.Session {
	t.Helper()
	if in.Template == "" {
		in.Template = "base"
	}
	sess, _, err := e.svc.Create(t.Context(), acct, in)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return sess
}

func (e *env) mustGet(t *testing.T, id string) *lifecycle.Session {
	t.Helper()
	sess, err := e.store.GetSession(t.Context(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return sess
}

func (e *env) sandboxState(id string) lifecycle.SandboxState {
	sb, ok := e.fake.Sandbox(id)
	if !ok {
		return "gone"
	}
	return sb.State
}

func TestNewServiceDefaults(t *testing.T) {
	cfg := lifecycle.NewService(lifecycle.Config{Store: memstore.New(), Provider: fake.New(fake.Config{})}).Config()
	if cfg.CallTimeout != lifecycle.DefaultCallTimeout || cfg.ProbeTimeout != lifecycle.DefaultProbeTimeout {
		t.Errorf("timeouts %s/%s, want the defaults", cfg.CallTimeout, cfg.ProbeTimeout)
	}
	if cfg.Policy != lifecycle.DefaultPolicy() || cfg.Clock == nil || cfg.Log == nil || cfg.Sleep == nil || cfg.NewID == nil {
		t.Errorf("defaults not filled in: %+v", cfg)
	}
	if id := cfg.NewID(); !strings.HasPrefix(id, "ses_") || len(id) != 30 || strings.ToLower(id) != id {
		t.Errorf("NewID() = %q, want ses_ and 26 lowercase characters", id)
	}
}

func TestCreateValidation(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tc := range []struct {
		name string
		in   lifecycle.CreateInput
		want string // part of the message
	}{
		{"NoTemplate", lifecycle.CreateInput{}, "template is required"},
		{"LongTemplate", lifecycle.CreateInput{Template: long[:129]}, "template must be at most 128"},
		{"LongIdempotencyKey", lifecycle.CreateInput{Template: "base", IdempotencyKey: long[:256]}, "Idempotency-Key"},
		{"IdleTooShort", lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 59}, "idle_timeout_seconds"},
		{"IdleTooLong", lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 86401}, "idle_timeout_seconds"},
		{"LifetimeNegative", lifecycle.CreateInput{Template: "base", MaxLifetimeSeconds: -1}, "max_lifetime_seconds"},
		{"ReservedMetadataKey", lifecycle.CreateInput{Template: "base", Metadata: map[string]string{"sandman_x": "1"}}, "reserved"},
		{"EmptyMetadataKey", lifecycle.CreateInput{Template: "base", Metadata: map[string]string{"": "1"}}, "metadata keys"},
		{"LongMetadataValue", lifecycle.CreateInput{Template: "base", Metadata: map[string]string{"k": long}}, "metadata value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, _, err := e.svc.Create(t.Context(), acct, tc.in)
			if lifecycle.ErrorCode(err) != lifecycle.CodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (code %s), want invalid naming %q", err, lifecycle.ErrorCode(err), tc.want)
			}
			if n := e.fake.Calls(fake.OpCreate); n != 0 {
				t.Errorf("provider creates = %d, want 0", n)
			}
		})
	}
}

func TestCreateRunsAndTagsTheSandbox(t *testing.T) {
	e := newEnv(t, func(c *lifecycle.Config) { c.Deployment = "prod" })
	sess := e.mustCreate(t, lifecycle.CreateInput{Metadata: map[string]string{"user": "ada"}, IdleTimeoutSeconds: 120})
	if sess.State != lifecycle.StateRunning || sess.SandboxID == "" || sess.Version != 2 {
		t.Fatalf("created %s v%d sandbox %q, want running v2 with a sandbox", sess.State, sess.Version, sess.SandboxID)
	}
	sb, _ := e.fake.Sandbox(sess.SandboxID)
	for k, want := range map[string]string{"user": "ada", lifecycle.MetadataSessionID: sess.ID, lifecycle.MetadataDeployment: "prod"} {
		if sb.Metadata[k] != want {
			t.Errorf("sandbox metadata %s = %q, want %q", k, sb.Metadata[k], want)
		}
	}
	if got := e.events.to(sess.ID); len(got) != 2 || got[0] != lifecycle.StateProvisioning || got[1] != lifecycle.StateRunning {
		t.Errorf("events %v, want provisioning, running", got)
	}
}

func TestCreateProviderFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kind     error
		wantType string
		orphan   bool // the provider made the sandbox and lost the answer
	}{
		{"Transient", lifecycle.ErrProviderTransient, lifecycle.TypeSandboxUnreachable, false},
		{"Gone", lifecycle.ErrSandboxGone, lifecycle.TypeSandboxExpired, false},
		{"LostAnswer", lifecycle.ErrProviderTransient, lifecycle.TypeSandboxUnreachable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var id string
			e.svc = lifecycle.NewService(withNewID(e.svc.Config(), &id))
			if tc.orphan {
				e.fake.SetOnCall(func(op fake.Op, _ string) {
					if op == fake.OpCreate {
						e.fake.SetOnCall(nil)
						// The sandbox exists; the caller hears a timeout.
						if _, err := e.fake.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour,
							Metadata: map[string]string{lifecycle.MetadataSessionID: id}}); err != nil {
							t.Error(err)
						}
						e.fake.FailNext(fake.OpCreate, tc.kind)
					}
				})
			} else {
				e.fake.FailNext(fake.OpCreate, tc.kind)
			}
			_, _, err := e.svc.Create(t.Context(), acct, lifecycle.CreateInput{Template: "base"})
			var ae *lifecycle.Error
			if !errors.As(err, &ae) || ae.Code != lifecycle.CodeUnavailable || ae.Type != tc.wantType {
				t.Fatalf("err = %v, want unavailable %s", err, tc.wantType)
			}
			if got := e.mustGet(t, id).State; got != lifecycle.StateFailed {
				t.Errorf("session %s, want failed", got)
			}
			if sbs := e.fake.Sandboxes(); len(sbs) != 0 {
				t.Errorf("sandboxes left: %d, want 0 (orphans killed)", len(sbs))
			}
		})
	}
}

func withNewID(cfg lifecycle.Config, id *string) lifecycle.Config {
	cfg.NewID = func() string { *id = lifecycle.NewSessionID(); return *id }
	return cfg
}

func TestSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fail      error // the pause call's failure
		sandbox   func(e *env, id string)
		wantState lifecycle.State
		wantCode  lifecycle.Code
		wantType  string
	}{
		{name: "Pauses", wantState: lifecycle.StatePaused},
		{name: "TransientRollsBack", fail: lifecycle.ErrProviderTransient, wantState: lifecycle.StateRunning,
			wantCode: lifecycle.CodeUnavailable, wantType: lifecycle.TypeSandboxUnreachable},
		{name: "FailedButPausedIsSuccess", fail: lifecycle.ErrProviderTransient, wantState: lifecycle.StatePaused,
			sandbox: func(e *env, id string) { e.fake.SetState(id, lifecycle.SandboxPaused) }},
		{name: "GoneConfirmedExpires", fail: lifecycle.ErrSandboxGone, wantState: lifecycle.StateExpired,
			sandbox: func(e *env, id string) { e.fake.Forget(id) }, wantCode: lifecycle.CodeUnavailable, wantType: lifecycle.TypeSandboxExpired},
		{name: "SpuriousGoneRollsBack", fail: lifecycle.ErrSandboxGone, wantState: lifecycle.StateRunning,
			wantCode: lifecycle.CodeUnavailable, wantType: lifecycle.TypeSandboxUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sess := e.mustCreate(t, lifecycle.CreateInput{})
			if tc.fail != nil {
				e.fake.FailNext(fake.OpPause, tc.fail)
			}
			if tc.sandbox != nil {
				e.fake.SetOnCall(func(op fake.Op, id string) {
					if op == fake.OpPause {
						e.fake.SetOnCall(nil)
						tc.sandbox(e, id)
					}
				})
			}
			_, err := e.svc.PauseNow(t.Context(), acct, sess.ID)
			var ae *lifecycle.Error
			switch {
			case tc.wantCode == "" && err != nil:
				t.Fatalf("snapshot: %v", err)
			case tc.wantCode != "" && (!errors.As(err, &ae) || ae.Code != tc.wantCode || ae.Type != tc.wantType):
				t.Fatalf("snapshot: %v, want %s %s", err, tc.wantCode, tc.wantType)
			}
			if got := e.mustGet(t, sess.ID).State; got != tc.wantState {
				t.Errorf("state %s, want %s", got, tc.wantState)
			}
		})
	}
	t.Run("PausedIsIdempotent", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		for range 2 {
			if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
				t.Fatal(err)
			}
		}
		if n := e.fake.Calls(fake.OpPause); n != 1 {
			t.Errorf("provider pauses = %d, want 1", n)
		}
	})
	t.Run("OtherAccountIsForbidden", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if _, err := e.svc.PauseNow(t.Context(), "acct_2", sess.ID); lifecycle.ErrorCode(err) != lifecycle.CodeForbidden {
			t.Errorf("err = %v, want forbidden", err)
		}
	})
}

func TestResume(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fails     []error
		forget    bool
		wantState lifecycle.State
		wantType  string
	}{
		{name: "Resumes", wantState: lifecycle.StateRunning},
		{name: "RetriesATransientFailure", fails: []error{lifecycle.ErrProviderTransient}, wantState: lifecycle.StateRunning},
		{name: "UnreachableStaysPaused", fails: []error{lifecycle.ErrProviderTransient, lifecycle.ErrProviderTransient},
			wantState: lifecycle.StatePaused, wantType: lifecycle.TypeSandboxUnreachable},
		{name: "GoneExpires", fails: []error{lifecycle.ErrSandboxGone}, forget: true,
			wantState: lifecycle.StateExpired, wantType: lifecycle.TypeSandboxExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sess := e.mustCreate(t, lifecycle.CreateInput{})
			if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
				t.Fatal(err)
			}
			for _, f := range tc.fails {
				e.fake.FailNext(fake.OpResume, f)
			}
			if tc.forget {
				e.fake.Forget(sess.SandboxID)
			}
			e.clock.Advance(time.Minute)
			got, err := e.svc.Resume(t.Context(), acct, sess.ID)
			var ae *lifecycle.Error
			if tc.wantType == "" {
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				if !got.LastActivityAt.Equal(e.clock.Now()) || got.PreviewURL == "" {
					t.Errorf("resumed: activity %s, preview %q; want now and a URL", got.LastActivityAt, got.PreviewURL)
				}
			} else if !errors.As(err, &ae) || ae.Type != tc.wantType {
				t.Fatalf("resume: %v, want %s", err, tc.wantType)
			}
			if st := e.mustGet(t, sess.ID).State; st != tc.wantState {
				t.Errorf("state %s, want %s", st, tc.wantState)
			}
		})
	}
	t.Run("FinalStateIsAConflict", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if _, err := e.svc.Delete(t.Context(), acct, sess.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Resume(t.Context(), acct, sess.ID); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
			t.Errorf("resume killed: %v, want conflict", err)
		}
	})
}

func TestHeartbeat(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	e.clock.Advance(10 * time.Second) // within the 30 s granularity: no write
	if _, err := e.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	if v := e.mustGet(t, sess.ID).Version; v != sess.Version {
		t.Errorf("version %d after a coalesced heartbeat, want %d", v, sess.Version)
	}
	e.clock.Advance(time.Minute)
	if _, err := e.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	got := e.mustGet(t, sess.ID)
	if !got.LastActivityAt.Equal(e.clock.Now()) || !got.IdleDeadline.Equal(e.clock.Now().Add(got.IdleTimeout+30*time.Second)) {
		t.Errorf("activity %s deadline %s, want now and now + idle + the 30 s coalescing window", got.LastActivityAt, got.IdleDeadline)
	}
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Heartbeat(t.Context(), acct, sess.ID)
	var ae *lifecycle.Error
	if !errors.As(err, &ae) || ae.Type != lifecycle.TypeSandboxPaused {
		t.Errorf("heartbeat when paused: %v, want sandbox_paused", err)
	}
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	for range 2 {
		got, err := e.svc.Delete(t.Context(), acct, sess.ID)
		if err != nil || got.State != lifecycle.StateKilled {
			t.Fatalf("delete: %v, %v; want killed", got, err)
		}
	}
	if st := e.sandboxState(sess.SandboxID); st != "gone" {
		t.Errorf("sandbox %s, want gone", st)
	}
}

func TestStatusAndList(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for range 3 {
		ids = append(ids, e.mustCreate(t, lifecycle.CreateInput{}).ID)
		e.clock.Advance(time.Second)
	}
	_, env, err := e.svc.Status(t.Context(), acct, ids[0])
	if err != nil || env.State != lifecycle.StateRunning {
		t.Fatalf("status: %+v, %v", env, err)
	}
	page, err := e.svc.List(t.Context(), acct, "", 2)
	if err != nil || len(page.Sessions) != 2 || page.Sessions[0].ID != ids[2] || page.Cursor == "" {
		t.Fatalf("first page: %+v, %v; want the two newest and a cursor", page, err)
	}
	for _, limit := range []int{0, lifecycle.MaxListLimit + 1} {
		if _, err := e.svc.List(t.Context(), acct, "", limit); lifecycle.ErrorCode(err) != lifecycle.CodeInvalid {
			t.Errorf("limit %d: %v, want invalid", limit, err)
		}
	}
}

func TestReconnect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(e *env, sess *lifecycle.Session)
		want      lifecycle.ReconnectStatus
		wantState lifecycle.State
	}{
		{"Connected", nil, lifecycle.ReconnectConnected, lifecycle.StateRunning},
		{"PausedBehindOurBack", func(e *env, s *lifecycle.Session) { e.fake.SetState(s.SandboxID, lifecycle.SandboxPaused) },
			lifecycle.ReconnectPaused, lifecycle.StatePaused},
		{"Gone", func(e *env, s *lifecycle.Session) { e.fake.Forget(s.SandboxID) }, lifecycle.ReconnectExpired, lifecycle.StateExpired},
		{"Unreachable", func(e *env, _ *lifecycle.Session) { e.fake.FailNext(fake.OpProbe, nil) },
			lifecycle.ReconnectUnreachable, lifecycle.StateRunning},
		{"NoSandbox", func(e *env, s *lifecycle.Session) {
			if _, err := e.svc.Delete(context.Background(), acct, s.ID); err != nil {
				panic(err)
			}
		}, lifecycle.ReconnectNoSandbox, lifecycle.StateKilled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sess := e.mustCreate(t, lifecycle.CreateInput{})
			if tc.setup != nil {
				tc.setup(e, sess)
			}
			res, err := e.svc.Reconnect(t.Context(), acct, sess.ID)
			if err != nil || res.Status != tc.want {
				t.Fatalf("reconnect: %+v, %v; want %s", res, err, tc.want)
			}
			if st := e.mustGet(t, sess.ID).State; st != tc.wantState {
				t.Errorf("state %s, want %s", st, tc.wantState)
			}
		})
	}
}

func TestPauseIfDue(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{IdleTimeoutSeconds: 60})
	if err := e.svc.PauseIfDue(t.Context(), sess, e.clock.Now()); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
		t.Fatalf("not yet due: %v, want conflict", err)
	}
	e.clock.Advance(2 * time.Minute)
	due := e.mustGet(t, sess.ID)
	// A heartbeat lands between the sweep's read and its pause: it wins.
	stale := due.Clone()
	if _, err := e.svc.Heartbeat(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.PauseIfDue(t.Context(), stale, e.clock.Now()); lifecycle.ErrorCode(err) != lifecycle.CodeConflict {
		t.Fatalf("pause over a heartbeat: %v, want conflict", err)
	}
	e.clock.Advance(2 * time.Minute)
	if err := e.svc.PauseIfDue(t.Context(), e.mustGet(t, sess.ID), e.clock.Now()); err != nil {
		t.Fatalf("due: %v", err)
	}
	if got := e.mustGet(t, sess.ID); got.State != lifecycle.StatePaused || got.Reason != lifecycle.ReasonIdle {
		t.Errorf("%s/%s, want paused/idle", got.State, got.Reason)
	}
}

func TestReconcile(t *testing.T) {
	t.Run("DeadCreateFails", func(t *testing.T) {
		e := newEnv(t)
		sess := &lifecycle.Session{ID: "ses_dead", AccountID: acct, Provider: e.fake.Name(), Template: "base",
			State: lifecycle.StateProvisioning, CreatedAt: svcT0, LeaseExpiresAt: svcT0.Add(time.Minute)}
		if err := e.store.CreateSession(t.Context(), sess); err != nil {
			t.Fatal(err)
		}
		changed, err := e.svc.Reconcile(t.Context(), sess)
		if err != nil || !changed || e.mustGet(t, sess.ID).State != lifecycle.StateFailed {
			t.Fatalf("reconcile: %v, %v; want failed", changed, err)
		}
	})
	t.Run("PausingThatPaused", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		e.fake.FailNext(fake.OpPause, nil)
		e.fake.FailNext(fake.OpGet, nil) // the outcome stays unknown: pausing
		if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err == nil {
			t.Fatal("snapshot succeeded")
		}
		stuck := e.mustGet(t, sess.ID)
		if stuck.State != lifecycle.StatePausing {
			t.Fatalf("state %s, want pausing", stuck.State)
		}
		e.fake.SetState(sess.SandboxID, lifecycle.SandboxPaused)
		changed, err := e.svc.Reconcile(t.Context(), stuck)
		if err != nil || !changed || e.mustGet(t, sess.ID).State != lifecycle.StatePaused {
			t.Fatalf("reconcile: %v, %v; want paused", changed, err)
		}
	})
	t.Run("InAgreementChangesNothing", func(t *testing.T) {
		e := newEnv(t)
		sess := e.mustCreate(t, lifecycle.CreateInput{})
		if changed, err := e.svc.Reconcile(t.Context(), sess); err != nil || changed {
			t.Fatalf("reconcile: %v, %v; want no change", changed, err)
		}
	})
}

func TestReapOrphan(t *testing.T) {
	e := newEnv(t, func(c *lifecycle.Config) { c.Deployment = "a" })
	mk := func(meta map[string]string) lifecycle.Sandbox {
		sb, err := e.fake.Create(t.Context(), lifecycle.CreateRequest{Template: "base", Timeout: time.Hour, Metadata: meta})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	held := e.mustCreate(t, lifecycle.CreateInput{})
	heldSB, _ := e.fake.Sandbox(held.SandboxID)
	orphan := mk(map[string]string{lifecycle.MetadataSessionID: "ses_never", lifecycle.MetadataDeployment: "a"})
	foreign := mk(map[string]string{lifecycle.MetadataSessionID: "ses_never", lifecycle.MetadataDeployment: "b"})
	untagged := mk(nil)
	young := orphan
	if killed, err := e.svc.ReapOrphan(t.Context(), young); err != nil || killed {
		t.Fatalf("young orphan: %v, %v; want left alone", killed, err)
	}
	e.clock.Advance(e.svc.Policy().LeaseDuration + time.Minute)
	for _, tc := range []struct {
		name string
		sb   lifecycle.Sandbox
		want bool
	}{
		{"Held", heldSB, false},
		{"OtherDeployment", foreign, false},
		{"Untagged", untagged, false},
		{"Orphan", orphan, true},
	} {
		killed, err := e.svc.ReapOrphan(t.Context(), tc.sb)
		if err != nil || killed != tc.want {
			t.Errorf("%s: killed %v, %v; want %v", tc.name, killed, err, tc.want)
		}
	}
}

func TestExpireDormant(t *testing.T) {
	e := newEnv(t)
	sess := e.mustCreate(t, lifecycle.CreateInput{})
	if _, err := e.svc.PauseNow(t.Context(), acct, sess.ID); err != nil {
		t.Fatal(err)
	}
	pausedAt := e.clock.Now()
	if got, _, err := e.svc.ExpireDormant(t.Context(), sess.ID, pausedAt.Add(-time.Second)); err != nil || got != nil {
		t.Fatalf("paused too recently: %v, %v; want left alone", got, err)
	}
	got, sandboxID, err := e.svc.ExpireDormant(t.Context(), sess.ID, pausedAt)
	if err != nil || got == nil || got.State != lifecycle.StateExpired || got.Reason != lifecycle.ReasonDormant || sandboxID != sess.SandboxID {
		t.Fatalf("expire: %+v, %q, %v; want expired/dormant with its sandbox", got, sandboxID, err)
	}
	if err := e.svc.KillDormantSandbox(t.Context(), got, sandboxID); err != nil {
		t.Fatal(err)
	}
	if st := e.sandboxState(sandboxID); st != "gone" {
		t.Errorf("sandbox %s, want gone", st)
	}
	if err := e.svc.KillDormantSandbox(t.Context(), got, sandboxID); err != nil {
		t.Errorf("second kill of a gone sandbox: %v, want success", err)
	}
}
