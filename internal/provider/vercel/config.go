package vercel

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
	// DefaultBaseURL is Vercel's REST API (docs/providers/vercel.md; the
	// SDK's https://vercel.com/api is the same API).
	DefaultBaseURL = "https://api.vercel.com"
	// DefaultPreviewPort is the port whose route becomes the preview URL
	// when a template names none (ours: the usual dev-server port).
	DefaultPreviewPort = 3000
	// DefaultMaxSessionTimeout is the plan's maximum session length used to
	// bound create timeouts and extensions: Hobby's 45 min, the smallest
	// plan, so the default is never refused. Set 24 h on Pro/Enterprise.
	// Vercel has moved this maximum before (45 min → 5 h → 24 h), so it is
	// configuration, and a stricter server's 400 still surfaces as an error.
	DefaultMaxSessionTimeout = 45 * time.Minute
	// DefaultRequestTimeout bounds one attempt of a quick call (get, list,
	// extend, delete, create).
	DefaultRequestTimeout = 30 * time.Second
	// DefaultStopTimeout bounds one attempt of a stop, which blocks until the
	// session is snapshotted and stopped (since April 2026); clients with a
	// 5 min header timeout failed such calls (vercel/sandbox #172).
	DefaultStopTimeout = 10 * time.Minute
	// DefaultResumeTimeout bounds one attempt of a resume, which boots a
	// session from its snapshot before answering.
	DefaultResumeTimeout = 2 * time.Minute
	// DefaultArchiveTimeout bounds one workspace export or import, the tar
	// command in the session and the transfer together (ours: a 1 GB workspace
	// takes about a minute at 20 MB/s).
	DefaultArchiveTimeout = 15 * time.Minute
	// DefaultMaxRetries is how many times a call is retried after a 429, a
	// 5xx or no answer (the SDK's own: twice).
	DefaultMaxRetries = 2
	// DefaultRetryBase is the first backoff, doubled on each retry (the
	// SDK's: 400 ms, factor 2).
	DefaultRetryBase = 400 * time.Millisecond
	// DefaultRetryMaxWait caps one backoff; a longer Retry-After ends the
	// retries (the SDK retries a 429 only when Retry-After ≤ 20 s).
	DefaultRetryMaxWait = 20 * time.Second
	// DefaultMaxListPages is how many API pages one List call reads at most
	// while looking for a sandbox that passes the filters Vercel cannot
	// apply itself (states, a second tag).
	DefaultMaxListPages = 5
)

// Template is how a Sandman template is created on Vercel.
type Template struct {
	// Image is the VCR image, e.g. "vercel/sandbox/node:24"; "" with no
	// Runtime means Vercel's default image (vercel/sandbox/universal:latest).
	Image string
	// Runtime is the legacy runtime (node26, node24, node22, python3.13);
	// it excludes Image and creates through POST /v2/sandboxes.
	Runtime string
	// Ports are the ports that get a public route, at most 15. Default
	// [PreviewPort].
	Ports []int
	// PreviewPort is the port whose route is the session's preview URL; it
	// is added to Ports when missing. Default DefaultPreviewPort.
	PreviewPort int
	// VCPUs is resources.vcpus (1 or even, up to 8); 0 leaves Vercel's
	// default. Memory is 2048 MB per vCPU.
	VCPUs int
}

// DefaultTemplates are the templates used when Config.Templates is nil: the
// local provider's "base" and "web", both on Vercel's default image with
// the preview port routed.
func DefaultTemplates() map[string]Template {
	return map[string]Template{
		"base": {Ports: []int{DefaultPreviewPort}},
		"web":  {Ports: []int{DefaultPreviewPort}},
	}
}

