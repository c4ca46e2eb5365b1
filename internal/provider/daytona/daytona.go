// Package daytona is the lifecycle.Provider for Daytona, over Daytona's
// REST API as docs/providers/daytona.md describes it.
//
// Mapping (daytona.md "State machine"): started is running; stopped,
// paused and archived are paused (resumable with POST /start); destroyed
// and a 404 are gone, and so is any sandbox whose desiredState is destroyed
// (a delete is under way); error with recoverable true is paused too (Resume
// recovers it), error without it and build_failed are gone, since nothing
// brings them back (their cause is in the error); every other state, and
// any state this package does not know, is transitional: Get and Probe
// answer lifecycle.ErrProviderTransient, Pause and Resume wait for it to
// settle.
//
// Operations: Create is POST /sandbox with the session metadata as labels
// and the provider-side guard as autoStopInterval (autoPauseInterval in
// PausePause mode) in whole minutes rounded up, then waits until started.
// Pause is POST /stop (or /pause) and waits until stopped. Resume sets the
// guard interval, POST /start (an archived sandbox is restored with
// RestoreTimeout instead of StartTimeout, and logged), waits until started
// and fetches the preview URL again, since Daytona changes the preview
// token on every start from stopped or archived. SetTimeout keeps the guard
// past the idle deadline: POST /last-activity re-anchors Daytona's idle
// clock to now, and the interval itself is set only when it differs from
// the sandbox's. Probe is GET /sandbox/{id} only: it never
// goes through the preview proxy, so it never counts as activity and never
// starts anything. Kill is DELETE (404 is success; 409, a change in
// progress, is retried). List filters by labels (a JSON object) and follows
// Daytona's cursors.
//
// Checkpoints (checkpoints.go, files.go): snapshots of a sandbox's
// filesystem, taken in the background and believed only once Daytona shows
// them by name; a new sandbox from one; fork of a VM sandbox; files read
// and written through the toolbox (docs/providers/daytona.md
// "Checkpoints").
//
// Errors follow lifecycle.Provider: 404 gone, 409 conflict, 429/5xx and
// no answer transient with the largest Retry-After-<bucket> (or plain
// Retry-After) Daytona sent, 401/403 and other 4xx plain errors carrying
// Daytona's message. Create's POST is never retried (a retry could make a
// second sandbox; the lifecycle service kills orphans by label).
package daytona

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// Name is the provider name stored on sessions.
const Name = "daytona"

// ImagePrefix marks a template that is a container image rather than a
// snapshot name: "image:python:3.12" is created from the one-line
// Dockerfile "FROM python:3.12".
const ImagePrefix = "image:"

// TemplateLabel is the label that names the template of a sandbox made
// from a checkpoint's snapshot or forked (its Daytona snapshot is then not
// the template), so that its preview port is the template's. Sandbox
// values leave it out of Metadata.
const TemplateLabel = "sandman_template"

// PreviewTokenParam is the query parameter that carries a private
// preview's token (daytona.md "Private preview").
const PreviewTokenParam = "DAYTONA_SANDBOX_AUTH_KEY"

var _ lifecycle.Provider = (*Provider)(nil)

// Provider is the Daytona lifecycle.Provider. It is safe for concurrent use.
type Provider struct {
	cfg  Config
	base *url.URL
}

// New returns a Provider for cfg, filling in defaults (see Config).
// Errors: APIKey is empty, BaseURL is not an absolute http(s) URL, or
// PauseMode is neither PauseStop nor PausePause.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.withDefaults()
	if cfg.APIKey == "" {
		return nil, errors.New("daytona: the Daytona API key is missing")
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("daytona: base url %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.PauseMode != PauseStop && cfg.PauseMode != PausePause {
		return nil, fmt.Errorf("daytona: pause mode %q is neither %q nor %q", cfg.PauseMode, PauseStop, PausePause)
	}
	return &Provider{cfg: cfg, base: base}, nil
}

// Name returns "daytona".
func (p *Provider) Name() string { return Name }

