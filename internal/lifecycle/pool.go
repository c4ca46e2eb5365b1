package lifecycle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Warm pools (docs/POOLS.md): per (provider, template, app spec) a number of
// spare sandboxes made in advance, so that a create matching the pool takes
// a spare instead of waiting for a cold sandbox and its app. A spare is not
// a session: it belongs to no account, holds no running slot, is in no due
// index and is never listed as a session, until a create claims it and
// becomes its session in one atomic write (PoolStore.ClaimSpare).

// PoolTier says how a pool keeps its spares.
type PoolTier string

// The pool tiers.
const (
	// TierPaused spares are brought to ready once (the app started and
	// answering), then paused: near-zero compute; a claim resumes one.
	TierPaused PoolTier = "paused"
	// TierRunning spares stay running and ready, billed as running: the
	// lowest latency.
	TierRunning PoolTier = "running"
)

// Pool defaults and bounds (ours).
const (
	// DefaultPoolMaxAge is how long a spare is kept before it is replaced
	// when a pool names no max_age_seconds.
	DefaultPoolMaxAge = 24 * time.Hour
	// MaxPoolSize bounds a pool's size: spares are listed from one
	// partition on every claim and every fill.
	MaxPoolSize = 100
	// PoolFailureLimit is how many spares in a row may fail before a pool
	// stops refilling for a backoff.
	PoolFailureLimit = 3
	// DefaultPoolBackoff is the first backoff of a stopped pool, doubled
	// on each further failure up to MaxPoolBackoff.
	DefaultPoolBackoff = time.Minute
	MaxPoolBackoff     = time.Hour
	// DefaultPoolFillConcurrency bounds how many spares one fill makes at
	// once, over all pools.
	DefaultPoolFillConcurrency = 4
	// MetadataPool is the provider metadata key naming the pool a spare
	// was made for; the sweep's reconcile reads it (ReapOrphan).
	MetadataPool = "sandman_pool"
)

// Pool is one configured warm pool (SANDMAN_POOLS). ID is derived from
// Provider, Template and App (PoolID), so a create's request maps to its
// pool.
type Pool struct {
	ID       string
	Provider string
	Template string
	// App is the resolved app spec spares serve (nil: none): the template's
	// default (SANDMAN_TEMPLATE_APPS) with the pool's own fields over it,
	// exactly as a create resolves its app.
	App    *AppSpec
	Size   int
	Tier   PoolTier
	MaxAge time.Duration
}

// PoolID returns the id of the pool of (provider, template, app): "pool_"
// and 16 hex characters of the SHA-256 of their canonical JSON (env sorted
// by name). Two creates resolving to the same provider, template and app
// spec map to the same pool; any difference makes another id.
func PoolID(provider, template string, app *AppSpec) string {
	canon := struct {
		Provider string       `json:"provider"`
		Template string       `json:"template"`
		App      *appIdentity `json:"app"`
	}{provider, template, nil}
	if app != nil {
		canon.App = &appIdentity{Port: app.Port, StartCommand: app.StartCommand, Cwd: app.Cwd, Env: app.Env,
			ReadyPath: app.ReadyPath, ReadyTimeoutMS: app.ReadyTimeout.Milliseconds()}
	}
	b, _ := json.Marshal(canon) // encoding/json sorts map keys
	sum := sha256.Sum256(b)
	return "pool_" + hex.EncodeToString(sum[:8])
}

type appIdentity struct {
	Port           int               `json:"port"`
	StartCommand   string            `json:"start_command"`
	Cwd            string            `json:"cwd"`
	Env            map[string]string `json:"env"`
	ReadyPath      string            `json:"ready_path"`
	ReadyTimeoutMS int64             `json:"ready_timeout_ms"`
}

// poolJSON is one pool of SANDMAN_POOLS.
type poolJSON struct {
	Provider      string   `json:"provider"`
	Template      string   `json:"template"`
	App           *appJSON `json:"app"`
	Size          *int     `json:"size"`
	Tier          string   `json:"tier"`
	MaxAgeSeconds *int64   `json:"max_age_seconds"`
}

// appJSON is the app spec of POST /v1/sessions as JSON.
type appJSON struct {
	Port                *int              `json:"port"`
	StartCommand        *string           `json:"start_command"`
	Cwd                 *string           `json:"cwd"`
	Env                 map[string]string `json:"env"`
	ReadyPath           *string           `json:"ready_path"`
	ReadyTimeoutSeconds *int64            `json:"ready_timeout_seconds"`
}

