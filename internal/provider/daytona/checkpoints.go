package daytona

import (
	"cmp"
	"context"
	"encoding/json"
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

// Checkpoints on Daytona (docs/providers/daytona.md "Checkpoints"). A
// snapshot is the container's filesystem, committed while it runs (the
// sandbox keeps running, or stays stopped). POST /sandbox/{id}/snapshot
// answers at once with the sandbox `snapshotting` and captures in the
// background, and a capture that fails leaves no trace but the sandbox's
// return to its previous state: a snapshot is believed only once GET
// /snapshots/{name} shows it.
//
// A Snapshot's Ref is "<source sandbox id>/<snapshot name>": Daytona's
// calls take the name (DELETE: resolved to the id first), which is known
// before the record exists, and the source tells a capture still running
// from one that failed (GetSnapshot).

var (
	_ lifecycle.Snapshotter = (*Provider)(nil)
	_ lifecycle.Forker      = (*Provider)(nil)
)

// SnapshotCaps describes Daytona's snapshots: the filesystem only; taking
// one does not stop the sandbox; a stopped sandbox (Sandman's pause in
// PauseStop mode) can be snapshotted, though an archived or memory-paused
// one cannot (a plain error); Retention 0: Daytona never deletes a
// snapshot, it deactivates one unused for 14 days, which CreateFromSnapshot
// activates again.
func (p *Provider) SnapshotCaps() lifecycle.SnapshotCaps {
	return lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem, SnapshotsPaused: true}
}

// Snapshot asks Daytona to capture sandboxID's filesystem as the snapshot
// named req.Name (POST /sandbox/{id}/snapshot {"name"}) and returns it
// saving: GetSnapshot tells when the capture is over. A snapshot of that
// name that exists already (a retry of a save whose answer was lost) is
// returned as it is, never taken twice: Daytona fails a second capture of
// a name silently. req.Expiration is ignored (Daytona's snapshots do not
// expire). The POST is not retried. Errors: gone (the sandbox), conflict
// (a change or another capture in progress: Daytona's 409, or its 400 "must
// be in started or stopped state" of a sandbox in a transitional state),
// transient; plain for a sandbox archived or memory-paused, or over the
// organization's snapshot quota (Daytona's 400).
func (p *Provider) Snapshot(ctx context.Context, sandboxID string, req lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	const op = "snapshot"
	ref, err := newRef(op, sandboxID, req.Name)
	if err != nil {
		return lifecycle.Snapshot{}, err
	}
	switch dto, err := p.findSnapshot(ctx, op, req.Name); {
	case err != nil:
		return lifecycle.Snapshot{}, err
	case dto != nil && dto.SourceSandboxID != sandboxID:
		return lifecycle.Snapshot{}, fmt.Errorf("snapshot sandbox %s: the name %s is taken by a snapshot of %s", sandboxID, req.Name, dto.SourceSandboxID)
	case dto != nil:
		return snapshotOf(op, ref, *dto)
	}
	err = p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path: []string{"sandbox", sandboxID, "snapshot"}, Body: map[string]string{"name": req.Name}}, nil)
	if strings.Contains(badRequest(err), "must be in started or stopped state") {
		// Daytona says so of a sandbox changing state (another capture
		// included) as of an archived one: only the first is a conflict.
		if d, gerr := p.getRetried(ctx, op, sandboxID); gerr == nil && classify(d) == classTransitional {
			err = lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, errors.Unwrap(err))
		}
	}
	if err != nil {
		return lifecycle.Snapshot{}, err
	}
	p.cfg.Logger.InfoContext(ctx, "daytona snapshot capture begun", "sandbox_id", sandboxID, "snapshot", req.Name)
	return lifecycle.Snapshot{Ref: ref, Name: req.Name, SourceSandboxID: sandboxID, State: lifecycle.SnapshotSaving,
		Keeps: lifecycle.KeepsFilesystem, CreatedAt: p.cfg.Clock.Now().UTC()}, nil
}

