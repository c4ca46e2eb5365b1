// Package archivebench measures Sandman's archive of a workspace folder
// (internal/archive) against `tar -cf - . | zstd -3` of the same folder on
// the same machine, the floor: at each size it generates a deterministic
// synthetic workspace (source-like text in many small files, random bytes
// in a few large and many small ones), warms the page cache, and times,
// interleaved, run after run:
//
//   - the floor: sh -c 'tar -C DIR -cf - . | zstd -3 -c', its output read
//     and counted;
//   - Sandman's local path: archive.Pack (a Go walk, archive/tar, zstd);
//   - Sandman's sandbox path: archive.TarCommand run by sh, its stdout
//     compressed by archive.Compress, as a provider's command API streams
//     it;
//   - restores of Sandman's archive: `zstd -dc | tar -xf -` against
//     archive.Unpack into an empty folder.
//
// Markdown renders tables of the medians: seconds, throughput in MB/s (of
// the workspace's bytes, 10^6 bytes per second), archive sizes, and each
// path's time over the floor's (the target is at most Target). Run is what
// `make bench` runs (internal/lab/bench's checkpoint figure) and the
// command internal/lab/cmd/archivebench prints:
//
//	go -C internal/lab run ./cmd/archivebench -sizes 10MB,100MB,1GB
package archivebench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandmanhq/sandman/internal/archive"
)

// result is one size's medians.
type result struct {
	label                string
	files                int
	bytes                int64
	floor, pack, sandbox sample
	floorSize, packSize  int64
	sandboxSize          int64
	unpackFloor, unpack  sample
	runs                 int
}

// sample is one path's time: wall clock, and the processor time (user +
// system) of every process it ran, the fair comparison on a machine other
// work is using too.
type sample struct {
	wall, cpu time.Duration
}

// selfCPU returns the processor time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs fn and returns its sample: wall clock, this process's
// processor time plus what fn reports of its child processes'.
func timed(fn func() (childCPU time.Duration, err error)) (sample, error) {
	c0, w0 := selfCPU(), time.Now()
	child, err := fn()
	return sample{wall: time.Since(w0), cpu: selfCPU() - c0 + child}, err
}

// Target is the archive's target: at most this many times the floor's
// time.
const Target = 1.2

// Config sizes Run. Zero fields take the defaults given.
type Config struct {
	// Sizes are the workspaces' sizes, comma-separated (KB, MB, GB: powers
	// of 10; "10MB,100MB,1GB").
	Sizes string
	// Work is the folder the workspaces are generated in, kept for the
	// next run unless Clean (os.TempDir()/sandman-archivebench).
	Work  string
	Clean bool
	// Runs are the timed runs of each path per size under 1 GB (3),
	// LargeRuns per size of 1 GB or more (1); the median is reported.
	Runs, LargeRuns int
	// Progress receives one line per step (nil: none).
	Progress io.Writer
}

// Size is one workspace size's figures: each of Sandman's paths' median
// time over the floor's, wall clock and processor time.
type Size struct {
	Label string `json:"label"`
	Bytes int64  `json:"bytes"`
	Files int    `json:"files"`
	Runs  int    `json:"runs"`
	// FloorSeconds is the floor's median wall time.
	FloorSeconds float64 `json:"floor_s"`
	// Pack is archive.Pack's (the local provider's path), Sandbox the
	// sandbox path's (a tar command's stream compressed), Unpack
	// archive.Unpack's against `zstd -dc | tar -xf -`.
	PackWall    float64 `json:"pack_over_floor_wall"`
	PackCPU     float64 `json:"pack_over_floor_cpu"`
	SandboxWall float64 `json:"sandbox_over_floor_wall"`
	SandboxCPU  float64 `json:"sandbox_over_floor_cpu"`
	UnpackWall  float64 `json:"unpack_over_floor_wall"`
	UnpackCPU   float64 `json:"unpack_over_floor_cpu"`
}

// Met says both archive paths took at most Target times the floor's wall
// time.
func (s Size) Met() bool { return s.PackWall <= Target && s.SandboxWall <= Target }

// Report is Run's answer: each size's figures and the markdown tables.
type Report struct {
	Sizes    []Size `json:"sizes"`
	Markdown string `json:"-"`
}