// PoolOptions is what ParsePools checks pools against.
type PoolOptions struct {
	// DefaultProvider is the provider of a pool that names none.
	DefaultProvider string
	// Providers are the enabled providers; a pool naming another is refused.
	Providers []string
	// TemplateApps are the templates' default app specs
	// (SANDMAN_TEMPLATE_APPS), resolved under each pool's app as a create's.
	TemplateApps map[string]*AppSpec
}

// ParsePools reads SANDMAN_POOLS: a JSON array of
// {"provider","template","app","size","tier","max_age_seconds"}. provider
// defaults to opts.DefaultProvider; template is required; app is the app
// spec of POST /v1/sessions (validated the same way, over the template's
// default); size 0..MaxPoolSize is required; tier is "paused" or "running"
// (default "paused"); max_age_seconds 60..2592000 (default 86400). Two
// pools with one id (same provider, template and resolved app) are refused.
// "" and "[]" mean no pools. Errors name the pool by index and the field.
func ParsePools(raw string, opts PoolOptions) ([]Pool, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var in []poolJSON
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf(`want a JSON array such as [{"provider":"local","template":"web","app":{"port":3000,"start_command":"npm run dev"},"size":2,"tier":"paused"}]: %w`, err)
	}
	pools := make([]Pool, 0, len(in))
	seen := map[string]int{}
	for i, p := range in {
		pool, err := p.pool(opts)
		if err != nil {
			return nil, fmt.Errorf("pool %d: %w", i, err)
		}
		if j, dup := seen[pool.ID]; dup {
			return nil, fmt.Errorf("pool %d: same provider, template and app as pool %d", i, j)
		}
		seen[pool.ID] = i
		pools = append(pools, pool)
	}
	return pools, nil
}

func (p poolJSON) pool(opts PoolOptions) (Pool, error) {
	provider := p.Provider
	if provider == "" {
		provider = opts.DefaultProvider
	}
	known := false
	for _, name := range opts.Providers {
		known = known || name == provider
	}
	if !known {
		return Pool{}, fmt.Errorf("provider %q is not enabled (enabled: %s)", provider, strings.Join(opts.Providers, ", "))
	}
	if p.Template == "" || len(p.Template) > maxTemplateLen {
		return Pool{}, fmt.Errorf("template is required (at most %d characters)", maxTemplateLen)
	}
	var in *AppInput
	if p.App != nil {
		in = &AppInput{Port: p.App.Port, StartCommand: p.App.StartCommand, Cwd: p.App.Cwd, Env: p.App.Env,
			ReadyPath: p.App.ReadyPath, ReadyTimeoutSeconds: p.App.ReadyTimeoutSeconds}
	}
	app, err := ResolveApp(opts.TemplateApps[p.Template], in)
	if err != nil {
		return Pool{}, err
	}
	if p.Size == nil || *p.Size < 0 || *p.Size > MaxPoolSize {
		return Pool{}, fmt.Errorf("size is required and must be between 0 and %d", MaxPoolSize)
	}
	tier := PoolTier(p.Tier)
	switch tier {
	case "":
		tier = TierPaused
	case TierPaused, TierRunning:
	default:
		return Pool{}, fmt.Errorf("tier %q: want paused or running", p.Tier)
	}
	age := DefaultPoolMaxAge
	if p.MaxAgeSeconds != nil {
		if *p.MaxAgeSeconds < 60 || *p.MaxAgeSeconds > 30*24*3600 {
			return Pool{}, fmt.Errorf("max_age_seconds must be between 60 and %d", 30*24*3600)
		}
		age = time.Duration(*p.MaxAgeSeconds) * time.Second
	}
	return Pool{ID: PoolID(provider, p.Template, app), Provider: provider, Template: p.Template, App: app,
		Size: *p.Size, Tier: tier, MaxAge: age}, nil
}

// SpareStatus is where a spare is in its life.
type SpareStatus string

// The spare statuses. A spare that failed is killed and deleted at once
// (PoolStatus counts it); one claimed leaves a claimed marker behind for a
// while, so the sweep's reconcile can tell its sandbox from an orphan while
// the table's sandbox index catches up with its new session.
const (
	SpareMaking  SpareStatus = "making"  // created; its app is being brought up
	SpareReady   SpareStatus = "ready"   // its app answered; paused for TierPaused
	SpareClaimed SpareStatus = "claimed" // a session took it (SessionID)
)

// ClaimedMarkerTTL is how long a claimed marker is kept (the store expires it).
const ClaimedMarkerTTL = time.Hour

