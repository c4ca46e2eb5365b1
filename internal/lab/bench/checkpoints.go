package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
	"github.com/sandmanhq/sandman/internal/archive/dirstore"
	"github.com/sandmanhq/sandman/internal/checkpointjobs"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/e2b/e2btest"
	"github.com/sandmanhq/sandman/internal/provider/local"
	"github.com/sandmanhq/sandman/internal/provider/vercel"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
	"github.com/sandmanhq/sandman/internal/readiness"
)

// CheckpointModel is one provider model of the checkpoint figure: the
// provider's real adapter against its fake, with the fake's latencies.
type CheckpointModel struct {
	Name     string `json:"name"`
	Provider string `json:"provider"` // e2b, daytona, vercel
	Source   string `json:"source"`
	// SnapshotMS is the provider's snapshot call (E2B, Vercel: the
	// request's latency; Daytona: the capture in the background),
	// CreateMS its create from a snapshot, BootMS how long the app takes
	// to listen once started; KeepsMemory: processes go on in a sandbox
	// made from the snapshot (no boot).
	SnapshotMS  float64 `json:"snapshot_ms"`
	CreateMS    float64 `json:"create_ms"`
	BootMS      float64 `json:"boot_ms"`
	KeepsMemory bool    `json:"keeps_memory"`
}

// CheckpointRow is one provider model's figures.
type CheckpointRow struct {
	CheckpointModel
	Kind string `json:"kind"` // snapshot or archive
	// Checkpoint runs from the create request to the checkpoint's commit
	// as ready (its updated_at); Restore from the restore request to the
	// session's commit of its app ready (ready_at) on the new sandbox.
	Checkpoint    Latency `json:"checkpoint"`
	CheckpointP95 float64 `json:"checkpoint_p95_ms"`
	Restore       Latency `json:"restore"`
	RestoreP95    float64 `json:"restore_p95_ms"`
	// CheckpointFloorMS and RestoreFloorMS are the provider's own times:
	// the model's snapshot, and its create from the snapshot plus the
	// app's boot (none when memory is kept); for the local provider,
	// measured without Sandman (p50; the p95s beside them).
	CheckpointFloorMS    float64 `json:"checkpoint_floor_ms"`
	RestoreFloorMS       float64 `json:"restore_floor_ms"`
	CheckpointFloorP95MS float64 `json:"checkpoint_floor_p95_ms"`
	RestoreFloorP95MS    float64 `json:"restore_floor_p95_ms"`
	// OverP50MS and OverP95MS are Restore's p50 and p95 less the floor's;
	// Met says OverP95MS is at most CheckpointTargetMS.
	OverP50MS float64 `json:"restore_over_floor_p50_ms"`
	OverP95MS float64 `json:"restore_over_floor_p95_ms"`
	Met       bool    `json:"met"`
	Failed    int     `json:"failed"`
}

// CheckpointsResult is the checkpoint figure, with the archive path's
// (Archive, when it ran).
type CheckpointsResult struct {
	Rounds  int             `json:"rounds"`
	Rows    []CheckpointRow `json:"rows"`
	Archive *ArchiveFigure  `json:"archive,omitempty"`
}

// CheckpointsConfig sizes RunCheckpoints.
type CheckpointsConfig struct {
	// Rounds is how many checkpoint + restore cycles each model runs
	// (default 10).
	Rounds int
	// Models are the fakes' models (default: checkpointModels); NoLocal
	// skips the local provider's row. Providers, when not empty, keeps only
	// the rows of these providers (e2b, vercel, daytona, local).
	Models    []CheckpointModel
	NoLocal   bool
	Providers []string
	// ArchiveSizes are the archive path's workspace sizes (RunArchive);
	// "" skips it.
	ArchiveSizes string
	// ArchiveWork is where its workspaces are generated.
	ArchiveWork string
}

// CheckpointTargetMS is the target: restore → ready at most this much
// over the provider's own create-from-snapshot time (p95).
const CheckpointTargetMS = 300