// Create makes a sandbox from req.Template (a snapshot name, or
// ImagePrefix and an image) labelled with req.Metadata, with the guard
// interval of req.Timeout (0: Daytona's default, 15 min) and the
// configured archive, delete and TTL intervals; AutoPause false makes it
// ephemeral (deleted when the guard stops it, as E2B kills on timeout).
// It then waits up to CreateTimeout until the sandbox is started and
// fetches its preview URL (BuildTimeout instead for an image, which
// Daytona builds first). A sandbox that ends in error or build_failed
// is deleted and a plain error returned. Errors: transient (the sandbox
// may exist: find it by its labels); plain for a bad template or request.
func (p *Provider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if req.Template == "" {
		return lifecycle.Sandbox{}, errors.New("create sandbox: the template is missing")
	}
	return p.create(ctx, "create", req, "")
}

// create is Create, or with snapshot set CreateFromSnapshot: the sandbox is
// made from that snapshot, and labelled with TemplateLabel = req.Template
// so that later calls find the template's preview port.
func (p *Provider) create(ctx context.Context, op string, req lifecycle.CreateRequest, snapshot string) (lifecycle.Sandbox, error) {
	body := createBody{Labels: maps.Clone(req.Metadata), Public: p.cfg.Public, Target: p.cfg.Target}
	if body.Labels == nil {
		body.Labels = map[string]string{}
	}
	switch img, isImage := strings.CutPrefix(req.Template, ImagePrefix); {
	case snapshot != "":
		body.Snapshot, body.Labels[TemplateLabel] = snapshot, req.Template
	case isImage:
		body.BuildInfo = &buildInfoBody{DockerfileContent: "FROM " + img + "\n", ContextHashes: []string{}}
	default:
		body.Snapshot = req.Template
	}
	if req.Timeout > 0 {
		m := guardMinutes(req.Timeout)
		if p.cfg.PauseMode == PausePause {
			zero := int64(0)
			body.AutoPauseInterval, body.AutoStopInterval = &m, &zero
		} else {
			body.AutoStopInterval = &m
		}
	}
	body.AutoArchiveInterval = minutesOf(p.cfg.AutoArchive)
	body.AutoDeleteInterval = p.deleteMinutes(req.AutoPause)
	body.TTLMinutes = minutesOf(p.cfg.TTL)
	var d sandboxBody
	if err := p.call(ctx, request{Op: op, Method: http.MethodPost, Path: []string{"sandbox"}, Body: body}, &d); err != nil {
		return lifecycle.Sandbox{}, err
	}
	if d.ID == "" {
		return lifecycle.Sandbox{}, fmt.Errorf("%s sandbox: daytona answered without an id", op)
	}
	wait := p.cfg.CreateTimeout
	if body.BuildInfo != nil {
		wait = p.cfg.BuildTimeout
	}
	return p.started(ctx, op, d, wait, cmp.Or(snapshot, req.Template), req.Template)
}

// started waits up to wait until the new sandbox d (made from what, for
// errors) is started and returns it with its preview URL (template's
// port). One that ends in error or build_failed is deleted and a plain
// error returned (daytona.md: errored sandboxes hold resources until
// deleted).
func (p *Provider) started(ctx context.Context, op string, d sandboxBody, wait time.Duration, what, template string) (lifecycle.Sandbox, error) {
	d, err := p.await(ctx, op, d, wait, func(d sandboxBody) bool { return d.State == "started" })
	if err != nil {
		if errors.Is(err, lifecycle.ErrSandboxGone) && d.ID != "" {
			if kerr := p.Kill(context.WithoutCancel(ctx), d.ID); kerr != nil {
				p.cfg.Logger.WarnContext(ctx, "delete a sandbox that failed to start", "sandbox_id", d.ID, "err", kerr)
			}
			return lifecycle.Sandbox{}, fmt.Errorf("%s sandbox from %s: %w", op, what, errors.Unwrap(err))
		}
		return lifecycle.Sandbox{}, err
	}
	sb := p.sandbox(d)
	sb.Template = cmp.Or(sb.Template, template)
	if sb.PreviewURL, err = p.previewURL(ctx, op, d.ID, p.previewPort(template)); err != nil {
		return lifecycle.Sandbox{}, err
	}
	return sb, nil
}

// deleteMinutes is the autoDeleteInterval of a new sandbox: 0 (deleted
// when the guard stops it) without autoPause, else Config.AutoDelete (nil:
// Daytona's default, never).
func (p *Provider) deleteMinutes(autoPause bool) *int64 {
	if !autoPause {
		zero := int64(0)
		return &zero
	}
	return minutesOf(p.cfg.AutoDelete)
}