// GetSnapshot reads the snapshot of ref (GET /snapshots/{name}): active is
// ready, and so is inactive (deactivated, 14 days unused:
// CreateFromSnapshot activates it); error and build_failed are failed;
// removing is gone; every other state (building, pending, pulling,
// snapshotting, and any this package does not know) is saving.
//
// A 404 needs the source sandbox. Daytona (v0.190) writes a snapshot's
// record only when its capture succeeds, and then takes the sandbox out of
// `snapshotting`; so while the source is still snapshotting, a 404 is
// saving. Once it has left that state (or is gone), the snapshot is read
// once more, since it may have been written between the two reads, and a
// second 404 is ErrCheckpointGone: the capture failed, silently, or the
// snapshot was deleted since. Retried. Errors: ErrCheckpointGone,
// transient.
func (p *Provider) GetSnapshot(ctx context.Context, ref string) (lifecycle.Snapshot, error) {
	s, _, err := p.lookupSnapshot(ctx, "get snapshot", ref)
	return s, err
}

// lookupSnapshot is GetSnapshot, with Daytona's record of the snapshot
// (nil while its capture runs, before there is one).
func (p *Provider) lookupSnapshot(ctx context.Context, op, ref string) (lifecycle.Snapshot, *snapshotBody, error) {
	src, name, err := parseRef(op, ref)
	if err != nil {
		return lifecycle.Snapshot{}, nil, err
	}
	for read := 0; ; read++ {
		dto, err := p.findSnapshot(ctx, op, name)
		switch {
		case err != nil:
			return lifecycle.Snapshot{}, nil, err
		case dto != nil:
			s, err := snapshotOf(op, ref, *dto)
			return s, dto, err
		case read > 0 || src == "":
			return lifecycle.Snapshot{}, nil, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, src,
				fmt.Errorf("daytona has no snapshot %s: deleted, or its capture failed (silently, as Daytona's do)", name))
		}
		if capturing, err := p.capturing(ctx, op, src); err != nil {
			return lifecycle.Snapshot{}, nil, err
		} else if capturing {
			return lifecycle.Snapshot{Ref: ref, Name: name, SourceSandboxID: src, State: lifecycle.SnapshotSaving,
				Keeps: lifecycle.KeepsFilesystem}, nil, nil
		}
	}
}

// capturing reports whether sandboxID is still `snapshotting`; a sandbox
// that is gone is not. Errors: transient.
func (p *Provider) capturing(ctx context.Context, op, sandboxID string) (bool, error) {
	d, err := p.getRetried(ctx, op, sandboxID)
	if errors.Is(err, lifecycle.ErrSandboxGone) {
		return false, nil
	}
	return err == nil && d.State == "snapshotting", err
}

// ListSnapshots returns the snapshots of sandboxID that Daytona holds (GET
// /snapshots?sourceSandboxId=, every page of 100), ones being removed left
// out. A capture still running is not among them: its record comes when
// it succeeds. Retried. Errors: transient.
func (p *Provider) ListSnapshots(ctx context.Context, sandboxID string) ([]lifecycle.Snapshot, error) {
	const op = "list snapshots"
	if err := checkID(op, sandboxID); err != nil {
		return nil, err
	}
	var out []lifecycle.Snapshot
	for page := 1; page <= 1000; page++ {
		var body snapshotPage
		q := url.Values{"sourceSandboxId": {sandboxID}, "page": {strconv.Itoa(page)}, "limit": {"100"}}
		err := p.retry(ctx, op, "", 0, func(ctx context.Context) error {
			return p.call(ctx, request{Op: op, Method: http.MethodGet, Path: []string{"snapshots"}, Query: q}, &body)
		})
		if err != nil {
			return nil, err
		}
		for _, dto := range body.Items {
			if s, err := snapshotOf(op, snapshotRef(sandboxID, dto.Name), dto); err == nil && dto.SourceSandboxID == sandboxID {
				out = append(out, s)
			}
		}
		if len(body.Items) == 0 || page >= body.TotalPages {
			break
		}
	}
	return out, nil
}