// Spare is one spare sandbox of a pool, stored in the sessions table as its
// own item (never a session item). Times are UTC.
type Spare struct {
	PoolID    string
	SandboxID string // the provider's sandbox id
	Provider  string
	Status    SpareStatus
	Version   int64 // 1 on PutSpare, +1 on every UpdateSpare
	CreatedAt time.Time
	UpdatedAt time.Time
	ReadyAt   time.Time // when its app first answered
	// PreviewURL is the preview of the app port (or the sandbox) as last
	// known; a claim takes the resumed sandbox's fresh one.
	PreviewURL string
	// ExpiresAt is the provider-side timeout of a running spare (TierRunning).
	ExpiresAt time.Time
	// SessionID is the session that claimed it (SpareClaimed only).
	SessionID string
}

// Clone returns a copy of sp.
func (sp *Spare) Clone() *Spare { c := *sp; return &c }

// PoolStatus is a pool's counters and health, one item per pool.
type PoolStatus struct {
	PoolID string
	// Claims counts claim writes tried (a conflict with another create
	// counts too), Hits creates served from the pool, Misses creates that
	// matched the pool but went cold (empty pool, every spare taken, or
	// the claimed spare lost).
	Claims, Hits, Misses int64
	// Lost counts claimed spares whose sandbox was gone at the provider
	// (expired or killed there): their creates went cold (claimFallBack)
	// and count as misses, not hits.
	Lost int64
	// Failed counts spares that failed to become ready, ever.
	Failed int64
	// RunningMS and PausedMS are the milliseconds spares that are gone
	// (claimed, retired, failed) spent running and paused before they were
	// (docs/POOLS.md "Cost"): the deployment's own usage, in no account's.
	RunningMS, PausedMS int64
	PoolHealth
	// Version guards SavePoolHealth (0: no health was ever saved).
	Version int64
}

// PoolHealth is the filler's view of a pool: consecutive failures, the last
// error and, for a stopped pool, when it tries again.
type PoolHealth struct {
	ConsecutiveFailures int
	LastError           string
	LastErrorAt         time.Time
	// BackoffUntil: the pool makes no spare before it (zero: not stopped).
	BackoffUntil time.Time
}

// PoolCounts is an atomic increment of a pool's counters (PoolStore.CountPool);
// a negative field decrements (a lost spare takes back its hit).
type PoolCounts struct{ Claims, Hits, Misses, Lost, Failed, RunningMS, PausedMS int64 }

// spareUsage returns how long sp, a spare of a pool of tier, has run and
// been paused from its creation to end: a paused-tier spare runs until it
// is ready and is paused from then on; a running-tier one (or one not yet
// ready) runs all along.
func spareUsage(sp *Spare, tier PoolTier, end time.Time) (running, paused time.Duration) {
	if end.Before(sp.CreatedAt) {
		return 0, 0
	}
	if tier == TierPaused && !sp.ReadyAt.IsZero() && !end.Before(sp.ReadyAt) {
		return sp.ReadyAt.Sub(sp.CreatedAt), end.Sub(sp.ReadyAt)
	}
	return end.Sub(sp.CreatedAt), 0
}

// spareCounts returns the usage of sp ended at end as counter increments.
func spareCounts(sp *Spare, tier PoolTier, end time.Time) PoolCounts {
	run, paused := spareUsage(sp, tier, end)
	return PoolCounts{RunningMS: run.Milliseconds(), PausedMS: paused.Milliseconds()}
}

// PoolStore is implemented by stores that keep pools (internal/dynamo,
// internal/lifecycle/memstore). It is separate from Store so that wrappers
// of a Store need not forward it; a Service whose store is not one serves
// no pool (every create is cold).
type PoolStore interface {
	// PutSpare writes a new spare (status making or ready) and sets
	// sp.Version to 1. Errors: conflict when it exists.
	PutSpare(ctx context.Context, sp *Spare) error
	// UpdateSpare writes sp if the stored spare still has status from and
	// version sp.Version; sp.Version is then incremented.
	// Errors: conflict (changed meanwhile, claimed), not_found.
	UpdateSpare(ctx context.Context, sp *Spare, from SpareStatus) error
	// DeleteSpare deletes sp if it still has status sp.Status and version
	// sp.Version. Errors: conflict (changed or claimed meanwhile),
	// not_found.
	DeleteSpare(ctx context.Context, sp *Spare) error
	// ListSpares returns a pool's making and ready spares, oldest first,
	// read strongly.
	ListSpares(ctx context.Context, poolID string) ([]*Spare, error)
	// GetSpare reads one spare, a claimed marker included, strongly.
	// Errors: not_found.
	GetSpare(ctx context.Context, poolID, sandboxID string) (*Spare, error)
	// ClaimSpare is one atomic write: the ready spare sp (status ready,
	// version sp.Version) becomes a claimed marker naming sess, and sess is
	// created as CreateSession would (version 1, its running slot taken
	// under sess.RunningLimit). Either both happen or neither.
	// Errors: conflict (the spare was taken or changed, or the session
	// exists), quota_exceeded.
	ClaimSpare(ctx context.Context, sp *Spare, sess *Session) error
	// PoolStatus reads a pool's counters and health (zero values, with
	// PoolID set, for a pool never counted).
	PoolStatus(ctx context.Context, poolID string) (PoolStatus, error)
	// CountPool adds c to a pool's counters atomically.
	CountPool(ctx context.Context, poolID string, c PoolCounts) error
	// SavePoolHealth writes h if the stored health still has version
	// (0: none saved yet) and returns the new version.
	// Errors: conflict when it changed meanwhile.
	SavePoolHealth(ctx context.Context, poolID string, h PoolHealth, version int64) (int64, error)
}

