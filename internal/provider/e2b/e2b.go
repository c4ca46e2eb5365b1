// Package e2b is the lifecycle.Provider for E2B, over E2B's REST API as
// docs/providers/e2b.md describes it (its section "Checked against the
// real spec" first): create, get, list, pause, connect (resume), set timeout
// and kill on the control API, and a live probe of the in-sandbox daemon
// (envd) through E2B's proxy; commands and files through envd
// (commands.go, files.go); snapshots and forks, the checkpoints
// (checkpoint.go, the page's "Checkpoints").
//
// Routes: create and connect use the v2 routes (POST /v2/sandboxes, POST
// /v2/sandboxes/{id}/connect) that E2B's SDK 2.51.0 uses; the /sandboxes
// forms are deprecated. Get, pause, set timeout and kill have only the
// /sandboxes/{id} forms; list is GET /v2/sandboxes.
//
// Expiries: E2B silently caps a connect or set-timeout at the last start +
// the plan's maximum run length and still answers 200/204, so the expiry
// asked for is not always the one applied. Resume and SetTimeoutUntil read
// the sandbox back (GET, its endAt) and report what E2B applied.
//
// Domains: list items carry no domain, so preview URLs never come from a
// list: the Provider remembers the domain each sandbox was created, connected
// or read with (in memory, bounded), and uses Config.Domain for one it has
// not seen.
//
// Errors follow lifecycle.Provider: 404 is lifecycle.ErrSandboxGone, 409
// lifecycle.ErrSandboxConflict (except on pause, where it is success when
// the sandbox reads paused afterwards and a conflict when it is being killed,
// and on set timeout, where it means pausing, killing or snapshotting and is
// transient), and 429, 5xx, timeouts and connection
// errors lifecycle.ErrProviderTransient with the Retry-After E2B sent. A 401
// or 403 is a plain error saying the API key is wrong or missing, and any
// other 4xx a plain error carrying E2B's {"code","message"}: both are
// configuration problems or bugs that no retry fixes.
//
// Retries: get, list, pause, set timeout, kill and probe are idempotent
// (pausing a paused sandbox and killing a gone one succeed), so a transient
// failure is retried up to Config.MaxRetries times with jittered exponential
// backoff. Create is never retried: a create that timed out may have made a
// sandbox, and a retry would make a second one (the lifecycle service tags
// sandboxes with their session id and kills such orphans). Connect is not
// retried either: a timed-out connect may still be resuming the sandbox, a
// second one races it (E2B users report resume races and failing second
// resume cycles), and the resume handler already makes its own two attempts
// with backoff, so retrying here would multiply them.
//
// Probe never wakes a paused sandbox: it reads the state through the control
// API first and goes to envd only when that says running. A Probe retry
// starts again from the control API, so a sandbox that paused itself in
// between is not woken by the retry either.
package e2b

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Name is the provider name stored on sessions.
const Name = "e2b"

var (
	_ lifecycle.Provider        = (*Provider)(nil)
	_ lifecycle.TimeoutReporter = (*Provider)(nil)
)

// Provider is the E2B lifecycle.Provider. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	base   *url.URL
	tokens tokenCache // envd access tokens
	domain tokenCache // sandbox domains
}

// New returns a Provider for cfg, filling in defaults (see Config).
// Errors: APIKey is empty, or BaseURL is not an absolute http(s) URL.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.withDefaults()
	if cfg.APIKey == "" {
		return nil, errors.New("e2b: the E2B API key is missing")
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("e2b: base url %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	return &Provider{cfg: cfg, base: base, tokens: tokenCache{m: map[string]string{}},
		domain: tokenCache{m: map[string]string{}}}, nil
}

// Name returns "e2b".
func (p *Provider) Name() string { return Name }

// PreviewURL returns the URL of the configured preview port of a sandbox in
// domain ("" for the domain this Provider last saw the sandbox with, else
// Config.Domain): https://<port>-<sandboxID>.<domain>.
// Visiting it wakes a paused sandbox that has auto-resume on.
func (p *Provider) PreviewURL(sandboxID, domain string) string {
	if domain == "" {
		domain = p.domainOf(sandboxID)
	}
	return fmt.Sprintf("https://%d-%s.%s", p.cfg.PreviewPort, sandboxID, domain)
}