// DeleteSnapshot deletes the snapshot of ref. Daytona deletes by id only
// (DELETE /snapshots/{id}), so the name is read first (GET
// /snapshots/{name}); gone already (a 404 to either) is success. While the
// ref's source sandbox is still capturing it (a 404 to the read, the
// sandbox `snapshotting`) it is a conflict: the capture could still write
// the snapshot, which would then outlive its checkpoint. Retried. Errors:
// conflict, transient; plain for a shared snapshot (403).
func (p *Provider) DeleteSnapshot(ctx context.Context, ref string) error {
	const op = "delete snapshot"
	_, dto, err := p.lookupSnapshot(ctx, op, ref)
	switch {
	case errors.Is(err, lifecycle.ErrCheckpointGone):
		return nil
	case err != nil:
		return err
	case dto == nil:
		return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, "", fmt.Errorf("snapshot %s is still being captured", ref))
	}
	return p.retry(ctx, op, "", 0, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodDelete, Path: []string{"snapshots", dto.ID}})
		if err != nil || r.OK() || r.Status == http.StatusNotFound {
			return err
		}
		return p.statusError(op, "", r)
	})
}

// CreateFromSnapshot makes a new sandbox from the snapshot of ref (POST
// /sandbox {"snapshot": name}), with req's labels, guard and intervals as
// Create gives them and TemplateLabel = req.Template, and waits until it
// is started. It reads the snapshot first: one Daytona deactivated
// (inactive, 14 days unused) is activated (POST /snapshots/{id}/activate)
// and waited for until active (ActivateTimeout); one still saving is a
// transient error; one missing, failed or being removed is
// ErrCheckpointGone. Daytona's 400s for a snapshot that went meanwhile
// ("… not found", "… is removing", "… is error") are ErrCheckpointGone too,
// and "… is inactive" activates it and creates once more. Errors:
// ErrCheckpointGone, transient; plain for a request Daytona refuses.
func (p *Provider) CreateFromSnapshot(ctx context.Context, ref string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	const op = "create from snapshot"
	_, name, err := parseRef(op, ref)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	for attempt := 0; ; attempt++ {
		if err := p.activeSnapshot(ctx, op, ref); err != nil {
			return lifecycle.Sandbox{}, err
		}
		sb, err := p.create(ctx, op, req, name)
		switch msg := badRequest(err); {
		case !strings.HasPrefix(msg, "Snapshot "):
		case strings.HasSuffix(msg, " is inactive") && attempt == 0:
			continue
		case strings.Contains(msg, " not found") || strings.HasSuffix(msg, " is removing") ||
			strings.HasSuffix(msg, " is error") || strings.HasSuffix(msg, " is build_failed"):
			return lifecycle.Sandbox{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "", err)
		}
		return sb, err
	}
}

// activeSnapshot makes sure the snapshot of ref is active: an inactive
// one is activated and waited for, up to ActivateTimeout. Errors:
// ErrCheckpointGone (missing, failed, being removed), transient (still
// saving; not active in time; Daytona still deactivating it).
func (p *Provider) activeSnapshot(ctx context.Context, op, ref string) error {
	begun := p.cfg.Clock.Now()
	deadline := begun.Add(p.cfg.ActivateTimeout)
	for activated := false; ; {
		s, dto, err := p.lookupSnapshot(ctx, op, ref)
		if err != nil {
			return err
		}
		state := string(s.State) // saving, while its capture runs
		if dto != nil {
			state = dto.State
		}
		switch {
		case state == "active":
			return nil
		case s.State == lifecycle.SnapshotFailed:
			return lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "", fmt.Errorf("snapshot %s failed: %s", ref, s.Reason))
		case state == "inactive" && !activated:
			if err := p.activate(ctx, op, *dto); err != nil {
				return err
			}
			activated = true
		case !activated:
			return lifecycle.Transientf(op, "", p.cfg.PollInterval, "snapshot %s is still %s", ref, state)
		case !p.cfg.Clock.Now().Before(deadline):
			return lifecycle.Transientf(op, "", p.cfg.PollInterval, "snapshot %s is still %s after %s", ref, state, p.cfg.ActivateTimeout)
		}
		if err := p.cfg.Sleep(ctx, p.pollWait(begun)); err != nil {
			return lifecycle.NewProviderError(lifecycle.ErrProviderTransient, op, "", err)
		}
	}
}

