package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
	"github.com/sandmanhq/sandman/internal/reliability"
	"github.com/sandmanhq/sandman/internal/sweep"
)

// Fault rates of the chaos run.
const (
	// transientRate: the share of provider calls of every operation that
	// fail transiently without taking effect (fake.Fault).
	transientRate = 0.20
	// goneRate: the share of calls naming a sandbox (get, pause, resume,
	// set_timeout, probe) during which the provider loses the sandbox.
	goneRate = 0.05
	// refuseRate: the share of settling writes (a write out of a
	// transitional state: the write that records a provider call's outcome)
	// that the table refuses, as if the function died or DynamoDB failed
	// right after the provider call.
	refuseRate = 0.05
)

// chaosConfig sizes one chaos run.
type chaosConfig struct {
	sessions     int      // created before the faults start
	workers      int      // concurrent goroutines
	opsPerWorker int      // operations each
	seeds        []uint64 // one run per seed
}

func chaosConfigFor(tb testing.TB) chaosConfig {
	tb.Helper()
	c := chaosConfig{sessions: 50, workers: 8, opsPerWorker: 150, seeds: []uint64{1}}
	if longMode() {
		c = chaosConfig{sessions: 200, workers: 12, opsPerWorker: 500, seeds: []uint64{1, 2, 3}}
	}
	if seed, ok := seedOverride(tb); ok {
		c.seeds = []uint64{seed}
	}
	return c
}

// op is one kind of operation a chaos worker performs.
type op string

const (
	opHeartbeat op = "heartbeat"  // Service.Heartbeat
	opResume    op = "resume"     // Service.Resume
	opPause     op = "pause"      // Service.PauseNow
	opReconnect op = "reconnect"  // Service.Reconnect
	opStatus    op = "status"     // Service.Status: a read, checked for versions going backwards
	opDelete    op = "delete"     // Service.Delete
	opCreate    op = "create"     // Service.Create of one more session
	opWebhook   op = "webhook"    // deliver a pending provider event, out of order, maybe again later
	opSweep     op = "sweep"      // Sweeper.Run, overlapping other sweeps
	opTick      op = "tick"       // advance the clock 1..30 s
	opExternal  op = "external"   // the provider pauses (its own timeout) or resumes (traffic) a sandbox
	opFinal     op = "final_pass" // not drawn: the final webhooks, sweep and probes
)

// opWeights is the mix of operations, in percent.
var opWeights = []struct {
	op     op
	weight int
}{
	{opHeartbeat, 20}, {opResume, 12}, {opPause, 10}, {opReconnect, 8}, {opStatus, 6},
	{opDelete, 2}, {opCreate, 3}, {opWebhook, 18}, {opSweep, 5}, {opTick, 10}, {opExternal, 6},
}

func drawOp(rng *rand.Rand) op {
	n := rng.IntN(100)
	for _, w := range opWeights {
		if n < w.weight {
			return w.op
		}
		n -= w.weight
	}
	return opHeartbeat
}

// TestChaos runs mixed operations (opWeights) over many sessions from
// concurrent goroutines, one shared service over DynamoDB Local, while:
//
//   - the fake provider fails transientRate of the calls of every operation
//     (seeded, reproducible draws) and loses the sandbox during goneRate of
//     the calls that name one (see chaos.goneMu for how "gone" stays true);
//   - the table refuses refuseRate of the writes that settle a provider
//     call, leaving sessions in transitional states with a lease;
//   - the provider pauses and resumes sandboxes on its own (opExternal);
//   - every change at the provider becomes a signed E2B webhook
//     (reliability.Observer) delivered through the real webhook handler out
//     of order, a quarter of them twice;
//   - sweeps run, overlapping each other and everything else, while the
//     manual clock moves so that sessions go idle and leases run out.
//
// Then the faults stop, the remaining webhooks are delivered (shuffled,
// half of them twice), the clock moves past every lease and a final sweep
// runs; checkFinal states the invariants. The default run is one seed of
// 50 sessions; SANDMAN_RELIABILITY_LONG=1 runs three seeds of 200, and
// SANDMAN_RELIABILITY_SEED=n one chosen seed. go test -v logs the figures.
func TestChaos(t *testing.T) {
	cfg := chaosConfigFor(t)
	for _, seed := range cfg.seeds {
		t.Run(fmt.Sprintf("Seed%d", seed), func(t *testing.T) {
			c := newChaos(t, cfg, seed)
			c.run(t)
			c.checkFinal(t)
			c.report(t)
		})
	}
}

