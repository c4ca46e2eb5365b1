package reliability

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// The instruments of the checkpoint tests: the fake provider with files
// and snapshots (SnapshotProvider) or with files and a workspace stream
// (ArchiveProvider), an in-memory archive store (MemArchives) and a job
// queue the tests drain (Jobs).

// memFiles is the files of the fake's sandboxes, by sandbox id then
// absolute path.
type memFiles struct {
	p     *fake.Provider
	mu    sync.Mutex
	files map[string]map[string][]byte
}

func (m *memFiles) live(op, sandboxID string) error {
	if sb, ok := m.p.Sandbox(sandboxID); !ok || sb.ID == "" {
		return lifecycle.NewProviderError(lifecycle.ErrSandboxGone, op, sandboxID, nil)
	}
	return nil
}

// WriteFile writes data to path in sandboxID (lifecycle.Files).
func (m *memFiles) WriteFile(_ context.Context, sandboxID, p string, data []byte) error {
	if err := m.live("write_file", sandboxID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[sandboxID] == nil {
		m.files[sandboxID] = map[string][]byte{}
	}
	m.files[sandboxID][path.Clean(p)] = slices.Clone(data)
	return nil
}

// ReadFile reads path in sandboxID (lifecycle.Files).
func (m *memFiles) ReadFile(_ context.Context, sandboxID, p string) ([]byte, error) {
	if err := m.live("read_file", sandboxID); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[sandboxID][path.Clean(p)]
	if !ok {
		return nil, fmt.Errorf("read %s in %s: %w", p, sandboxID, lifecycle.ErrNoFile)
	}
	return slices.Clone(data), nil
}

// RemoveFile removes path from sandboxID's files, as a partial workspace
// lacks it (the recovery tests).
func (m *memFiles) RemoveFile(sandboxID, p string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files[sandboxID], path.Clean(p))
}

func (m *memFiles) copyOf(sandboxID string) map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.files[sandboxID])
}

func (m *memFiles) set(sandboxID string, files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[sandboxID] = maps.Clone(files)
}

// SnapshotProvider is the fake provider with files (lifecycle.Files) and
// snapshots (lifecycle.Snapshotter) that keep them, as its Caps say.
type SnapshotProvider struct {
	*fake.Provider
	memFiles
	// Caps are the snapshots' capabilities (Keeps is filesystem+memory
	// when unset).
	Caps lifecycle.SnapshotCaps
	// SavingLooks is how many GetSnapshot calls a new snapshot stays
	// saving before it is ready (Daytona captures in the background).
	SavingLooks int
	clock       lifecycle.Clock

	smu   sync.Mutex
	snaps map[string]*memSnapshot
	n     int
}

type memSnapshot struct {
	snap  lifecycle.Snapshot
	files map[string][]byte
	looks int
}

// NewSnapshotProvider returns p with files and snapshots.
func NewSnapshotProvider(p *fake.Provider, clock lifecycle.Clock) *SnapshotProvider {
	return &SnapshotProvider{Provider: p, memFiles: memFiles{p: p, files: map[string]map[string][]byte{}}, clock: clock,
		snaps: map[string]*memSnapshot{}}
}

var (
	_ lifecycle.Snapshotter = (*SnapshotProvider)(nil)
	_ lifecycle.Files       = (*SnapshotProvider)(nil)
)

// SnapshotCaps returns Caps.
func (p *SnapshotProvider) SnapshotCaps() lifecycle.SnapshotCaps {
	caps := p.Caps
	if caps.Keeps == "" {
		caps.Keeps = lifecycle.KeepsFilesystemMemory
	}
	return caps
}

