package capacity

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/dynamo"
	"github.com/sandmanhq/sandman/internal/dynamo/tabledef"
	"github.com/sandmanhq/sandman/internal/governor"
	govstore "github.com/sandmanhq/sandman/internal/governor/dynamostore"
	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/lab/numfmt"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/outbox"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// DynamoDB's per-partition and per-item throughput limits (DynamoDB
// Developer Guide, "Service, account, and table quotas": a partition, and
// so an item, serves at most 1,000 WCU/s and 3,000 RCU/s).
const (
	PartitionWCU = 1000.0
	PartitionRCU = 3000.0
)

// Target is the workload the capacity model scales to
// (docs/CAPACITY.md "Target"). Zero fields take DefaultTarget's.
type Target struct {
	// Sessions running at once (1,000,000).
	Sessions int
	// HeartbeatEvery is how often each running session's client sends a
	// heartbeat (30 s).
	HeartbeatEvery time.Duration
	// ChannelShare is the share of heartbeats sent on the client channel
	// rather than over HTTP, 0..1 (0.5): a channel heartbeat also reads its
	// connection record.
	ChannelShare float64
	// PausesPer5Min and ResumesPer5Min are the pauses (by timer, reason
	// idle) and resumes per 5 minutes (100,000 each).
	PausesPer5Min, ResumesPer5Min int
	// CreatesPer5Min are the creates per 5 minutes (30,000: the cost
	// replay's 0.29 creates per pause).
	CreatesPer5Min int
	// ConnectsPer5Min are client-channel connections opened, and as many
	// closed, per 5 minutes (the creates plus the resumes: a tab per start).
	ConnectsPer5Min int
	// ReturnsPer5Min are users' returns per 5 minutes (200,000: the
	// resumes and as many returns to a sandbox still running, as the cost
	// replay's trace of people has about twice as many returns as
	// resumes); LearnedShare the share of sessions under the learned idle
	// policy (1: every one, the worst case). Each learned return reads its
	// three histograms and writes its user key's, and one in
	// lifecycle.FallbackEvery the account's and the template's.
	ReturnsPer5Min int
	LearnedShare   float64
	// LargestAccount is how many of the sessions belong to the largest
	// account (10,000): its share of every operation lands on its account
	// keys.
	LargestAccount int
	// Scale multiplies every count above (1; 10 asks what breaks first).
	Scale float64
	// ProviderLimit is the provider calls a second the fleet's governor
	// lets through (666.67: E2B's 20,000 per 30 s, below the target's
	// demand, docs/CAPACITY.md "Provider calls"), and
	// GovernorWritesPerCall the governor's bucket updates per provider
	// call (1.5: every call its own lease, as one a Lambda container makes
	// alone, and half a failed conditional update more; the fleet figure
	// measures 0.2 to 0.6 with busy processes). Their product, over
	// GovernorShards items (4, what the stack deploys:
	// sandman:governorShards), is each bucket item's writes.
	ProviderLimit         float64
	GovernorWritesPerCall float64
	GovernorShards        int
	// PauseCheckpointShare is the share of the pauses that record a
	// checkpoint (checkpoint_on_pause), 0..1: 1 (every one, the default)
	// measures each pause with its checkpoint; negative, none.
	PauseCheckpointShare float64
}

// DefaultTarget is docs/DESIGN.md "Capacity"'s target.
var DefaultTarget = Target{
	Sessions: 1_000_000, HeartbeatEvery: 30 * time.Second, ChannelShare: 0.5,
	PausesPer5Min: 100_000, ResumesPer5Min: 100_000, CreatesPer5Min: 30_000, ConnectsPer5Min: 130_000,
	ReturnsPer5Min: 200_000, LearnedShare: 1,
	LargestAccount: 10_000, Scale: 1,
}

