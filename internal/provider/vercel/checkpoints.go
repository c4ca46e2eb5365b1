package vercel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Checkpoints on Vercel's snapshots (docs/providers/vercel.md
// "Checkpoints"). A snapshot keeps the filesystem only and stops the
// session it is taken of; a sandbox made from one is a new named sandbox.
// The Provider has no lifecycle.Forker: Vercel's fork copies the source's
// current snapshot, not its live state, so the service forks with a
// snapshot and a create from it.
//
// Vercel's snapshots have no names. The checkpoint a snapshot belongs to
// is recorded on the sandbox, before the snapshot is asked for, in the
// checkpoint tag: checkpointTag = "<checkpoint name>/<session id>". A
// session ends with its first snapshot (a snapshot call or a stop), so it
// has at most one, and the snapshot's sourceSessionId names the session:
// ListSnapshots gives that snapshot the tag's name. When the snapshot call
// never reached Vercel (the process died between the tag and the call)
// and the session stopped later (a pause, or its deadline), the stop's
// snapshot carries the name instead; it holds the session's files as of
// that stop. So the service adopts a named snapshot only when its
// CreatedAt falls in the checkpoint's lease and no other checkpoint holds
// its Ref (docs/providers/vercel.md "Finding a checkpoint after a crash").
//
// The tag also keeps Kill from deleting the sandbox's snapshots: any
// value of it means "this sandbox's snapshots include checkpoints"; a
// sandbox made from a snapshot carries it too (value: that snapshot's id).

var _ lifecycle.Snapshotter = (*Provider)(nil)

// DefaultSnapshotRetention is how long Vercel keeps a snapshot after its
// last use when nothing else is asked (docs/providers/vercel.md
// "Checkpoints").
const DefaultSnapshotRetention = 30 * 24 * time.Hour

// checkpointTag is the sandbox tag naming the checkpoint of its latest
// snapshot (see above).
const checkpointTag = internalTagPrefix + "checkpoint"

// Vercel's error codes the checkpoints act on.
const (
	codeSnapshotNotFound = "snapshot_not_found" // 410: the snapshot expired or was deleted
	codeSessionStopped   = "sandbox_stopped"    // 410: the session is over; the sandbox is fine
)

// Snapshot statuses.
const (
	snapshotCreated = "created"
	snapshotDeleted = "deleted"
	snapshotFailed  = "failed"
)

// SnapshotCaps: the filesystem only; a snapshot stops the session; a
// stopped sandbox's snapshot is its current one (no resume needed);
// Retention is Config.SnapshotExpiration, else DefaultSnapshotRetention.
func (p *Provider) SnapshotCaps() lifecycle.SnapshotCaps {
	return lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystem, StopsSource: true, SnapshotsPaused: true,
		Retention: p.retention()}
}

func (p *Provider) retention() time.Duration {
	if p.cfg.SnapshotExpiration > 0 {
		return p.cfg.SnapshotExpiration
	}
	return DefaultSnapshotRetention
}

// Snapshot saves the sandbox's files. A running session is snapshotted
// with POST /v2/sandboxes/sessions/{id}/snapshot {"expiration": ms}
// (req.Expiration, else SnapshotCaps.Retention; it counts from the last
// use), which stops it: resume it afterwards. A stopped sandbox is not
// resumed: its current snapshot (taken by its stop) is the checkpoint. In
// both cases the checkpoint tag records req.Name first. A retry whose
// first attempt took the snapshot finds the session stopped and returns
// that snapshot. Errors: gone (the sandbox, or a stopped one whose
// snapshot is gone), conflict (stopping or snapshotting: Get again
// later), transient; a plain error for a name holding "/".
func (p *Provider) Snapshot(ctx context.Context, sandboxID string, req lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	const op = "snapshot"
	if strings.Contains(req.Name, "/") {
		return lifecycle.Snapshot{}, fmt.Errorf("%s: checkpoint name %q holds a /", op, req.Name)
	}
	exp := req.Expiration
	if exp <= 0 {
		exp = p.retention()
	}
	var snap lifecycle.Snapshot
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		switch _, ok := state(a.Sandbox); {
		case !ok:
			return goneError(op, a)
		case a.Sandbox.Status == statusRunning || a.Sandbox.Status == statusPending:
			snap, err = p.snapshotSession(ctx, op, a, req.Name, exp)
		case a.Sandbox.Status == statusStopping || a.Sandbox.Status == statusSnapshotting:
			return inTransition(op, a)
		default:
			snap, err = p.currentSnapshot(ctx, op, a, req.Name)
		}
		return err
	})
	return snap, err
}

