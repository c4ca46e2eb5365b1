package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
	"github.com/sandmanhq/sandman/internal/reliability"
)

// RecoveryConfig sizes RunRecovery.
type RecoveryConfig struct {
	// Resumes is how many sessions are resumed, spread over the fakes
	// (default 1000).
	Resumes int
	// FaultEvery: one session in FaultEvery gets each of the four faults
	// (default 40: 10 % faulted, 2.5 % each).
	FaultEvery int
	// Concurrency is how many sessions run at once per fake (default 8).
	Concurrency int
}

// RecoveryResult is the recovery figure (docs/RELIABILITY.md "Recovery").
type RecoveryResult struct {
	Resumes int `json:"resumes"`
	// Faulted counts the sessions given each fault (gone, foreign,
	// partial, expired: the sandbox gone and its checkpoint's snapshot
	// expired with it).
	Faulted map[string]int `json:"faulted"`
	// SilentAdoptions counts sessions that ended running on a workspace
	// that is not theirs (a marker of another session or sandbox, or
	// without the checkpoint's file): must be 0.
	SilentAdoptions int `json:"silent_adoptions"`
	// WithCheckpoint counts the sessions whose ready checkpoint the provider
	// still has (all but the expired ones); EndedRunning how many of them
	// ended running (resumed or recovered).
	WithCheckpoint int `json:"with_checkpoint"`
	EndedRunning   int `json:"ended_running"`
	// Losses counts the faulted sessions whose loss was surfaced as
	// exactly one lost event carrying the checkpoint's age; LossesMissed
	// those that were not.
	Losses       int `json:"losses"`
	LossesMissed int `json:"losses_missed"`
	// DoubleRecoveries counts sessions with more than one lost event.
	DoubleRecoveries int `json:"double_recoveries"`
	// ExpiredEnded counts the expired-class sessions that ended expired
	// (nothing left to restore) after one more resume.
	ExpiredEnded int `json:"expired_ended"`
	// Plain and Recovered are resume request → running (ready: the
	// sessions have no app) of unfaulted and of recovered sessions;
	// P95 beside the Latency percentiles.
	Plain        Latency  `json:"plain"`
	PlainP95MS   float64  `json:"plain_p95_ms"`
	Recovered    Latency  `json:"recovered"`
	RecoveredP95 float64  `json:"recovered_p95_ms"`
	Errors       []string `json:"errors,omitempty"`
	Seconds      float64  `json:"seconds"`
}

// Share is EndedRunning over WithCheckpoint.
func (r RecoveryResult) Share() float64 {
	if r.WithCheckpoint == 0 {
		return 0
	}
	return float64(r.EndedRunning) / float64(r.WithCheckpoint)
}

// recoveryFake is one fake provider behind its real adapter, with the
// fake's Inject.
type recoveryFake struct {
	name     string
	provider lifecycle.Provider
	inject   func(sandboxID string, fault string) error
	close    func()
}

