package reliability

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// ErrCrashed is the cause of every failure a dead process sees.
var ErrCrashed = errors.New("the process crashed")

// StepWrite is Step.Op of a session write; StepCheckpointWrite of a
// checkpoint write (create, update or delete).
const (
	StepWrite           = "write"
	StepCheckpointWrite = "checkpoint_write"
)

// Step is a point of an operation at which a Crasher may kill its process:
// a session write (Op StepWrite; From is "" for a create) or a provider
// call (Op is the call: "create", "get", "list", "pause", "resume",
// "set_timeout", "probe", "kill").
type Step struct {
	Op        string
	From, To  lifecycle.State // writes only
	SessionID string          // writes only
	SandboxID string          // calls only; "" for create and list
	// CheckpointID and Checkpoint are a checkpoint write's: the
	// checkpoint and the state it writes ("" for a delete).
	CheckpointID string
	Checkpoint   lifecycle.CheckpointState
}

// Crasher models one process (a Lambda invocation) that dies at a chosen
// step. Give the service under test the store and provider returned by
// Store and Provider: the first step for which At returns true fails, and so
// does every store and provider call after it, changing nothing. That is a
// crash as the outside world sees it: the work done before the step
// happened, nothing after it did (no rollback, no cleanup, no log). Build
// a fresh Crasher per process. It is safe for concurrent use.
type Crasher struct {
	// At reports whether the process dies at step s (before it happens).
	At func(s Step) bool

	mu   sync.Mutex
	dead bool
	at   Step
}

// Dead reports whether the process died, and at which step.
func (c *Crasher) Dead() (Step, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at, c.dead
}

// step decides whether step s may happen: it returns ErrCrashed when the
// process is dead or dies now.
func (c *Crasher) step(s Step) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return ErrCrashed
	}
	if c.At != nil && c.At(s) {
		c.dead, c.at = true, s
		return ErrCrashed
	}
	return nil
}

// alive returns ErrCrashed once the process is dead.
func (c *Crasher) alive() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return ErrCrashed
	}
	return nil
}

// Store returns store as the process sees it. A store that keeps warm
// pools (lifecycle.PoolStore) stays one: a claim is a session write step
// (From "", To the claimed session's state), the other pool calls fail
// once the process is dead.
func (c *Crasher) Store(store lifecycle.Store) lifecycle.Store {
	cs := &crashStore{store, lifecycle.CheckpointsOf(store), c}
	if ps, ok := store.(lifecycle.PoolStore); ok {
		return &crashPoolStore{crashStore: cs, ps: ps}
	}
	return cs
}

// Provider returns provider as the process sees it. Its calls fail with a
// transient *lifecycle.ProviderError wrapping ErrCrashed, as a call cut off
// by the end of an invocation would. A provider with snapshots
// (lifecycle.Snapshotter) stays one: each of its calls is a step
// ("snapshot", "get_snapshot", "list_snapshots", "delete_snapshot",
// "create_from_snapshot"), and one with files too stays one ("write_file",
// "read_file").
func (c *Crasher) Provider(p lifecycle.Provider) lifecycle.Provider {
	cp := &crashProvider{p, c}
	if sn, ok := p.(lifecycle.Snapshotter); ok {
		cs := &crashSnapshotter{crashProvider: cp, sn: sn}
		if f, ok := p.(lifecycle.Files); ok {
			return &crashFiles{crashSnapshotter: cs, f: f}
		}
		return cs
	}
	return cp
}

type crashStore struct {
	s  lifecycle.Store
	cs lifecycle.CheckpointStore
	c  *Crasher
}

var _ lifecycle.Store = (*crashStore)(nil)

func (s *crashStore) CreateSession(ctx context.Context, sess *lifecycle.Session) error {
	if err := s.c.step(Step{Op: StepWrite, To: sess.State, SessionID: sess.ID}); err != nil {
		return err
	}
	return s.s.CreateSession(ctx, sess)
}

func (s *crashStore) GetSession(ctx context.Context, id string) (*lifecycle.Session, error) {
	if err := s.c.alive(); err != nil {
		return nil, err
	}
	return s.s.GetSession(ctx, id)
}

func (s *crashStore) ListSessions(ctx context.Context, accountID, cursor string, limit int) (lifecycle.SessionPage, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.SessionPage{}, err
	}
	return s.s.ListSessions(ctx, accountID, cursor, limit)
}

func (s *crashStore) FindBySandbox(ctx context.Context, provider, sandboxID string) (*lifecycle.Session, error) {
	if err := s.c.alive(); err != nil {
		return nil, err
	}
	return s.s.FindBySandbox(ctx, provider, sandboxID)
}

func (s *crashStore) UpdateSession(ctx context.Context, sess *lifecycle.Session, from lifecycle.State, guard lifecycle.Guard) error {
	if err := s.c.step(Step{Op: StepWrite, From: from, To: sess.State, SessionID: sess.ID}); err != nil {
		return err
	}
	return s.s.UpdateSession(ctx, sess, from, guard)
}

func (s *crashStore) FindDue(ctx context.Context, q lifecycle.DueQuery) (lifecycle.SessionPage, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.SessionPage{}, err
	}
	return s.s.FindDue(ctx, q)
}

