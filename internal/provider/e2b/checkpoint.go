package e2b

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/provhttp"
)

// Checkpoints on E2B (docs/providers/e2b.md "Checkpoints"): E2B's
// snapshots, which keep the filesystem and memory, taken from a running
// sandbox that goes on running; create from one; and fork.

var (
	_ lifecycle.Snapshotter = (*Provider)(nil)
	_ lifecycle.Forker      = (*Provider)(nil)
)

// opFromSnapshot is CreateFromSnapshot's operation name.
const opFromSnapshot = "create_from_snapshot"

// SnapshotCaps: a snapshot keeps the filesystem and memory (processes go
// on in a sandbox made from it); the source goes on running (E2B pauses,
// snapshots and resumes it in place, dropping its connections); a paused
// sandbox cannot be snapshotted (E2B answers 404, as for a gone one); and
// E2B keeps a snapshot until it is deleted.
func (p *Provider) SnapshotCaps() lifecycle.SnapshotCaps {
	return lifecycle.SnapshotCaps{Keeps: lifecycle.KeepsFilesystemMemory}
}

// aliasChars is what E2B takes in a snapshot's name, once lowercased.
var aliasChars = regexp.MustCompile(`^[a-z0-9_-]+$`)

// SnapshotName is the E2B name Snapshot gives a checkpoint id: the id
// itself when E2B takes it as it is (lowercase letters, digits, '-' and
// '_', as Sandman's chk_ ids are), else the id lowercased with every other
// character made '-', followed by '-' and 8 hex digits of the id's SHA-256,
// so that two ids never share a name (E2B would move the name to the newer
// snapshot).
func SnapshotName(checkpointID string) string {
	if aliasChars.MatchString(checkpointID) {
		return checkpointID
	}
	sum := sha256.Sum256([]byte(checkpointID))
	clean := strings.Map(func(r rune) rune {
		if r < 0x80 && aliasChars.MatchString(string(r)) {
			return r
		}
		return '-'
	}, strings.ToLower(checkpointID))
	return clean + "-" + hex.EncodeToString(sum[:4])
}

// Snapshot takes a snapshot of the running sandbox (POST
// /sandboxes/{id}/snapshots, 201) named SnapshotName(req.Name), none when
// req.Name is "". E2B answers once it is whole, so it is ready; its Ref is
// E2B's snapshotID (<team>/<name>:default) and CreatedAt is now by
// Config.Clock. req.Expiration is ignored: E2B keeps snapshots until they
// are deleted. Each attempt is bounded by Config.PauseTimeout, and none is
// retried: a snapshot whose answer was lost exists, and ListSnapshots finds
// it by name.
//
// Errors: gone; conflict for a paused sandbox (E2B's 404 for it is read
// back with a GET, never taken as gone), a 409 (pausing, snapshotting,
// being killed) or 404 for one that reads running; transient, except for
// E2B's 500, after which the source is read back because E2B kills it when
// a snapshot fails midway: gone when it did; a plain error for a 400 (a
// template whose envd is older than 0.5.0, a name E2B refuses).
func (p *Provider) Snapshot(ctx context.Context, sandboxID string, req lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	const op = "snapshot"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Snapshot{}, err
	}
	body := snapshotBody{}
	if req.Name != "" {
		body.Name = SnapshotName(req.Name)
	}
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		URL:  p.apiURL(nil, "sandboxes", sandboxID, "snapshots"),
		Body: body, Timeout: p.cfg.PauseTimeout, Header: p.apiKey()})
	switch {
	case err != nil:
		return lifecycle.Snapshot{}, err
	case r.Status == http.StatusNotFound:
		sb, _, err := p.get(ctx, op, sandboxID)
		if err != nil {
			return lifecycle.Snapshot{}, err
		}
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, sandboxID,
			fmt.Errorf("the sandbox reads %s; E2B snapshots only a running one: %w", sb.State, parseAPIError(r)))
	case !r.OK():
		return lifecycle.Snapshot{}, p.checkpointFailed(ctx, op, sandboxID, r)
	}
	var out snapshotInfo
	if err := json.Unmarshal(r.Body, &out); err != nil || out.SnapshotID == "" {
		return lifecycle.Snapshot{}, decodeError(op, sandboxID, fmt.Errorf("no snapshotID in %s (%v)", provhttp.Snippet(r.Body), err))
	}
	snap := p.snapshot(out, sandboxID)
	snap.Name, snap.CreatedAt = req.Name, p.cfg.Clock.Now().UTC()
	return snap, nil
}

