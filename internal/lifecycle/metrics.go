package lifecycle

import (
	"context"
	"errors"
	"time"
)

// Metrics receives what the Service did, for operators (docs/DESIGN.md
// "Operators"): internal/metrics writes it as CloudWatch embedded
// metric format lines, one flush per invocation. The Service calls it only
// after the fact it reports has happened (a committed write, a provider
// call that returned); implementations must be safe for concurrent use and
// must not block or fail. Config.Metrics nil means none is kept.
type Metrics interface {
	// Paused counts one committed transition into paused, by its reason
	// (ReasonRequest, ReasonIdle, ReasonAway, ReasonLifetime, ReasonWebhook,
	// ReasonReconcile).
	Paused(reason string)
	// Resumed counts one committed transition back to running from paused
	// or resuming (a resume, or a provider's resumed webhook).
	Resumed()
	// ProviderError counts one provider call that failed, by the
	// provider's name (Provider.Name, e.g. "e2b") and the failure's kind
	// (ProviderErrorKind). A call the caller cancelled is not counted.
	ProviderError(provider, kind string)
	// PauseLag records how late a due session was paused: from its pause
	// deadline (Session.PauseDeadline) to the moment its pause was
	// recorded, by the sweep or by a fired timer (PauseIfDue). Never
	// negative.
	PauseLag(lag time.Duration)
}

// The kinds ProviderErrorKind returns: the dimension Kind of the
// ProviderErrors metric.
const (
	ProviderErrorGone      = "gone"      // ErrSandboxGone, ErrCheckpointGone: the provider says the sandbox (or snapshot) does not exist
	ProviderErrorConflict  = "conflict"  // ErrSandboxConflict: the sandbox's state refuses the call
	ProviderErrorTransient = "transient" // ErrProviderTransient: 429, 5xx, network
	ProviderErrorTimeout   = "timeout"   // the call's deadline passed (Config.CallTimeout)
	ProviderErrorOther     = "other"     // anything else: a configuration problem or a bug
)

// ProviderErrorKinds lists every kind ProviderErrorKind returns, in a fixed
// order (the dashboard's).
var ProviderErrorKinds = []string{ProviderErrorGone, ProviderErrorConflict, ProviderErrorTransient,
	ProviderErrorTimeout, ProviderErrorOther}

// ProviderErrorKind classifies a provider call's error by the sentinels of
// Provider (a *ProviderError's Kind wins over a deadline it wraps), then a
// passed deadline; anything else is "other". It returns "" for nil and for
// context.Canceled (the caller gave up: not the provider's failure).
func ProviderErrorKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrSandboxGone), errors.Is(err, ErrCheckpointGone):
		return ProviderErrorGone
	case errors.Is(err, ErrSandboxConflict):
		return ProviderErrorConflict
	case errors.Is(err, ErrProviderTransient):
		return ProviderErrorTransient
	case errors.Is(err, context.DeadlineExceeded):
		return ProviderErrorTimeout
	case errors.Is(err, context.Canceled):
		return ""
	}
	return ProviderErrorOther
}

// noMetrics is the Metrics of a Service built without one.
type noMetrics struct{}

func (noMetrics) Paused(string)                {}
func (noMetrics) Resumed()                     {}
func (noMetrics) ProviderError(string, string) {}
func (noMetrics) PauseLag(time.Duration)       {}

// countTransition reports a committed transition from → sess.State to the
// metrics: a pause by its reason, a resume.
func (s *Service) countTransition(from State, sess *Session) {
	switch {
	case sess.State == StatePaused && from != StatePaused:
		s.cfg.Metrics.Paused(sess.Reason)
	case sess.State == StateRunning && (from == StateResuming || from == StatePaused):
		s.cfg.Metrics.Resumed()
	}
}

// measure wraps p so that every failed provider call is counted by m
// (Metrics.ProviderError), the calls of its optional interfaces too
// (Wrap). ErrNoFile and ErrNoCommand are answers (the file or command is
// not there), not failures: they are not counted.
func measure(p Provider, m Metrics) Provider {
	return Wrap(p, func(ctx context.Context, _ Call, next func(context.Context, Provider) error) error {
		err := next(ctx, p)
		if kind := ProviderErrorKind(err); kind != "" && !errors.Is(err, ErrNoFile) && !errors.Is(err, ErrNoCommand) {
			m.ProviderError(p.Name(), kind)
		}
		return err
	})
}
