// Package vercel is the lifecycle.Provider for Vercel Sandbox, over its
// named-sandbox ("v2", persistent) REST API as
// docs/providers/vercel.md describes it.
//
// A Sandman sandbox id is the Vercel sandbox's name, which is stable; the
// session (one boot of the microVM, addressed by currentSessionId) changes
// on every resume. Mapping:
//   - Create: POST /v3/sandboxes (POST /v2/sandboxes for a legacy runtime)
//     named after the Sandman session, persistent (CreateRequest.AutoPause),
//     tagged with the sandman_session_id and sandman_deployment metadata
//     (Vercel allows 5 tags, so other metadata stays in Sandman's table),
//     the template's image and ports, and timeout = the provider-side guard:
//     at its deadline Vercel stops the session and snapshots it by itself.
//     The name makes create idempotent: a retry whose first attempt did
//     create the sandbox gets 400 for the taken name and adopts it after
//     checking that its tags are the ones sent (vercel/eve #394).
//   - Pause: stop the current session (blocking: it returns once the
//     snapshot is taken), read fresh with a get so a stale session id is
//     never stopped.
//   - Resume: GET ?resume=true boots a new session from the snapshot, or
//     leaves a running one alone; the guard is then extended if it falls
//     short of the timeout asked for. 410 snapshot_not_found means the
//     snapshot expired and the state is gone: lifecycle.ErrSandboxGone.
//   - SetTimeout: extend-timeout of the current session by what is missing,
//     never past Config.MaxSessionTimeout; nothing when the deadline is
//     already far enough (Vercel cannot shorten a session). The lifecycle
//     service calls it only when its guard needs moving, never per
//     heartbeat.
//   - Probe and Get: GET with resume=false, which never boots a session.
//     Vercel has no in-sandbox health endpoint and the preview port may not
//     listen, so the session status the control API reports is the probe.
//   - Kill: DELETE, with deleteOrphanSnapshots=true unless the sandbox
//     holds checkpoints; 404 is success.
//   - Preview URLs come from the routes the API returns, never computed.
//   - Checkpoints (lifecycle.Snapshotter, checkpoints.go; lifecycle.Files,
//     files.go): Vercel's snapshots, which stop the session they are
//     taken of; no lifecycle.Forker (Vercel forks a sandbox's current
//     snapshot, not its live state).
//   - Commands (lifecycle.CommandRunner, commands.go): the app is started
//     detached with the run-command API in the current session and read
//     back by the command id this Provider kept; processes are lost with
//     the session, so every resume starts the app again.
//
// Statuses: running and pending are running; stopped, stopping and
// snapshotting of a persistent sandbox with a snapshot are paused; a
// stopped, failed or aborted sandbox without a snapshot (or not
// persistent) has lost its state and is reported as gone.
//
// Errors: 404 and 410 are lifecycle.ErrSandboxGone, 422 (stopping,
// snapshotting) lifecycle.ErrSandboxConflict, 429/5xx/no answer
// lifecycle.ErrProviderTransient with Retry-After; 401/403 and 400 are
// plain errors (configuration or bugs). Every call is idempotent here
// (names, stop of a stopped session, resume of a running one, delete of a
// deleted one), so each is retried up to Config.MaxRetries times.
//
// Vercel sends no webhooks for sandboxes: nothing tells Sandman when a
// session stopped at its deadline. The sweep's provider reconcile (List,
// then Get) finds such drift within one sweep.
package vercel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Name is the provider name stored on sessions.
const Name = "vercel"

// The statuses of sessions and sandboxes (the sheet's state machine).
const (
	statusPending      = "pending"
	statusRunning      = "running"
	statusStopping     = "stopping"
	statusSnapshotting = "snapshotting"
	statusStopped      = "stopped"
	statusFailed       = "failed"
	statusAborted      = "aborted"
)

// maxTags is Vercel's limit on tags per sandbox.
const maxTags = 5

var _ lifecycle.Provider = (*Provider)(nil)

// Provider is the Vercel Sandbox lifecycle.Provider. It is safe for
// concurrent use.
type Provider struct {
	cfg  Config
	base *url.URL
	cmds *commandIDs // the commands this Provider started (commands.go)
}