// chaos is the state of one run.
type chaos struct {
	w    *world
	cfg  chaosConfig
	seed uint64

	// Gone injection. A provider answering "gone" for a sandbox that still
	// exists would be a lie Sandman must believe (it marks the session
	// expired and stops tracking the sandbox, which then leaks), and the
	// final agreement check could not tell that leak from a bug. So "gone"
	// is injected truthfully: the fake's OnCall hook, which runs at the start
	// of a call before it takes effect, Forget()s the sandbox, and the call
	// then finds it gone as a real provider would after losing it. The
	// provider's truth and what it tells Sandman never disagree.
	goneMu  sync.Mutex
	goneRNG *rand.Rand
	goneOn  bool
	gone    map[string]int // by operation

	refuseMu  sync.Mutex
	refuseRNG *rand.Rand
	refused   map[string]int // by transition "from→to"

	mu          sync.Mutex
	ids         []string // every session id the service generated
	pending     []reliability.Delivery
	ops         map[op]int
	errs        map[op]map[lifecycle.Code]int
	internal    []string // messages of internal errors, for the failure report
	deliveries  int
	redelivered int
	// contradicted counts applied webhooks that said the opposite of what
	// the provider held when they were applied (see contradicts).
	contradicted int
	outcomes     map[string]int // webhook outcome (or error:<type>) → count
	statuses     map[int]int    // webhook HTTP status → count
	sweeps       int
	swept        sweep.Summary // summed over every sweep
	advanced     time.Duration
	external     int
	took         time.Duration

	gapsAfterSweep map[string]int // disagreements the final sweep cannot see (see checkFinal)
}

func newChaos(tb testing.TB, cfg chaosConfig, seed uint64) *chaos {
	tb.Helper()
	c := &chaos{
		w: MustWorld(tb, seed), cfg: cfg, seed: seed,
		goneRNG:   rand.New(rand.NewPCG(seed, 0x6017e)),
		gone:      map[string]int{},
		refuseRNG: rand.New(rand.NewPCG(seed, 0x2ef05e)),
		refused:   map[string]int{},
		ops:       map[op]int{},
		errs:      map[op]map[lifecycle.Code]int{},
		outcomes:  map[string]int{},
		statuses:  map[int]int{},
	}
	// Every id the service generates joins the pool at once, so operations
	// can hit a session whose create is still in flight.
	c.w.rewire(tb, func(cfg *lifecycle.Config) {
		cfg.NewID = func() string {
			id := lifecycle.NewSessionID()
			c.mu.Lock()
			c.ids = append(c.ids, id)
			c.mu.Unlock()
			return id
		}
	})
	c.w.fake.SetOnCall(c.maybeLose)
	c.w.store.SetRefuse(c.maybeRefuse)
	return c
}

// maybeLose is the fake's OnCall hook: during the faulty phase, a call
// naming a sandbox loses it with probability goneRate (see chaos.goneMu).
func (c *chaos) maybeLose(o fake.Op, sandboxID string) {
	switch o {
	case fake.OpGet, fake.OpPause, fake.OpResume, fake.OpSetTimeout, fake.OpProbe:
	default:
		return
	}
	c.goneMu.Lock()
	lose := c.goneOn && sandboxID != "" && c.goneRNG.Float64() < goneRate
	c.goneMu.Unlock()
	if lose && c.w.fake.Forget(sandboxID) {
		c.goneMu.Lock()
		c.gone[string(o)]++
		c.goneMu.Unlock()
	}
}

