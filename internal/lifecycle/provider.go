package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SandboxState is what a provider reports for a sandbox that exists.
type SandboxState string

// The provider-side sandbox states. A sandbox that is gone is not a state:
// the provider returns ErrSandboxGone.
const (
	SandboxRunning SandboxState = "running"
	SandboxPaused  SandboxState = "paused"
)

// Sandbox is a provider's view of one sandbox.
type Sandbox struct {
	ID         string
	Template   string
	State      SandboxState
	StartedAt  time.Time
	ExpiresAt  time.Time // running: when the provider-side timeout fires; paused: zero
	PausedAt   time.Time // paused: when it was paused (E2B's endAt); running: zero
	PreviewURL string    // URL of the preview port; may be "" when paused
	Metadata   map[string]string
	// Provider is the name of the provider that holds it, set by
	// Service.ListSandboxes; "" means the service's default provider.
	Provider string
}

// CreateRequest asks a provider for a new sandbox.
type CreateRequest struct {
	Template string
	// Timeout is the provider-side timeout, whole seconds; at it the sandbox
	// pauses (AutoPause) or is killed.
	Timeout   time.Duration
	AutoPause bool
	// Metadata is stored on the sandbox; Sandman adds "sandman_session_id".
	Metadata map[string]string
}

// ListRequest asks for one page of a provider's sandboxes.
type ListRequest struct {
	States    []SandboxState    // empty: running and paused
	Metadata  map[string]string // only sandboxes carrying all of these
	Limit     int               // page size; 0: the provider's default
	PageToken string            // "" for the first page
}

// SandboxPage is one page of List; NextToken is "" on the last page.
type SandboxPage struct {
	Sandboxes []Sandbox
	NextToken string
}

// Probe is the result of a live check of a sandbox.
type Probe struct {
	State SandboxState
	// ExpiresAt is when a running sandbox's provider-side timeout fires.
	ExpiresAt time.Time
}

// Provider is a sandbox backend (E2B, the local process provider, the fake).
// Every method honours ctx's deadline. Errors are classified with the
// sentinels below: a *ProviderError whose Kind is ErrSandboxGone,
// ErrSandboxConflict or ErrProviderTransient; anything else is a
// configuration problem or a bug.
type Provider interface {
	// Name is the provider's name as stored on sessions, e.g. "e2b".
	Name() string
	// Create starts a sandbox. Errors: transient.
	Create(ctx context.Context, req CreateRequest) (Sandbox, error)
	// Get reads a sandbox's state through the provider's control API; it
	// never touches the sandbox itself, so it never wakes a paused one.
	// Errors: gone, transient.
	Get(ctx context.Context, sandboxID string) (Sandbox, error)
	// List returns one page of sandboxes. Errors: transient.
	List(ctx context.Context, req ListRequest) (SandboxPage, error)
	// Pause snapshots a running sandbox; pausing a paused one succeeds.
	// Errors: gone, conflict (being killed), transient.
	Pause(ctx context.Context, sandboxID string) error
	// Resume continues a paused sandbox (or extends a running one) with the
	// given provider-side timeout and returns it with a fresh PreviewURL.
	// Errors: gone, conflict, transient.
	Resume(ctx context.Context, sandboxID string, timeout time.Duration) (Sandbox, error)
	// SetTimeout sets the provider-side timeout to now+timeout (it may
	// shorten it). Errors: gone, transient.
	SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error
	// Probe checks whether the sandbox is alive: a running one is checked
	// live (it answers), a paused one only through the control API so it is
	// not woken. Errors: gone, transient (including "running but does not
	// answer").
	Probe(ctx context.Context, sandboxID string) (Probe, error)
	// Kill deletes the sandbox; killing one that is gone succeeds.
	// Errors: transient.
	Kill(ctx context.Context, sandboxID string) error
}

// TimeoutReporter is implemented by a Provider whose applied timeout may
// differ from the one asked for (E2B silently caps it at the last start +
// the plan's maximum run length: docs/providers/e2b.md). SetTimeoutUntil is
// SetTimeout that returns the expiry the provider really applied; the
// service records that one. Errors: as SetTimeout.
type TimeoutReporter interface {
	SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error)
}

// Provider error kinds, for errors.Is.
var (
	ErrSandboxGone       = errors.New("sandbox is gone")
	ErrSandboxConflict   = errors.New("sandbox is in a conflicting state")
	ErrProviderTransient = errors.New("provider is temporarily unavailable")
)

// ProviderError is a classified provider failure.
type ProviderError struct {
	Kind       error         // ErrSandboxGone, ErrSandboxConflict, ErrProviderTransient or ErrCheckpointGone
	Op         string        // the provider operation, e.g. "pause"
	SandboxID  string        // may be ""
	RetryAfter time.Duration // transient only; 0 when the provider gave none
	// Refused says the provider turned the request away before acting on
	// it: an HTTP 429 (rate limited), which by RFC 6585 reports a request
	// that was not processed. The sandbox is then as it was before the call,
	// so the service rolls back without asking the provider again (which,
	// rate limited, would likely be refused too). Transient only.
	Refused bool
	Err     error // the underlying cause, may be nil
}

// Error describes the failure with its operation and sandbox.
func (e *ProviderError) Error() string {
	msg := e.Op
	if e.SandboxID != "" {
		msg += " sandbox " + e.SandboxID
	}
	msg += ": " + e.Kind.Error()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is e's Kind.
func (e *ProviderError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying cause.
func (e *ProviderError) Unwrap() error { return e.Err }

// NewProviderError returns a *ProviderError; cause may be nil.
func NewProviderError(kind error, op, sandboxID string, cause error) *ProviderError {
	return &ProviderError{Kind: kind, Op: op, SandboxID: sandboxID, Err: cause}
}

// Transientf returns a transient *ProviderError with a retry-after hint
// (0 for none) and a formatted cause.
func Transientf(op, sandboxID string, retryAfter time.Duration, format string, args ...any) *ProviderError {
	return &ProviderError{Kind: ErrProviderTransient, Op: op, SandboxID: sandboxID,
		RetryAfter: retryAfter, Err: fmt.Errorf(format, args...)}
}

// Refused reports whether err is a *ProviderError the provider refused
// before acting on it (ProviderError.Refused).
func Refused(err error) bool {
	var pe *ProviderError
	return errors.As(err, &pe) && pe.Refused
}

// SettleRefused is a retry.Policy Settle for adapters: the last error
// keeps its Refused mark only when every earlier attempt was refused too. A
// retry that ends in a 429 after an attempt with an unknown outcome (a
// timeout, a 5xx) cannot say the provider never acted. It returns a copy; it
// never changes last.
func SettleRefused(last error, earlier []error) error {
	var pe *ProviderError
	if !errors.As(last, &pe) || !pe.Refused {
		return last
	}
	for _, err := range earlier {
		if !Refused(err) {
			cp := *pe
			cp.Refused = false
			return &cp
		}
	}
	return last
}

// RetryAfter returns the retry-after hint carried by err, or 0.
func RetryAfter(err error) time.Duration {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.RetryAfter
	}
	return 0
}