// envdURL returns the base URL of a sandbox's envd.
func (p *Provider) envdURL(sandboxID, domain string) string {
	if domain == "" {
		domain = p.domainOf(sandboxID)
	}
	if p.cfg.EnvdURL != nil {
		return p.cfg.EnvdURL(sandboxID, domain)
	}
	return fmt.Sprintf("https://%d-%s.%s", EnvdPort, sandboxID, domain)
}

// domainOf returns the domain this Provider last saw sandboxID with, or
// Config.Domain.
func (p *Provider) domainOf(sandboxID string) string {
	return orString(p.domain.get(sandboxID), p.cfg.Domain)
}

// DefaultCreateTimeout is the timeout E2B's v2 create applies when none is
// sent (docs/providers/e2b.md, "Checked against the real spec").
const DefaultCreateTimeout = 300 * time.Second

// apiURL returns the control API URL of path segments, each escaped.
func (p *Provider) apiURL(query url.Values, segments ...string) string {
	u := p.base.JoinPath(segments...)
	u.RawQuery = query.Encode()
	return u.String()
}

// Create starts a sandbox (POST /v2/sandboxes) from req.Template with
// req.Timeout (rounded up to whole seconds; 0 sends none and E2B's default,
// DefaultCreateTimeout, applies), autoPause, and req.Metadata. E2B's create
// answer carries no times, so StartedAt is now and ExpiresAt now+timeout by
// Config.Clock (a create above the plan's maximum is a 400, not capped). Never
// retried (see the package doc). Errors: transient; a plain error for a
// missing template, a bad API key, or a 4xx such as a timeout above the
// plan's maximum.
func (p *Provider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if req.Template == "" {
		return lifecycle.Sandbox{}, errors.New("create sandbox: the template is missing")
	}
	return p.create(ctx, "create", req.Template, req)
}

// create is Create from templateID (a template, or a snapshot's id for
// CreateFromSnapshot), reported as operation op. A 404 is
// lifecycle.ErrCheckpointGone for CreateFromSnapshot, a plain error for
// Create (a missing template).
func (p *Provider) create(ctx context.Context, op, templateID string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	body := newSandboxBody{
		TemplateID: templateID,
		Timeout:    seconds(req.Timeout),
		AutoPause:  req.AutoPause,
		Metadata:   req.Metadata,
		Secure:     p.cfg.Secure,
	}
	if p.cfg.AutoResume {
		body.AutoResume = &autoResumeBody{Enabled: true}
	}
	r, err := p.roundTrip(ctx, request{
		Op: op, Method: http.MethodPost, URL: p.apiURL(nil, "v2", "sandboxes"),
		Body: body, Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
	})
	switch {
	case err != nil:
		return lifecycle.Sandbox{}, err
	case r.Status == http.StatusNotFound && op == opFromSnapshot:
		return lifecycle.Sandbox{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "", parseAPIError(r))
	case !r.OK():
		return lifecycle.Sandbox{}, p.statusError(op, "", r)
	}
	var out createdSandbox
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return lifecycle.Sandbox{}, decodeError(op, "", err)
	}
	timeout := time.Duration(body.Timeout) * time.Second
	if timeout == 0 {
		timeout = DefaultCreateTimeout
	}
	sb, err := p.started(op, out, templateID, timeout)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	sb.Metadata = copyMap(req.Metadata)
	return sb, nil
}

// started records the envd token and domain of a sandbox E2B just started
// (create, or a fork) and returns it running from now by Config.Clock until
// now+timeout. Errors: a sandboxID that is not one (a plain error).
func (p *Provider) started(op string, out createdSandbox, templateID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	if !validID(out.SandboxID) {
		return lifecycle.Sandbox{}, decodeError(op, "", fmt.Errorf("bad sandboxID %q", out.SandboxID))
	}
	p.tokens.put(out.SandboxID, out.EnvdAccessToken)
	p.domain.put(out.SandboxID, out.Domain)
	now := p.cfg.Clock.Now().UTC()
	return lifecycle.Sandbox{
		ID:         out.SandboxID,
		Template:   orString(out.TemplateID, templateID),
		State:      lifecycle.SandboxRunning,
		StartedAt:  now,
		ExpiresAt:  now.Add(timeout),
		PreviewURL: p.PreviewURL(out.SandboxID, out.Domain),
	}, nil
}

