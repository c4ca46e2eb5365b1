package lifecycle

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Service is Sandman's lifecycle logic: every API operation, the sweep's
// operations (pause when due, reconcile, reap, retire dormant sessions) and
// the webhook rules. It talks to the world only through Store and Provider,
// so it runs the same in Lambda, in the local stack and in tests. Every state
// change is a conditional write through Store.UpdateSession; the committed
// session item is the record of the transition, and the table's stream
// publishes its Event (internal/outbox, docs/DESIGN.md "Events out"), never the
// request. Build it with NewService; its configuration is fixed from then on.
type Service struct {
	cfg Config
	// providers holds every configured provider by Name, the default
	// (Config.Provider) included; names lists them, the default first.
	// With Config.Metrics set, each is wrapped to count its failures, and
	// def is the default's wrapper (Config.Provider itself otherwise).
	providers map[string]Provider
	names     []string
	def       Provider
	// filling serialises FillPools within a process; refillAgain asks the
	// fill under way for one more round (a claim during a fill).
	filling     sync.Mutex
	refillAgain atomic.Bool
}

// Config is what a Service is built from (NewService). Store and Provider
// are required; every other zero field means the default named on it, filled
// in once by NewService.
type Config struct {
	Store Store
	// Provider is the default provider: new sessions that name none are
	// created on it (docs/DESIGN.md "Providers": otherwise the deployment's
	// default).
	Provider Provider
	// Providers are the other providers a create may name ("provider" of
	// POST /v1/sessions), each by its Name; the default need not be
	// repeated. A session keeps its provider for life (Session.Provider):
	// every operation on it goes to the provider of that name.
	Providers []Provider
	Clock     Clock        // default SystemClock
	Policy    Policy       // the zero Policy means DefaultPolicy()
	Log       *slog.Logger // default slog.Default()

	// CallTimeout bounds each provider call (default DefaultCallTimeout).
	CallTimeout time.Duration
	// ProbeTimeout bounds reconnect's live probe (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// ResumeAttempts is how many times resume asks the provider (default 2),
	// waiting ResumeBackoff (default 1 s, doubled each time) in between.
	ResumeAttempts int
	ResumeBackoff  time.Duration
	// Deployment names this Sandman deployment (default: none). It is set as
	// provider metadata (MetadataDeployment) on every sandbox created, and
	// the sweep only lists and reaps sandboxes that carry it, so deployments
	// sharing one provider account leave each other's sandboxes alone.
	Deployment string
	// ConfirmGoneDelay is how long to wait before asking the provider a
	// second time about a sandbox it reported gone (default 2 s).
	ConfirmGoneDelay time.Duration
	// RetryAfter is sent with 503s when the provider gave no hint (default 5 s).
	RetryAfter time.Duration
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24 h).
	IdempotencyTTL time.Duration
	// WebhookDedupeTTL is how long a webhook event id is remembered (default 7 days).
	WebhookDedupeTTL time.Duration
	// Sleep waits d or until ctx ends; tests replace it (default: Sleep, a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxRunning is the most sessions an account may hold in a running
	// slot (provisioning, running, pausing, resuming) at once; a create or
	// resume beyond it answers quota_exceeded (429). 0 means no limit
	// (docs/DESIGN.md "Operators"; quota.go).
	MaxRunning int
	// Prices are the per-provider prices of usage estimates (Usage); a
	// provider they do not name costs nothing. internal/app gives each
	// provider adapter's price (registry.Adapter.Price) under
	// SANDMAN_PRICES.
	Prices map[string]Price
	// NewID returns a new session id (default NewSessionID).
	NewID func() string
	// Timers arms pause timers (docs/DESIGN.md "Precise pausing"); nil arms none
	// and leaves pausing to the sweep.
	Timers Timers
	// TimerHorizon: a committed running session whose pause deadline falls
	// before now + TimerHorizon arms its timer at once (default
	// DefaultTimerHorizon; set it to the sweep interval plus a margin).
	TimerHorizon time.Duration
	// TemplateApps gives templates a default app spec (docs/READINESS.md
	// "Configuration", SANDMAN_TEMPLATE_APPS): a create of that template
	// without an app gets it, and one with an app has its fields merged
	// over it (ResolveApp).
	TemplateApps map[string]*AppSpec
	// ReadinessJobs queues readiness jobs (BringUp) after every commit that
	// makes a session with an app running; nil queues none (the session
	// stays starting).
	ReadinessJobs ReadinessJobs
	// ResumeJobs queues the jobs that finish a resume an open of the
	// stable link or a return handed off (FinishResume), in a queue of
	// their own so that a user coming back never waits behind other
	// sessions' slow app bring-ups (docs/READINESS.md "Where it runs").
	// nil: those jobs go to ReadinessJobs, whose BringUp finishes a handed
	// off resume too.
	ResumeJobs ReadinessJobs
	// CheckpointJobs queues checkpoint saves, restores, forks and deletes
	// (RunCheckpointJob; docs/CHECKPOINTS.md "Jobs"); nil: checkpoint
	// routes answer unavailable.
	CheckpointJobs CheckpointJobs
	// Archives keeps Sandman's own copies of workspaces, the checkpoints of
	// kind archive (internal/archive adapts its stores: a folder under
	// .sandman/ locally, S3 in AWS); nil: this process neither writes nor
	// deletes archives (a delete is handed to a checkpoint job), and keeps
	// none unless ArchivesKept says the deployment does.
	Archives Archives
	// ArchivesKept says the deployment keeps archives though this process
	// has no Archives: its checkpoint jobs, run elsewhere, save them (in
	// AWS the checkpoint function alone may write the archive bucket).
	// A new checkpoint's kind is chosen with it (checkpointKind), so a
	// paused session on a provider without paused snapshots gets an
	// archive wherever its checkpoint is asked for. Archives set implies it.
	ArchivesKept bool
	// ArchiveReader opens archives where this process may read but not
	// write them (in AWS the sweep, which finishes a lost session's
	// restore itself: GetObject only); nil: Archives opens them.
	ArchiveReader ArchiveReader
	// ArchiveWorkspace is the folder an archive keeps, and what it leaves
	// out, for a template ArchiveWorkspaces does not name (default: Dir
	// DefaultWorkspaceDir, no excludes; the local stack archives the whole
	// sandbox folder with internal/archive's default excludes).
	ArchiveWorkspace  Workspace
	ArchiveWorkspaces map[string]Workspace
	// ArchiveRetention is how long an archive is kept (the bucket's
	// expiry rule); 0: until deleted. A checkpoint of kind archive expires
	// then.
	ArchiveRetention time.Duration
	// Tiers are the deployment's retention tiers (tiers.go): what a
	// session's create leaves unset. PausedRetention is how long each
	// provider (by name) keeps a paused sandbox by itself
	// (registry.Adapter.PausedRetention; 0 or absent: as long as Sandman
	// wants): a session archives DefaultArchiveAfter of it by default.
	Tiers           Tiers
	PausedRetention map[string]time.Duration
	// CheckpointOnPause, CheckpointEvery and CheckpointsKeep are the
	// deployment's defaults of the per-session checkpoint options
	// (CheckpointOptions): off, off, and DefaultCheckpointsKeep.
	CheckpointOnPause bool
	CheckpointEvery   time.Duration
	CheckpointsKeep   int
	// CheckpointWait bounds how long a save job waits for a provider
	// snapshot that is still saving before it hands the checkpoint back to
	// its queue (default 2 min); CheckpointPoll is the wait between two
	// looks (default 1 s).
	CheckpointWait time.Duration
	CheckpointPoll time.Duration
	// ReadyHTTP makes the readiness probes (default: a client that follows
	// no redirects: a redirect is an answer).
	ReadyHTTP *http.Client
	// ReadyProbeTimeout bounds one readiness probe (default
	// DefaultReadyProbeTimeout).
	ReadyProbeTimeout time.Duration
	// ReadyBackoff is the first wait between readiness probes (default
	// 100 ms), doubled up to ReadyBackoffMax (default 250 ms: a server
	// that comes up is seen within a quarter second; the probes are GETs of
	// one preview).
	ReadyBackoff    time.Duration
	ReadyBackoffMax time.Duration
	// ReadyPollInterval is how often WaitReady re-reads the session
	// (default 200 ms).
	ReadyPollInterval time.Duration
	// Metrics receives pauses by reason, resumes, provider errors by kind
	// and pause lag (metrics.go); nil keeps none.
	Metrics Metrics
	// Pools are the warm pools (docs/POOLS.md, SANDMAN_POOLS; ParsePools):
	// a create matching one takes a spare, and FillPools keeps each at its
	// size. Pools need a Store that is a PoolStore; nil: none.
	Pools []Pool
	// PoolFillConcurrency bounds how many spares FillPools makes at once
	// (default DefaultPoolFillConcurrency).
	PoolFillConcurrency int
	// PoolRefills asks for a refill of a pool after each claim of one of
	// its spares (docs/POOLS.md "Refill"): in AWS a FIFO SQS queue
	// (internal/sweep/sqsrefill) whose messages run FillPool. It wins over
	// RefillAfterClaim. nil: none.
	PoolRefills PoolRefills
	// RefillAfterClaim: a claim starts a refill in the background at once
	// (the local stack, a long-lived process; default false). A Lambda
	// function is frozen after its answer, so in AWS PoolRefills hands the
	// refill to another invocation instead.
	RefillAfterClaim bool
	// IdlePolicy is the deployment's idle policy for creates that name
	// none (SANDMAN_IDLE_POLICY; default fixed): learned opts every such
	// session in to the learned idle policy (learnedservice.go).
	IdlePolicy IdlePolicy
	// Learned is the learned idle policy's settings (zero:
	// DefaultLearnedPolicy()); IdleUserField the session metadata field
	// that names its user (SANDMAN_IDLE_USER_FIELD; "" keys histograms by
	// account and template only).
	Learned       LearnedPolicy
	IdleUserField string
	// IdleHistograms keeps the learned idle policy's histograms (the
	// table's store, internal/dynamo or memstore); nil: Store, when it is
	// an IdleHistogramStore, else none (every histogram thin).
	IdleHistograms IdleHistogramStore
	// Background is the context background work runs under (the refills
	// after claims); the local stack passes its own, so a stop ends them
	// (default context.Background()).
	Background context.Context
}