// errRefused is the store failure injected on settling writes.
var errRefused = errors.New("injected: the table write was lost (function died after its provider call)")

// maybeRefuse is the store's refuse hook: during the faulty phase, a write
// out of a transitional state fails with probability refuseRate.
func (c *chaos) maybeRefuse(next *lifecycle.Session, from lifecycle.State) error {
	if !from.Transitional() || next.State == from {
		return nil
	}
	if !c.faulty() {
		return nil
	}
	c.refuseMu.Lock()
	defer c.refuseMu.Unlock()
	if c.refuseRNG.Float64() >= refuseRate {
		return nil
	}
	c.refused[string(from)+"→"+string(next.State)]++
	return errRefused
}

// faulty reports whether the faulty phase is on.
func (c *chaos) faulty() bool {
	c.goneMu.Lock()
	defer c.goneMu.Unlock()
	return c.goneOn
}

func (c *chaos) setFaults(on bool) {
	c.goneMu.Lock()
	c.goneOn = on
	c.goneMu.Unlock()
	if !on {
		c.w.fake.ClearFaults()
		return
	}
	for _, o := range fake.Ops {
		c.w.fake.SetFault(o, fake.Fault{Kind: lifecycle.ErrProviderTransient, Rate: transientRate})
	}
}

// observe turns provider changes into pending webhooks.
func (c *chaos) observe() {
	ds := c.w.observer.Observe()
	if len(ds) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, ds...)
}

func (c *chaos) pick(rng *rand.Rand) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) == 0 {
		return ""
	}
	return c.ids[rng.IntN(len(c.ids))]
}

func (c *chaos) tally(o op, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ops[o]++
	if c.errs[o] == nil {
		c.errs[o] = map[lifecycle.Code]int{}
	}
	code := lifecycle.ErrorCode(err)
	if code == "" {
		code = "ok"
	}
	c.errs[o][code]++
	if code == lifecycle.CodeInternal && len(c.internal) < 20 {
		c.internal = append(c.internal, fmt.Sprintf("%s: %v", o, err))
	}
}

// run creates the sessions, then runs the workers with the faults on.
func (c *chaos) run(t *testing.T) {
	start := time.Now()
	ctx := t.Context()
	var g errgroup.Group
	g.SetLimit(8)
	for i := range c.cfg.sessions {
		g.Go(func() error {
			idle := int64(120 * (1 + i%10)) // 2 to 20 minutes
			_, _, err := c.w.svc.Create(ctx, account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: idle})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create sessions: %v", err)
	}
	c.observe()

	c.setFaults(true)
	var wg sync.WaitGroup
	for worker := range c.cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(c.seed, uint64(worker)+1))
			for range c.cfg.opsPerWorker {
				if ctx.Err() != nil {
					return
				}
				if err := c.step(ctx, rng, drawOp(rng)); err != nil {
					t.Error(err)
					return
				}
				c.observe()
			}
		}()
	}
	wg.Wait()
	c.setFaults(false)
	c.w.store.SetRefuse(nil)
	if err := c.finalPass(ctx, rand.New(rand.NewPCG(c.seed, 0xf17a1))); err != nil {
		t.Fatal(err)
	}
	c.took = time.Since(start)
}