// Snapshot saves sandboxID's files. Errors: gone; conflict for a paused
// sandbox unless Caps.SnapshotsPaused.
func (p *SnapshotProvider) Snapshot(_ context.Context, sandboxID string, req lifecycle.SnapshotRequest) (lifecycle.Snapshot, error) {
	sb, ok := p.Sandbox(sandboxID)
	if !ok {
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrSandboxGone, "snapshot", sandboxID, nil)
	}
	caps := p.SnapshotCaps()
	if sb.State == lifecycle.SandboxPaused && !caps.SnapshotsPaused {
		return lifecycle.Snapshot{}, lifecycle.NewProviderError(lifecycle.ErrSandboxConflict, "snapshot", sandboxID, errors.New("paused"))
	}
	now := p.clock.Now()
	p.smu.Lock()
	p.n++
	snap := lifecycle.Snapshot{Ref: fmt.Sprintf("snap_%d", p.n), Name: req.Name, SourceSandboxID: sandboxID,
		State: lifecycle.SnapshotReady, Keeps: caps.Keeps, SizeBytes: 1 << 20, CreatedAt: now}
	if p.SavingLooks > 0 {
		snap.State = lifecycle.SnapshotSaving
	}
	if caps.Retention > 0 {
		snap.ExpiresAt = now.Add(caps.Retention)
	}
	p.snaps[snap.Ref] = &memSnapshot{snap: snap, files: p.copyOf(sandboxID)}
	p.smu.Unlock()
	if caps.StopsSource {
		_ = p.Pause(context.Background(), sandboxID)
	}
	return snap, nil
}

// lookup returns ref's snapshot unless it is gone or expired.
func (p *SnapshotProvider) lookup(op, ref string) (*memSnapshot, error) {
	s, ok := p.snaps[ref]
	if !ok || !s.snap.ExpiresAt.IsZero() && !p.clock.Now().Before(s.snap.ExpiresAt) {
		return nil, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, op, "", fmt.Errorf("snapshot %s not found", ref))
	}
	return s, nil
}

// GetSnapshot reads one snapshot; a saving one becomes ready after
// SavingLooks looks. Errors: ErrCheckpointGone.
func (p *SnapshotProvider) GetSnapshot(_ context.Context, ref string) (lifecycle.Snapshot, error) {
	p.smu.Lock()
	defer p.smu.Unlock()
	s, err := p.lookup("get_snapshot", ref)
	if err != nil {
		return lifecycle.Snapshot{}, err
	}
	if s.snap.State == lifecycle.SnapshotSaving {
		if s.looks++; s.looks >= p.SavingLooks {
			s.snap.State = lifecycle.SnapshotReady
		}
	}
	return s.snap, nil
}

// ListSnapshots returns sandboxID's snapshots.
func (p *SnapshotProvider) ListSnapshots(_ context.Context, sandboxID string) ([]lifecycle.Snapshot, error) {
	p.smu.Lock()
	defer p.smu.Unlock()
	var out []lifecycle.Snapshot
	for _, ref := range slices.Sorted(maps.Keys(p.snaps)) {
		if s, err := p.lookup("list_snapshots", ref); err == nil && s.snap.SourceSandboxID == sandboxID {
			out = append(out, s.snap)
		}
	}
	return out, nil
}

// DeleteSnapshot deletes one; a missing one is no error.
func (p *SnapshotProvider) DeleteSnapshot(_ context.Context, ref string) error {
	p.smu.Lock()
	defer p.smu.Unlock()
	delete(p.snaps, ref)
	return nil
}

// CreateFromSnapshot creates a sandbox (the fake's Create) holding the
// snapshot's files. Errors: ErrCheckpointGone, the fake's.
func (p *SnapshotProvider) CreateFromSnapshot(ctx context.Context, ref string, req lifecycle.CreateRequest) (lifecycle.Sandbox, error) {
	p.smu.Lock()
	s, err := p.lookup("create_from_snapshot", ref)
	var files map[string][]byte
	if err == nil {
		files = maps.Clone(s.files)
	}
	p.smu.Unlock()
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	sb, err := p.Create(ctx, req)
	if err != nil {
		return lifecycle.Sandbox{}, err
	}
	p.set(sb.ID, files)
	return sb, nil
}

// Snapshots returns every snapshot the provider holds (expired ones too).
func (p *SnapshotProvider) Snapshots() []lifecycle.Snapshot {
	p.smu.Lock()
	defer p.smu.Unlock()
	var out []lifecycle.Snapshot
	for _, ref := range slices.Sorted(maps.Keys(p.snaps)) {
		out = append(out, p.snaps[ref].snap)
	}
	return out
}

// ArchiveProvider is the fake provider with files (lifecycle.Files) whose
// workspace streams out and in as a tar (lifecycle.WorkspaceArchiver).
type ArchiveProvider struct {
	*fake.Provider
	memFiles
}

// NewArchiveProvider returns p with files and a workspace stream.
func NewArchiveProvider(p *fake.Provider) *ArchiveProvider {
	return &ArchiveProvider{Provider: p, memFiles: memFiles{p: p, files: map[string]map[string][]byte{}}}
}