// Defaults of Config and of the callers that bound provider calls.
const (
	DefaultCallTimeout      = 30 * time.Second
	DefaultProbeTimeout     = 15 * time.Second
	defaultResumeAttempts   = 2
	defaultResumeBackoff    = time.Second
	defaultConfirmGoneDelay = 2 * time.Second
	defaultRetryAfter       = 5 * time.Second
	defaultIdempotencyTTL   = 24 * time.Hour
	defaultWebhookDedupeTTL = 7 * 24 * time.Hour
	defaultCheckpointWait   = 2 * time.Minute
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Policy == (Policy{}) {
		c.Policy = DefaultPolicy()
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	c.CallTimeout = orDefault(c.CallTimeout, DefaultCallTimeout)
	c.ProbeTimeout = orDefault(c.ProbeTimeout, DefaultProbeTimeout)
	if c.ResumeAttempts <= 0 {
		c.ResumeAttempts = defaultResumeAttempts
	}
	c.ResumeBackoff = orDefault(c.ResumeBackoff, defaultResumeBackoff)
	c.ConfirmGoneDelay = orDefault(c.ConfirmGoneDelay, defaultConfirmGoneDelay)
	c.RetryAfter = orDefault(c.RetryAfter, defaultRetryAfter)
	c.IdempotencyTTL = orDefault(c.IdempotencyTTL, defaultIdempotencyTTL)
	c.WebhookDedupeTTL = orDefault(c.WebhookDedupeTTL, defaultWebhookDedupeTTL)
	if c.Sleep == nil {
		c.Sleep = Sleep
	}
	if c.NewID == nil {
		c.NewID = NewSessionID
	}
	c.TimerHorizon = orDefault(c.TimerHorizon, DefaultTimerHorizon)
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
	if c.ReadyHTTP == nil {
		c.ReadyHTTP = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	c.ReadyProbeTimeout = orDefault(c.ReadyProbeTimeout, DefaultReadyProbeTimeout)
	c.ReadyBackoff = orDefault(c.ReadyBackoff, defaultReadyBackoffMin)
	c.ReadyBackoffMax = orDefault(c.ReadyBackoffMax, defaultReadyBackoffMax)
	c.ReadyPollInterval = orDefault(c.ReadyPollInterval, 200*time.Millisecond)
	if c.Background == nil {
		c.Background = context.Background()
	}
	if c.Learned == (LearnedPolicy{}) {
		c.Learned = DefaultLearnedPolicy()
	}
	if c.PoolFillConcurrency <= 0 {
		c.PoolFillConcurrency = DefaultPoolFillConcurrency
	}
	if c.ArchiveWorkspace.Dir == "" {
		c.ArchiveWorkspace.Dir = DefaultWorkspaceDir
	}
	if c.CheckpointsKeep <= 0 {
		c.CheckpointsKeep = DefaultCheckpointsKeep
	}
	c.CheckpointWait = orDefault(c.CheckpointWait, defaultCheckpointWait)
	c.CheckpointPoll = orDefault(c.CheckpointPoll, time.Second)
	return c
}

// maxConflictRetries bounds how often an operation re-reads a session after
// losing a race before it reports the conflict.
const maxConflictRetries = 3

// Metadata limits (ours): enough for labels, small enough for an item.
const (
	maxMetadataKeys     = 32
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
	maxTemplateLen      = 128
	maxIdempotencyKey   = 255
)

// NewService returns a Service built from cfg with the defaults of Config
// filled in. cfg.Store and cfg.Provider are required. Of two providers with
// one name in cfg.Providers, the first is kept; the default always wins.
func NewService(cfg Config) *Service {
	s := &Service{cfg: cfg.withDefaults(), providers: make(map[string]Provider, 1+len(cfg.Providers)), def: cfg.Provider}
	for i, p := range append([]Provider{cfg.Provider}, cfg.Providers...) {
		if p == nil {
			continue
		}
		if _, dup := s.providers[p.Name()]; dup {
			continue
		}
		if _, none := cfg.Metrics.(noMetrics); cfg.Metrics != nil && !none {
			p = measure(p, cfg.Metrics)
		}
		if i == 0 {
			s.def = p
		}
		s.providers[p.Name()] = p
		s.names = append(s.names, p.Name())
	}
	slices.Sort(s.names[min(1, len(s.names)):]) // the default first, then by name
	return s
}

// Config returns the configuration in use, defaults filled in. Tests build a
// variant of a service from it.
func (s *Service) Config() Config { return s.cfg }

// Policy returns the timers the service applies.
func (s *Service) Policy() Policy { return s.cfg.Policy }

// Now returns the service clock's time in UTC: the time its rules use.
func (s *Service) Now() time.Time { return s.now() }

// Deployment returns the deployment name sandboxes are tagged with ("" for
// none).
func (s *Service) Deployment() string { return s.cfg.Deployment }

// ProviderName returns the name of the default provider: the one new
// sessions that name none are created on.
func (s *Service) ProviderName() string { return s.cfg.Provider.Name() }

// ProviderNames returns the name of every configured provider, the default
// first and the others sorted. The sweep lists each one's sandboxes.
func (s *Service) ProviderNames() []string { return slices.Clone(s.names) }

// providerFor returns the provider named name ("" names the default). A
// name this service was not configured with (a session created by a
// deployment that had it) gets a provider whose every call fails with an
// error saying so: a 500 at the edge, logged, never a call to the wrong
// provider.
func (s *Service) providerFor(name string) Provider {
	if name == "" {
		return s.def
	}
	if p, ok := s.providers[name]; ok {
		return p
	}
	return unconfiguredProvider{name: name}
}

// provider returns the provider of sess's sandbox, its calls made for
// sess's account (WithCallAccount: the fleet's provider governor gives each
// account its fair share).
func (s *Service) provider(sess *Session) Provider {
	return forAccount(s.providerFor(sess.Provider), sess.AccountID)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC() }

func (s *Service) log() *slog.Logger { return s.cfg.Log }

func (s *Service) sleep(ctx context.Context, d time.Duration) error { return s.cfg.Sleep(ctx, d) }

// NewSessionID returns "ses_" followed by 26 characters of crypto/rand.Text
// (base32, 130 random bits), lowercased.
func NewSessionID() string {
	return "ses_" + strings.ToLower(rand.Text())
}

// commit writes sess, conditional on it still having state from and its
// current version, with ctx's actor (ActorOf), and logs the transition when
// the state changed. It publishes nothing: the committed item is the outbox
// record.
func (s *Service) commit(ctx context.Context, sess *Session, from State, guard Guard) error {
	sess.Actor = ActorOf(ctx)
	if err := s.cfg.Store.UpdateSession(ctx, sess, from, guard); err != nil {
		return err
	}
	if sess.State != from {
		s.logTransition(ctx, NewEvent(sess, from))
		s.countTransition(from, sess)
	}
	s.armIfSoon(ctx, sess)
	s.enqueueReadiness(ctx, sess, from)
	return nil
}

// logTransition logs a committed transition; its event is published by the
// table's stream consumer (internal/outbox), with the same event_id.
func (s *Service) logTransition(ctx context.Context, ev Event) {
	s.log().InfoContext(ctx, "session transition", "session_id", ev.SessionID, "account_id", ev.AccountID,
		"from", ev.From, "to", ev.To, "version", ev.Version, "reason", ev.Reason, "event_id", ev.EventID)
}

// transition moves sess to state to for reason and commits it.
func (s *Service) transition(ctx context.Context, sess *Session, to State, reason string, guard Guard) error {
	from := sess.State
	if err := sess.Transition(to, reason, s.now(), s.cfg.Policy); err != nil {
		return err
	}
	return s.commit(ctx, sess, from, guard)
}

// owned reads a session and checks that account owns it.
// Errors: not_found, forbidden.
func (s *Service) owned(ctx context.Context, accountID, id string) (*Session, error) {
	sess, err := s.cfg.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if sess.AccountID != accountID {
		return nil, Errorf(CodeForbidden, "session %s belongs to another account", id)
	}
	return sess, nil
}

// maxDeleteRetries bounds how often a delete re-reads after losing a race.
// A delete must win over any transition in flight (docs/DESIGN.md "Session
// states"): a snapshot or resume writes at most twice and then stops, so a
// delete that re-reads wins within a few rounds; the bound only stops a
// delete that loses to an endless stream of writers (it then answers 409).
const maxDeleteRetries = 64

// retryConflicts runs op on a fresh read of the session until it succeeds,
// fails with anything but a conflict, or has lost maxConflictRetries races.
func (s *Service) retryConflicts(ctx context.Context, accountID, id string, op func(*Session) error) (*Session, error) {
	return s.retryConflictsN(ctx, accountID, id, maxConflictRetries, op)
}

// retryConflictsN is retryConflicts with its own bound, attempts races;
// it also stops when ctx is done (returning the last conflict).
func (s *Service) retryConflictsN(ctx context.Context, accountID, id string, attempts int, op func(*Session) error) (*Session, error) {
	var err error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 && ctx.Err() != nil {
			return nil, err
		}
		var sess *Session
		if sess, err = s.owned(ctx, accountID, id); err != nil {
			return nil, err
		}
		if err = op(sess); err == nil || !IsLostRace(err) {
			return sess, err
		}
	}
	return nil, err
}

// errLostRace marks a conflict from the store, as opposed to a conflict the
// rules decided on; only the former is worth a re-read.
type errLostRace struct{ err error }

func (e errLostRace) Error() string { return e.err.Error() }
func (e errLostRace) Unwrap() error { return e.err }

// IsLostRace reports whether err is a conditional write that lost a race
// (another writer changed the session first), as opposed to a conflict the
// rules or the provider decided on. Only a lost race is worth a re-read.
func IsLostRace(err error) bool {
	var lr errLostRace
	return errors.As(err, &lr)
}

// raced wraps a store conflict so retryConflicts re-reads.
func raced(err error) error {
	if IsCode(err, CodeConflict) {
		return errLostRace{err}
	}
	return err
}

// providerError turns a provider failure into the API's error.
func (s *Service) providerError(err error, what string) error {
	switch {
	case errors.Is(err, ErrSandboxGone):
		return &Error{Code: CodeUnavailable, Type: TypeSandboxExpired,
			Message: "the sandbox is gone; the session is now expired", Err: err}
	case errors.Is(err, ErrProviderTransient), errors.Is(err, context.DeadlineExceeded):
		ra := RetryAfter(err)
		if ra <= 0 {
			ra = s.cfg.RetryAfter
		}
		return &Error{Code: CodeUnavailable, Type: TypeSandboxUnreachable, RetryAfter: ra,
			Message: fmt.Sprintf("the sandbox provider did not answer while trying to %s; retry later", what), Err: err}
	case errors.Is(err, ErrSandboxConflict):
		return &Error{Code: CodeConflict, Message: fmt.Sprintf("the provider cannot %s this sandbox right now", what), Err: err}
	}
	var ae *Error
	if errors.As(err, &ae) {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
