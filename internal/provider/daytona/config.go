package daytona

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
	// DefaultBaseURL is Daytona's control API (docs/providers/daytona.md "REST API").
	DefaultBaseURL = "https://app.daytona.io/api"
	// DefaultPreviewPort is the sandbox port whose preview URL becomes the
	// session's (ours: the usual dev-server port; Daytona previews 3000-9999).
	DefaultPreviewPort = 3000
	// DefaultRequestTimeout bounds one control API request.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultCreateTimeout bounds a create until the sandbox is started
	// (Daytona itself waits up to 30 s before answering).
	DefaultCreateTimeout = 90 * time.Second
	// DefaultBuildTimeout bounds a create from an image (ImagePrefix) until
	// started: Daytona builds the image first (ours: 10 min).
	DefaultBuildTimeout = 10 * time.Minute
	// DefaultStopTimeout bounds a pause until the sandbox is stopped.
	DefaultStopTimeout = 60 * time.Second
	// DefaultStartTimeout bounds a resume from stopped or paused until the
	// sandbox is started.
	DefaultStartTimeout = 60 * time.Second
	// DefaultRestoreTimeout bounds a resume from archived: the disk comes
	// back from object storage, slowly and size dependent (ours: 10 min).
	DefaultRestoreTimeout = 10 * time.Minute
	// DefaultActivateTimeout bounds the activation of a snapshot Daytona
	// deactivated (14 days unused) before a create from it: the snapshot is
	// pulled to the runners again (ours: 10 min).
	DefaultActivateTimeout = 10 * time.Minute
	// DefaultArchiveTimeout bounds one workspace export or import, the tar
	// command in the sandbox and the transfer together (ours: a 1 GB workspace
	// takes about a minute at 20 MB/s).
	DefaultArchiveTimeout = 15 * time.Minute
	// DefaultPollInterval caps the wait between reads of a sandbox (or a
	// snapshot) in a transitional state; see pollWait for the waits below it.
	DefaultPollInterval = time.Second
	// firstPoll is the shortest wait between two reads of a sandbox in a
	// transitional state (pollWait).
	firstPoll = 100 * time.Millisecond
	// DefaultMaxRetries is how many times an idempotent call is retried
	// after a transient failure.
	DefaultMaxRetries = 3
	// DefaultConflictRetries is how many times a delete answered 409 ("state
	// change in progress") is retried.
	DefaultConflictRetries = 5
	// DefaultRetryBase is the first backoff; each retry doubles it.
	DefaultRetryBase = 200 * time.Millisecond
	// DefaultRetryMaxWait caps one backoff wait, Retry-After included.
	DefaultRetryMaxWait = 5 * time.Second
)

// Pause modes of Config.PauseMode.
const (
	// PauseStop pauses with POST /stop (disk kept, memory lost) and guards
	// with autoStopInterval. Every sandbox class supports it.
	PauseStop = "stop"
	// PausePause pauses with POST /pause (memory kept) and guards with
	// autoPauseInterval. Only the linux-vm and windows classes support it;
	// a 422 falls back to stop.
	PausePause = "pause"
)