// Config configures a Provider. Token and ProjectID are required.
type Config struct {
	// BaseURL is the REST API's base URL, to which /v3/sandboxes and
	// /v2/sandboxes/... are appended. Default DefaultBaseURL.
	BaseURL string
	// Token is a Vercel access token, sent as Authorization: Bearer.
	Token string
	// TeamID scopes every call with teamId=<team_…>. "" sends none (a
	// personal account), unless TeamSlug is set.
	TeamID string
	// TeamSlug scopes every call with slug=<team-slug> when TeamID is "".
	TeamSlug string
	// ProjectID is the project the sandboxes live in: projectId in the
	// create body and on get/patch/delete, project on list.
	ProjectID string
	// Templates maps Sandman template names to Vercel settings. Default
	// DefaultTemplates(). Create refuses a template not in the map.
	Templates map[string]Template
	// MaxSessionTimeout is the plan's maximum session length: create
	// timeouts are capped at it and extensions never go past it. Default
	// DefaultMaxSessionTimeout.
	MaxSessionTimeout time.Duration
	// SnapshotExpiration, when positive, is sent as snapshotExpiration (ms):
	// how long a paused sandbox's snapshot lives after its last use before a
	// resume answers 410. 0 sends none: Vercel's default (30 days) applies.
	// It is also the expiration of the checkpoints' snapshots
	// (SnapshotCaps.Retention; default DefaultSnapshotRetention).
	SnapshotExpiration time.Duration
	// KeepSnapshotsOnKill leaves a killed sandbox's snapshots in place;
	// default false: Kill sends deleteOrphanSnapshots=true, except for a
	// sandbox holding checkpoints (checkpoints.go).
	KeepSnapshotsOnKill bool

	// RequestTimeout bounds one attempt of a quick call. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// StopTimeout bounds one attempt of a (blocking) stop. Default
	// DefaultStopTimeout.
	StopTimeout time.Duration
	// ResumeTimeout bounds one attempt of a resume. Default
	// DefaultResumeTimeout.
	ResumeTimeout time.Duration
	// ArchiveTimeout bounds one ExportTar or ImportTar, the tar command and
	// the transfer together. Default DefaultArchiveTimeout.
	ArchiveTimeout time.Duration
	// MaxRetries is how many times a call is retried after a transient
	// failure. 0 means DefaultMaxRetries, a negative value no retries.
	MaxRetries int
	// RetryBase is the first backoff, doubled on each retry. Default
	// DefaultRetryBase.
	RetryBase time.Duration
	// RetryMaxWait caps one backoff; a Retry-After beyond it ends the
	// retries and the error carries it. Default DefaultRetryMaxWait.
	RetryMaxWait time.Duration
	// MaxListPages bounds the API pages one List reads. Default
	// DefaultMaxListPages.
	MaxListPages int

	// HTTPClient sends every request. Default: a client bounding dialling
	// and TLS handshakes to 5 s each; whole-request deadlines come from the
	// timeouts above and the caller's context.
	HTTPClient *http.Client
	// Sleep waits d or until ctx ends. Tests replace it so no test sleeps.
	// Default lifecycle.Sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Clock gives "now" for timeout arithmetic and Retry-After dates.
	// Default lifecycle.SystemClock.
	Clock lifecycle.Clock
	// Logger receives retry diagnostics. Default slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Templates == nil {
		c.Templates = DefaultTemplates()
	}
	c.MaxSessionTimeout = orDefault(c.MaxSessionTimeout, DefaultMaxSessionTimeout)
	c.RequestTimeout = orDefault(c.RequestTimeout, DefaultRequestTimeout)
	c.StopTimeout = orDefault(c.StopTimeout, DefaultStopTimeout)
	c.ArchiveTimeout = orDefault(c.ArchiveTimeout, DefaultArchiveTimeout)
	c.ResumeTimeout = orDefault(c.ResumeTimeout, DefaultResumeTimeout)
	c.MaxRetries = retry.Limit(c.MaxRetries, DefaultMaxRetries)
	c.RetryBase = orDefault(c.RetryBase, DefaultRetryBase)
	c.RetryMaxWait = orDefault(c.RetryMaxWait, DefaultRetryMaxWait)
	if c.MaxListPages <= 0 {
		c.MaxListPages = DefaultMaxListPages
	}
	c.HTTPClient, c.Sleep, c.Clock, c.Logger = provhttp.OrDefaults(c.HTTPClient, c.Sleep, c.Clock, c.Logger)
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