// Get reads a sandbox through the control API (it never wakes a paused
// one). A running sandbox has ExpiresAt (E2B's endAt) and a PreviewURL; a
// paused one has PausedAt (E2B's endAt) and no PreviewURL, since visiting it
// could wake the sandbox. Retried. Errors: gone, transient.
func (p *Provider) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	var sb lifecycle.Sandbox
	err := p.withSandbox(ctx, "get", sandboxID, func(ctx context.Context) error {
		var err error
		sb, _, err = p.get(ctx, "get", sandboxID)
		return err
	})
	return sb, err
}

// get is one attempt of GET /sandboxes/{id}, reported as operation op. It
// also returns the sandbox's domain, "" when E2B named none.
func (p *Provider) get(ctx context.Context, op, sandboxID string) (lifecycle.Sandbox, string, error) {
	r, err := p.roundTrip(ctx, request{
		Op: op, SandboxID: sandboxID, Method: http.MethodGet,
		URL: p.apiURL(nil, "sandboxes", sandboxID), Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
	})
	if err != nil {
		return lifecycle.Sandbox{}, "", err
	}
	if !r.OK() {
		return lifecycle.Sandbox{}, "", p.statusError(op, sandboxID, r)
	}
	var d sandboxDetail
	if err := json.Unmarshal(r.Body, &d); err != nil {
		return lifecycle.Sandbox{}, "", decodeError(op, sandboxID, err)
	}
	if d.SandboxID == "" {
		d.SandboxID = sandboxID
	}
	p.domain.put(sandboxID, d.Domain)
	p.tokens.put(sandboxID, d.EnvdAccessToken)
	sb, err := p.sandbox(d)
	if err != nil {
		return lifecycle.Sandbox{}, "", decodeError(op, sandboxID, err)
	}
	return sb, d.Domain, nil
}

// sandbox converts E2B's sandbox detail (or list item) to the domain's
// Sandbox; the preview URL's domain is the one remembered for the sandbox.
func (p *Provider) sandbox(d sandboxDetail) (lifecycle.Sandbox, error) {
	sb := lifecycle.Sandbox{
		ID:        d.SandboxID,
		Template:  d.TemplateID,
		StartedAt: d.StartedAt.UTC(),
		Metadata:  d.Metadata,
	}
	switch lifecycle.SandboxState(d.State) {
	case lifecycle.SandboxRunning:
		sb.State = lifecycle.SandboxRunning
		sb.ExpiresAt = d.EndAt.UTC()
		sb.PreviewURL = p.PreviewURL(d.SandboxID, "") // list items carry no domain
	case lifecycle.SandboxPaused:
		sb.State = lifecycle.SandboxPaused
		sb.PausedAt = d.EndAt.UTC()
	default:
		return lifecycle.Sandbox{}, fmt.Errorf("sandbox %s has unknown state %q", d.SandboxID, d.State)
	}
	return sb, nil
}