// New returns a Provider for cfg with defaults filled in (see Config).
// Errors: Token or ProjectID missing, BaseURL not an absolute http(s) URL,
// a template with more than 15 ports.
func New(cfg Config) (*Provider, error) {
	cfg = cfg.withDefaults()
	if cfg.Token == "" {
		return nil, errors.New("vercel: the Vercel token is missing")
	}
	if cfg.ProjectID == "" {
		return nil, errors.New("vercel: the Vercel project id is missing")
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("vercel: base url %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	for name, t := range cfg.Templates {
		if len(t.ports()) > 15 {
			return nil, fmt.Errorf("vercel: template %q has more than 15 ports", name)
		}
	}
	return &Provider{cfg: cfg, base: base, cmds: &commandIDs{}}, nil
}

// Name returns "vercel".
func (p *Provider) Name() string { return Name }

func (t Template) previewPort() int {
	if t.PreviewPort != 0 {
		return t.PreviewPort
	}
	return DefaultPreviewPort
}

// ports returns the template's ports with its preview port included.
func (t Template) ports() []int {
	ps := slices.Clone(t.Ports)
	if !slices.Contains(ps, t.previewPort()) {
		ps = append(ps, t.previewPort())
	}
	return ps
}

// Create makes a named persistent sandbox (see the package doc) and
// returns it running. Its name is the sandman_session_id metadata when that
// is a valid name, else "sandman-" and 16 random hex digits. req.Timeout is
// sent in ms, capped at Config.MaxSessionTimeout and at least 1 s; 0 sends
// none (Vercel's 5 min applies). Only the sandman_* metadata become tags
// (at most 4: createBody). Retried. Errors: transient; conflict when the name is taken
// by a sandbox with other tags (another session or deployment); a plain error for an unknown template,
// a bad token, or a 400.
func (p *Provider) Create(ctx context.Context, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	tmpl, ok := p.cfg.Templates[req.Template]
	if !ok {
		return lifecycle.Sandbox{}, fmt.Errorf("create sandbox: unknown template %q", req.Template)
	}
	name := req.Metadata[lifecycle.MetadataSessionID]
	if !validName(name) {
		name = randomName()
	}
	body := p.createBody(req, tmpl, name)
	body.Image, body.Runtime = tmpl.Image, tmpl.Runtime
	return p.create(ctx, "create", req.Template, tmpl, body)
}

// randomName is "sandman-" and 16 random hex digits.
func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sandman-" + hex.EncodeToString(b[:])
}

// createBody is the body of a create of req named name, without its image
// or source. Only the sandman_* metadata become tags, at most 4: Vercel
// allows 5, and one is kept for the checkpoint tag (checkpoints.go).
func (p *Provider) createBody(req lifecycle.CreateRequest, tmpl Template, name string) createBody {
	tags := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(req.Metadata)) {
		if strings.HasPrefix(k, lifecycle.MetadataPrefix) && len(tags) < maxTags-1 {
			tags[k] = req.Metadata[k]
		}
	}
	body := createBody{ProjectID: p.cfg.ProjectID, Name: name, Ports: tmpl.ports(), Tags: tags, Persistent: req.AutoPause}
	if req.Timeout > 0 {
		body.Timeout = millis(min(max(req.Timeout, time.Second), p.cfg.MaxSessionTimeout))
	}
	if tmpl.VCPUs > 0 {
		body.Resources = &resources{VCPUs: tmpl.VCPUs}
	}
	if p.cfg.SnapshotExpiration > 0 {
		body.SnapshotExpiration = millis(p.cfg.SnapshotExpiration)
	}
	return body
}

// create makes the sandbox of body (POST /v3/sandboxes, /v2 for a legacy
// runtime), reported as op, adopting it when an earlier attempt made it;
// a 410 snapshot_not_found (a create from a snapshot) is
// lifecycle.ErrCheckpointGone. Retried.
func (p *Provider) create(ctx context.Context, op, template string, tmpl Template, body createBody) (lifecycle.Sandbox, error) {
	version := "v3"
	if body.Runtime != "" {
		version = "v2"
	}
	var sb lifecycle.Sandbox
	err := p.retry(ctx, op, "", func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodPost, Path: []string{version, "sandboxes"},
			Body: body, Timeout: p.cfg.RequestTimeout})
		switch {
		case err != nil:
			return err
		case r.Status == http.StatusBadRequest:
			// Perhaps our own earlier attempt took the name.
			return p.adopt(ctx, op, body.Name, body.Tags, tmpl, r, &sb)
		case body.Source != nil && r.Status == http.StatusGone && parseAPIError(r).Code == codeSnapshotNotFound:
			return lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, body.Source.SnapshotID, parseAPIError(r))
		case !r.OK():
			return p.statusError(op, "", r)
		}
		var a sandboxAnswer
		if err := json.Unmarshal(r.Body, &a); err != nil {
			return decodeError(op, body.Name, err)
		}
		sb, err = p.sandbox(a, tmpl)
		if err != nil {
			return decodeError(op, body.Name, err)
		}
		if sb.PreviewURL == "" {
			return decodeError(op, body.Name, fmt.Errorf("no route for preview port %d", tmpl.previewPort()))
		}
		return nil
	})
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	sb.Template = template
	return sb, nil
}