// noSleep returns at once, honouring ctx: the adapters' retry waits.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// recoveryFakes starts the E2B, Daytona and Vercel fakes on loopback and
// their adapters, all on the wall's clock: E2B's and Vercel's answer at
// once, Daytona's transitions take 20 ms.
func recoveryFakes(log *slog.Logger) ([]recoveryFake, error) {
	var out []recoveryFake
	closeAll := func() {
		for _, f := range out {
			f.close()
		}
	}
	// E2B.
	e := e2btest.New(e2btest.Config{})
	ehs := httptest.NewServer(e.Handler())
	ep, err := e2btest.Fake.Adapter(ehs.URL, log)
	if err != nil {
		ehs.Close()
		return nil, err
	}
	out = append(out, recoveryFake{name: "e2b fake", provider: ep,
		inject: func(id, f string) error { return e.Inject(id, e2btest.SandboxFault(f), 0) },
		close:  func() { e.Close(); ehs.Close() }})
	// Daytona, on the wall's clock with transitions of 20 ms (a capture
	// 50 ms) and the adapter reading every 10 ms.
	dhs := httptest.NewUnstartedServer(nil)
	tr := 20 * time.Millisecond
	d := daytonatest.NewServer(daytonatest.Config{CreateTime: tr, StartTime: tr, StopTime: tr, PauseTime: tr, ResumeTime: tr,
		DeleteTime: tr, SnapshotTime: 50 * time.Millisecond, ToolboxProxyURL: "http://" + dhs.Listener.Addr().String() + "/toolbox"})
	dhs.Config.Handler = d.Handler()
	dhs.Start()
	dcfg := d.ProviderConfig(dhs.URL)
	dcfg.PollInterval, dcfg.Sleep, dcfg.Logger = 10*time.Millisecond, nil, log
	dp, err := daytona.New(dcfg)
	if err != nil {
		dhs.Close()
		closeAll()
		return nil, err
	}
	out = append(out, recoveryFake{name: "daytona fake", provider: dp,
		inject: func(id, f string) error { return d.Inject(id, daytonatest.SandboxFault(f), 0) },
		close:  dhs.Close})
	// Vercel, on the wall's clock (its calls answer at once).
	vhs := httptest.NewUnstartedServer(nil)
	v := verceltest.NewServer(verceltest.Config{RouteURL: verceltest.PreviewURLs("http://" + vhs.Listener.Addr().String())})
	vhs.Config.Handler = v.Handler()
	vhs.Start()
	vp, err := vercel.New(vercel.Config{BaseURL: vhs.URL, Token: verceltest.DefaultToken, TeamID: verceltest.DefaultTeamID,
		ProjectID: verceltest.DefaultProjectID, Sleep: noSleep, Logger: log})
	if err != nil {
		vhs.Close()
		closeAll()
		return nil, err
	}
	out = append(out, recoveryFake{name: "vercel fake", provider: vp,
		inject: func(id, f string) error { return v.Inject(id, verceltest.SandboxFault(f), 0) },
		close:  func() { v.Close(); vhs.Close() }})
	return out, nil
}

// The faults of the run, by the session's index modulo FaultEvery.
var recoveryFaults = []string{"gone", "foreign", "partial", "expired"}

// asyncJobs runs each checkpoint job in its own goroutine, again after a
// short wait while it fails (a queue's redelivery), as the checkpoint
// worker does.
type asyncJobs struct {
	svc atomic.Pointer[lifecycle.Service]
	wg  sync.WaitGroup
}