// await polls GET /sandbox/{id} (waits of pollWait) until done(d) holds,
// starting from the answer d already read, for at most timeout by Clock.
// A sandbox that is gone (404, destroyed, unrecoverable error) ends it
// with ErrSandboxGone; running out of time with a transient error naming
// the state it is stuck in.
func (p *Provider) await(ctx context.Context, op string, d sandboxBody, timeout time.Duration, done func(sandboxBody) bool) (sandboxBody, error) {
	begun := p.cfg.Clock.Now()
	deadline := begun.Add(timeout)
	for {
		if done(d) {
			return d, nil
		}
		if classify(d) == classGone {
			return d, goneError(op, d)
		}
		if !p.cfg.Clock.Now().Before(deadline) {
			return d, lifecycle.Transientf(op, d.ID, p.cfg.PollInterval,
				"sandbox is still %s (desired %s) after %s", d.State, d.DesiredState, timeout)
		}
		if err := p.cfg.Sleep(ctx, p.pollWait(begun)); err != nil {
			return d, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, d.ID, err)
		}
		next, err := p.getRetried(ctx, op, d.ID)
		if err != nil {
			return d, err
		}
		d = next
	}
}

// get is one attempt of GET /sandbox/{id}.
func (p *Provider) get(ctx context.Context, op, sandboxID string) (sandboxBody, error) {
	var d sandboxBody
	err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet, Path: []string{"sandbox", sandboxID}}, &d)
	if err == nil && d.ID == "" {
		d.ID = sandboxID
	}
	return d, err
}

// getRetried is get under retry.
func (p *Provider) getRetried(ctx context.Context, op, sandboxID string) (sandboxBody, error) {
	var d sandboxBody
	err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		var err error
		d, err = p.get(ctx, op, sandboxID)
		return err
	})
	return d, err
}

// previewURL fetches the preview URL of port (retried): Daytona's url,
// with the token as PreviewTokenParam unless Config.Public.
func (p *Provider) previewURL(ctx context.Context, op, sandboxID string, port int) (string, error) {
	var out previewBody
	err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet,
			Path: []string{"sandbox", sandboxID, "ports", strconv.Itoa(port), "preview-url"}}, &out)
	})
	if err != nil {
		return "", err
	}
	u, perr := url.Parse(out.URL)
	if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%s: daytona answered a bad preview url %q", provhttp.Describe(op, sandboxID), out.URL)
	}
	if !p.cfg.Public && out.Token != "" {
		q := u.Query()
		q.Set(PreviewTokenParam, out.Token)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// Get reads a sandbox through GET /sandbox/{id} (never the sandbox
// itself). PreviewURL is left "" (fetching it costs a call, and its token
// only changes on a start, after which Resume fetches it); StartedAt is
// createdAt; PausedAt is updatedAt. Retried. Errors: gone (404, destroyed,
// unrecoverable error, build_failed), transient (including a transitional
// state, with RetryAfter PollInterval).
func (p *Provider) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	const op = "get"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Sandbox{}, err
	}
	var sb lifecycle.Sandbox
	err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		d, err := p.get(ctx, op, sandboxID)
		if err != nil {
			return err
		}
		switch classify(d) {
		case classGone:
			return goneError(op, d)
		case classTransitional:
			return p.transitionalError(op, d)
		}
		sb = p.sandbox(d)
		return nil
	})
	return sb, err
}