// List returns one page of GET /v2/sandboxes (newest first): req.States
// (default running and paused) as state=running,paused, req.Metadata as one
// metadata parameter (see MetadataFilter), req.Limit as limit (0: E2B's default) and
// req.PageToken as nextToken. The next page's token is E2B's X-Next-Token
// header. Retried. Errors: transient; a plain error for a state other than
// running or paused, or a 4xx such as a token E2B did not issue.
func (p *Provider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	const op = "list"
	states := req.States
	if len(states) == 0 {
		states = []lifecycle.SandboxState{lifecycle.SandboxRunning, lifecycle.SandboxPaused}
	}
	names := make([]string, len(states))
	for i, s := range states {
		if s != lifecycle.SandboxRunning && s != lifecycle.SandboxPaused {
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: unknown sandbox state %q", s)
		}
		names[i] = string(s)
	}
	q := url.Values{"state": {strings.Join(names, ",")}}
	if len(req.Metadata) > 0 {
		q.Set("metadata", MetadataFilter(req.Metadata))
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.PageToken != "" {
		q.Set("nextToken", req.PageToken)
	}
	var page lifecycle.SandboxPage
	err := p.retry(ctx, op, "", func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{
			Op: op, Method: http.MethodGet, URL: p.apiURL(q, "v2", "sandboxes"),
			Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
		})
		if err != nil {
			return err
		}
		if !r.OK() {
			return p.statusError(op, "", r)
		}
		var items []sandboxDetail
		if err := json.Unmarshal(r.Body, &items); err != nil {
			return decodeError(op, "", err)
		}
		page = lifecycle.SandboxPage{Sandboxes: make([]lifecycle.Sandbox, 0, len(items)),
			NextToken: r.Header.Get("X-Next-Token")}
		for _, d := range items {
			sb, err := p.sandbox(d)
			if err != nil {
				return decodeError(op, "", err)
			}
			page.Sandboxes = append(page.Sandboxes, sb)
		}
		return nil
	})
	return page, err
}

// MetadataFilter encodes a metadata filter as list's metadata query value,
// before the query string's own encoding: each key and value
// percent-encoded, pairs joined k=v&k2=v2 in key order, and that string
// percent-encoded again. With the query string's encoding on top, E2B's
// server decodes it three times (docs/providers/e2b.md: the SDK sends
// note%3Dx%252526y%25253Dz for {note: "x&y=z"}), so a value holding
// + % & = or a space filters on exactly that value.
func MetadataFilter(md map[string]string) string {
	keys := slices.Sorted(maps.Keys(md))
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = url.QueryEscape(k) + "=" + url.QueryEscape(md[k])
	}
	return url.QueryEscape(strings.Join(pairs, "&"))
}

// Pause snapshots a running sandbox (POST /sandboxes/{id}/pause, 204). E2B's
// 409 means either already paused (success) or being killed, so on a 409
// Pause reads the sandbox back: paused (or pausing, which reads paused) is
// success, 404 gone, anything else a conflict. Retried, each attempt
// bounded by Config.PauseTimeout. Errors: gone, conflict (being killed or
// running after all), transient.
func (p *Provider) Pause(ctx context.Context, sandboxID string) error {
	const op = "pause"
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{
			Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			URL: p.apiURL(nil, "sandboxes", sandboxID, "pause"), Timeout: p.cfg.PauseTimeout, Header: p.apiKey(),
		})
		switch {
		case err != nil:
			return err
		case r.OK():
			return nil
		case r.Status == http.StatusConflict:
			sb, _, gerr := p.get(ctx, op, sandboxID)
			switch {
			case gerr != nil:
				return gerr
			case sb.State == lifecycle.SandboxPaused:
				p.cfg.Logger.DebugContext(ctx, "e2b sandbox already paused", "sandbox_id", sandboxID)
				return nil
			default:
				return p.statusError(op, sandboxID, r)
			}
		default:
			return p.statusError(op, sandboxID, r)
		}
	})
}

// Resume connects to a sandbox (POST /v2/sandboxes/{id}/connect with the
// timeout in whole seconds, rounded up): E2B resumes a paused one (201) or
// only extends a running one's timeout (200), capping the expiry at the last
// start + the plan's maximum run length either way. Connect's answer carries
// no times, so Resume reads the sandbox back (GET) and reports the endAt
// E2B applied as ExpiresAt, with StartedAt and Metadata; if that read fails,
// ExpiresAt is now+timeout by Config.Clock (logged), an upper bound when
// capped. Connect is never retried (see the package doc). Errors: gone, conflict (E2B is killing it), transient; a
// plain error for a timeout under one second.
func (p *Provider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	const op = "resume"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Sandbox{}, err
	}
	if timeout < time.Second {
		return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	secs := seconds(timeout)
	r, err := p.roundTrip(ctx, request{
		Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		URL:  p.apiURL(nil, "v2", "sandboxes", sandboxID, "connect"),
		Body: timeoutBody{Timeout: secs}, Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
	})
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	if !r.OK() {
		return lifecycle.Sandbox{}, p.statusError(op, sandboxID, r)
	}
	var out createdSandbox
	if err := json.Unmarshal(r.Body, &out); err != nil {
		return lifecycle.Sandbox{}, decodeError(op, sandboxID, err)
	}
	p.tokens.put(sandboxID, out.EnvdAccessToken)
	p.domain.put(sandboxID, out.Domain)
	sb := lifecycle.Sandbox{
		ID:         sandboxID,
		Template:   out.TemplateID,
		State:      lifecycle.SandboxRunning,
		ExpiresAt:  p.cfg.Clock.Now().UTC().Add(time.Duration(secs) * time.Second),
		PreviewURL: p.PreviewURL(sandboxID, out.Domain),
	}
	p.readBack(ctx, op, &sb)
	return sb, nil
}