// snapshotSession is Snapshot of a's running session.
func (p *Provider) snapshotSession(ctx context.Context, op string, a sandboxAnswer, name string, exp time.Duration) (lifecycle.Snapshot, error) {
	sandboxID, sessionID := a.Sandbox.Name, orString(a.Sandbox.CurrentSessionID, a.Session.ID)
	tag := name + "/" + sessionID
	if err := p.tagCheckpoint(ctx, op, a.Sandbox, tag, true); err != nil {
		return lifecycle.Snapshot{}, err
	}
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		Path: []string{"v2", "sandboxes", "sessions", sessionID, "snapshot"},
		Body: expirationBody{Expiration: millis(exp)}, Timeout: p.cfg.StopTimeout})
	switch {
	case err != nil:
		return lifecycle.Snapshot{}, err
	case r.Status == http.StatusGone || r.Status == http.StatusUnprocessableEntity:
		// It stopped since the get (a lost attempt of ours, a pause, its
		// deadline): the next attempt reads it again.
		return lifecycle.Snapshot{}, lifecycle.Transientf(op, sandboxID, conflictRetryAfter,
			"the session stopped before its snapshot: %v", parseAPIError(r))
	case !r.OK():
		return lifecycle.Snapshot{}, p.statusError(op, sandboxID, r)
	}
	var ans snapshotAnswer
	if err := json.Unmarshal(r.Body, &ans); err != nil || ans.Snapshot.ID == "" {
		return lifecycle.Snapshot{}, decodeError(op, sandboxID, fmt.Errorf("snapshot answer: %v", err))
	}
	// A command start racing this one may have written its tags over the
	// checkpoint tag: read it back once (Kill relies on it).
	if again, err := p.get(ctx, op, sandboxID, false); err == nil && again.Sandbox.Tags[checkpointTag] != tag {
		if err := p.tagCheckpoint(ctx, op, again.Sandbox, tag, true); err != nil {
			p.cfg.Logger.WarnContext(ctx, "vercel checkpoint tag lost; a kill would delete the checkpoint",
				"sandbox_id", sandboxID, "snapshot_id", ans.Snapshot.ID, "err", err)
		}
	}
	return snapshotOf(ans.Snapshot, sandboxID, name), nil
}

// currentSnapshot returns a stopped sandbox's current snapshot (what its
// last stop or snapshot took) as the checkpoint name, after recording
// name in the checkpoint tag (an empty name leaves a tag already there).
func (p *Provider) currentSnapshot(ctx context.Context, op string, a sandboxAnswer, name string) (lifecycle.Snapshot, error) {
	sandboxID, ref := a.Sandbox.Name, a.Sandbox.CurrentSnapshotID
	s, err := p.getSnapshot(ctx, op, ref)
	if errors.Is(err, lifecycle.ErrCheckpointGone) {
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID,
			fmt.Errorf("its current snapshot %s is gone: %w", ref, err))
	}
	if err != nil {
		return lifecycle.Snapshot{}, err
	}
	if err := p.tagCheckpoint(ctx, op, a.Sandbox, name+"/"+s.SourceSessionID, name != ""); err != nil {
		return lifecycle.Snapshot{}, err
	}
	return snapshotOf(s, sandboxID, name), nil
}

// tagCheckpoint makes value the sandbox's checkpoint tag (one attempt),
// unless it holds it already, or holds another and replace is false. The
// command tags are dropped with it: a snapshot or a stop ends their
// session, and with it the commands they record.
func (p *Provider) tagCheckpoint(ctx context.Context, op string, sb sandboxJSON, value string, replace bool) error {
	if old, ok := sb.Tags[checkpointTag]; old == value || (ok && !replace) {
		return nil
	}
	tags := metadataOf(sb.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[checkpointTag] = value
	return p.patchTags(ctx, op, sb.Name, tags)
}

// holdsCheckpoints reports whether sb carries the checkpoint tag: its
// snapshots must outlive it (Kill).
func holdsCheckpoints(sb sandboxJSON) bool {
	_, ok := sb.Tags[checkpointTag]
	return ok
}

// inTransition is the conflict of a sandbox whose session is stopping or
// snapshotting.
func inTransition(op string, a sandboxAnswer) error {
	return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, a.Sandbox.Name,
		fmt.Errorf("its session is %s, not stopped with a snapshot: read it again later", a.Sandbox.Status))
}