// checkpointFailed classifies a failed snapshot or fork. After a 500 E2B
// may have killed the source (docs/providers/e2b.md "Checkpoints", the
// hazard), so it reads the source: gone when it is; otherwise
// statusError's.
func (p *Provider) checkpointFailed(ctx context.Context, op, sandboxID string, r reply) error {
	err := p.statusError(op, sandboxID, r)
	if r.Status != http.StatusInternalServerError {
		return err
	}
	if _, _, gerr := p.get(ctx, op, sandboxID); errors.Is(gerr, lifecycle.ErrSandboxGone) {
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID,
			fmt.Errorf("E2B killed it after a failed checkpoint: %w", parseAPIError(r)))
	}
	return err
}

// snapshot converts E2B's snapshot info; its Name is E2B's name without
// the team and the tag ("" for an unnamed snapshot).
func (p *Provider) snapshot(in snapshotInfo, sandboxID string) lifecycle.Snapshot {
	name := ""
	if len(in.Names) > 0 {
		name = in.Names[0]
	} else if strings.Contains(in.SnapshotID, "/") {
		name = in.SnapshotID
	}
	name, _, _ = strings.Cut(name, ":")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return lifecycle.Snapshot{Ref: in.SnapshotID, Name: name, SourceSandboxID: sandboxID,
		State: lifecycle.SnapshotReady, Keeps: lifecycle.KeepsFilesystemMemory}
}

// GetSnapshot reads one snapshot. E2B has no read of one snapshot, so it
// lists them filtered by name (GET /snapshots?name=<ref>, which takes a
// snapshotID) and looks for ref among them, paging on until the pages end:
// a server that ignored the filter still finds it. Found, it is ready,
// with no source, time or size (E2B's list gives none). Retried. Errors:
// lifecycle.ErrCheckpointGone when no page holds it (deleted, or never
// E2B's), transient; a plain error for a 4xx.
func (p *Provider) GetSnapshot(ctx context.Context, ref string) (lifecycle.Snapshot, error) {
	const op = "get_snapshot"
	var found *lifecycle.Snapshot
	err := p.listSnapshots(ctx, op, url.Values{"name": {ref}}, func(in snapshotInfo) bool {
		if strings.EqualFold(in.SnapshotID, ref) {
			s := p.snapshot(in, "")
			found = &s
		}
		return found != nil
	})
	switch {
	case err != nil:
		return lifecycle.Snapshot{}, err
	case found == nil:
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "",
			fmt.Errorf("no snapshot %q on E2B", ref))
	}
	return *found, nil
}

// ListSnapshots returns every snapshot taken of sandboxID (GET
// /snapshots?sandboxID=, 100 a page, paged by the X-Next-Token header),
// newest first as E2B lists them; each is ready, named as E2B names it
// without team and tag. Each page is retried. Errors: transient; a plain
// error for a 4xx.
func (p *Provider) ListSnapshots(ctx context.Context, sandboxID string) ([]lifecycle.Snapshot, error) {
	const op = "list_snapshots"
	if err := checkID(op, sandboxID); err != nil {
		return nil, err
	}
	var out []lifecycle.Snapshot
	err := p.listSnapshots(ctx, op, url.Values{"sandboxID": {sandboxID}}, func(in snapshotInfo) bool {
		out = append(out, p.snapshot(in, sandboxID))
		return false
	})
	return out, err
}