// adopt handles a 400 to create: when the name is taken by a sandbox
// carrying exactly the tags we sent (the same session and deployment), that
// sandbox is ours (an earlier attempt whose answer was lost) and is
// returned in *sb, resumed if it has stopped since; when it carries other
// tags the 400 becomes a conflict; when the name is free the 400 stands.
func (p *Provider) adopt(ctx context.Context, op, name string, tags map[string]string, tmpl Template, bad reply, sb *lifecycle.Sandbox) error {
	a, err := p.get(ctx, op, name, false)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return p.statusError(op, "", bad)
	}
	if err != nil {
		return err
	}
	if !maps.Equal(metadataOf(a.Sandbox.Tags), metadataOf(tags)) {
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, name,
			fmt.Errorf("the name is taken by another session's sandbox: %w", parseAPIError(bad)))
	}
	if a.Sandbox.Status != statusRunning && a.Sandbox.Status != statusPending {
		if a, err = p.get(ctx, op, name, true); err != nil {
			return err
		}
	}
	p.cfg.Logger.InfoContext(ctx, "vercel sandbox of this session already exists; adopting it", "sandbox_id", name)
	*sb, err = p.sandbox(a, tmpl)
	if err != nil {
		return decodeError(op, name, err)
	}
	return nil
}

// get is one attempt of GET /v2/sandboxes/{name} with resume, reported as
// op.
func (p *Provider) get(ctx context.Context, op, name string, resume bool) (sandboxAnswer, error) {
	timeout := p.cfg.RequestTimeout
	if resume {
		timeout = p.cfg.ResumeTimeout
	}
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: name, Method: http.MethodGet,
		Path: []string{"v2", "sandboxes", name}, Timeout: timeout,
		Query: url.Values{"projectId": {p.cfg.ProjectID}, "resume": {strconv.FormatBool(resume)}}})
	if err != nil {
		return sandboxAnswer{}, err
	}
	if !r.OK() {
		return sandboxAnswer{}, p.statusError(op, name, r)
	}
	var a sandboxAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		return sandboxAnswer{}, decodeError(op, name, err)
	}
	if a.Sandbox.Name == "" {
		a.Sandbox.Name = name
	}
	return a, nil
}

// Get reads a sandbox with GET ?resume=false, which never boots it. A
// running one has ExpiresAt (its session deadline) and PreviewURL; a paused
// one PausedAt (the session's stoppedAt). Retried. Errors: gone (404, or no
// state to resume), transient.
func (p *Provider) Get(ctx context.Context, sandboxID string) (lifecycle.Sandbox, error) {
	const op = "get"
	var sb lifecycle.Sandbox
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		if _, ok := state(a.Sandbox); !ok {
			return goneError(op, a)
		}
		sb, err = p.sandbox(a, p.templateFor(a))
		if err != nil {
			return decodeError(op, sandboxID, err)
		}
		return nil
	})
	return sb, err
}