// step performs one operation. Errors the lifecycle reports are tallied,
// not returned: only a broken harness or a broken invariant of the edge
// (a webhook answered with a status a provider would not retry) is.
func (c *chaos) step(ctx context.Context, rng *rand.Rand, o op) error {
	id := c.pick(rng)
	var err error
	switch o {
	case opHeartbeat:
		_, err = c.w.svc.Heartbeat(ctx, account, id)
	case opResume:
		_, err = c.w.svc.Resume(ctx, account, id)
	case opPause:
		_, err = c.w.svc.PauseNow(ctx, account, id)
	case opReconnect:
		_, err = c.w.svc.Reconnect(ctx, account, id)
	case opStatus:
		_, _, err = c.w.svc.Status(ctx, account, id)
	case opDelete:
		// Only sessions whose create has finished. A delete that lands
		// while the create's provider call is in flight kills the session
		// (it has no sandbox yet); the create's running write then loses
		// and its cleanup kills the new sandbox, but when that one kill
		// fails the sandbox leaks: nothing records it and the sweep only
		// logs it as unknown. That gap of Service.Create is known and
		// reported; it is kept out of this run so the no-leak check stays
		// strict for everything else.
		if sess, gerr := c.w.store.GetSession(ctx, id); gerr != nil || sess.State == lifecycle.StateProvisioning {
			c.tally(o, nil)
			return nil
		}
		_, err = c.w.svc.Delete(ctx, account, id)
	case opCreate:
		idle := int64(120 * (1 + rng.IntN(10)))
		_, _, err = c.w.svc.Create(ctx, account, lifecycle.CreateInput{Template: "base", IdleTimeoutSeconds: idle})
	case opWebhook:
		return c.deliverOne(ctx, rng)
	case opSweep:
		var sum sweep.Summary
		sum, err = c.w.sweeper.Run(ctx)
		c.addSweep(sum)
	case opTick:
		d := time.Duration(1+rng.IntN(30)) * time.Second
		c.w.clock.Advance(d)
		c.mu.Lock()
		c.advanced += d
		c.mu.Unlock()
	case opExternal:
		c.externalChange(rng)
	}
	c.tally(o, err)
	return nil
}

// deliverOne delivers a random pending webhook (so deliveries come out of
// order) and keeps it pending one time in four, to deliver it again.
func (c *chaos) deliverOne(ctx context.Context, rng *rand.Rand) error {
	c.mu.Lock()
	if len(c.pending) == 0 {
		c.mu.Unlock()
		c.tally(opWebhook, nil)
		return nil
	}
	i := rng.IntN(len(c.pending))
	d := c.pending[i]
	again := rng.IntN(4) == 0
	if !again {
		c.pending = slices.Delete(c.pending, i, i+1)
	}
	c.deliveries++
	c.mu.Unlock()
	return c.send(ctx, d)
}

// send delivers d through the webhook handler and checks the answer: 200
// (the event was taken, whatever it did) or 503 (a lost race: the provider
// retries). Nothing else may come back for a genuine, signed event.
func (c *chaos) send(ctx context.Context, d reliability.Delivery) error {
	c.mu.Lock()
	n := c.deliveries + c.redelivered
	c.mu.Unlock()
	status, outcome, err := c.w.deliver(ctx, d, fmt.Sprintf("req_%d", n))
	if err != nil {
		return err
	}
	contradicted := outcome == string(lifecycle.WebhookApplied) && c.contradicts(d)
	c.mu.Lock()
	c.statuses[status]++
	c.outcomes[outcome]++
	c.ops[opWebhook]++
	if contradicted {
		c.contradicted++
	}
	c.mu.Unlock()
	if status != http.StatusOK && status != http.StatusServiceUnavailable {
		return fmt.Errorf("webhook %s (%s of %s) answered %d %s, want 200 or 503",
			d.Event.ID, d.Event.Type, d.Event.SandboxID, status, outcome)
	}
	return nil
}

// contradicts reports whether an applied event says the opposite of what
// the provider holds now: a late paused or resumed event applied after the
// sandbox changed again. The final sweep repairs these (phase 3); the count
// shows how often a late delivery moved a session away from the truth.
func (c *chaos) contradicts(d reliability.Delivery) bool {
	sb, ok := c.w.fake.Sandbox(d.Event.SandboxID)
	switch d.Event.Type {
	case lifecycle.ProviderEventPaused:
		return ok && sb.State == lifecycle.SandboxRunning
	case lifecycle.ProviderEventResumed:
		return ok && sb.State == lifecycle.SandboxPaused
	}
	return false
}