func (s *crashStore) Claim(ctx context.Context, key, value string, ttl time.Duration, now time.Time) (bool, string, error) {
	if err := s.c.alive(); err != nil {
		return false, "", err
	}
	return s.s.Claim(ctx, key, value, ttl, now)
}

func (s *crashStore) ReleaseClaim(ctx context.Context, key, value string) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.s.ReleaseClaim(ctx, key, value)
}

func (s *crashStore) PutAPIKey(ctx context.Context, k lifecycle.APIKey) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.s.PutAPIKey(ctx, k)
}

func (s *crashStore) GetAPIKey(ctx context.Context, hash string) (lifecycle.APIKey, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.APIKey{}, err
	}
	return s.s.GetAPIKey(ctx, hash)
}

type crashProvider struct {
	p lifecycle.Provider
	c *Crasher
}

var _ lifecycle.Provider = (*crashProvider)(nil)

func (p *crashProvider) call(op, sandboxID string) error {
	if err := p.c.step(Step{Op: op, SandboxID: sandboxID}); err != nil {
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, err)
	}
	return nil
}

func (p *crashProvider) Name() string { return p.p.Name() }

func (p *crashProvider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if err := p.call("create", ""); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return p.p.Create(ctx, req)
}

func (p *crashProvider) Get(ctx context.Context, id string) (lifecycle.Sandbox, error) {
	if err := p.call("get", id); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return p.p.Get(ctx, id)
}

func (p *crashProvider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	if err := p.call("list", ""); err != nil {
		return lifecycle.SandboxPage{}, err
	}
	return p.p.List(ctx, req)
}

func (p *crashProvider) Pause(ctx context.Context, id string) error {
	if err := p.call("pause", id); err != nil {
		return err
	}
	return p.p.Pause(ctx, id)
}

func (p *crashProvider) Resume(ctx context.Context, id string, timeout time.Duration) (lifecycle.Sandbox, error) {
	if err := p.call("resume", id); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return p.p.Resume(ctx, id, timeout)
}

func (p *crashProvider) SetTimeout(ctx context.Context, id string, timeout time.Duration) error {
	if err := p.call("set_timeout", id); err != nil {
		return err
	}
	return p.p.SetTimeout(ctx, id, timeout)
}

func (p *crashProvider) Probe(ctx context.Context, id string) (lifecycle.Probe, error) {
	if err := p.call("probe", id); err != nil {
		return lifecycle.Probe{}, err
	}
	return p.p.Probe(ctx, id)
}

func (p *crashProvider) Kill(ctx context.Context, id string) error {
	if err := p.call("kill", id); err != nil {
		return err
	}
	return p.p.Kill(ctx, id)
}

type crashPoolStore struct {
	*crashStore
	ps lifecycle.PoolStore
}

var _ lifecycle.PoolStore = (*crashPoolStore)(nil)

func (s *crashPoolStore) PutSpare(ctx context.Context, sp *lifecycle.Spare) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.ps.PutSpare(ctx, sp)
}

func (s *crashPoolStore) UpdateSpare(ctx context.Context, sp *lifecycle.Spare, from lifecycle.SpareStatus) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.ps.UpdateSpare(ctx, sp, from)
}

func (s *crashPoolStore) DeleteSpare(ctx context.Context, sp *lifecycle.Spare) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.ps.DeleteSpare(ctx, sp)
}

func (s *crashPoolStore) ListSpares(ctx context.Context, poolID string) ([]*lifecycle.Spare, error) {
	if err := s.c.alive(); err != nil {
		return nil, err
	}
	return s.ps.ListSpares(ctx, poolID)
}

func (s *crashPoolStore) GetSpare(ctx context.Context, poolID, sandboxID string) (*lifecycle.Spare, error) {
	if err := s.c.alive(); err != nil {
		return nil, err
	}
	return s.ps.GetSpare(ctx, poolID, sandboxID)
}

func (s *crashPoolStore) ClaimSpare(ctx context.Context, sp *lifecycle.Spare, sess *lifecycle.Session) error {
	if err := s.c.step(Step{Op: StepWrite, To: sess.State, SessionID: sess.ID}); err != nil {
		return err
	}
	return s.ps.ClaimSpare(ctx, sp, sess)
}

func (s *crashPoolStore) PoolStatus(ctx context.Context, poolID string) (lifecycle.PoolStatus, error) {
	if err := s.c.alive(); err != nil {
		return lifecycle.PoolStatus{}, err
	}
	return s.ps.PoolStatus(ctx, poolID)
}

func (s *crashPoolStore) CountPool(ctx context.Context, poolID string, c lifecycle.PoolCounts) error {
	if err := s.c.alive(); err != nil {
		return err
	}
	return s.ps.CountPool(ctx, poolID, c)
}

func (s *crashPoolStore) SavePoolHealth(ctx context.Context, poolID string, h lifecycle.PoolHealth, version int64) (int64, error) {
	if err := s.c.alive(); err != nil {
		return 0, err
	}
	return s.ps.SavePoolHealth(ctx, poolID, h, version)
}