// activate asks Daytona to activate a deactivated snapshot again (POST
// /snapshots/{id}/activate: inactive → pending → active). Retried; "already
// active" is success. Errors: transient, including Daytona's 400 within
// 10 min of the deactivation ("deactivation is still in progress").
func (p *Provider) activate(ctx context.Context, op string, d snapshotBody) error {
	p.cfg.Logger.InfoContext(ctx, "daytona snapshot was deactivated; activating it", "snapshot", d.Name)
	return p.retry(ctx, op, "", 0, func(ctx context.Context) error {
		err := p.call(ctx, request{Op: op, Method: http.MethodPost, Path: []string{"snapshots", d.ID, "activate"}}, nil)
		switch msg := badRequest(err); {
		case strings.Contains(msg, "already active"):
			return nil
		case strings.Contains(msg, "deactivation is still in progress"):
			return lifecycle.Transientf(op, "", time.Minute, "snapshot %s: %s", d.Name, msg)
		case statusOf(err) == http.StatusNotFound:
			return lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "", err)
		}
		return err
	})
}

// badRequest is the message of Daytona's 400 inside err, "" for any other
// error.
func badRequest(err error) string {
	var ae *provhttp.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		return ae.Message
	}
	return ""
}

// Fork copies the started sandbox sandboxID into a new one (POST
// /sandbox/{id}/fork): Daytona clones its filesystem on the same runner
// (processes are not kept: readiness starts the app again), and the child
// comes up `creating` while the source is `forking`. The child copies the
// source's labels, so Sandman's own are put on it at once (PUT
// /sandbox/{child}/labels: req.Metadata and TemplateLabel), before
// anything else: until then a crash leaves a child labelled as its source
// (docs/providers/daytona.md "Checkpoints" says what the sweep does with
// it); a child whose labels cannot be set is deleted. Then its guard and
// delete intervals are set from req (the fork copied the source's), and
// Fork waits (CreateTimeout) until the child is started and the source is
// back from forking. Only the linux-vm and windows classes fork: a
// container answers 422, a plain error (checkpoint and create from it
// instead). The POST is not retried. Errors: gone (the source), conflict
// (the source is not started or is changing: Daytona's 400 "must be in
// started state", 409), transient.
func (p *Provider) Fork(ctx context.Context, sandboxID string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	const op = "fork"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Sandbox{}, err
	}
	var child sandboxBody
	err := p.call(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path: []string{"sandbox", sandboxID, "fork"}, Body: struct{}{}}, &child)
	if strings.Contains(badRequest(err), "must be in started state") {
		err = lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID, errors.Unwrap(err))
	}
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	if child.ID == "" {
		return lifecycle.Sandbox{}, fmt.Errorf("fork sandbox %s: daytona answered without an id", sandboxID)
	}
	labels := maps.Clone(req.Metadata)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[TemplateLabel] = req.Template
	err = p.retry(ctx, op, child.ID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: child.ID, Method: http.MethodPut,
			Path: []string{"sandbox", child.ID, "labels"}, Body: map[string]any{"labels": labels}}, nil)
	})
	if err != nil {
		if kerr := p.Kill(context.WithoutCancel(ctx), child.ID); kerr != nil {
			p.cfg.Logger.WarnContext(ctx, "delete a fork still labelled as its source", "sandbox_id", child.ID, "source", sandboxID, "err", kerr)
		}
		return lifecycle.Sandbox{}, err
	}
	if err := p.forkIntervals(ctx, op, child, req); err != nil {
		return lifecycle.Sandbox{}, err
	}
	sb, err := p.started(ctx, op, child, p.cfg.CreateTimeout, "sandbox "+sandboxID, req.Template)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	src, err := p.getRetried(ctx, op, sandboxID)
	if err == nil {
		_, err = p.await(ctx, op, src, p.cfg.CreateTimeout, func(d sandboxBody) bool { return d.State != "forking" })
	}
	return sb, err
}