// List returns one page of GET /sandbox: req.Metadata as the labels JSON
// filter, req.States as repeated states (running: started; paused:
// stopped, paused, archived), req.Limit as limit (capped at Daytona's 200;
// 0: Daytona's 100) and req.PageToken as cursor; NextToken is Daytona's
// nextCursor. Daytona's list is eventually consistent, so an item whose
// state is not one asked for (a tombstone of a deleted sandbox) is
// dropped. Retried. Errors: transient; plain for an unknown state or a
// cursor Daytona did not issue.
func (p *Provider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	const op = "list"
	states := req.States
	if len(states) == 0 {
		states = []lifecycle.SandboxState{lifecycle.SandboxRunning, lifecycle.SandboxPaused}
	}
	q := url.Values{}
	want := map[lifecycle.SandboxState]bool{}
	for _, s := range states {
		switch s {
		case lifecycle.SandboxRunning:
			q.Add("states", "started")
		case lifecycle.SandboxPaused:
			q.Add("states", "stopped")
			q.Add("states", "paused")
			q.Add("states", "archived")
		default:
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: unknown sandbox state %q", s)
		}
		want[s] = true
	}
	if len(req.Metadata) > 0 {
		b, err := jsonMarshal(req.Metadata)
		if err != nil {
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: encode labels: %w", err)
		}
		q.Set("labels", string(b))
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(req.Limit, 200)))
	}
	if req.PageToken != "" {
		q.Set("cursor", req.PageToken)
	}
	var page lifecycle.SandboxPage
	err := p.retry(ctx, op, "", 0, func(ctx context.Context) error {
		var out listBody
		if err := p.call(ctx, request{Op: op, Method: http.MethodGet, Path: []string{"sandbox"}, Query: q}, &out); err != nil {
			return err
		}
		page = lifecycle.SandboxPage{Sandboxes: make([]lifecycle.Sandbox, 0, len(out.Items))}
		if out.NextCursor != nil {
			page.NextToken = *out.NextCursor
		}
		for _, d := range out.Items {
			if c := classify(d); c != classRunning && c != classResumable || d.State == "error" {
				continue
			}
			if sb := p.sandbox(d); want[sb.State] && hasLabels(d.Labels, req.Metadata) {
				page.Sandboxes = append(page.Sandboxes, sb)
			}
		}
		return nil
	})
	return page, err
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Pause stops a started sandbox (POST /stop, or /pause in PausePause mode,
// falling back to /stop on a 422) and waits up to StopTimeout until it is
// stopped (or paused). A sandbox already stopped, paused or archived, or
// errored but recoverable, succeeds at once; one still changing state is
// waited for first; a 409 (a change in flight) is waited out. An ephemeral
// sandbox is deleted by Daytona instead: that is gone. Errors: gone,
// transient (including still stopping at the deadline), conflict (a delete
// is in flight).
func (p *Provider) Pause(ctx context.Context, sandboxID string) error {
	const op = "pause"
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	begun := p.cfg.Clock.Now()
	deadline := begun.Add(p.cfg.StopTimeout)
	mode := p.cfg.PauseMode
	for {
		d, err := p.getRetried(ctx, op, sandboxID)
		if err != nil {
			return err
		}
		switch {
		case classify(d) == classResumable:
			return nil
		case classify(d) == classGone:
			return goneError(op, d)
		case d.State == "started" && d.DesiredState == "started":
			err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
				return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
					Path: []string{"sandbox", sandboxID, mode}}, nil)
			})
			switch {
			case err == nil, errors.Is(err, lifecycle.ErrSandboxConflict), statusOf(err) == http.StatusBadRequest:
				// Posted, raced another change, or "not in a stoppable
				// state" because it stopped meanwhile: read it again.
			case statusOf(err) == http.StatusUnprocessableEntity && mode == PausePause:
				p.cfg.Logger.InfoContext(ctx, "daytona sandbox class cannot pause; stopping instead", "sandbox_id", sandboxID)
				mode = PauseStop
			default:
				return err
			}
		}
		if !p.cfg.Clock.Now().Before(deadline) {
			return lifecycle.Transientf(op, sandboxID, p.cfg.PollInterval,
				"sandbox is still %s (desired %s) after %s", d.State, d.DesiredState, p.cfg.StopTimeout)
		}
		if err := p.cfg.Sleep(ctx, p.pollWait(begun)); err != nil {
			return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, err)
		}
	}
}