// Run generates a workspace of each size and measures it (the package
// comment says how). Errors: tar, zstd or sh missing from PATH, a size
// that does not parse, a path that failed.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Sizes == "" {
		cfg.Sizes = "10MB,100MB,1GB"
	}
	if cfg.Work == "" {
		cfg.Work = filepath.Join(os.TempDir(), "sandman-archivebench")
	}
	cfg.Runs, cfg.LargeRuns = max(cfg.Runs, 0), max(cfg.LargeRuns, 0)
	if cfg.Runs == 0 {
		cfg.Runs = 3
	}
	if cfg.LargeRuns == 0 {
		cfg.LargeRuns = 1
	}
	log := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "archivebench: "+format+"\n", args...)
		}
	}
	for _, tool := range []string{"tar", "zstd", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Report{}, fmt.Errorf("%s is needed on PATH", tool)
		}
	}
	var results []result
	for _, label := range strings.Split(cfg.Sizes, ",") {
		size, err := parseSize(label)
		if err != nil {
			return Report{}, err
		}
		dir := filepath.Join(cfg.Work, label)
		log("%s: generating in %s", label, dir)
		files, total, err := generate(dir, size)
		if err != nil {
			return Report{}, fmt.Errorf("generate %s: %w", label, err)
		}
		n := cfg.Runs
		if size >= 1e9 {
			n = cfg.LargeRuns
		}
		r, err := measure(ctx, dir, cfg.Work, n)
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", label, err)
		}
		r.label, r.files, r.bytes = label, files, total
		results = append(results, r)
		log("%s: floor %v, pack %v, sandbox %v (wall)", label, r.floor.wall, r.pack.wall, r.sandbox.wall)
		if cfg.Clean {
			_ = os.RemoveAll(dir)
		}
	}
	rep := Report{Markdown: render(results)}
	for _, r := range results {
		rep.Sizes = append(rep.Sizes, r.size())
	}
	return rep, nil
}

