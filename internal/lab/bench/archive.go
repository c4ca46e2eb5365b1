package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/lab/archivebench"
)

// ArchiveFigure is the archive path's figure: internal/lab/archivebench's
// report (Sandman's archive of a synthetic workspace against `tar | zstd
// -3` of the same folder on the same machine), with its verdicts.
type ArchiveFigure struct {
	Sizes []archivebench.Size `json:"sizes"`
	// Markdown is archivebench's tables.
	Markdown string `json:"-"`
}

// RunArchive runs archivebench at sizes (e.g. "10MB,100MB,1GB") in work
// ("": its default), progress to env.
func RunArchive(ctx context.Context, env *Env, sizes, work string) (ArchiveFigure, error) {
	rep, err := archivebench.Run(ctx, archivebench.Config{Sizes: sizes, Work: work, Progress: env.Progress})
	if err != nil {
		return ArchiveFigure{}, err
	}
	for _, s := range rep.Sizes {
		env.Printf("archive %s: Pack %.2f× the floor (wall), the sandbox path %.2f×", s.Label, s.PackWall, s.SandboxWall)
	}
	return ArchiveFigure{Sizes: rep.Sizes, Markdown: rep.Markdown}, nil
}

func (r *Report) checkpointsSection(b *strings.Builder, res *CheckpointsResult) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## 12. Checkpoints: checkpoint and restore → ready (docs/CHECKPOINTS.md)\n\n")
	p("Each row runs the real `lifecycle.Service` on a DynamoDB Local table with its in-process checkpoint worker ")
	p("(`internal/checkpointjobs`) and readiness worker, and the provider's real adapter against its fake served on ")
	p("loopback with the model's latencies as real waits (the fakes' `SetLatency` on the snapshot and create calls; ")
	p("Daytona's fake captures in the background for its `SnapshotTime`). It creates one session with an app, then %d ", res.Rounds)
	p("times: `CreateCheckpoint` (202, saving) until the checkpoint's commit as `ready` (its `updated_at`), the session ")
	p("left to settle (a Vercel snapshot stops the sandbox: the service resumes it and restarts the app), then `Restore` ")
	p("until the session runs on the new sandbox with its app `ready` (`ready_at`). The restore floor is the provider's ")
	p("own create from the snapshot plus the app's boot (none where the snapshot keeps memory); the checkpoint floor its ")
	p("snapshot. The local row keeps archives in a folder and runs a real server whose sandbox keeps no processes; its ")
	p("floors are measured without Sandman (p50; the over-floor p95 is against the floor's p95). ")
	p("Target: restore → ready at most %d ms p95 over the floor.\n\n", CheckpointTargetMS)
	p("| provider model | kind | source | checkpoint floor ms | checkpoint p50 ms | p95 ms | restore floor ms | restore p50 ms | p95 ms | over floor p50 ms | over floor p95 ms | failed | verdict |\n")
	p("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, x := range res.Rows {
		verdict := "met"
		if !x.Met {
			verdict = "**not met**"
		}
		p("| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %d | %s |\n", x.Name, x.Kind, x.Source,
			x.CheckpointFloorMS, x.Checkpoint.P50MS, x.CheckpointP95, x.RestoreFloorMS, x.Restore.P50MS, x.RestoreP95,
			x.OverP50MS, x.OverP95MS, x.Failed, verdict)
	}
	p("\n")
	if a := res.Archive; a != nil {
		p("### The archive path (docs/ARCHIVES.md)\n\n")
		p("`internal/lab/archivebench` in this run (`go -C internal/lab run ./cmd/archivebench` prints the same alone). ")
		p("Target: each archive path at most %.1f× the floor's wall time.\n\n", archivebench.Target)
		p("%s\n", a.Markdown)
		p("| workspace | Pack ÷ floor (wall) | sandbox path ÷ floor (wall) | verdict |\n|---|--:|--:|---|\n")
		for _, s := range a.Sizes {
			verdict := "met"
			if !s.Met() {
				verdict = "**not met**"
			}
			p("| %s | %.2f× | %.2f× | %s |\n", s.Label, s.PackWall, s.SandboxWall, verdict)
		}
		p("\n")
	}
}