// Resume starts a stopped, paused or archived sandbox (POST /start; POST
// /recover for a recoverable error) after setting its guard interval to
// timeout (whole minutes, rounded up), waits until it is started (up to
// StartTimeout, or RestoreTimeout once it is seen archived or restoring:
// restoring from object storage is slow, and is logged at Info with how
// long it took), and returns it with a fresh PreviewURL (the token changes
// on every start from stopped or archived). A started sandbox only has its
// guard extended (as SetTimeout does) when now+timeout is later than its
// current expiry; it is never shortened. ExpiresAt is lastActivityAt plus the
// interval; Daytona counts a start as activity. Errors: gone, conflict (a
// delete is in flight), transient (including still starting at the
// deadline); plain for a 400 such as a quota.
func (p *Provider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	const op = "resume"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Sandbox{}, err
	}
	if timeout < time.Second {
		return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	m := guardMinutes(timeout)
	begun := p.cfg.Clock.Now()
	deadline := begun.Add(p.cfg.StartTimeout)
	restoring, woke, refused := false, false, 0
	for {
		d, err := p.getRetried(ctx, op, sandboxID)
		if err != nil {
			return lifecycle.Sandbox{}, err
		}
		if (d.State == "archived" || d.State == "restoring") && !restoring {
			restoring = true
			deadline = begun.Add(p.cfg.RestoreTimeout)
			p.cfg.Logger.InfoContext(ctx, "daytona sandbox is archived; restoring it may take minutes",
				"sandbox_id", sandboxID, "timeout", p.cfg.RestoreTimeout)
		}
		switch {
		case d.State == "started" && d.DesiredState == "started":
			if now := p.cfg.Clock.Now(); !woke && now.Add(time.Duration(m)*time.Minute).After(p.expiresAt(d)) {
				// Running already: only ever extend its guard, never shorten it.
				if err := p.refresh(ctx, op, sandboxID, m, p.guard(d)); err != nil {
					return lifecycle.Sandbox{}, err
				}
				d.LastActivityAt = now
				if p.cfg.PauseMode == PausePause && d.AutoPauseInterval > 0 {
					d.AutoPauseInterval = m
				} else {
					d.AutoStopInterval = m
				}
			} else if restoring {
				p.cfg.Logger.InfoContext(ctx, "daytona sandbox restored from archive",
					"sandbox_id", sandboxID, "took", p.cfg.Clock.Now().Sub(begun))
			}
			sb := p.sandbox(d)
			if sb.PreviewURL, err = p.previewURL(ctx, op, sandboxID, p.previewPort(sb.Template)); err != nil {
				return lifecycle.Sandbox{}, err
			}
			return sb, nil
		case classify(d) == classGone:
			return lifecycle.Sandbox{}, goneError(op, d)
		case classify(d) == classResumable:
			if err := p.setGuard(ctx, op, sandboxID, m, p.guard(d)); err != nil {
				return lifecycle.Sandbox{}, err
			}
			action := "start"
			if d.State == "error" {
				action = "recover"
			}
			err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
				return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
					Path: []string{"sandbox", sandboxID, action}}, nil)
			})
			switch {
			case err == nil:
				woke = true
			case errors.Is(err, lifecycle.ErrSandboxConflict):
			case statusOf(err) == http.StatusBadRequest && refused == 0:
				refused++ // its state moved under us: read it again once
			default:
				return lifecycle.Sandbox{}, err
			}
		case d.State == "starting" || d.State == "restoring" || d.State == "resuming":
			woke = true // ours or another caller's start: the token changes either way
		}
		if !p.cfg.Clock.Now().Before(deadline) {
			return lifecycle.Sandbox{}, lifecycle.Transientf(op, sandboxID, p.cfg.PollInterval,
				"sandbox is still %s (desired %s) after %s", d.State, d.DesiredState, deadline.Sub(begun))
		}
		if err := p.cfg.Sleep(ctx, p.pollWait(begun)); err != nil {
			return lifecycle.Sandbox{}, lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID, err)
		}
	}
}

// SetTimeout keeps Daytona's guard at now+timeout on a started sandbox:
// it reads the sandbox (GET), sets the guard interval (POST
// /autostop/{min}, or /autopause in PausePause mode) to timeout in whole
// minutes, rounded up, when it differs, and re-anchors Daytona's idle clock
// with POST /sandbox/{id}/last-activity: usually two calls, one of them a
// read. Daytona buffers activity refreshes for up to 10 s, so callers
// refresh well before the guard fires (lifecycle.Policy.NeedsProviderRefresh
// does). A sandbox that is no longer running (stopped by the guard,
// stopping, archived, being deleted) answers ErrSandboxGone, as E2B's 404
// does for a sandbox that paused itself: the lifecycle service then
// reconciles the session through Get. Retried. Errors: gone, transient
// (including a sandbox still starting); plain for a timeout under one
// second.
func (p *Provider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	const op = "set timeout"
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	if timeout < time.Second {
		return fmt.Errorf("set timeout of sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	var d sandboxBody
	err := p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		var err error
		if d, err = p.get(ctx, op, sandboxID); err != nil {
			return err
		}
		switch {
		case classify(d) == classRunning && d.DesiredState == "started":
			return nil
		case classify(d) == classTransitional && d.DesiredState == "started":
			return p.transitionalError(op, d)
		}
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID,
			fmt.Errorf("sandbox is %s (desired %s), not running", d.State, d.DesiredState))
	})
	if err != nil {
		return err
	}
	return p.refresh(ctx, op, sandboxID, guardMinutes(timeout), p.guard(d))
}