// List returns one page of GET /v2/sandboxes?project=… sorted by createdAt,
// newest first. Vercel filters by one tag only: the sandman_session_id
// entry of req.Metadata when present, else its first key; other entries
// and req.States (default running and paused) are applied here, and
// sandboxes that lost their state are left out. Because of that filtering,
// List reads further API pages (at most Config.MaxListPages) until one
// sandbox passes, so an empty page with a NextToken is rare. req.Limit is
// clamped to Vercel's 1-50 (0: Vercel's 20); PageToken is Vercel's cursor.
// Retried. Errors: transient; a plain error for an unknown state or a 400.
func (p *Provider) List(ctx context.Context, req lifecycle.ListRequest) (lifecycle.SandboxPage, error) {
	const op = "list"
	states := req.States
	if len(states) == 0 {
		states = []lifecycle.SandboxState{lifecycle.SandboxRunning, lifecycle.SandboxPaused}
	}
	for _, s := range states {
		if s != lifecycle.SandboxRunning && s != lifecycle.SandboxPaused {
			return lifecycle.SandboxPage{}, fmt.Errorf("list sandboxes: unknown sandbox state %q", s)
		}
	}
	q := url.Values{"project": {p.cfg.ProjectID}, "sortBy": {"createdAt"}, "sortOrder": {"desc"}}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(max(req.Limit, 1), 50)))
	}
	if k := tagFilter(req.Metadata); k != "" {
		q.Set("tags", k+":"+req.Metadata[k])
	}
	page := lifecycle.SandboxPage{Sandboxes: []lifecycle.Sandbox{}}
	cursor := req.PageToken
	for n := 0; n < p.cfg.MaxListPages; n++ {
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var a listAnswer
		err := p.retry(ctx, op, "", func(ctx context.Context) error {
			r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodGet, Path: []string{"v2", "sandboxes"},
				Query: q, Timeout: p.cfg.RequestTimeout})
			if err != nil {
				return err
			}
			if !r.OK() {
				return p.statusError(op, "", r)
			}
			a = listAnswer{}
			if err := json.Unmarshal(r.Body, &a); err != nil {
				return decodeError(op, "", err)
			}
			return nil
		})
		if err != nil {
			return lifecycle.SandboxPage{}, err
		}
		for _, s := range a.Sandboxes {
			st, ok := state(s)
			if !ok || !slices.Contains(states, st) || !hasTags(s.Tags, req.Metadata) {
				continue
			}
			page.Sandboxes = append(page.Sandboxes, p.sandboxOf(s, st))
		}
		cursor = ""
		if a.Pagination.Next != nil {
			cursor = *a.Pagination.Next
		}
		if cursor == "" || len(page.Sandboxes) > 0 {
			break
		}
	}
	page.NextToken = cursor
	return page, nil
}

// tagFilter picks the one tag Vercel filters by: the session id when asked
// for (the most selective), else the first key in order.
func tagFilter(md map[string]string) string {
	if _, ok := md[lifecycle.MetadataSessionID]; ok {
		return lifecycle.MetadataSessionID
	}
	keys := slices.Sorted(maps.Keys(md))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

func hasTags(tags, want map[string]string) bool {
	for k, v := range want {
		if got, ok := tags[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Pause stops the sandbox's current session: a get (resume=false) names
// the session, then POST /v2/sandboxes/sessions/{id}/stop blocks until the
// snapshot is taken (bounded by Config.StopTimeout). A stopped sandbox with
// a snapshot is already paused: success without a stop. Retried (a retry
// reads the session again). Errors: gone (404, or stopped without a
// snapshot), conflict (422), transient.
func (p *Provider) Pause(ctx context.Context, sandboxID string) error {
	const op = "pause"
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		st, ok := state(a.Sandbox)
		if !ok {
			return goneError(op, a)
		}
		if st == lifecycle.SandboxPaused && a.Sandbox.Status != statusStopping && a.Sandbox.Status != statusSnapshotting {
			return nil
		}
		sessionID := orString(a.Sandbox.CurrentSessionID, a.Session.ID)
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
			Path: []string{"v2", "sandboxes", "sessions", sessionID, "stop"}, Timeout: p.cfg.StopTimeout})
		switch {
		case err != nil:
			return err
		case r.OK():
			return nil
		case r.Status == http.StatusGone && parseAPIError(r).Code == "sandbox_stopped":
			return nil
		default:
			return p.statusError(op, sandboxID, r)
		}
	})
}