func (j *asyncJobs) EnqueueCheckpoint(ctx context.Context, job lifecycle.CheckpointJob) error {
	j.wg.Add(1)
	go func() {
		defer j.wg.Done()
		ctx := context.WithoutCancel(ctx)
		for range 50 {
			if err := j.svc.Load().RunCheckpointJob(ctx, job); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return nil
}

// recoveryTally is what one session's run found.
type recoveryTally struct {
	fault        string
	adopted      bool // running on a workspace not its own
	checkpoint   bool // its ready checkpoint is still at the provider
	running      bool
	lostEvents   int
	lostWithAge  int
	expiredEnded bool
	took         time.Duration
	err          error
}

// RunRecovery is the recovery run (docs/RELIABILITY.md "Recovery"): cfg.Resumes
// sessions spread over the E2B, Daytona and Vercel fakes (each behind its real
// adapter), through the lifecycle service on a DynamoDB Local table. Each
// session is created, writes a file, takes a checkpoint (through the API and
// its job) and is paused; one in FaultEvery then gets each fault (the sandbox
// gone, a foreign sandbox behind its id, a partial workspace, or the sandbox
// gone with its checkpoint's snapshot expired), injected in the fake (Inject);
// then it is resumed and waited until it settles (running, paused or expired).
// It counts silent adoptions (a running session whose identity marker or
// checkpoint file is not its own), the share ending running where a ready
// checkpoint exists, the lost events (one each, with the checkpoint's age),
// double recoveries, and resume → running of plain and recovered sessions.
func RunRecovery(ctx context.Context, env *Env, cfg RecoveryConfig) (RecoveryResult, error) {
	cfg.Resumes, cfg.FaultEvery, cfg.Concurrency = max(cfg.Resumes, 0), max(cfg.FaultEvery, 0), max(cfg.Concurrency, 0)
	if cfg.Resumes == 0 {
		cfg.Resumes = 1000
	}
	if cfg.FaultEvery == 0 {
		cfg.FaultEvery = 40
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	started := time.Now()
	res := RecoveryResult{Resumes: cfg.Resumes, Faulted: map[string]int{}}
	table, drop, err := env.NewTable(ctx, "sandman-bench-recovery")
	if err != nil {
		return res, err
	}
	defer drop()
	fakes, err := recoveryFakes(env.Log)
	if err != nil {
		return res, err
	}
	defer func() {
		for _, f := range fakes {
			f.close()
		}
	}()
	events := &reliability.EventLog{}
	var mu sync.Mutex
	var tallies []recoveryTally
	var wg sync.WaitGroup
	for fi, f := range fakes {
		jobs := &asyncJobs{}
		svc := lifecycle.NewService(lifecycle.Config{Store: outbox.InPath(env.Store(table), events), Provider: f.provider,
			Clock: lifecycle.SystemClock{}, Policy: lifecycle.DefaultPolicy(), Log: env.Log, CheckpointJobs: jobs})
		jobs.svc.Store(svc)
		n := cfg.Resumes / len(fakes)
		if fi < cfg.Resumes%len(fakes) {
			n++
		}
		next := make(chan int)
		for range cfg.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					fault := ""
					if k := i % cfg.FaultEvery; k < len(recoveryFaults) {
						fault = recoveryFaults[k]
					}
					t := recoverOne(ctx, svc, f, events, fault)
					mu.Lock()
					tallies = append(tallies, t)
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(next)
			for i := range n {
				select {
				case next <- i:
				case <-ctx.Done():
					return
				}
			}
		}()
		defer jobs.wg.Wait()
	}
	wg.Wait()
	var plain, recovered []time.Duration
	for _, t := range tallies {
		if t.err != nil {
			res.Errors = append(res.Errors, t.err.Error())
		}
		if t.fault != "" {
			res.Faulted[t.fault]++
			if t.lostEvents == 1 && t.lostWithAge == 1 {
				res.Losses++
			} else {
				res.LossesMissed++
			}
		}
		if t.adopted {
			res.SilentAdoptions++
		}
		if t.lostEvents > 1 {
			res.DoubleRecoveries++
		}
		if t.expiredEnded {
			res.ExpiredEnded++
		}
		if t.checkpoint {
			res.WithCheckpoint++
			if t.running {
				res.EndedRunning++
				if t.fault == "" {
					plain = append(plain, t.took)
				} else {
					recovered = append(recovered, t.took)
				}
			}
		}
	}
	slices.Sort(plain)
	slices.Sort(recovered)
	res.Plain, res.PlainP95MS = Summarize(plain), ms(Percentile(plain, 95))
	res.Recovered, res.RecoveredP95 = Summarize(recovered), ms(Percentile(recovered, 95))
	if len(res.Errors) > 20 {
		res.Errors = append(res.Errors[:20], fmt.Sprintf("… and %d more", len(res.Errors)-20))
	}
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

// recoverOne runs one session of RunRecovery with fault ("" for none).
func recoverOne(ctx context.Context, svc *lifecycle.Service, f recoveryFake, events *reliability.EventLog, fault string) (t recoveryTally) {
	t.fault = fault
	fail := func(step string, err error) recoveryTally {
		t.err = fmt.Errorf("%s %s: %w", f.name, step, err)
		return t
	}
	const acct = "acct_recovery"
	var sess *lifecycle.Session
	key := fmt.Sprintf("recovery-%s-%p", f.name, &t)
	err := unavailable(ctx, func() (err error) {
		sess, _, err = svc.Create(ctx, acct, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: 600, IdempotencyKey: key})
		return err
	})
	if err != nil {
		return fail("create", err)
	}
	if sess.State != lifecycle.StateRunning {
		// A retried create replays the first attempt's session, which may
		// still be provisioning (its running write timed out on a busy
		// table and is being settled): wait for it as a client would.
		if sess, err = waitSettled(ctx, svc, acct, sess.ID); err != nil {
			return fail("settle after the create", err)
		}
		if sess.State != lifecycle.StateRunning {
			return fail("create", fmt.Errorf("session %s ended %s", sess.ID, sess.State))
		}
	}
	files, ok := f.provider.(lifecycle.Files)
	if !ok {
		return fail("files", fmt.Errorf("the adapter has no file API"))
	}
	mine := []byte(sess.ID)
	if err := files.WriteFile(ctx, sess.SandboxID, lifecycle.DefaultWorkspaceDir+"/work.txt", mine); err != nil {
		return fail("write", err)
	}
	var c *lifecycle.Checkpoint
	err = unavailable(ctx, func() (err error) {
		c, _, err = svc.CreateCheckpoint(ctx, acct, sess.ID, lifecycle.CheckpointInput{})
		return err
	})
	if err != nil {
		return fail("checkpoint", err)
	}
	if c, err = waitCheckpoint(ctx, svc, acct, sess.ID, c.ID); err != nil || c.State != lifecycle.CheckpointReady {
		return fail("checkpoint ready", fmt.Errorf("%+v: %v", c, err))
	}
	// From here the session has a ready checkpoint the provider keeps,
	// unless the fault expires it.
	t.checkpoint = fault != "expired"
	cur, err := waitSettled(ctx, svc, acct, sess.ID)
	if err != nil {
		return fail("settle after the checkpoint", err)
	}
	if err := pauseIdle(ctx, svc, cur); err != nil {
		return fail("pause", err)
	}
	if cur, err = svc.Get(ctx, acct, sess.ID); err != nil || cur.State != lifecycle.StatePaused {
		return fail("paused", fmt.Errorf("%+v: %v", cur, err))
	}
	switch fault {
	case "expired":
		err = f.inject(cur.SandboxID, "snapshot_expired")
		if err == nil {
			err = f.inject(cur.SandboxID, "gone")
		}
	case "":
	default:
		err = f.inject(cur.SandboxID, fault)
	}
	if err != nil {
		return fail("inject "+fault, err)
	}
	begin := time.Now()
	err = unavailable(ctx, func() error {
		_, err := svc.Resume(ctx, acct, sess.ID)
		return err
	})
	if err != nil && !lifecycle.IsCode(err, lifecycle.CodeConflict) && !strings.Contains(err.Error(), "expired") && fault == "" {
		return fail("resume", err)
	}
	end, err := waitSettled(ctx, svc, acct, sess.ID)
	if err != nil {
		return fail("settle", err)
	}
	t.took = time.Since(begin)
	if fault == "expired" && end.State == lifecycle.StatePaused {
		// The restore found the checkpoint gone and put the session back:
		// the user's next open finds nothing left to restore.
		_, _ = svc.Resume(ctx, acct, sess.ID)
		if end, err = waitSettled(ctx, svc, acct, sess.ID); err != nil {
			return fail("settle again", err)
		}
	}
	t.expiredEnded = fault == "expired" && end.State == lifecycle.StateExpired
	t.running = end.State == lifecycle.StateRunning
	if t.running {
		t.adopted = !ownWorkspace(ctx, files, end, mine)
	}
	for _, ev := range events.For(sess.ID) {
		if ev.Reason == lifecycle.ReasonLost {
			t.lostEvents++
			if strings.Contains(ev.Lost, " age_seconds=") && strings.Contains(ev.Lost, " checkpoint="+c.ID) {
				t.lostWithAge++
			}
		}
	}
	return t
}

// pauseIdle pauses sess as the sweep does (reason idle) when it runs,
// reading it again after a lost race as the sweep's next run would: a
// same-state write may land between the read and the pause (the stored
// checkpoint bytes recounted once a checkpoint is ready, storedbytes.go).
func pauseIdle(ctx context.Context, svc *lifecycle.Service, sess *lifecycle.Session) error {
	for attempt := 0; sess.State == lifecycle.StateRunning; attempt++ {
		err := svc.Pause(ctx, sess, lifecycle.ReasonIdle, lifecycle.Guard{})
		if !lifecycle.IsLostRace(err) || attempt == 4 {
			return err
		}
		if sess, err = svc.Get(ctx, sess.AccountID, sess.ID); err != nil {
			return err
		}
	}
	return nil
}

// unavailable runs f again, up to 5 times 200 ms apart, while it answers
// unavailable (the table did not answer in time: DynamoDB Local on a busy
// machine), as a client retries; it returns f's last error.
func unavailable(ctx context.Context, f func() error) error {
	for i := 0; ; i++ {
		err := f()
		if !lifecycle.IsCode(err, lifecycle.CodeUnavailable) || i == 4 || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownWorkspace reports whether running sess's sandbox holds its own
// identity marker and the checkpoint's file mine.
func ownWorkspace(ctx context.Context, files lifecycle.Files, sess *lifecycle.Session, mine []byte) bool {
	data, err := files.ReadFile(ctx, sess.SandboxID, lifecycle.IdentityMarkerPath)
	var m struct {
		SessionID string `json:"session_id"`
		SandboxID string `json:"sandbox_id"`
	}
	if err != nil || json.Unmarshal(data, &m) != nil || m.SessionID != sess.ID || m.SandboxID != sess.SandboxID {
		return false
	}
	got, err := files.ReadFile(ctx, sess.SandboxID, lifecycle.DefaultWorkspaceDir+"/work.txt")
	return err == nil && string(got) == string(mine)
}

// waitCheckpoint polls checkpoint id until it leaves saving (30 s at most).
func waitCheckpoint(ctx context.Context, svc *lifecycle.Service, acct, sessionID, id string) (*lifecycle.Checkpoint, error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := svc.GetCheckpoint(ctx, acct, sessionID, id)
		if err != nil || c.State != lifecycle.CheckpointSaving || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitSettled polls the session until it is in no transitional state (30 s
// at most).
func waitSettled(ctx context.Context, svc *lifecycle.Service, acct, id string) (*lifecycle.Session, error) {
	for deadline := time.Now().Add(30 * time.Second); ; {
		s, err := svc.Get(ctx, acct, id)
		if err != nil {
			return nil, err
		}
		switch s.State {
		case lifecycle.StateRunning, lifecycle.StatePaused, lifecycle.StateExpired, lifecycle.StateKilled, lifecycle.StateFailed:
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("still %s after 30 s", s.State)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// RecoveryProblems lists what the run misses of docs/RELIABILITY.md
// "Recovery": a silent adoption, under 99.9 % running where a ready
// checkpoint exists, a loss not surfaced as one event with the age, a
// double recovery, an error.
func RecoveryProblems(r RecoveryResult) []string {
	var out []string
	if r.SilentAdoptions != 0 {
		out = append(out, fmt.Sprintf("%d silent adoptions", r.SilentAdoptions))
	}
	if r.Share() < 0.999 {
		out = append(out, fmt.Sprintf("%d of %d sessions with a ready checkpoint ended running", r.EndedRunning, r.WithCheckpoint))
	}
	if r.LossesMissed != 0 {
		out = append(out, fmt.Sprintf("%d losses not surfaced as one lost event with the checkpoint's age", r.LossesMissed))
	}
	if r.DoubleRecoveries != 0 {
		out = append(out, fmt.Sprintf("%d double recoveries", r.DoubleRecoveries))
	}
	return append(out, r.Errors...)
}

func recoverySection(b *strings.Builder, r *RecoveryResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## Recovery run: resumes of lost sandboxes (docs/RELIABILITY.md \"Recovery\")\n\n")
	p("%d sessions spread over the E2B, Daytona and Vercel fakes, each behind its real adapter, through the lifecycle ", r.Resumes)
	p("service on a DynamoDB Local table, the checkpoint jobs run in goroutines as a queue would. Each session writes a ")
	p("file, takes a checkpoint (the API and its job), is paused; one in ten then gets a fault in the fake (`Inject`): ")
	p("gone %d, foreign %d, partial %d, expired %d (the sandbox gone and its checkpoint's snapshot expired with it). ",
		r.Faulted["gone"], r.Faulted["foreign"], r.Faulted["partial"], r.Faulted["expired"])
	p("Each is resumed and waited until it settles; an expired one put back paused by its failed restore is resumed once more. ")
	p("A silent adoption is a session running on a sandbox whose identity marker or checkpoint file is not its own. ")
	p("Resume → ready is the resume request to the session read `running` (the sessions have no app). The fakes answer at ")
	p("once (Daytona's transitions 20 ms), so the latencies are Sandman's own path on DynamoDB Local; %.0f s in all.\n\n", r.Seconds)
	p("| measure | result |\n|---|--:|\n")
	p("| silent adoptions | %d |\n", r.SilentAdoptions)
	p("| ended running where a ready checkpoint exists | %d of %d (%.2f %%) |\n", r.EndedRunning, r.WithCheckpoint, 100*r.Share())
	p("| losses surfaced as one `lost` event with the checkpoint's age | %d of %d |\n", r.Losses, r.Losses+r.LossesMissed)
	p("| double recoveries | %d |\n", r.DoubleRecoveries)
	p("| expired class ended `expired` (nothing left to restore) | %d of %d |\n", r.ExpiredEnded, r.Faulted["expired"])
	p("| plain resume → ready p50 / p95 ms (n %d) | %.0f / %.0f |\n", r.Plain.N, r.Plain.P50MS, r.PlainP95MS)
	p("| recovered resume → ready p50 / p95 ms (n %d) | %.0f / %.0f |\n", r.Recovered.N, r.Recovered.P50MS, r.RecoveredP95)
	p("\n")
}