var _ lifecycle.WorkspaceArchiver = (*ArchiveProvider)(nil)

// ExportTar writes a tar of the files under dir ("./" names). Excludes
// are whole names relative to dir. Errors: gone.
func (p *ArchiveProvider) ExportTar(_ context.Context, sandboxID, dir string, excludes []string, w io.Writer) (int64, error) {
	if err := p.live("export", sandboxID); err != nil {
		return 0, err
	}
	files := p.copyOf(sandboxID)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		rel, ok := strings.CutPrefix(name, strings.TrimSuffix(dir, "/")+"/")
		if !ok || slices.Contains(excludes, rel) {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: "./" + rel, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			return 0, err
		}
		if _, err := tw.Write(files[name]); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	return io.Copy(w, &buf)
}

// ImportTar writes the tar's files under dir. Errors: gone, a bad tar.
func (p *ArchiveProvider) ImportTar(_ context.Context, sandboxID, dir string, r io.Reader) error {
	if err := p.live("import", sandboxID); err != nil {
		return err
	}
	files := p.copyOf(sandboxID)
	if files == nil {
		files = map[string][]byte{}
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files[path.Join(dir, hdr.Name)] = data
	}
	p.set(sandboxID, files)
	return nil
}

// MemArchives is an in-memory lifecycle.Archives (stored as given: no
// compression). It is safe for concurrent use.
type MemArchives struct {
	mu      sync.Mutex
	objects map[string][]byte
	// Fail, when set, is returned by every Save.
	Fail error
}

var _ lifecycle.Archives = (*MemArchives)(nil)

// NewMemArchives returns an empty store.
func NewMemArchives() *MemArchives { return &MemArchives{objects: map[string][]byte{}} }

// Save stores r whole under key.
func (a *MemArchives) Save(_ context.Context, key string, r io.Reader) (int64, error) {
	data, err := io.ReadAll(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		err = a.Fail
	}
	if err != nil {
		return 0, err
	}
	a.objects[key] = data
	return int64(len(data)), nil
}

// Open returns key's object. Errors: ErrCheckpointGone.
func (a *MemArchives) Open(_ context.Context, key string) (io.ReadCloser, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, ok := a.objects[key]
	if !ok {
		return nil, lifecycle.NewProviderError(lifecycle.ErrCheckpointGone, "open_archive", "", fmt.Errorf("no archive %s", key))
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// Delete removes key's object.
func (a *MemArchives) Delete(_ context.Context, key string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.objects, key)
	return nil
}

// Keys returns the stored keys, sorted.
func (a *MemArchives) Keys() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.objects))
}

// Jobs is a lifecycle.CheckpointJobs that keeps the jobs until a test
// runs them (Drain). It is safe for concurrent use.
type Jobs struct {
	mu   sync.Mutex
	jobs []lifecycle.CheckpointJob
	// Fail, when set, is returned by every EnqueueCheckpoint.
	Fail error
}

var _ lifecycle.CheckpointJobs = (*Jobs)(nil)

// EnqueueCheckpoint keeps job.
func (j *Jobs) EnqueueCheckpoint(_ context.Context, job lifecycle.CheckpointJob) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Fail != nil {
		return j.Fail
	}
	j.jobs = append(j.jobs, job)
	return nil
}

// Take returns the queued jobs and empties the queue.
func (j *Jobs) Take() []lifecycle.CheckpointJob {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.jobs
	j.jobs = nil
	return out
}

// Drain runs the queued jobs with run (and the jobs they queue), a job
// that fails being run again, up to rounds rounds in all; it returns the
// errors of the last round's failures.
func (j *Jobs) Drain(ctx context.Context, run func(context.Context, lifecycle.CheckpointJob) error, rounds int) []error {
	var errs []error
	for range rounds {
		jobs := j.Take()
		if len(jobs) == 0 {
			return errs
		}
		errs = nil
		for _, job := range jobs {
			if err := run(ctx, job); err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w", job.Op, job.CheckpointID, err))
				_ = j.EnqueueCheckpoint(ctx, job)
			}
		}
	}
	return errs
}

// WaitNothing is a Config.Sleep that returns at once (ctx's error).
func WaitNothing(ctx context.Context, _ time.Duration) error { return ctx.Err() }