func (t Target) withDefaults() Target {
	d := DefaultTarget
	if t.Sessions <= 0 {
		t.Sessions = d.Sessions
	}
	if t.HeartbeatEvery <= 0 {
		t.HeartbeatEvery = d.HeartbeatEvery
	}
	if t.ChannelShare < 0 || t.ChannelShare > 1 {
		t.ChannelShare = d.ChannelShare
	}
	if t.PausesPer5Min <= 0 {
		t.PausesPer5Min = d.PausesPer5Min
	}
	if t.ResumesPer5Min <= 0 {
		t.ResumesPer5Min = d.ResumesPer5Min
	}
	if t.CreatesPer5Min < 0 {
		t.CreatesPer5Min = d.CreatesPer5Min
	}
	if t.ConnectsPer5Min < 0 {
		t.ConnectsPer5Min = d.ConnectsPer5Min
	}
	if t.ReturnsPer5Min < 0 {
		t.ReturnsPer5Min = d.ReturnsPer5Min
	}
	if t.LearnedShare < 0 || t.LearnedShare > 1 {
		t.LearnedShare = d.LearnedShare
	}
	if t.LargestAccount <= 0 {
		t.LargestAccount = d.LargestAccount
	}
	if t.Scale <= 0 {
		t.Scale = 1
	}
	if t.ProviderLimit <= 0 {
		t.ProviderLimit = 20000.0 / 30
	}
	if t.GovernorWritesPerCall <= 0 {
		t.GovernorWritesPerCall = 1.5
	}
	if t.GovernorShards <= 0 {
		t.GovernorShards = DeployedGovernorShards
	}
	switch {
	case t.PauseCheckpointShare == 0 || t.PauseCheckpointShare > 1:
		t.PauseCheckpointShare = 1
	case t.PauseCheckpointShare < 0:
		t.PauseCheckpointShare = 0
	}
	return t
}

// DeployedGovernorShards is the governor's bucket items per provider that
// the stack deploys (context sandman:governorShards, SANDMAN_GOVERNOR_SHARDS).
const DeployedGovernorShards = 4

// Config is what Run measures with. Zero fields mean the
// defaults given.
type Config struct {
	// Target is the workload scaled to (DefaultTarget).
	Target Target
	// Ops is how many of each operation the synthetic run makes (50).
	Ops int
	// Shards is the due indexes' shard count the table is written with
	// (tabledef.DeployedShards, what the stack deploys).
	Shards int
	// Policy is the lifecycle policy (lifecycle.DefaultPolicy).
	Policy lifecycle.Policy
	// MaxRunning is the largest account's running quota (1,000,000: on, so
	// the running-slot counter is written, as a deployment with quotas
	// does; 0 turns the counter off).
	MaxRunning int
}

// Op is one operation of the synthetic workload with its measured
// cost per call and its rate at the target.
type Op struct {
	Name string `json:"name"`
	// PerSecond is the operation's rate at the target, calls per second.
	PerSecond float64 `json:"per_second"`
	// Units are the capacity units one call consumed, by key family.
	Units map[Family]Units `json:"units"`
}

// Row is one key family at the target.
type Row struct {
	Family Family `json:"family"`
	// Keyed says what one key of the family is: "session", "account",
	// "shard of N".
	Keyed string `json:"keyed"`
	// WCU and RCU are the peak units per second on the family's busiest
	// key at the target.
	WCU float64 `json:"wcu_per_s"`
	RCU float64 `json:"rcu_per_s"`
	// Use is the larger of WCU/PartitionWCU and RCU/PartitionRCU.
	Use float64 `json:"use"`
}