// LastSnapshot returns the snapshot a paused sandbox's stop took (its
// currentSnapshotId): on Vercel a pause is a snapshot already, and the
// service records it as the pause's checkpoint instead of taking a second
// (docs/providers/vercel.md "Checkpoints"). It sets the checkpoint tag
// when the sandbox has none, so Kill keeps the snapshot. Name is "";
// ExpiresAt counts from the snapshot's last use, and a resume of the
// sandbox is such a use. Retried. Errors: conflict (the sandbox runs, or
// stops: no stop has taken its state yet), gone (the sandbox, or its
// snapshot: the paused state is lost), transient.
func (p *Provider) LastSnapshot(ctx context.Context, sandboxID string) (lifecycle.Snapshot, error) {
	const op = "last_snapshot"
	var snap lifecycle.Snapshot
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if err != nil {
			return err
		}
		switch st, ok := state(a.Sandbox); {
		case !ok:
			return goneError(op, a)
		case st == lifecycle.SandboxRunning || a.Sandbox.Status == statusStopping || a.Sandbox.Status == statusSnapshotting:
			return inTransition(op, a)
		}
		snap, err = p.currentSnapshot(ctx, op, a, "")
		return err
	})
	return snap, err
}

// GetSnapshot reads a snapshot: GET /v2/sandboxes/snapshots/{id}.
// Retried. Errors: lifecycle.ErrCheckpointGone (404, or status deleted or
// failed), transient; a plain error for a ref that is not a snapshot id.
func (p *Provider) GetSnapshot(ctx context.Context, ref string) (lifecycle.Snapshot, error) {
	const op = "get_snapshot"
	if !validName(ref) {
		return lifecycle.Snapshot{}, fmt.Errorf("%s: invalid snapshot id %q", op, ref)
	}
	var s snapshotJSON
	err := p.retry(ctx, op, ref, func(ctx context.Context) error {
		var err error
		s, err = p.getSnapshot(ctx, op, ref)
		return err
	})
	if err != nil {
		return lifecycle.Snapshot{}, err
	}
	return snapshotOf(s, "", ""), nil
}

// getSnapshot is one attempt of GetSnapshot.
func (p *Provider) getSnapshot(ctx context.Context, op, ref string) (snapshotJSON, error) {
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: ref, Method: http.MethodGet,
		Path: []string{"v2", "sandboxes", "snapshots", ref}, Timeout: p.cfg.RequestTimeout})
	switch {
	case err != nil:
		return snapshotJSON{}, err
	case r.Status == http.StatusNotFound:
		return snapshotJSON{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, ref, parseAPIError(r))
	case !r.OK():
		return snapshotJSON{}, p.statusError(op, ref, r)
	}
	var ans snapshotAnswer
	if err := json.Unmarshal(r.Body, &ans); err != nil || ans.Snapshot.ID == "" {
		return snapshotJSON{}, decodeError(op, ref, fmt.Errorf("snapshot answer: %v", err))
	}
	if s := ans.Snapshot.Status; s == snapshotDeleted || s == snapshotFailed {
		return snapshotJSON{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, ref, fmt.Errorf("the snapshot is %s", s))
	}
	return ans.Snapshot, nil
}

// maxSnapshotPages bounds the pages ListSnapshots reads.
const maxSnapshotPages = 100