// checkpointModels are the providers' sheets (docs/providers/*.md,
// "Checkpoints" and "Timing").
var checkpointModels = []CheckpointModel{
	{Name: "e2b (fake, keeps memory)", Provider: "e2b", SnapshotMS: 3000, CreateMS: 1000, BootMS: 2000, KeepsMemory: true,
		Source: "no published snapshot figure: a pause (≈ 4 s per GiB, 512 MiB) and a resume (≈ 1 s); a create from it as a resume, ≈ 1 s"},
	{Name: "vercel (fake, filesystem)", Provider: "vercel", SnapshotMS: 2000, CreateMS: 1500, BootMS: 2000,
		Source: "create from a snapshot ≈ 1.5 s (third-party benchmark); snapshot 2 s assumed; 2 s dev-server boot"},
	{Name: "daytona (fake, container: filesystem)", Provider: "daytona", SnapshotMS: 3000, CreateMS: 1500, BootMS: 2000,
		Source: "create 1.2-1.7 s (measured, 2026-07); a capture is \"several minutes\": 3 s stands in; 2 s dev-server boot"},
}

// checkpointAccount owns the figure's sessions.
const checkpointAccount = "acct_bench_checkpoints"

// RunCheckpoints measures checkpoint (202 → ready) and restore (request →
// the session running on the new sandbox with its app ready) for each
// provider model: the real lifecycle service on a DynamoDB Local table,
// its in-process checkpoint and readiness workers, and the provider's
// real adapter against its fake (served on loopback, real sleeps), then
// the local provider (archives in a folder, a real app server); then the
// archive path (RunArchive) when sizes are given.
func RunCheckpoints(ctx context.Context, env *Env, cfg CheckpointsConfig) (CheckpointsResult, error) {
	if cfg.Rounds <= 0 {
		cfg.Rounds = 10
	}
	if cfg.Models == nil {
		cfg.Models = checkpointModels
	}
	res := CheckpointsResult{Rounds: cfg.Rounds}
	table, drop, err := env.NewTable(ctx, "bench-checkpoints")
	if err != nil {
		return res, err
	}
	defer drop()
	report := func(row CheckpointRow) {
		res.Rows = append(res.Rows, row)
		env.Printf("checkpoints %s: checkpoint p50 %.0f ms p95 %.0f ms (floor %.0f); restore → ready p50 %.0f ms p95 %.0f ms (floor %.0f, over p95 %.0f ms)",
			row.Name, row.Checkpoint.P50MS, row.CheckpointP95, row.CheckpointFloorMS, row.Restore.P50MS, row.RestoreP95,
			row.RestoreFloorMS, row.OverP95MS)
	}
	picked := func(provider string) bool {
		return len(cfg.Providers) == 0 || slices.Contains(cfg.Providers, provider)
	}
	for _, m := range cfg.Models {
		if !picked(m.Provider) {
			continue
		}
		row, err := checkpointsOnFake(ctx, env, table, m, cfg.Rounds)
		if err != nil {
			return res, fmt.Errorf("%s: %w", m.Name, err)
		}
		report(row)
	}
	if !cfg.NoLocal && picked("local") {
		row, err := checkpointsOnLocal(ctx, env, table, cfg.Rounds)
		if err != nil {
			return res, fmt.Errorf("local: %w", err)
		}
		report(row)
	}
	if cfg.ArchiveSizes != "" {
		a, err := RunArchive(ctx, env, cfg.ArchiveSizes, cfg.ArchiveWork)
		if err != nil {
			return res, fmt.Errorf("archive: %w", err)
		}
		res.Archive = &a
	}
	return res, nil
}

// checkpointStack is the service on the table with its checkpoint and
// readiness workers running.
type checkpointStack struct {
	svc  *lifecycle.Service
	stop func()
}

func newCheckpointStack(ctx context.Context, env *Env, table string, p lifecycle.Provider, archives lifecycle.Archives) *checkpointStack {
	log := slog.New(slog.DiscardHandler)
	rw := readiness.New(readiness.Config{Log: log})
	cw := checkpointjobs.New(readiness.Config{Log: log})
	cfg := lifecycle.Config{Store: env.Store(table), Provider: p, Log: log, ReadinessJobs: rw, CheckpointJobs: cw}
	if archives != nil {
		cfg.Archives = archives
		cfg.ArchiveWorkspace = lifecycle.Workspace{Dir: "/", Excludes: archive.DefaultExcludes()}
	}
	svc := lifecycle.NewService(cfg)
	wctx, cancel := context.WithCancel(ctx)
	rw.Start(wctx, svc.BringUp)
	cw.Start(wctx, svc.RunCheckpointJob)
	return &checkpointStack{svc: svc, stop: func() { cancel(); rw.Close(); cw.Close() }}
}