// ValidSpare checks what every PoolStore needs to write sp.
// Errors: invalid naming what is missing.
func ValidSpare(sp *Spare) error {
	switch {
	case sp == nil:
		return Errorf(CodeInvalid, "spare is required")
	case sp.PoolID == "" || sp.SandboxID == "":
		return Errorf(CodeInvalid, "spare needs a pool id and a sandbox id")
	case sp.Status != SpareMaking && sp.Status != SpareReady && sp.Status != SpareClaimed:
		return Errorf(CodeInvalid, "spare %s has unknown status %q", sp.SandboxID, sp.Status)
	}
	return nil
}

// poolStore returns the service's PoolStore, or nil when the store keeps
// no pools or no pool is configured.
func (s *Service) poolStore() PoolStore {
	ps, ok := s.cfg.Store.(PoolStore)
	if !ok || len(s.cfg.Pools) == 0 {
		return nil
	}
	return ps
}

// poolFor returns the configured pool a new session matches (same
// provider, template and resolved app spec), if any.
func (s *Service) poolFor(sess *Session) (Pool, bool) {
	if len(s.cfg.Pools) == 0 {
		return Pool{}, false
	}
	id := PoolID(sess.Provider, sess.Template, sess.App)
	for _, p := range s.cfg.Pools {
		if p.ID == id {
			return p, true
		}
	}
	return Pool{}, false
}

// Pools returns the configured pools, in configuration order.
func (s *Service) Pools() []Pool {
	out := make([]Pool, len(s.cfg.Pools))
	copy(out, s.cfg.Pools)
	return out
}

// PoolView is one pool as GET /v1/pools shows it: its configuration, its
// spares by status, its counters and health, and its usage: the time its
// spares ran and were paused (gone ones and live ones so far) with the
// estimated cost at the provider's price (Config.Prices over DefaultPrices).
type PoolView struct {
	Pool
	Ready, Making int
	Status        PoolStatus
	Usage         UsageTotals
}

// HitRate returns Hits / (Hits + Misses), or 0 before any matching create.
func (v PoolView) HitRate() float64 {
	n := v.Status.Hits + v.Status.Misses
	if n == 0 {
		return 0
	}
	return float64(v.Status.Hits) / float64(n)
}

// PoolViews returns every configured pool with its spares counted and its
// status (docs/POOLS.md "GET /v1/pools"), in configuration order.
// Errors: the store's.
func (s *Service) PoolViews(ctx context.Context) ([]PoolView, error) {
	ps := s.poolStore()
	out := make([]PoolView, 0, len(s.cfg.Pools))
	for _, p := range s.cfg.Pools {
		v := PoolView{Pool: p, Status: PoolStatus{PoolID: p.ID}}
		if ps != nil {
			spares, err := ps.ListSpares(ctx, p.ID)
			if err != nil {
				return nil, fmt.Errorf("list the spares of pool %s: %w", p.ID, err)
			}
			now := s.now()
			row := UsageRow{Provider: p.Provider}
			for _, sp := range spares {
				run, paused := spareUsage(sp, p.Tier, now)
				row.RunningMS += run.Milliseconds()
				row.PausedMS += paused.Milliseconds()
				switch sp.Status {
				case SpareReady:
					v.Ready++
				case SpareMaking:
					v.Making++
				}
			}
			if v.Status, err = ps.PoolStatus(ctx, p.ID); err != nil {
				return nil, fmt.Errorf("read the status of pool %s: %w", p.ID, err)
			}
			row.RunningMS += v.Status.RunningMS
			row.PausedMS += v.Status.PausedMS
			v.Usage = s.totals(row)
		}
		out = append(out, v)
	}
	return out, nil
}