// ListSnapshots returns the snapshots taken of the sandbox, deleted ones
// left out: GET /v2/sandboxes/snapshots?project=…&name=<sandbox>, every
// page. The one the checkpoint tag names (see above) carries that
// checkpoint's name; the sandbox may be gone (its snapshots outlive it),
// and then none does. Retried. Errors: transient.
func (p *Provider) ListSnapshots(ctx context.Context, sandboxID string) ([]lifecycle.Snapshot, error) {
	const op = "list_snapshots"
	var tag string
	err := p.withSandbox(ctx, op, sandboxID, func(ctx context.Context) error {
		a, err := p.get(ctx, op, sandboxID, false)
		if errors.Is(err, lifecycle.ErrSandboxGone) {
			return nil
		}
		tag = a.Sandbox.Tags[checkpointTag]
		return err
	})
	if err != nil {
		return nil, err
	}
	name, session, _ := strings.Cut(tag, "/")
	q := url.Values{"project": {p.cfg.ProjectID}, "name": {sandboxID}}
	out := []lifecycle.Snapshot{}
	for n, seen := 0, map[string]bool{}; n < maxSnapshotPages; n++ {
		var a snapshotsAnswer
		err := p.retry(ctx, op, sandboxID, func(ctx context.Context) error {
			r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodGet,
				Path: []string{"v2", "sandboxes", "snapshots"}, Query: q, Timeout: p.cfg.RequestTimeout})
			if err != nil {
				return err
			}
			if !r.OK() {
				return p.statusError(op, "", r)
			}
			a = snapshotsAnswer{}
			if err := json.Unmarshal(r.Body, &a); err != nil {
				return decodeError(op, sandboxID, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, s := range a.Snapshots {
			if s.Status == snapshotDeleted {
				continue
			}
			sn := snapshotOf(s, sandboxID, "")
			if session != "" && s.SourceSessionID == session {
				sn.Name = name
			}
			out = append(out, sn)
		}
		if a.Pagination.Next == nil || *a.Pagination.Next == "" || seen[*a.Pagination.Next] {
			break
		}
		seen[*a.Pagination.Next] = true
		q.Set("cursor", *a.Pagination.Next)
	}
	return out, nil
}

// DeleteSnapshot deletes a snapshot: DELETE /v2/sandboxes/snapshots/{id};
// 404 is success. Deleting a paused sandbox's current snapshot loses its
// paused state (its resume answers 410 snapshot_not_found). Retried.
// Errors: transient; a plain error for a ref that is not a snapshot id.
func (p *Provider) DeleteSnapshot(ctx context.Context, ref string) error {
	const op = "delete_snapshot"
	if !validName(ref) {
		return fmt.Errorf("%s: invalid snapshot id %q", op, ref)
	}
	return p.retry(ctx, op, ref, func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, SandboxID: ref, Method: http.MethodDelete,
			Path: []string{"v2", "sandboxes", "snapshots", ref}, Timeout: p.cfg.RequestTimeout})
		switch {
		case err != nil:
			return err
		case r.OK() || r.Status == http.StatusNotFound:
			return nil
		default:
			return p.statusError(op, ref, r)
		}
	})
}

// CreateFromSnapshot makes a new named sandbox holding the snapshot's
// files: POST /v3/sandboxes with {"source":{"type":"snapshot",
// "snapshotId"}} and the template's ports and resources (its image is the
// snapshot's). It is named "<session id>-<8 random hex digits>" (the
// session's own name may still be taken by the sandbox it replaces),
// tagged like Create's plus the checkpoint tag, and returned running; its
// processes must be started again (readiness). Retried (a retry adopts
// the sandbox its first attempt made). Errors:
// lifecycle.ErrCheckpointGone (410 snapshot_not_found: expired or
// deleted), transient; as Create's otherwise.
func (p *Provider) CreateFromSnapshot(ctx context.Context, ref string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	const op = "create_from_snapshot"
	tmpl, ok := p.cfg.Templates[req.Template]
	switch {
	case !ok:
		return lifecycle.Sandbox{}, fmt.Errorf("%s: unknown template %q", op, req.Template)
	case !validName(ref):
		return lifecycle.Sandbox{}, fmt.Errorf("%s: invalid snapshot id %q", op, ref)
	}
	name := randomName()
	if id := req.Metadata[lifecycle.MetadataSessionID]; validName(id) && len(id) <= 128-9 {
		name = id + "-" + name[len(name)-8:]
	}
	body := p.createBody(req, tmpl, name)
	body.Source = &sourceJSON{Type: "snapshot", SnapshotID: ref}
	body.Tags[checkpointTag] = ref
	return p.create(ctx, op, req.Template, tmpl, body)
}

// snapshotOf converts a Snapshot object.
func snapshotOf(s snapshotJSON, sandboxID, name string) lifecycle.Snapshot {
	out := lifecycle.Snapshot{Ref: s.ID, Name: name, SourceSandboxID: sandboxID, State: lifecycle.SnapshotReady,
		Keeps: lifecycle.KeepsFilesystem, SizeBytes: s.SizeBytes, CreatedAt: fromMillis(s.CreatedAt),
		ExpiresAt: fromMillis(s.ExpiresAt)}
	if s.Status == snapshotFailed {
		out.State, out.Reason = lifecycle.SnapshotFailed, "Vercel reports the snapshot failed"
	}
	return out
}