// checkpointPoll is how often the figure re-reads what it waits for.
const checkpointPoll = 5 * time.Millisecond

// settled waits until the session is running with its app ready (or
// failed), or paused, and returns it.
func (st *checkpointStack) settled(ctx context.Context, id string, from string) (*lifecycle.Session, error) {
	end := time.Now().Add(2 * time.Minute)
	for {
		s, err := st.svc.Get(ctx, checkpointAccount, id)
		if err != nil {
			return nil, err
		}
		done := s.State == lifecycle.StatePaused || s.State == lifecycle.StateFailed ||
			s.State == lifecycle.StateRunning && s.Readiness != lifecycle.ReadinessStarting
		if done && (from == "" || s.SandboxID != from || s.RestoreError != "") {
			return s, nil
		}
		if time.Now().After(end) {
			return s, fmt.Errorf("session %s did not settle within 2 min (%s, readiness %s)", id, s.State, s.Readiness)
		}
		if err := lifecycle.Sleep(ctx, checkpointPoll); err != nil {
			return nil, err
		}
	}
}

// rounds creates one session with app, then rounds times: a checkpoint
// (timed to its commit as ready), the session settled, and a restore from
// it (timed to the commit of the app ready on the new sandbox).
func (st *checkpointStack) rounds(ctx context.Context, app *lifecycle.AppInput, n int) (ckpts, restores []time.Duration, kind string, failed int, err error) {
	sess, _, err := st.svc.Create(ctx, checkpointAccount, lifecycle.CreateInput{Template: "base", App: app})
	if err != nil {
		return nil, nil, "", 0, err
	}
	s, err := st.settled(ctx, sess.ID, "")
	if err != nil {
		return nil, nil, "", 0, err
	}
	if s.State != lifecycle.StateRunning || s.Readiness != lifecycle.ReadinessReady {
		return nil, nil, "", 0, fmt.Errorf("not ready after create: %s, readiness %s %s", s.State, s.Readiness, s.ReadinessDetail)
	}
	for i := range n {
		start := time.Now()
		c, _, err := st.svc.CreateCheckpoint(ctx, checkpointAccount, sess.ID, lifecycle.CheckpointInput{Label: fmt.Sprintf("round %d", i)})
		if err != nil {
			return ckpts, restores, kind, failed, err
		}
		for c.State == lifecycle.CheckpointSaving {
			if err := lifecycle.Sleep(ctx, checkpointPoll); err != nil {
				return ckpts, restores, kind, failed, err
			}
			if c, err = st.svc.GetCheckpoint(ctx, checkpointAccount, sess.ID, c.ID); err != nil {
				return ckpts, restores, kind, failed, err
			}
			if time.Since(start) > 3*time.Minute {
				return ckpts, restores, kind, failed, fmt.Errorf("checkpoint %s still saving after 3 min", c.ID)
			}
		}
		kind = string(c.Kind)
		if c.State != lifecycle.CheckpointReady {
			failed++
			continue
		}
		ckpts = append(ckpts, c.UpdatedAt.Sub(start))
		// A snapshot that stops its source (Vercel) is followed by a
		// resume and the app's start: let it settle first.
		s, err := st.settled(ctx, sess.ID, "")
		if err != nil {
			return ckpts, restores, kind, failed, err
		}
		start = time.Now()
		if _, err := st.svc.Restore(ctx, checkpointAccount, sess.ID, c.ID); err != nil {
			return ckpts, restores, kind, failed, err
		}
		s, err = st.settled(ctx, sess.ID, s.SandboxID)
		if err != nil {
			return ckpts, restores, kind, failed, err
		}
		if s.State != lifecycle.StateRunning || s.RestoreError != "" || s.Readiness != lifecycle.ReadinessReady {
			failed++
			continue
		}
		restores = append(restores, s.ReadyAt.Sub(start))
	}
	return ckpts, restores, kind, failed, nil
}