// Result is Run's answer.
type Result struct {
	Target Target `json:"target"`
	Shards int    `json:"shards"`
	Ops    []Op   `json:"ops"`
	Rows   []Row  `json:"rows"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
}

// Over returns the rows whose use is above limit (0.8: 80 %).
func (r Result) Over(limit float64) []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Use > limit {
			out = append(out, row)
		}
	}
	return out
}

// largestAccount is the largest account of the synthetic run.
const largestAccount = "acct_largest"

// closeTimeout bounds stopping the capacity proxy once the run is over.
const closeTimeout = 10 * time.Second

// Run drives the synthetic workload through lifecycle.Service on a
// dynamo.Store, as the functions wire them (the outbox's usage recording
// in the path, the running-slot counter on), on a fresh table of DynamoDB
// Local behind a capacity proxy; measures each operation's capacity units
// per key family; and scales them to cfg.Target (docs/CAPACITY.md
// "Method"). Errors: a table, proxy or operation that failed.
func Run(ctx context.Context, env *bench.Env, cfg Config) (Result, error) {
	start := time.Now()
	cfg.Target = cfg.Target.withDefaults()
	if cfg.Ops <= 0 {
		cfg.Ops = 50
	}
	if cfg.Shards <= 0 {
		cfg.Shards = tabledef.DeployedShards
	}
	if cfg.Policy == (lifecycle.Policy{}) {
		cfg.Policy = lifecycle.DefaultPolicy()
	}
	if cfg.MaxRunning == 0 {
		cfg.MaxRunning = 1_000_000
	}
	table, drop, err := env.NewTable(ctx, "capacity")
	if err != nil {
		return Result{}, err
	}
	defer drop()
	capLog := NewLog()
	proxy, err := bench.NewObservedProxy(env.Endpoint, bench.NewOpCounter(), capLog, env.Log)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = proxy.Close(cctx)
	}()
	client, err := dynamo.NewClient(ctx, proxy.URL)
	if err != nil {
		return Result{}, fmt.Errorf("dynamodb client for the proxy: %w", err)
	}
	store := dynamo.New(dynamo.Config{Client: client, Table: table, Log: env.Log, Shards: cfg.Shards,
		WithoutRunningSlots: cfg.MaxRunning < 0})
	clock := lifecycle.NewManualClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	nop := lifecycle.PublisherFunc(func(context.Context, ...lifecycle.Event) error { return nil })
	svc := lifecycle.NewService(lifecycle.Config{
		Store: outbox.InPath(store, outbox.Recording(store, nop)), Provider: fake.New(fake.Config{Clock: clock}),
		Clock: clock, Policy: cfg.Policy, Log: env.Log, MaxRunning: max(cfg.MaxRunning, 0),
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})

	t := cfg.Target
	per5 := func(n int) float64 { return float64(n) * t.Scale / 300 }
	written := t.HeartbeatEvery * time.Duration(math.Ceil(float64(cfg.Policy.ActivityGranularity)/float64(t.HeartbeatEvery)))
	beats := float64(t.Sessions) * t.Scale / t.HeartbeatEvery.Seconds()
	writes := float64(t.Sessions) * t.Scale / written.Seconds()
	coalesced := beats - writes

	n := cfg.Ops
	ids := make([]string, n)
	var ops []Op
	measure := func(name string, rate float64, each func(i int) error) error {
		op, err := measureOp(capLog, n, name, rate, each, nil)
		ops = append(ops, op)
		return err
	}
	steps := []struct {
		name  string
		rate  float64
		clock time.Duration
		each  func(i int) error
	}{
		{"create", per5(t.CreatesPer5Min), 0, func(i int) error {
			s, _, err := svc.Create(ctx, largestAccount, lifecycle.CreateInput{Template: "base"})
			if err == nil {
				ids[i] = s.ID
			}
			return err
		}},
		{"heartbeat over HTTP, written", writes * (1 - t.ChannelShare), cfg.Policy.ActivityGranularity + time.Second, func(i int) error {
			_, err := svc.Heartbeat(ctx, largestAccount, ids[i])
			return err
		}},
		{"heartbeat over HTTP, coalesced", coalesced * (1 - t.ChannelShare), time.Second, func(i int) error {
			_, err := svc.Heartbeat(ctx, largestAccount, ids[i])
			return err
		}},
		{"client connects (hello, visible)", per5(t.ConnectsPer5Min), 0, func(i int) error {
			if err := store.PutConn(ctx, lifecycle.ClientConn{ID: "conn-" + ids[i], SessionID: ids[i], AccountID: largestAccount,
				Visible: true, ExpiresAt: clock.Now().Add(2 * time.Hour)}); err != nil {
				return err
			}
			_, _, err := svc.SetPresence(ctx, largestAccount, ids[i], true)
			return err
		}},
		{"heartbeat on the channel, written", writes * t.ChannelShare, cfg.Policy.ActivityGranularity + time.Second, func(i int) error {
			if _, err := store.GetConn(ctx, "conn-"+ids[i]); err != nil {
				return err
			}
			_, err := svc.Heartbeat(ctx, largestAccount, ids[i])
			return err
		}},
		{"heartbeat on the channel, coalesced", coalesced * t.ChannelShare, time.Second, func(i int) error {
			if _, err := store.GetConn(ctx, "conn-"+ids[i]); err != nil {
				return err
			}
			_, err := svc.Heartbeat(ctx, largestAccount, ids[i])
			return err
		}},
		{"client disconnects (last one: away)", per5(t.ConnectsPer5Min), 0, func(i int) error {
			if err := store.DeleteConn(ctx, "conn-"+ids[i]); err != nil {
				return err
			}
			if _, err := store.SessionConns(ctx, ids[i]); err != nil {
				return err
			}
			_, _, err := svc.SetPresence(ctx, largestAccount, ids[i], false)
			return err
		}},
		{"pause by timer (idle), no checkpoint", per5(t.PausesPer5Min) * (1 - t.PauseCheckpointShare), time.Hour, func(i int) error {
			out, err := svc.FireTimer(ctx, ids[i])
			if err == nil && out != lifecycle.TimerPaused {
				err = fmt.Errorf("timer outcome %s, want paused", out)
			}
			return err
		}},
		{"resume", per5(t.ResumesPer5Min), time.Minute, func(i int) error {
			_, err := svc.Resume(ctx, largestAccount, ids[i])
			return err
		}},
	}
	for _, st := range steps {
		clock.Advance(st.clock)
		env.Printf("capacity: %d × %s", n, st.name)
		if err := measure(st.name, st.rate, st.each); err != nil {
			return Result{}, err
		}
	}
	learnedOps, err := measureLearned(ctx, env, svc.Config(), store, clock, capLog, n, t)
	if err != nil {
		return Result{}, err
	}
	ops = append(ops, learnedOps...)
	if t.PauseCheckpointShare > 0 {
		op, err := measurePauseCheckpoints(ctx, env, svc.Config(), clock, capLog, n, per5(t.PausesPer5Min)*t.PauseCheckpointShare)
		if err != nil {
			return Result{}, err
		}
		ops = append(ops, op)
	}
	// The fleet's governor: one lease is one conditional update of a
	// bucket item (internal/governor/dynamostore); the provider's limit
	// bounds the calls, so the leases, whatever the demand.
	bucket := govstore.New(client, table)
	leases := t.ProviderLimit * t.GovernorWritesPerCall
	env.Printf("capacity: %d × governor lease", n)
	if err := measure("governor lease (a bucket update)", leases, func(i int) error {
		now := clock.Now().Add(time.Duration(i) * time.Millisecond)
		_, _, err := bucket.Take(ctx, governor.Take{Key: "e2b#0", Now: now, Full: i == 0, Delta: time.Millisecond,
			Max: now.Add(time.Hour)})
		return err
	}); err != nil {
		return Result{}, err
	}
	res := Result{Target: t, Shards: cfg.Shards, Ops: ops}
	res.Rows = scaleRows(ops, t, cfg.Shards, store.ShardSkew(t.Sessions))
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// measureOp calls each n times and returns the operation with its mean
// units per call, by family (only the families keep says yes to; nil:
// every one).
func measureOp(capLog *Log, n int, name string, rate float64, each func(i int) error, keep func(Family) bool) (Op, error) {
	capLog.Reset()
	for i := range n {
		if err := each(i); err != nil {
			return Op{}, fmt.Errorf("capacity: %s %d: %w", name, i, err)
		}
	}
	per := map[Family]Units{}
	for f, u := range capLog.Snapshot() {
		if keep == nil || keep(f) {
			per[f] = Units{Read: u.Read / float64(n), Write: u.Write / float64(n)}
		}
	}
	return Op{Name: name, PerSecond: rate, Units: per}, nil
}

// scaleRows turns per-call units and rates into each family's busiest
// key: a session's families get the mean session's share of the rate (1 /
// Sessions), an account's the largest account's (LargestAccount /
// Sessions), a due index's shard 1 / shards of it times skew (the busiest
// shard's share over the mean's).
func scaleRows(ops []Op, t Target, shards int, skew float64) []Row {
	share := func(f Family) (float64, string) {
		sessions := float64(t.Sessions) * t.Scale
		switch f {
		case FamSlotCounter, FamUsageDay, FamAccountPartition, FamOwnerIndex, FamOwnerStateIndex, FamAPIKey:
			return float64(t.LargestAccount) / float64(t.Sessions), "account"
		case FamIdleShard, FamLeaseShard, FamPausedShard, FamCheckpointLeaseShard:
			return skew / float64(shards), fmt.Sprintf("shard of %d", shards)
		case FamOther, FamIdleTemplate:
			return 1, "all together"
		case FamIdleAccount:
			return float64(t.LargestAccount) / float64(t.Sessions), "account"
		case FamGovernorBucket:
			return 1 / float64(t.GovernorShards), fmt.Sprintf("shard of %d (per provider)", t.GovernorShards)
		}
		return 1 / sessions, "session"
	}
	rows := map[Family]*Row{}
	for _, op := range ops {
		for f, u := range op.Units {
			s, keyed := share(f)
			r := rows[f]
			if r == nil {
				r = &Row{Family: f, Keyed: keyed}
				rows[f] = r
			}
			r.WCU += op.PerSecond * s * u.Write
			r.RCU += op.PerSecond * s * u.Read
		}
	}
	var out []Row
	for _, r := range rows {
		r.Use = max(r.WCU/PartitionWCU, r.RCU/PartitionRCU)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		if a.Use != b.Use {
			if a.Use > b.Use {
				return -1
			}
			return 1
		}
		return strings.Compare(string(a.Family), string(b.Family))
	})
	return out
}

// Markdown renders the result: the target, each family against the
// limits, and the operations' measured costs.
func (r Result) Markdown(limit float64) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	t := r.Target
	w("Target (× %g): %s running sessions, a heartbeat every %s (%.0f %% on the client channel), %s pauses and %s resumes "+
		"and %s creates per 5 min (%.0f %% of the pauses recording a checkpoint, checkpoint_on_pause), %s channel connections "+
		"opened and closed per 5 min, %s returns per 5 min, the learned idle policy on %.0f %% of the sessions (its "+
		"adoption share, -learned-share), %s sessions on the largest account; "+
		"due indexes in %d shards; the fleet's provider governor lets %s provider calls a second through, at %.2f bucket "+
		"updates a call, over %d bucket items per provider.\n\n",
		t.Scale, numfmt.Thousands(t.Sessions), t.HeartbeatEvery, t.ChannelShare*100, numfmt.Thousands(t.PausesPer5Min),
		numfmt.Thousands(t.ResumesPer5Min), numfmt.Thousands(t.CreatesPer5Min), t.PauseCheckpointShare*100, numfmt.Thousands(t.ConnectsPer5Min),
		numfmt.Thousands(t.ReturnsPer5Min), t.LearnedShare*100, numfmt.Thousands(t.LargestAccount), r.Shards, numfmt.Thousands(int(math.Round(t.ProviderLimit))), t.GovernorWritesPerCall,
		t.GovernorShards)
	w("| key family | one key is | WCU/s | of 1,000 | RCU/s | of 3,000 | verdict |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		verdict := "ok"
		switch {
		case row.Use > 1:
			verdict = "**over the limit**"
		case row.Use > limit:
			verdict = fmt.Sprintf("**over %.0f %%**", limit*100)
		}
		w("| %s | %s | %.2f | %.1f %% | %.2f | %.1f %% | %s |\n", row.Family, row.Keyed, row.WCU, row.WCU/PartitionWCU*100,
			row.RCU, row.RCU/PartitionRCU*100, verdict)
	}
	if len(r.Rows) > 0 {
		first := r.Rows[0]
		w("\nBusiest: %s at %.1f %% of its limit; it reaches 100 %% at %.1f× this workload.\n", first.Family, first.Use*100, 1/first.Use)
	}
	w("\nMeasured per call (capacity units DynamoDB Local reported, by key family; W = WCU, R = RCU):\n\n")
	w("| operation | calls/s at the target | units per call |\n|---|---:|---|\n")
	for _, op := range r.Ops {
		fams := make([]string, 0, len(op.Units))
		for f := range op.Units {
			fams = append(fams, string(f))
		}
		slices.Sort(fams)
		var parts []string
		for _, f := range fams {
			u := op.Units[Family(f)]
			s := f + ":"
			if u.Write > 0 {
				s += fmt.Sprintf(" %.2f W", u.Write)
			}
			if u.Read > 0 {
				s += fmt.Sprintf(" %.2f R", u.Read)
			}
			parts = append(parts, s)
		}
		w("| %s | %s | %s |\n", op.Name, numfmt.Thousands(int(math.Round(op.PerSecond))), strings.Join(parts, "; "))
	}
	return b.String()
}