// listSnapshots pages through GET /snapshots with query q, calling each
// for every item until it returns true or the pages end (an X-Next-Token
// seen twice ends them too). Each page is retried.
func (p *Provider) listSnapshots(ctx context.Context, op string, q url.Values, each func(snapshotInfo) bool) error {
	q.Set("limit", "100")
	seen := map[string]bool{}
	for {
		var items []snapshotInfo
		var next string
		err := p.retry(ctx, op, "", func(ctx context.Context) error {
			r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodGet, URL: p.apiURL(q, "snapshots"),
				Timeout: p.cfg.RequestTimeout, Header: p.apiKey()})
			switch {
			case err != nil:
				return err
			case !r.OK():
				return p.statusError(op, "", r)
			}
			next = r.Header.Get("X-Next-Token")
			if err := json.Unmarshal(r.Body, &items); err != nil {
				return decodeError(op, "", err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, in := range items {
			if each(in) {
				return nil
			}
		}
		if next == "" || seen[next] {
			return nil
		}
		seen[next] = true
		q.Set("nextToken", next)
	}
}

// DeleteSnapshot deletes a snapshot (DELETE /templates/{ref}, the ref
// percent-encoded whole, 204); a 404 means it is gone already, which is
// success. Retried. Errors: conflict while sandboxes made from it exist
// (E2B's 400 "… sandboxes using it": kill them first), transient; a plain
// error for another 4xx (a 403: another team's).
func (p *Provider) DeleteSnapshot(ctx context.Context, ref string) error {
	const op = "delete_snapshot"
	if ref == "" {
		return errors.New("delete snapshot: the ref is missing")
	}
	esc := strings.ReplaceAll(url.PathEscape(ref), ":", "%3A")
	return p.retry(ctx, op, "", func(ctx context.Context) error {
		r, err := p.roundTrip(ctx, request{Op: op, Method: http.MethodDelete,
			URL: p.apiURL(nil, "templates") + "/" + esc, Timeout: p.cfg.RequestTimeout, Header: p.apiKey()})
		switch {
		case err != nil:
			return err
		case r.OK() || r.Status == http.StatusNotFound:
			return nil
		case r.Status == http.StatusBadRequest && strings.Contains(parseAPIError(r).Message, "sandboxes using it"):
			return lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, op, "", parseAPIError(r))
		}
		return p.statusError(op, "", r)
	})
}

// CreateFromSnapshot starts a new sandbox from a snapshot (POST
// /v2/sandboxes with templateID = ref): as Create, with req's timeout,
// autoPause and metadata, its template ignored. The sandbox has a new id,
// preview host and envd token; its processes go on from the snapshot.
// Never retried. Errors: lifecycle.ErrCheckpointGone for E2B's 404
// ("template … not found", "tag … does not exist"), transient; a plain
// error for another 4xx.
func (p *Provider) CreateFromSnapshot(ctx context.Context, ref string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	if ref == "" {
		return lifecycle.Sandbox{}, errors.New("create from snapshot: the ref is missing")
	}
	return p.create(ctx, opFromSnapshot, ref, req)
}

// Fork copies the running sandbox into one new sandbox (POST
// /sandboxes/{id}/fork with count 1 and, always, a timeout: req.Timeout,
// else DefaultCreateTimeout, since E2B's default for a fork is 15 s). E2B
// checkpoints the source in place (it goes on running, keeping its id and
// expiry) and boots the fork from it, memory included.
//
// A fork inherits its parent's metadata, autoPause and autoResume, and E2B
// can neither take a fork's own metadata nor change it afterwards: req's
// metadata and autoPause are not applied. The fork is read back (GET) and
// the Sandbox reports what E2B holds, the parent's sandman_session_id
// included. So Sandman attributes a fork by the id Fork returns, recorded
// on the new session, never by its metadata (docs/providers/e2b.md
// "Checkpoints"). Each attempt is bounded by Config.PauseTimeout; never
// retried (a retry would make a second fork).
//
// Errors: gone; conflict (E2B's 409: paused, or in transition); transient,
// except for E2B's 500, after which the source is read back as for
// Snapshot; the fork's own failure (its entry's error) classified by its
// code with no sandbox; a plain error for a 400.
func (p *Provider) Fork(ctx context.Context, sandboxID string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	const op = "fork"
	if err := checkID(op, sandboxID); err != nil {
		return lifecycle.Sandbox{}, err
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultCreateTimeout
	}
	secs := seconds(timeout)
	r, err := p.roundTrip(ctx, request{Op: op, SandboxID: sandboxID, Method: http.MethodPost,
		URL:  p.apiURL(nil, "sandboxes", sandboxID, "fork"),
		Body: forkBody{Count: 1, Timeout: secs}, Timeout: p.cfg.PauseTimeout, Header: p.apiKey()})
	switch {
	case err != nil:
		return lifecycle.Sandbox{}, err
	case !r.OK():
		return lifecycle.Sandbox{}, p.checkpointFailed(ctx, op, sandboxID, r)
	}
	var out []forkEntry
	if err := json.Unmarshal(r.Body, &out); err != nil || len(out) != 1 {
		return lifecycle.Sandbox{}, decodeError(op, sandboxID, fmt.Errorf("want one fork in %s (%v)", provhttp.Snippet(r.Body), err))
	}
	if e := out[0].Error; e != nil || out[0].Sandbox == nil {
		if e == nil {
			e = &errorBody{Code: http.StatusInternalServerError, Message: "no sandbox"}
		}
		cause := &provhttp.APIError{Provider: "e2b", Status: e.Code, Message: e.Message}
		return lifecycle.Sandbox{}, statuses.Error(op+" (the new sandbox)", "", reply{Status: e.Code, Header: http.Header{}},
			cause, p.cfg.Clock.Now())
	}
	sb, err := p.started(op, *out[0].Sandbox, "", time.Duration(secs)*time.Second)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	p.readBack(ctx, op, &sb)
	return sb, nil
}