// summarize fills row's figures from the samples and the floors.
func (row *CheckpointRow) summarize(ckpts, restores []time.Duration, kind string, failed int) {
	row.Kind, row.Failed = kind, failed
	row.Checkpoint, row.CheckpointP95 = Summarize(ckpts), ms(percentileOf(ckpts, 95))
	row.Restore, row.RestoreP95 = Summarize(restores), ms(percentileOf(restores, 95))
	row.OverP50MS, row.OverP95MS = row.Restore.P50MS-row.RestoreFloorMS, row.RestoreP95-row.RestoreFloorP95MS
	row.Met = failed == 0 && len(restores) > 0 && row.OverP95MS <= CheckpointTargetMS
}

// modelProvider serves m's fake on loopback with m's latencies and returns
// the provider's adapter aimed at it, and what stops the fake.
func modelProvider(m CheckpointModel) (lifecycle.Provider, func(), error) {
	d := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	var (
		p     lifecycle.Provider
		err   error
		close func()
	)
	switch m.Provider {
	case "e2b":
		f := e2btest.New(e2btest.Config{BootDelay: d(m.BootMS)})
		f.SetLatency(e2btest.OpSnapshot, d(m.SnapshotMS))
		f.SetLatency(e2btest.OpCreate, d(m.CreateMS))
		hs.Config.Handler, close = f.Handler(), f.Close
		p, err = e2btest.Fake.Adapter(base, slog.New(slog.DiscardHandler))
	case "vercel":
		f := verceltest.NewServer(verceltest.Config{RouteURL: verceltest.PreviewURLs(base), BootDelay: d(m.BootMS)})
		f.SetLatency(verceltest.OpSnapshot, d(m.SnapshotMS))
		f.SetLatency(verceltest.OpCreate, d(m.CreateMS))
		hs.Config.Handler, close = f.Handler(), f.Close
		o := f.Config()
		p, err = vercel.New(vercel.Config{BaseURL: base, Token: o.Token, TeamID: o.TeamID, ProjectID: o.ProjectIDs[0],
			Logger: slog.New(slog.DiscardHandler)})
	case "daytona":
		o := daytonatest.StandaloneConfig()
		o.BootDelay, o.ToolboxProxyURL, o.PreviewBaseURL = d(m.BootMS), base+"/toolbox", base
		o.SnapshotTime, o.CreateTime, o.Logger = d(m.SnapshotMS), d(m.CreateMS), slog.New(slog.DiscardHandler)
		hs.Config.Handler, close = daytonatest.NewServer(o).Handler(), func() {}
		p, err = daytona.New(daytona.Config{BaseURL: base, APIKey: daytonatest.DefaultAPIKey})
	default:
		return nil, nil, fmt.Errorf("no fake of provider %q", m.Provider)
	}
	if err != nil {
		hs.Close()
		return nil, nil, err
	}
	hs.Start()
	return p, func() { close(); hs.Close() }, nil
}

func checkpointsOnFake(ctx context.Context, env *Env, table string, m CheckpointModel, n int) (CheckpointRow, error) {
	row := CheckpointRow{CheckpointModel: m}
	p, stopFake, err := modelProvider(m)
	if err != nil {
		return row, err
	}
	defer stopFake()
	st := newCheckpointStack(ctx, env, table, p, nil)
	defer st.stop()
	port, line := 3000, "npm run dev"
	ckpts, restores, kind, failed, err := st.rounds(ctx, &lifecycle.AppInput{Port: &port, StartCommand: &line}, n)
	if err != nil {
		return row, err
	}
	row.CheckpointFloorMS, row.RestoreFloorMS = m.SnapshotMS, m.CreateMS
	if !m.KeepsMemory {
		row.RestoreFloorMS += m.BootMS
	}
	row.CheckpointFloorP95MS, row.RestoreFloorP95MS = row.CheckpointFloorMS, row.RestoreFloorMS
	row.summarize(ckpts, restores, kind, failed)
	return row, nil
}

