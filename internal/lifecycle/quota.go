package lifecycle

import (
	"context"
	"fmt"
	"strconv"
)

// Running quota (docs/DESIGN.md "Operators": max_running per account, 0 = none).
//
// A session holds one of its account's running slots while it is
// provisioning, running, pausing or resuming: from the moment a sandbox is
// asked for until it is known paused or gone, which is when the provider
// counts it against its own concurrency. Every store keeps, per account, a
// counter of held slots and moves it in the same atomic write as the session
// (DynamoDB: one TransactWriteItems of the session put and the counter
// update; memstore: under its lock), so a crash between the two cannot
// happen and every path out of running (pause, expiry, kill, a failed
// create or resume, a webhook, the sweep) releases its slot by the mere fact
// of committing its transition (Store.UpdateSession). Only a write that
// takes a slot with Session.RunningLimit set is refused when the account
// already holds that many (CodeQuotaExceeded); writes that record what the
// provider did (a resumed webhook, a reconcile) take their slot
// unconditionally, since the sandbox is running whatever the limit says.

// HoldsRunningSlot reports whether a session in state st counts against its
// account's running quota: provisioning, running, pausing, resuming and
// restoring.
func (st State) HoldsRunningSlot() bool {
	switch st {
	case StateProvisioning, StateRunning, StatePausing, StateResuming, StateRestoring:
		return true
	}
	return false
}

// RunningSlotDelta returns how a write from state from ("" for a create) to
// state to moves its account's slot counter: +1 (takes a slot), -1
// (releases one) or 0.
func RunningSlotDelta(from, to State) int {
	switch a, b := from != "" && from.HoldsRunningSlot(), to.HoldsRunningSlot(); {
	case !a && b:
		return 1
	case a && !b:
		return -1
	}
	return 0
}

// ErrQuotaExceeded is the error a store returns when a write would take a
// running slot beyond limit (CodeQuotaExceeded, HTTP 429).
func ErrQuotaExceeded(accountID string, limit int) error {
	return &Error{Code: CodeQuotaExceeded, Type: TypeQuotaExceeded,
		Message: quotaSentence(accountID, limit)}
}

func quotaSentence(accountID string, limit int) string {
	word := "sandboxes"
	if limit == 1 {
		word = "sandbox"
	}
	return "account " + accountID + " already has " + strconv.Itoa(limit) + " running " + word +
		", its max_running limit; pause or delete one, or wait for one to pause, before starting another"
}

// SlotCounter is implemented by stores that can read an account's running
// slot counter (internal/dynamo, internal/lifecycle/memstore). It is separate from
// Store so that wrappers of a Store need not forward it.
type SlotCounter interface {
	// RunningSlots returns how many running slots accountID holds (the
	// counter CreateSession and UpdateSession keep; 0 when none).
	RunningSlots(ctx context.Context, accountID string) (int, error)
}

// RunningSlots returns how many running slots accountID holds now, as its
// store counts them (see HoldsRunningSlot). Errors: internal when the
// store keeps no counter it can read (not a SlotCounter), the store's.
func (s *Service) RunningSlots(ctx context.Context, accountID string) (int, error) {
	c, ok := s.cfg.Store.(SlotCounter)
	if !ok {
		return 0, fmt.Errorf("running slots of account %s: the store %T cannot count them", accountID, s.cfg.Store)
	}
	return c.RunningSlots(ctx, accountID)
}

// MaxRunning returns the per-account running limit applied (0: none).
func (s *Service) MaxRunning() int { return s.cfg.MaxRunning }

// Per-key override (APIKey.MaxRunning). The running-slot counter is per
// account, so an override cannot give a key slots of its own: it is the
// account's limit for the creates and resumes made with that key. A key
// with max_running 2 cannot start a sandbox while its account holds 2 or
// more, whoever started them; a key with 20 on a deployment limit of 10
// may take its account up to 20. The HTTP edge puts the authenticating
// key's override on the request's context (WithMaxRunning). An override
// needs the counter, which a deployment keeps only with a limit of its own
// (Config.MaxRunning > 0; internal/app keeps none without one): with no
// deployment limit, overrides are ignored. A resume made with a client
// token (no key) uses the deployment's limit.

type maxRunningKey struct{}

// WithMaxRunning returns ctx carrying a running limit n that overrides
// Config.MaxRunning for the creates and resumes made with ctx; n <= 0
// returns ctx unchanged.
func WithMaxRunning(ctx context.Context, n int) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, maxRunningKey{}, n)
}

// maxRunning returns the running limit of a create or resume made with ctx:
// its override (WithMaxRunning), when the deployment keeps a counter,
// else Config.MaxRunning.
func (s *Service) maxRunning(ctx context.Context) int {
	if n, ok := ctx.Value(maxRunningKey{}).(int); ok && s.cfg.MaxRunning > 0 {
		return n
	}
	return s.cfg.MaxRunning
}