// Config configures a Provider. Only APIKey is required.
type Config struct {
	// BaseURL is the control API's base URL; paths such as /sandbox are
	// appended to it. Default DefaultBaseURL.
	BaseURL string
	// APIKey is the organization's Daytona API key, sent as
	// Authorization: Bearer. It is never put in a preview URL.
	APIKey string
	// OrganizationID, when set, is sent as X-Daytona-Organization-ID (needed
	// only when APIKey is a user JWT rather than an API key).
	OrganizationID string
	// Target is the region new sandboxes are created in; "" lets Daytona
	// choose the organization's default.
	Target string
	// PreviewPort is the sandbox port whose preview URL becomes PreviewURL.
	// Default DefaultPreviewPort.
	PreviewPort int
	// PreviewPorts overrides PreviewPort per template.
	PreviewPorts map[string]int
	// Public creates sandboxes with "public": true: their preview URLs need
	// no token. Default false: the preview token is appended to PreviewURL
	// as DAYTONA_SANDBOX_AUTH_KEY (daytona.md "Private preview").
	Public bool
	// PauseMode is PauseStop (default) or PausePause.
	PauseMode string
	// AutoArchive is autoArchiveInterval, rounded up to whole minutes: how
	// long a stopped sandbox stays stopped before Daytona archives it. 0
	// sends nothing and Daytona's default (7 days) applies.
	AutoArchive time.Duration
	// AutoDelete is autoDeleteInterval, rounded up to whole minutes: how
	// long a stopped sandbox lives before Daytona deletes it. 0 sends
	// nothing and Daytona's default (never) applies. Daytona's own 0
	// ("ephemeral": deleted when it stops) cannot be asked for here: it
	// would delete every paused session.
	AutoDelete time.Duration
	// TTL is ttlMinutes, rounded up: a hard cap after which Daytona
	// destroys the sandbox in any state. 0: none.
	TTL time.Duration

	// RequestTimeout bounds one request. Default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// CreateTimeout bounds a create until started. Default DefaultCreateTimeout.
	CreateTimeout time.Duration
	// BuildTimeout bounds a create from an image until started.
	// Default DefaultBuildTimeout.
	BuildTimeout time.Duration
	// StopTimeout bounds a pause until stopped. Default DefaultStopTimeout.
	StopTimeout time.Duration
	// ArchiveTimeout bounds one ExportTar or ImportTar: the toolbox kills
	// the tar command after it. Default DefaultArchiveTimeout.
	ArchiveTimeout time.Duration
	// StartTimeout bounds a resume until started. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// RestoreTimeout bounds a resume of an archived sandbox.
	// Default DefaultRestoreTimeout.
	RestoreTimeout time.Duration
	// ActivateTimeout bounds the activation of a deactivated snapshot
	// before a create from it. Default DefaultActivateTimeout.
	ActivateTimeout time.Duration
	// PollInterval caps the wait between reads of a transitional sandbox:
	// the wait is a tenth of the time waited so far, at least 100 ms (or
	// PollInterval when smaller) and at most PollInterval. Default
	// DefaultPollInterval.
	PollInterval time.Duration

	// MaxRetries is how many times an idempotent call (get, list, probe,
	// set timeout, kill, and the reads and writes inside pause and resume)
	// is retried after a transient failure; create's POST is never retried.
	// 0 means DefaultMaxRetries, a negative value no retries.
	MaxRetries int
	// ConflictRetries is how many times a delete answered 409 is retried.
	// 0 means DefaultConflictRetries, a negative value none.
	ConflictRetries int
	// RetryBase is the first backoff, doubled on each retry and jittered to
	// between half and all of it. Default DefaultRetryBase.
	RetryBase time.Duration
	// RetryMaxWait caps one backoff. A Retry-After longer than it ends the
	// retries and the error carries it. Default DefaultRetryMaxWait.
	RetryMaxWait time.Duration

	// HTTPClient sends every request. Default: dial and TLS handshake
	// bounded to 5 s each.
	HTTPClient *http.Client
	// Sleep waits d or until ctx ends. Tests replace it (and may advance a
	// fake clock in it). Default lifecycle.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Clock measures the pause and resume deadlines and Retry-After dates.
	// Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Logger receives retries, fallbacks and slow restores. Default
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.PreviewPort == 0 {
		c.PreviewPort = DefaultPreviewPort
	}
	if c.PauseMode == "" {
		c.PauseMode = PauseStop
	}
	c.RequestTimeout = orDefault(c.RequestTimeout, DefaultRequestTimeout)
	c.CreateTimeout = orDefault(c.CreateTimeout, DefaultCreateTimeout)
	c.BuildTimeout = orDefault(c.BuildTimeout, DefaultBuildTimeout)
	c.StopTimeout = orDefault(c.StopTimeout, DefaultStopTimeout)
	c.ArchiveTimeout = orDefault(c.ArchiveTimeout, DefaultArchiveTimeout)
	c.StartTimeout = orDefault(c.StartTimeout, DefaultStartTimeout)
	c.RestoreTimeout = orDefault(c.RestoreTimeout, DefaultRestoreTimeout)
	c.ActivateTimeout = orDefault(c.ActivateTimeout, DefaultActivateTimeout)
	c.PollInterval = orDefault(c.PollInterval, DefaultPollInterval)
	c.MaxRetries = retry.Limit(c.MaxRetries, DefaultMaxRetries)
	c.ConflictRetries = retry.Limit(c.ConflictRetries, DefaultConflictRetries)
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