// forkIntervals sets a new fork's guard (req.Timeout) and delete interval
// (req.AutoPause) where the ones it copied from its source differ.
func (p *Provider) forkIntervals(ctx context.Context, op string, child sandboxBody, req lifecycle.CreateRequest) error {
	if req.Timeout > 0 {
		if err := p.setGuard(ctx, op, child.ID, guardMinutes(req.Timeout), p.guard(child)); err != nil {
			return err
		}
	}
	want := int64(-1)
	if m := p.deleteMinutes(req.AutoPause); m != nil {
		want = *m
	}
	if want == child.AutoDeleteInterval {
		return nil
	}
	return p.retry(ctx, op, child.ID, 0, func(ctx context.Context) error {
		return p.call(ctx, request{Op: op, SandboxID: child.ID, Method: http.MethodPost,
			Path: []string{"sandbox", child.ID, "autodelete", strconv.FormatInt(want, 10)}}, nil)
	})
}

// findSnapshot reads GET /snapshots/{name} (retried): nil when Daytona has
// no such snapshot (404). Errors: transient.
func (p *Provider) findSnapshot(ctx context.Context, op, name string) (*snapshotBody, error) {
	var out *snapshotBody
	err := p.retry(ctx, op, "", 0, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodGet, Path: []string{"snapshots", name}})
		switch {
		case err != nil:
			return err
		case r.Status == http.StatusNotFound:
			out = nil
			return nil
		case !r.OK():
			return p.statusError(op, "", r)
		}
		out = &snapshotBody{}
		if err := json.Unmarshal(r.Body, out); err != nil {
			return provhttp.DecodeError("daytona", op, "", err)
		}
		return nil
	})
	return out, err
}

// snapshotOf converts Daytona's snapshot to lifecycle's (see GetSnapshot
// for the states). Its size, in GB, is taken as GiB. Errors:
// ErrCheckpointGone for one being removed.
func snapshotOf(op, ref string, d snapshotBody) (lifecycle.Snapshot, error) {
	s := lifecycle.Snapshot{Ref: ref, Name: d.Name, SourceSandboxID: d.SourceSandboxID, State: lifecycle.SnapshotSaving,
		Keeps: lifecycle.KeepsFilesystem, CreatedAt: d.CreatedAt.UTC()}
	if d.Size != nil {
		s.SizeBytes = int64(*d.Size * (1 << 30))
	}
	switch d.State {
	case "active", "inactive":
		s.State = lifecycle.SnapshotReady
	case "error", "build_failed":
		s.State, s.Reason = lifecycle.SnapshotFailed, cmp.Or(d.ErrorReason, "daytona: the snapshot is "+d.State)
	case "removing":
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, d.SourceSandboxID,
			fmt.Errorf("snapshot %s is being removed", d.Name))
	}
	return s, nil
}

// snapshotRef is the Ref of the snapshot name of sandboxID.
func snapshotRef(sandboxID, name string) string { return sandboxID + "/" + name }

// newRef checks a snapshot's sandbox and name and returns its Ref.
func newRef(op, sandboxID, name string) (string, error) {
	if err := checkID(op, sandboxID); err != nil {
		return "", err
	}
	if err := checkID(op, name); err != nil {
		return "", fmt.Errorf("%s: invalid snapshot name %q", op, name)
	}
	return snapshotRef(sandboxID, name), nil
}

// parseRef splits a Ref into its source sandbox and the snapshot's name.
// A ref without a sandbox part (a snapshot's name or id alone) is taken
// as the name, with no source.
func parseRef(op, ref string) (sandboxID, name string, err error) {
	sandboxID, name, found := strings.Cut(ref, "/")
	if !found {
		sandboxID, name = "", ref
	}
	if err := checkID(op, name); err != nil || (found && checkID(op, sandboxID) != nil) {
		return "", "", fmt.Errorf("%s: invalid snapshot ref %q", op, ref)
	}
	return sandboxID, name, nil
}