// refresh sets the guard interval to m (see setGuard) and re-anchors
// Daytona's idle clock with POST /last-activity.
func (p *Provider) refresh(ctx context.Context, op, sandboxID string, m, current int64) error {
	if err := p.setGuard(ctx, op, sandboxID, m, current); err != nil {
		return err
	}
	return p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			Path: []string{"sandbox", sandboxID, "last-activity"}, Body: struct{}{}}, nil)
	})
}

// setGuard sets the guard interval to m minutes unless current (the
// sandbox's, as just read) already is m.
func (p *Provider) setGuard(ctx context.Context, op, sandboxID string, m, current int64) error {
	if current == m {
		return nil
	}
	timer := "autostop"
	if p.cfg.PauseMode == PausePause {
		timer = "autopause"
	}
	return p.retry(ctx, op, sandboxID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			Path: []string{"sandbox", sandboxID, timer, strconv.FormatInt(m, 10)}}, nil)
	})
}

// Probe reads the sandbox through GET /sandbox/{id} only: Daytona's
// preview proxy never starts a stopped sandbox and a proxied request
// counts as activity, so the control API is the only safe probe
// (daytona.md). Started is running with ExpiresAt = lastActivityAt + the
// guard interval; stopped, paused, archived or recoverable error is
// paused. Retried. Errors: gone, transient (including a transitional
// state).
func (p *Provider) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	sb, err := p.Get(ctx, sandboxID)
	if err != nil {
		var pe *lifecycle.ProviderError
		if errors.As(err, &pe) {
			pe.Op = "probe"
		}
		return lifecycle.Probe{}, err
	}
	return lifecycle.Probe{State: sb.State, ExpiresAt: sb.ExpiresAt}, nil
}

// Kill deletes the sandbox (DELETE /sandbox/{id}). A 404 is success (it is
// gone); a 409 (a change in flight, or a delete already under way) is
// retried up to ConflictRetries times, and a delete already under way
// (desiredState destroyed) is success. Errors: transient (still refused
// after the retries); plain for a 400 such as live forks.
func (p *Provider) Kill(ctx context.Context, sandboxID string) error {
	const op = "kill"
	if err := checkID(op, sandboxID); err != nil {
		return err
	}
	err := p.retry(ctx, op, sandboxID, p.cfg.ConflictRetries, func(ctx context.Context) error {
		err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodDelete,
			Path: []string{"sandbox", sandboxID}}, nil)
		if errors.Is(err, lifecycle.ErrSandboxConflict) {
			if d, gerr := p.get(ctx, op, sandboxID); errors.Is(gerr, lifecycle.ErrSandboxGone) ||
				(gerr == nil && (d.DesiredState == "destroyed" || d.State == "destroyed")) {
				return nil
			}
		}
		return err
	})
	switch {
	case err == nil, errors.Is(err, lifecycle.ErrSandboxGone):
		return nil
	case errors.Is(err, lifecycle.ErrSandboxConflict):
		var pe *lifecycle.ProviderError
		errors.As(err, &pe)
		return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, sandboxID,
			fmt.Errorf("still changing state after %d retries: %w", p.cfg.ConflictRetries, pe.Err))
	}
	return err
}

// checkID refuses a sandbox id that could not be one Daytona issued (a
// UUID or a sandbox name) before it is put into a URL path.
func checkID(op, sandboxID string) error {
	if sandboxID == "" || len(sandboxID) > 128 {
		return fmt.Errorf("%s sandbox: invalid sandbox id %q", op, sandboxID)
	}
	for _, c := range []byte(sandboxID) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("%s sandbox: invalid sandbox id %q", op, sandboxID)
		}
	}
	if sandboxID == "." || sandboxID == ".." {
		return fmt.Errorf("%s sandbox: invalid sandbox id %q", op, sandboxID)
	}
	return nil
}
