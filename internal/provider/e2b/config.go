package e2b

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
	"github.com/sandmanhq/sandman/internal/provider/internal/retry"
)

// Defaults of Config; each applies when its field is left zero.
const (
	// DefaultBaseURL is E2B's control API (docs/providers/e2b.md "REST API").
	DefaultBaseURL = "https://api.e2b.app"
	// DefaultDomain is the sandbox domain of preview and envd URLs.
	DefaultDomain = "e2b.app"
	// DefaultPreviewPort is the sandbox port whose URL is the session's
	// preview URL (ours: the usual dev-server port of app builders).
	DefaultPreviewPort = 3000
	// DefaultRequestTimeout bounds one attempt of a control API call.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultPauseTimeout bounds one attempt of a pause, which E2B says takes
	// about 4 s per GiB of RAM, and of a snapshot or a fork, which pause the
	// sandbox likewise (E2B's SDK waits 60 s too).
	DefaultPauseTimeout = 60 * time.Second
	// DefaultArchiveTimeout bounds one workspace export or import, the
	// command in the sandbox and the transfer together (ours: a 1 GB
	// workspace takes about a minute at 20 MB/s).
	DefaultArchiveTimeout = 15 * time.Minute
	// DefaultProbeTimeout bounds one attempt of the envd health check.
	DefaultProbeTimeout = 5 * time.Second
	// DefaultMaxRetries is how many times an idempotent call is retried after
	// a transient failure.
	DefaultMaxRetries = 3
	// DefaultRetryBase is the first backoff; each retry doubles it.
	DefaultRetryBase = 200 * time.Millisecond
	// DefaultRetryMaxWait caps one backoff wait, Retry-After included.
	DefaultRetryMaxWait = 5 * time.Second
)

// EnvdPort is the port of E2B's in-sandbox daemon, whose /health answers 204
// when the sandbox is alive (docs/providers/e2b.md).
const EnvdPort = 49983

// Config configures a Provider. Only APIKey is required.
type Config struct {
	// BaseURL is the control API's base URL. Default DefaultBaseURL.
	BaseURL string
	// APIKey is the team's E2B API key, sent as X-API-Key. Never sent to a
	// sandbox's own URLs.
	APIKey string
	// Domain is the sandbox domain used when E2B's answer names none.
	// Default DefaultDomain.
	Domain string
	// PreviewPort is the sandbox port whose URL becomes PreviewURL,
	// https://<port>-<sandboxID>.<domain>. Default DefaultPreviewPort.
	PreviewPort int
	// Secure sends "secure": true on create. The v2 create E2B serves is
	// always secure whatever this says: it answers an envdAccessToken that
	// envd wants as X-Access-Token for its API (the token lives only in this
	// Provider's memory; Sandman does not store it). Probe needs no token:
	// envd's /health answers without one; a 401 or 403 from there still
	// counts as alive. Default false.
	Secure bool
	// AutoResume creates sandboxes with "autoResume": {"enabled": true}, so
	// traffic to a paused sandbox wakes it (E2B then sends a resumed
	// webhook). Default false: the field is not sent and E2B's default, off,
	// applies.
	AutoResume bool

	// RequestTimeout bounds one attempt of a control API call.
	// Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// PauseTimeout bounds one attempt of a pause, a snapshot or a fork.
	// Default DefaultPauseTimeout.
	PauseTimeout time.Duration
	// ProbeTimeout bounds one envd health check. Default DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// ArchiveTimeout bounds one ExportTar or ImportTar: envd kills the tar
	// command after it. Default DefaultArchiveTimeout.
	ArchiveTimeout time.Duration

	// MaxRetries is how many times an idempotent call (get, list, pause, set
	// timeout, kill, probe) is retried after a transient failure; create and
	// connect are never retried. 0 means DefaultMaxRetries, a negative value
	// no retries.
	MaxRetries int
	// RetryBase is the first backoff, doubled on each retry and jittered to
	// between half and all of it. Default DefaultRetryBase.
	RetryBase time.Duration
	// RetryMaxWait caps one backoff. A Retry-After longer than it ends the
	// retries: the error carries the Retry-After to the caller instead.
	// Default DefaultRetryMaxWait.
	RetryMaxWait time.Duration

	// HTTPClient sends every request. Default: a client whose transport
	// bounds dialling and TLS handshakes to 5 s each; per-request deadlines
	// come from the timeouts above and the caller's context.
	HTTPClient *http.Client
	// Sleep waits d or until ctx ends, returning ctx's error in that case.
	// Tests replace it so no test sleeps. Default: lifecycle.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// EnvdURL returns the base URL of a sandbox's envd, to which Probe adds
	// "/health". Tests point it at a local server. Default
	// https://49983-<sandboxID>.<domain>.
	EnvdURL func(sandboxID, domain string) string
	// PortURL returns the preview URL of a sandbox port (PortURL, the
	// readiness probe's target). Tests point it at a local server. Default
	// https://<port>-<sandboxID>.<domain>.
	PortURL func(sandboxID, domain string, port int) string
	// Clock gives the time of computed expiries and of Retry-After dates.
	// Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Logger receives retry and probe diagnostics. Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Domain == "" {
		c.Domain = DefaultDomain
	}
	if c.PreviewPort == 0 {
		c.PreviewPort = DefaultPreviewPort
	}
	c.RequestTimeout = orDefault(c.RequestTimeout, DefaultRequestTimeout)
	c.PauseTimeout = orDefault(c.PauseTimeout, DefaultPauseTimeout)
	c.ProbeTimeout = orDefault(c.ProbeTimeout, DefaultProbeTimeout)
	c.ArchiveTimeout = orDefault(c.ArchiveTimeout, DefaultArchiveTimeout)
	c.MaxRetries = retry.Limit(c.MaxRetries, DefaultMaxRetries)
	c.RetryBase = orDefault(c.RetryBase, DefaultRetryBase)
	c.RetryMaxWait = orDefault(c.RetryMaxWait, DefaultRetryMaxWait)
	c.HTTPClient, c.Sleep, c.Clock, c.Logger = provhttp.OrDefaults(c.HTTPClient, c.Sleep, c.Clock, c.Logger)
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