// readBack reads the running sandbox sb back (GET) and takes the expiry,
// start and metadata E2B holds, which a connect or a fork does not answer;
// if that read fails, sb keeps what it has (logged): its ExpiresAt is then
// an upper bound when E2B capped it.
func (p *Provider) readBack(ctx context.Context, op string, sb *lifecycle.Sandbox) {
	got, _, err := p.get(ctx, op, sb.ID)
	if err != nil || got.State != lifecycle.SandboxRunning {
		p.cfg.Logger.WarnContext(ctx, "e2b: could not read back the expiry E2B applied; assuming the one asked for",
			"op", op, "sandbox_id", sb.ID, "expires_at", sb.ExpiresAt, "err", err, "state", got.State)
		return
	}
	sb.ExpiresAt, sb.StartedAt, sb.Metadata = got.ExpiresAt, got.StartedAt, got.Metadata
}

// SetTimeout sets a running sandbox's timeout to now+timeout, rounded up to
// whole seconds (POST /sandboxes/{id}/timeout, 204); it may shorten it. E2B
// silently caps it at the last start + the plan's maximum run length (see
// SetTimeoutUntil for the expiry applied). A 409 (pausing, being killed,
// snapshotting) is transient: retried, then returned as transient.
// Retried. Errors: gone, transient; a plain error for a timeout under one
// second, or a 400 once the run-length limit has passed. E2B keeps timers
// only for running sandboxes, so calling it on a paused one answers 404
// (gone): call it on running ones.
func (p *Provider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	const op = "set timeout"
	if timeout < time.Second {
		return fmt.Errorf("set timeout of sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{
			Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			URL:  p.apiURL(nil, "sandboxes", sandboxID, "timeout"),
			Body: timeoutBody{Timeout: seconds(timeout)}, Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
		})
		switch {
		case err != nil:
			return err
		case r.Status == http.StatusConflict:
			return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, parseAPIError(r))
		case !r.OK():
			return p.statusError(op, sandboxID, r)
		}
		return nil
	})
}

// SetTimeoutUntil is SetTimeout followed by a read of the sandbox (GET): it
// returns the expiry E2B really applied, which is earlier than
// now+timeout when E2B capped it at the plan's run length. Errors: as
// SetTimeout and Get.
func (p *Provider) SetTimeoutUntil(ctx context.Context, sandboxID string, timeout time.Duration) (time.Time, error) {
	if err := p.SetTimeout(ctx, sandboxID, timeout); err != nil {
		return time.Time{}, err
	}
	sb, err := p.Get(ctx, sandboxID)
	if err != nil {
		return time.Time{}, err
	}
	if sb.State != lifecycle.SandboxRunning {
		return time.Time{}, lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, "set timeout", sandboxID,
			fmt.Errorf("sandbox is %s after its timeout was set", sb.State))
	}
	return sb.ExpiresAt, nil
}

// Probe checks a sandbox live without waking it. It reads the state through
// the control API first; a paused sandbox is reported as paused without any
// request to the sandbox. A running one must answer GET <envd>/health (204)
// within Config.ProbeTimeout, with X-Access-Token when this Provider knows
// the envd token (see Config.Secure); a 401 or 403 from there also counts as
// alive. Any other status (a 502 from E2B's proxy) or no answer at all is
// transient: running but not answering. Retried from the control API step.
// Errors: gone, transient.
func (p *Provider) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	var pr lifecycle.Probe
	err := p.withSandbox(ctx, "probe", sandboxID, func(ctx context.Context) error {
		var err error
		pr, err = p.probe(ctx, sandboxID)
		return err
	})
	return pr, err
}

