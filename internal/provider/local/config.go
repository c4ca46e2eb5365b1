package local

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// ProviderName is the local provider's name as stored on sessions.
const ProviderName = "local"

// The templates the local provider knows.
const (
	// TemplateBase is an idle long-running process with no preview URL.
	TemplateBase = "base"
	// TemplateWeb is an HTTP server on a loopback port that serves the
	// sandbox's files directory; its URL is the preview URL.
	TemplateWeb = "web"
)

// Templates lists every template the local provider can create.
var Templates = []string{TemplateBase, TemplateWeb}

// Defaults of Config, applied by New to zero fields.
const (
	DefaultDir             = ".sandman/sandboxes"
	DefaultTimeout         = 5 * time.Minute // E2B's SDK default sandbox timeout
	DefaultMaxTimeout      = 24 * time.Hour  // E2B's Pro plan maximum run length
	DefaultTickInterval    = time.Second
	DefaultProbeTimeout    = 2 * time.Second
	DefaultSignalTimeout   = 5 * time.Second
	DefaultWebhookAttempts = 4
	DefaultWebhookBackoff  = 500 * time.Millisecond
	DefaultWebhookTimeout  = 5 * time.Second
	DefaultWebhookID       = "local"
	DefaultTeamID          = "local"
)

// Config configures a Provider. The zero value of every field takes the
// default named in its comment.
type Config struct {
	// Dir is the state folder, one directory per sandbox. Default DefaultDir
	// (relative to the working directory).
	Dir string
	// Command starts a sandbox child; the provider appends the child's flags
	// (see RunSandbox). Default: this executable followed by "sandbox".
	Command []string
	// Env is added to the child's environment, "KEY=value" each. The child
	// inherits only PATH, HOME, LANG, TZ and TMPDIR from this process (when
	// set), never its secrets; Env wins over them.
	Env []string
	// Clock tells the time for timeouts, records and webhook timestamps.
	// Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Logger receives the provider's logs. Default slog.Default().
	Logger *slog.Logger
	// DefaultTimeout is the provider-side timeout of a Create or Resume that
	// asks for 0. Default DefaultTimeout (5 minutes).
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeout accepted; a larger one is invalid
	// input, like E2B's 400. Default DefaultMaxTimeout (24 hours).
	MaxTimeout time.Duration
	// TickInterval is how often Run enforces timeouts. Default 1 second.
	TickInterval time.Duration
	// ProbeTimeout bounds Probe's HTTP check of a web sandbox. Default 2 seconds.
	ProbeTimeout time.Duration
	// SignalTimeout bounds how long Pause, Resume and Kill wait for the
	// process to reach the state they signalled, within the caller's
	// context. Default 5 seconds.
	SignalTimeout time.Duration
	// DropProcesses makes a pause kill the sandbox's background commands
	// (StartCommand) and a resume start from the folder only, as Vercel
	// Sandbox does (SANDMAN_LOCAL_KEEP_PROCESSES=false). Default false:
	// they are stopped with the sandbox and continued by a resume, as E2B
	// keeps processes.
	DropProcesses bool

	// WebhookURL receives signed E2B-format lifecycle webhooks; "" sends none.
	WebhookURL string
	// WebhookSecret is the E2B signature secret (e2b-signature, v1).
	WebhookSecret string
	// WebhookID is sent as e2b-webhook-id (E2B's id of the registered
	// webhook). Default "local".
	WebhookID string
	// TeamID is sent as sandbox_team_id. Default "local".
	TeamID string
	// WebhookAttempts is how many times one event is tried. Default 4.
	WebhookAttempts int
	// WebhookBackoff is the wait before the second attempt; it doubles for
	// each later one. Default 500 milliseconds.
	WebhookBackoff time.Duration
	// WebhookTimeout bounds one delivery attempt. Default 5 seconds.
	WebhookTimeout time.Duration
	// HTTPClient sends webhooks and probes. Default a fresh http.Client; the
	// timeouts above apply through request contexts either way.
	HTTPClient *http.Client
	// MaxExportBytes bounds the tar ExportTar writes (a checkpoint's
	// archive, before compression): past it the export fails rather than
	// fill the disk. Default DefaultMaxExportBytes (1 GiB).
	MaxExportBytes int64
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() (Config, error) {
	if c.Dir == "" {
		c.Dir = DefaultDir
	}
	if len(c.Command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return c, fmt.Errorf("find the sandman executable for sandbox children: %w", err)
		}
		c.Command = []string{exe, "sandbox"}
	}
	if c.Clock == nil {
		c.Clock = lifecycle.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = DefaultTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.SignalTimeout == 0 {
		c.SignalTimeout = DefaultSignalTimeout
	}
	if c.WebhookID == "" {
		c.WebhookID = DefaultWebhookID
	}
	if c.TeamID == "" {
		c.TeamID = DefaultTeamID
	}
	if c.WebhookAttempts == 0 {
		c.WebhookAttempts = DefaultWebhookAttempts
	}
	if c.WebhookBackoff == 0 {
		c.WebhookBackoff = DefaultWebhookBackoff
	}
	if c.WebhookTimeout == 0 {
		c.WebhookTimeout = DefaultWebhookTimeout
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.MaxExportBytes == 0 {
		c.MaxExportBytes = DefaultMaxExportBytes
	}
	switch {
	case c.DefaultTimeout < 0 || c.MaxTimeout < 0 || c.DefaultTimeout > c.MaxTimeout:
		return c, errors.New("local provider: timeouts must be positive and DefaultTimeout at most MaxTimeout")
	case c.TickInterval < 0 || c.ProbeTimeout < 0 || c.SignalTimeout < 0 ||
		c.WebhookBackoff < 0 || c.WebhookTimeout < 0 || c.WebhookAttempts < 0:
		return c, errors.New("local provider: intervals, timeouts and attempts must not be negative")
	case c.WebhookURL != "" && c.WebhookSecret == "":
		return c, errors.New("local provider: WebhookURL needs a WebhookSecret to sign with")
	}
	return c, nil
}