// externalChange pauses a running sandbox (as its provider-side timeout
// would) or resumes a paused one (as traffic would), behind Sandman's back.
func (c *chaos) externalChange(rng *rand.Rand) {
	sbs := c.w.fake.Sandboxes()
	if len(sbs) == 0 {
		return
	}
	sb := sbs[rng.IntN(len(sbs))]
	to := lifecycle.SandboxPaused
	if sb.State == lifecycle.SandboxPaused {
		to = lifecycle.SandboxRunning
	}
	if c.w.fake.SetState(sb.ID, to) {
		c.mu.Lock()
		c.external++
		c.mu.Unlock()
	}
}

func (c *chaos) addSweep(s sweep.Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweeps++
	c.swept.Candidates += s.Candidates
	c.swept.Paused += s.Paused
	c.swept.Expired += s.Expired
	c.swept.Failed += s.Failed
	c.swept.Skipped += s.Skipped
	c.swept.Leases += s.Leases
	c.swept.Listed += s.Listed
	c.swept.Unknown += s.Unknown
	c.swept.Reconciled += s.Reconciled
	c.swept.ReconcileFailed += s.ReconcileFailed
}

// finalPass, with the faults off: every webhook still pending is delivered
// (shuffled) and a random half of them again; the clock moves past every
// lease; one sweep runs. What the sweep leaves is checked by checkFinal.
func (c *chaos) finalPass(ctx context.Context, rng *rand.Rand) error {
	c.observe()
	c.mu.Lock()
	rest := slices.Clone(c.pending)
	c.pending = nil
	c.mu.Unlock()
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for i, d := range rest {
		c.mu.Lock()
		c.deliveries++
		c.mu.Unlock()
		if err := c.send(ctx, d); err != nil {
			return err
		}
		if i%2 == 0 {
			c.mu.Lock()
			c.redelivered++
			c.mu.Unlock()
			if err := c.send(ctx, d); err != nil {
				return err
			}
		}
	}
	c.w.clock.Advance(c.w.svc.Policy().LeaseDuration + time.Second)
	sum, err := c.w.sweeper.Run(ctx)
	if err != nil {
		return fmt.Errorf("final sweep: %w", err)
	}
	c.addSweep(sum)
	c.tally(opFinal, nil)
	return nil
}

// disagreement describes how a session and its provider disagree, or
// returns "" when they agree:
//
//	running, paused   its sandbox exists at the provider in that state
//	expired, killed,  no sandbox it ever held exists, nor any sandbox tagged
//	failed            with its id (no leak)
//	provisioning,     none may be left once every lease ran out and the
//	pausing, resuming sweep ran
func (c *chaos) disagreement(sess *lifecycle.Session, writes []reliability.Write, tagged map[string][]string) string {
	switch sess.State {
	case lifecycle.StateRunning, lifecycle.StatePaused:
		sb, ok := c.w.fake.Sandbox(sess.SandboxID)
		switch {
		case !ok:
			return string(sess.State) + " but its sandbox is gone"
		case string(sb.State) != string(sess.State):
			return fmt.Sprintf("%s but its sandbox is %s", sess.State, sb.State)
		}
		for _, other := range tagged[sess.ID] {
			if other != sess.SandboxID {
				return fmt.Sprintf("%s on %s, and sandbox %s tagged with it leaked", sess.State, sess.SandboxID, other)
			}
		}
		return ""
	case lifecycle.StateExpired, lifecycle.StateKilled, lifecycle.StateFailed:
		for _, w := range writes {
			if _, ok := c.w.fake.Sandbox(w.SandboxID); w.SandboxID != "" && ok {
				return fmt.Sprintf("%s but its sandbox %s exists", sess.State, w.SandboxID)
			}
		}
		if len(tagged[sess.ID]) > 0 {
			return fmt.Sprintf("%s but sandboxes %v tagged with it exist", sess.State, tagged[sess.ID])
		}
		return ""
	}
	return "left " + string(sess.State)
}