// probe is one attempt of Probe.
func (p *Provider) probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	const op = "probe"
	sb, domain, err := p.get(ctx, op, sandboxID)
	if err != nil {
		return lifecycle.Probe{}, err
	}
	if sb.State == lifecycle.SandboxPaused {
		return lifecycle.Probe{State: lifecycle.SandboxPaused}, nil
	}
	var hdr http.Header
	if tok := p.tokens.get(sandboxID); tok != "" {
		hdr = http.Header{"X-Access-Token": {tok}}
	}
	r, err := p.roundTrip(ctx, request{
		Op: op, SandboxID: sandboxID, Method: http.MethodGet,
		URL: p.envdURL(sandboxID, domain) + "/health", Header: hdr, Timeout: p.cfg.ProbeTimeout,
	})
	if err != nil {
		return lifecycle.Probe{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID,
			fmt.Errorf("running but envd does not answer: %w", errors.Unwrap(err)))
	}
	switch {
	case r.OK():
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden:
		p.cfg.Logger.DebugContext(ctx, "e2b envd refused the probe's token; taking the answer as alive",
			"sandbox_id", sandboxID, "status", r.Status)
	default:
		return lifecycle.Probe{}, lifecycle.Transientf(op, sandboxID, 0,
			"running but envd does not answer: %w", parseAPIError(r))
	}
	return lifecycle.Probe{State: lifecycle.SandboxRunning, ExpiresAt: sb.ExpiresAt}, nil
}

// Kill deletes a sandbox (DELETE /sandboxes/{id}, 204); a 404 means it is
// already gone, which is success. Retried. Errors: transient.
func (p *Provider) Kill(ctx context.Context, sandboxID string) error {
	const op = "kill"
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{
			Op: op, SandboxID: sandboxID, Method: http.MethodDelete,
			URL: p.apiURL(nil, "sandboxes", sandboxID), Timeout: p.cfg.RequestTimeout, Header: p.apiKey(),
		})
		switch {
		case err != nil:
			return err
		case r.OK() || r.Status == http.StatusNotFound:
			p.tokens.forget(sandboxID)
			p.domain.forget(sandboxID)
			return nil
		default:
			return p.statusError(op, sandboxID, r)
		}
	})
}

// withSandbox checks sandboxID and runs attempt under retry.
func (p *Provider) withSandbox(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	return p.retry(ctx, op, sandboxID, attempt)
}

// checkID refuses a sandbox id that could not be one E2B issued before it
// is put into a URL path or a host name.
func checkID(op, sandboxID string) error {
	if !validID(sandboxID) {
		return fmt.Errorf("%s sandbox: invalid sandbox id %q", op, sandboxID)
	}
	return nil
}

// validID reports whether id is 1..128 letters, digits, '-' or '_': safe as
// a URL path segment and as a DNS label prefix (ours; E2B's ids are lowercase
// alphanumerics).
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// seconds returns d in whole seconds, rounded up.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

func orString(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// tokenCache remembers envd access tokens of secure sandboxes this process
// created or resumed. It is bounded: past maxTokens entries the oldest
// half is dropped, and such a sandbox is probed without its token.
type tokenCache struct {
	mu    sync.Mutex
	m     map[string]string
	order []string
}

const maxTokens = 4096

func (c *tokenCache) put(id, token string) {
	if token == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok {
		c.order = append(c.order, id)
	}
	c.m[id] = token
	if len(c.order) > maxTokens {
		drop := c.order[:len(c.order)/2]
		for _, old := range drop {
			delete(c.m, old)
		}
		c.order = slices.Clone(c.order[len(drop):])
	}
}

func (c *tokenCache) get(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[id]
}

func (c *tokenCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok {
		return
	}
	delete(c.m, id)
	c.order = slices.DeleteFunc(c.order, func(s string) bool { return s == id })
}