// Resume boots the sandbox again with GET ?resume=true (a running one is
// left running) and then, if the session's deadline falls short of
// now+timeout, extends it (see SetTimeout). It returns the new session's
// state with the PreviewURL of its routes. Retried: resuming a running
// sandbox is a no-op. Errors: gone (404; 410 snapshot_not_found: the
// snapshot expired), conflict (422: still stopping or snapshotting),
// transient; a plain error for a timeout under one second.
func (p *Provider) Resume(ctx context.Context, sandboxID string, timeout time.Duration) (lifecycle.Sandbox, error) {
	const op = "resume"
	if timeout < time.Second {
		return lifecycle.Sandbox{}, fmt.Errorf("resume sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	var sb lifecycle.Sandbox
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, true)
		if err != nil {
			return err
		}
		if a.Sandbox.Status != statusRunning && a.Sandbox.Status != statusPending {
			return lifecycle.Transientf(op, sandboxID, conflictRetryAfter,
				"resume answered with a %s session", a.Sandbox.Status)
		}
		if err := p.extend(ctx, op, a, timeout, &a); err != nil {
			return err
		}
		sb, err = p.sandbox(a, p.templateFor(a))
		if err != nil {
			return decodeError(op, sandboxID, err)
		}
		return nil
	})
	return sb, err
}

// SetTimeout makes the current session's deadline at least now+timeout
// with one extend-timeout by the missing part (rounded up to whole seconds,
// at least 1 s), never past Config.MaxSessionTimeout of session length. A
// deadline already far enough is left alone (Vercel cannot shorten a
// session; it only grows), and so is a session at the plan maximum (logged:
// Vercel will stop it then). Retried. Errors: gone (404, or the session is
// not running: the sandbox stopped itself), transient; a plain error for a
// timeout under one second or a 400 (a plan maximum lower than configured).
func (p *Provider) SetTimeout(ctx context.Context, sandboxID string, timeout time.Duration) error {
	const op = "set timeout"
	if timeout < time.Second {
		return fmt.Errorf("set timeout of sandbox %s: timeout %s is under one second", sandboxID, timeout)
	}
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		if a.Sandbox.Status != statusRunning && a.Sandbox.Status != statusPending {
			return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID,
				fmt.Errorf("its session is %s, not running", a.Sandbox.Status))
		}
		return p.extend(ctx, op, a, timeout, nil)
	})
}

// extend extends the running session of a so that it lasts until at least
// now+timeout, within the plan maximum. When out is non-nil the extended
// session is written into it.
func (p *Provider) extend(ctx context.Context, op string, a sandboxAnswer, timeout time.Duration, out *sandboxAnswer) error {
	return p.extendSession(ctx, op, a, timeout, out, false)
}

// extendSession is extend; replaced is true when a's session replaced the
// one a first attempt addressed (it is tried once).
func (p *Provider) extendSession(ctx context.Context, op string, a sandboxAnswer, timeout time.Duration, out *sandboxAnswer, replaced bool) error {
	name := a.Sandbox.Name
	dl := deadline(a.Sandbox, a.Session)
	want := p.cfg.Clock.Now().Add(timeout)
	if dl.IsZero() || !dl.Before(want) {
		return nil
	}
	missing := want.Sub(dl)
	missing = ((missing + time.Second - 1) / time.Second) * time.Second
	if room := p.cfg.MaxSessionTimeout - time.Duration(a.Session.Timeout)*time.Millisecond; missing > room {
		p.cfg.Logger.WarnContext(ctx, "vercel session reaches the plan's maximum length; it will stop then",
			"sandbox_id", name, "max_session", p.cfg.MaxSessionTimeout, "missing", missing)
		missing = room.Truncate(time.Second)
	}
	if missing < time.Second {
		return nil
	}
	sessionID := orString(a.Sandbox.CurrentSessionID, a.Session.ID)
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: name, Method: http.MethodPost,
		Path: []string{"v2", "sandboxes", "sessions", sessionID, "extend-timeout"},
		Body: extendBody{Duration: millis(missing)}, Timeout: p.cfg.RequestTimeout})
	if err != nil {
		return err
	}
	if r.Status == http.StatusBadRequest {
		// A concurrent extension may have used up the room: read again
		// before calling the 400 an error.
		// Or the session stopped, or a resume replaced it, in between.
		again, gerr := p.get(ctx, op, name, false)
		switch {
		case gerr != nil:
		case again.Sandbox.Status != statusRunning && again.Sandbox.Status != statusPending:
			return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, name,
				fmt.Errorf("its session is %s, not running", again.Sandbox.Status))
		case p.enough(again, want):
			if out != nil {
				*out = again
			}
			return nil
		case again.Sandbox.CurrentSessionID != sessionID && !replaced:
			return p.extendSession(ctx, op, again, timeout, out, true)
		}
	}
	if !r.OK() {
		return p.statusError(op, name, r)
	}
	if out != nil {
		var s sessionAnswer
		if err := json.Unmarshal(r.Body, &s); err != nil || s.Session.ID == "" {
			return decodeError(op, name, fmt.Errorf("extend-timeout answer: %v", err))
		}
		out.Session = s.Session
		out.Sandbox.ExpiresAt = 0 // the session's new timeout rules
	}
	return nil
}