// sweepBlind reports whether a disagreement is one the sweep cannot see by
// design (sweep package doc): a session the table holds as running or paused
// whose sandbox the provider lost. The provider's list does not show a
// sandbox that is gone, and neither the idle index (a running session not
// yet due) nor anything else (a paused one) makes the sweep probe it. A
// probe (reconnect), a resume, the provider's killed webhook or the dormancy
// phase finds it.
func sweepBlind(d string) bool {
	return strings.HasSuffix(d, "but its sandbox is gone")
}

// tags maps a session id to the sandboxes at the provider tagged with it.
func (c *chaos) tags() map[string][]string {
	out := map[string][]string{}
	for _, sb := range c.w.fake.Sandboxes() {
		id := sb.Metadata[lifecycle.MetadataSessionID]
		out[id] = append(out[id], sb.ID)
	}
	return out
}

// checkFinal checks the invariants once the run is over:
//
//  1. After the final sweep, every session agrees with its provider
//     (chaos.disagreement) except where the sweep is blind by design
//     (sweepBlind), and every sandbox at the provider belongs to a session
//     that is running or paused on it: nothing leaked.
//  2. After one reconnect probe per session that is running or paused in
//     the table (what a client does), every session agrees, no exception.
//  3. For every session: its writes form the version chain 1..n, each
//     starting from the state the previous one wrote (CheckHistory), and
//     the events the outbox published from the table's stream cover its
//     transitions: each at least once by event_id, none for a write that
//     kept the state, in version order (CheckEvents).
//  4. No strongly consistent read ever saw a version older than one
//     already committed.
//  5. No operation failed with an internal error that an injected store
//     failure does not account for.
func (c *chaos) checkFinal(t *testing.T) {
	ctx := t.Context()
	ids := c.sessionIDs(t)

	tagged := c.tags()
	c.gapsAfterSweep = map[string]int{}
	for _, id := range ids {
		sess := c.w.MustSession(t, id)
		d := c.disagreement(sess, c.w.store.Writes(id), tagged)
		switch {
		case d == "":
		case sweepBlind(d):
			c.gapsAfterSweep[d]++
		default:
			t.Errorf("after the final sweep, session %s (v%d, reason %s) disagrees with the provider: %s",
				id, sess.Version, sess.Reason, d)
		}
	}
	c.checkNoLeaks(t, tagged)

	for _, id := range ids {
		sess := c.w.MustSession(t, id)
		if sess.State != lifecycle.StateRunning && sess.State != lifecycle.StatePaused {
			continue
		}
		if _, err := c.w.svc.Reconnect(ctx, account, id); err != nil {
			t.Errorf("final reconnect of %s: %v", id, err)
		}
	}
	tagged = c.tags()
	for _, id := range ids {
		sess := c.w.MustSession(t, id)
		if d := c.disagreement(sess, c.w.store.Writes(id), tagged); d != "" {
			t.Errorf("after the final probes, session %s (v%d, reason %s) disagrees with the provider: %s",
				id, sess.Version, sess.Reason, d)
		}
		writes := c.w.MustHistory(t, id)
		if n := len(writes); n > 0 && sess.Version != writes[n-1].Version {
			t.Errorf("session %s is at version %d but its last recorded write is version %d", id, sess.Version, writes[n-1].Version)
		}
	}
	c.checkNoLeaks(t, tagged)

	for _, b := range c.w.store.Backwards() {
		t.Errorf("version went backwards: %s", b)
	}
	c.mu.Lock()
	internal := 0
	for _, byCode := range c.errs {
		internal += byCode[lifecycle.CodeInternal]
	}
	msgs := slices.Clone(c.internal)
	c.mu.Unlock()
	if refused := sum(c.refusedCounts()); internal > refused {
		t.Errorf("%d operations failed with an internal error, but only %d store writes were refused: %s",
			internal, refused, strings.Join(msgs, "; "))
	}
}