// size is r's figures.
func (r result) size() Size {
	over := func(a, b sample) (float64, float64) {
		return round2(a.wall.Seconds() / b.wall.Seconds()), round2(a.cpu.Seconds() / b.cpu.Seconds())
	}
	s := Size{Label: r.label, Bytes: r.bytes, Files: r.files, Runs: r.runs, FloorSeconds: round2(r.floor.wall.Seconds())}
	s.PackWall, s.PackCPU = over(r.pack, r.floor)
	s.SandboxWall, s.SandboxCPU = over(r.sandbox, r.floor)
	s.UnpackWall, s.UnpackCPU = over(r.unpack, r.unpackFloor)
	return s
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func measure(ctx context.Context, dir, work string, runs int) (result, error) {
	var r result
	r.runs = runs
	floorCmd := "tar -C " + archive.ShellQuote(dir) + " -cf - . | zstd -3 -c"
	tarCmd, err := archive.TarCommand(dir, archive.Excludes{})
	if err != nil {
		return r, err
	}
	// Warm the page cache (and check the floor works) before timing.
	if _, err := shell(ctx, floorCmd, &counter{}); err != nil {
		return r, err
	}
	// The archive the restores read, written once, untimed: every timed
	// path writes to memory only, so that none waits on the disk.
	zst := filepath.Join(work, "archive.tar.zst")
	defer os.Remove(zst)
	if err := packFile(ctx, dir, zst); err != nil {
		return r, err
	}
	var floors, packs, sandboxes, unpackFloors, unpacks []sample
	for range runs {
		c := &counter{}
		s, err := timed(func() (time.Duration, error) { return shell(ctx, floorCmd, c) })
		if err != nil {
			return r, err
		}
		floors, r.floorSize = append(floors, s), c.n

		c = &counter{}
		s, err = timed(func() (time.Duration, error) {
			_, err := archive.Pack(ctx, c, dir, archive.Excludes{})
			return 0, err
		})
		if err != nil {
			return r, err
		}
		packs, r.packSize = append(packs, s), c.n

		c = &counter{}
		s, err = timed(func() (time.Duration, error) { return sandboxPath(ctx, tarCmd, c) })
		if err != nil {
			return r, err
		}
		sandboxes, r.sandboxSize = append(sandboxes, s), c.n

		s, err = restore(work, func(dst string) (time.Duration, error) {
			return shell(ctx, "zstd -dc "+archive.ShellQuote(zst)+" | tar -C "+archive.ShellQuote(dst)+" -xf -", &counter{})
		})
		if err != nil {
			return r, err
		}
		unpackFloors = append(unpackFloors, s)
		s, err = restore(work, func(dst string) (time.Duration, error) {
			f, err := os.Open(zst)
			if err != nil {
				return 0, err
			}
			defer f.Close()
			_, err = archive.Unpack(ctx, f, dst)
			return 0, err
		})
		if err != nil {
			return r, err
		}
		unpacks = append(unpacks, s)
	}
	r.floor, r.pack, r.sandbox = median(floors), median(packs), median(sandboxes)
	r.unpackFloor, r.unpack = median(unpackFloors), median(unpacks)
	return r, nil
}

// packFile writes the archive of dir to the file zst.
func packFile(ctx context.Context, dir, zst string) error {
	f, err := os.Create(zst)
	if err != nil {
		return err
	}
	_, err = archive.Pack(ctx, f, dir, archive.Excludes{})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// sandboxPath runs the tar command as a sandbox would and compresses its
// stdout as Sandman does when the stream arrives; it returns tar's
// processor time.
func sandboxPath(ctx context.Context, tarCmd string, w io.Writer) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", tarCmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	_, cerr := archive.Compress(w, stdout)
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", tarCmd, err, stderr.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), cerr
}

// restore times fn unpacking into a fresh empty folder, removed afterwards.
func restore(work string, fn func(dst string) (time.Duration, error)) (sample, error) {
	dst, err := os.MkdirTemp(work, "restore-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(dst)
	return timed(func() (time.Duration, error) { return fn(dst) })
}

// shell runs script with sh, its stdout to w, and returns the processor
// time of sh and the commands it waited for (a pipeline's).
func shell(ctx context.Context, script string, w io.Writer) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", script, err, stderr.String())
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

func render(results []result) string {
	var b strings.Builder
	zstdVersion, _ := exec.Command("zstd", "--version").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "Archive of a synthetic workspace (60 %% source-like text in small files, 40 %% random bytes in 3 large and many small files) against `tar -cf - . | zstd -3` of the same folder (the floor), on the same machine: %d cores (GOMAXPROCS %d), %s, %s; load average at the end %s. Medians; wall seconds with throughput in MB/s of the workspace, then processor seconds (user + system of every process of the path).\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(string(zstdVersion), "*** ")), "***")), strings.Join(strings.Fields(string(load))[:3], " "))
	b.WriteString("| workspace | files | runs | floor | Pack (Go walk) | Pack ÷ floor (wall, CPU) | sandbox tar → Compress | ÷ floor (wall, CPU) | floor size | Sandman size |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s (%s) | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n",
			r.label, mb(r.bytes), r.files, r.runs, timing(r.floor, r.bytes), timing(r.pack, r.bytes), ratios(r.pack, r.floor),
			timing(r.sandbox, r.bytes), ratios(r.sandbox, r.floor), mb(r.floorSize), mb(r.packSize))
	}
	b.WriteString("\nRestore of Sandman's archive into an empty folder:\n\n")
	b.WriteString("| workspace | `zstd -dc \\| tar -xf -` | Unpack | Unpack ÷ floor (wall, CPU) |\n")
	b.WriteString("|---|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.label, timing(r.unpackFloor, r.bytes), timing(r.unpack, r.bytes), ratios(r.unpack, r.unpackFloor))
	}
	return b.String()
}

// timing is "wall s (MB/s), CPU s".
func timing(s sample, n int64) string {
	return fmt.Sprintf("%.2f s (%.0f MB/s), CPU %.2f s", s.wall.Seconds(), float64(n)/1e6/s.wall.Seconds(), s.cpu.Seconds())
}

func ratios(a, b sample) string {
	return fmt.Sprintf("%.2f×, %.2f×", a.wall.Seconds()/b.wall.Seconds(), a.cpu.Seconds()/b.cpu.Seconds())
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// median returns the median wall time and the median processor time, each
// on its own.
func median(ss []sample) sample {
	walls, cpus := make([]time.Duration, len(ss)), make([]time.Duration, len(ss))
	for i, s := range ss {
		walls[i], cpus[i] = s.wall, s.cpu
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return sample{wall: walls[len(ss)/2], cpu: cpus[len(ss)/2]}
}

// parseSize reads "10MB", "1GB", "500KB" (powers of 10) or a byte count.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for suffix, m := range map[string]int64{"KB": 1e3, "MB": 1e6, "GB": 1e9} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a count such as 10MB or 1GB", s)
	}
	return n * mult, nil
}

// counter counts what is written through it (to w, or nowhere).
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.w == nil {
		return len(p), nil
	}
	return c.w.Write(p)
}