// enough reports whether a's session is running and lasts until want, or
// has reached the plan maximum (no extension can help).
func (p *Provider) enough(a sandboxAnswer, want time.Time) bool {
	if a.Sandbox.Status != statusRunning && a.Sandbox.Status != statusPending {
		return false
	}
	room := p.cfg.MaxSessionTimeout - time.Duration(a.Session.Timeout)*time.Millisecond
	return !deadline(a.Sandbox, a.Session).Before(want) || room < time.Second
}

// Probe checks a sandbox without booting it: GET ?resume=false. A running
// session is running (its deadline in ExpiresAt); a pending one is booting
// (transient, try again shortly); a stopped, stopping or snapshotting
// persistent one with a snapshot is paused. Retried. Errors: gone (404, or
// no state to resume), transient.
func (p *Provider) Probe(ctx context.Context, sandboxID string) (lifecycle.Probe, error) {
	const op = "probe"
	var pr lifecycle.Probe
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		st, ok := state(a.Sandbox)
		switch {
		case !ok:
			return goneError(op, a)
		case a.Sandbox.Status == statusPending:
			return lifecycle.Transientf(op, sandboxID, conflictRetryAfter, "its session is still booting")
		case st == lifecycle.SandboxRunning:
			pr = lifecycle.Probe{State: st, ExpiresAt: deadline(a.Sandbox, a.Session)}
		default:
			pr = lifecycle.Probe{State: st}
		}
		return nil
	})
	return pr, err
}

// Kill deletes a sandbox (DELETE /v2/sandboxes/{name}, stopping a running
// session); 404 means it is already gone: success. Its snapshots go with
// it (deleteOrphanSnapshots=true) unless Config.KeepSnapshotsOnKill, or
// unless it carries the checkpoint tag (checkpoints.go): a get first reads
// its tags, since a checkpoint's snapshot is one of "its" snapshots and
// must outlive it. Retried. Errors: transient.
func (p *Provider) Kill(ctx context.Context, sandboxID string) error {
	const op = "kill"
	return p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		q := url.Values{"projectId": {p.cfg.ProjectID}}
		if !p.cfg.KeepSnapshotsOnKill {
			a, err := p.get(ctx, op, sandboxID, false)
			switch {
			case errors.Is(err, lifecycle.ErrSandboxGone):
				return nil
			case err != nil:
				return err
			case !holdsCheckpoints(a.Sandbox):
				q.Set("deleteOrphanSnapshots", "true")
			}
		}
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodDelete,
			Path: []string{"v2", "sandboxes", sandboxID}, Query: q, Timeout: p.cfg.RequestTimeout})
		switch {
		case err != nil:
			return err
		case r.OK() || r.Status == http.StatusNotFound:
			return nil
		default:
			return p.statusError(op, sandboxID, r)
		}
	})
}

// Check verifies the configuration with one list request (limit 1): the
// token, team and project must be accepted. Call it at start-up: a wrong
// project would otherwise surface as 404s, which read as gone sandboxes.
// Errors: transient; a plain error for a refused token, team or project.
func (p *Provider) Check(ctx context.Context) error {
	const op = "check"
	return p.retry(ctx, op, "", func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodGet, Path: []string{"v2", "sandboxes"},
			Query: url.Values{"project": {p.cfg.ProjectID}, "limit": {"1"}}, Timeout: p.cfg.RequestTimeout})
		if err != nil {
			return err
		}
		if !r.OK() {
			return p.statusError(op, "", r)
		}
		return nil
	})
}

// withSandbox checks sandboxID and runs attempt under retry.
func (p *Provider) withSandbox(ctx context.Context, op, sandboxID string, attempt func(ctx context.Context) error) error {
	if !validName(sandboxID) {
		return fmt.Errorf("%s sandbox: invalid sandbox name %q", op, sandboxID)
	}
	return p.retry(ctx, op, sandboxID, attempt)
}