func checkpointsOnLocal(ctx context.Context, env *Env, table string, n int) (CheckpointRow, error) {
	row := CheckpointRow{CheckpointModel: CheckpointModel{Name: "local (archive, real server)", Provider: "local",
		Source: "measured without Sandman: the sandbox folder's tar + zstd; a create, the tar unpacked, the app started and answering (polled every 1 ms)"}}
	lp, exe, closeLocal, err := newBenchLocal(ctx, "sandman-bench-checkpoints-")
	if err != nil {
		return row, err
	}
	defer closeLocal()
	dir, err := os.MkdirTemp("", "sandman-bench-archives-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	store, err := dirstore.New(dir)
	if err != nil {
		return row, err
	}
	st := newCheckpointStack(ctx, env, table, lp, archive.NewArchives(store))
	defer st.stop()
	port, line := 3000, "exec '"+exe+"'"
	app := &lifecycle.AppInput{Port: &port, StartCommand: &line, Env: map[string]string{EnvServeApp: "1"}}
	ckpts, restores, kind, failed, err := st.rounds(ctx, app, n)
	if err != nil {
		return row, err
	}
	ckptFloor, restoreFloor, err := localArchiveFloor(ctx, lp, exe, n)
	if err != nil {
		return row, err
	}
	row.CheckpointFloorMS, row.CheckpointFloorP95MS = Summarize(ckptFloor).P50MS, ms(percentileOf(ckptFloor, 95))
	row.RestoreFloorMS, row.RestoreFloorP95MS = Summarize(restoreFloor).P50MS, ms(percentileOf(restoreFloor, 95))
	row.summarize(ckpts, restores, kind, failed)
	return row, nil
}

// answered GETs url every millisecond until it answers, for at most 20 s.
func answered(ctx context.Context, url string, start time.Time) error {
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Since(start) > 20*time.Second {
			return fmt.Errorf("the app did not answer within 20 s")
		}
		if err := lifecycle.Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// localArchiveFloor measures, without Sandman, what the local provider
// takes for a checkpoint (the sandbox folder's tar, compressed with zstd
// into nothing) and for a sandbox made from it (a create, the tar
// unpacked, the app started and answering), n times each after one warm-up.
func localArchiveFloor(ctx context.Context, lp *local.Provider, exe string, n int) (ckpt, restore []time.Duration, err error) {
	src, err := lp.Create(ctx, lifecycle.CreateRequest{Template: local.TemplateBase, Timeout: time.Hour})
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = lp.Kill(context.WithoutCancel(ctx), src.ID) }()
	cmd := lifecycle.Command{Name: lifecycle.AppCommandName, Line: "exec '" + exe + "'", Port: 3000,
		Env: map[string]string{EnvServeApp: "1"}}
	var tarball bytes.Buffer
	for i := range n + 1 {
		tarball.Reset()
		start := time.Now()
		if _, err := lp.ExportTar(ctx, src.ID, "/", archive.DefaultExcludes(), &tarball); err != nil {
			return nil, nil, err
		}
		if _, err := archive.Compress(io.Discard, bytes.NewReader(tarball.Bytes())); err != nil {
			return nil, nil, err
		}
		took := time.Since(start)

		start = time.Now()
		sb, err := lp.Create(ctx, lifecycle.CreateRequest{Template: local.TemplateBase, Timeout: time.Hour})
		if err != nil {
			return nil, nil, err
		}
		err = lp.ImportTar(ctx, sb.ID, "/", bytes.NewReader(tarball.Bytes()))
		if err == nil {
			_, err = lp.StartCommand(ctx, sb.ID, cmd)
		}
		var url string
		if err == nil {
			url, err = lp.PortURL(ctx, sb.ID, 3000)
		}
		if err == nil {
			err = answered(ctx, url, start)
		}
		made := time.Since(start)
		_ = lp.Kill(context.WithoutCancel(ctx), sb.ID)
		if err != nil {
			return nil, nil, err
		}
		if i > 0 { // the first run warms the page cache
			ckpt, restore = append(ckpt, took), append(restore, made)
		}
	}
	return ckpt, restore, nil
}