// checkNoLeaks fails the test for any sandbox at the provider that no
// running or paused session holds.
func (c *chaos) checkNoLeaks(t *testing.T, tagged map[string][]string) {
	t.Helper()
	for id, sbs := range tagged {
		for _, sbID := range sbs {
			sess, err := c.w.store.GetSession(t.Context(), id)
			switch {
			case err != nil:
				t.Errorf("sandbox %s is tagged with session %q, which cannot be read: %v", sbID, id, err)
			case sess.SandboxID != sbID || sess.State.Final():
				t.Errorf("sandbox %s leaked: its session %s is %s on sandbox %q", sbID, id, sess.State, sess.SandboxID)
			}
		}
	}
}

// sessionIDs returns every id the service generated that names a session
// in the table (a create refused by validation writes nothing).
func (c *chaos) sessionIDs(t *testing.T) []string {
	c.mu.Lock()
	all := slices.Clone(c.ids)
	c.mu.Unlock()
	var ids []string
	for _, id := range all {
		_, err := c.w.store.GetSession(t.Context(), id)
		switch {
		case lifecycle.IsCode(err, lifecycle.CodeNotFound):
			if n := len(c.w.store.Writes(id)); n > 0 {
				t.Errorf("session %s has %d recorded writes but is not in the table", id, n)
			}
		case err != nil:
			t.Fatalf("get session %s: %v", id, err)
		default:
			ids = append(ids, id)
		}
	}
	return ids
}

func (c *chaos) refusedCounts() map[string]int {
	c.refuseMu.Lock()
	defer c.refuseMu.Unlock()
	return clone(c.refused)
}

// report logs the run's figures (go test -v shows them).
func (c *chaos) report(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.ops {
		total += n
	}
	writes, transitions, states := 0, 0, map[lifecycle.State]int{}
	for _, id := range c.w.store.Sessions() {
		ws := c.w.store.Writes(id)
		writes += len(ws)
		for _, w := range ws {
			if w.Transition() {
				transitions++
			}
		}
		if len(ws) > 0 {
			states[ws[len(ws)-1].To]++
		}
	}
	c.goneMu.Lock()
	gone := clone(c.gone)
	c.goneMu.Unlock()
	calls := c.w.calls.snapshot()
	callTotal := 0
	for _, m := range calls {
		callTotal += sum(m)
	}
	t.Logf("seed %d: %d sessions (%d at start), %d workers, %d operations in %s; clock advanced %s",
		c.seed, len(c.w.store.Sessions()), c.cfg.sessions, c.cfg.workers, total, c.took.Round(time.Millisecond), c.advanced)
	t.Logf("operations: %s", formatOps(c.ops, c.errs))
	t.Logf("table: %d writes, %d transitions, %d events published, %d checked reads; final states %v",
		writes, transitions, c.w.events.Len(), c.w.store.Reads(), states)
	t.Logf("provider: %d calls, %d transient faults injected, %d sandboxes lost (gone injected) %v, %d gone answers, %d external pause/resume",
		callTotal, c.w.calls.total("transient"), sum(gone), gone, c.w.calls.total("gone"), c.external)
	t.Logf("provider calls by operation: %v", calls)
	refused := c.refusedCounts()
	t.Logf("store: %d settling writes refused %v", sum(refused), refused)
	t.Logf("webhooks: %d deliveries (%d immediate re-deliveries), statuses %v, outcomes %v; %d applied against the provider's current state",
		c.deliveries+c.redelivered, c.redelivered, c.statuses, c.outcomes, c.contradicted)
	t.Logf("sweeps: %d runs, summed %+v", c.sweeps, c.swept)
	t.Logf("left for the probes by the final sweep (blind by design): %v", c.gapsAfterSweep)
}

func formatOps(ops map[op]int, errs map[op]map[lifecycle.Code]int) string {
	keys := make([]string, 0, len(ops))
	for o := range ops {
		keys = append(keys, string(o))
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d %v; ", k, ops[op(k)], errs[op(k)])
	}
	return b.String()
}

func clone[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
