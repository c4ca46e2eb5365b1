// Command archivebench prints internal/lab/archivebench's report: Sandman's
// archive of a synthetic workspace against `tar | zstd -3` of the same
// folder on the same machine (`make bench` runs the same in its checkpoint
// figure):
//
//	go -C internal/lab run ./cmd/archivebench -sizes 10MB,100MB,1GB
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandmanhq/sandman/internal/lab/archivebench"
)

func main() {
	var cfg archivebench.Config
	flag.StringVar(&cfg.Sizes, "sizes", "10MB,100MB,1GB", "workspace sizes, comma-separated (KB, MB, GB: powers of 10)")
	flag.StringVar(&cfg.Work, "work", filepath.Join(os.TempDir(), "sandman-archivebench"), "folder the workspaces are generated in (kept for the next run unless -clean)")
	flag.IntVar(&cfg.Runs, "runs", 3, "timed runs of each path per size under 1 GB (the median is reported)")
	flag.IntVar(&cfg.LargeRuns, "large-runs", 1, "timed runs per size of 1 GB or more")
	flag.BoolVar(&cfg.Clean, "clean", false, "remove the generated workspaces afterwards")
	out := flag.String("out", "", "write the markdown report here instead of stdout")
	flag.Parse()
	cfg.Progress = os.Stderr
	rep, err := archivebench.Run(context.Background(), cfg)
	if err == nil {
		if *out == "" {
			_, err = os.Stdout.WriteString(rep.Markdown)
		} else {
			err = os.WriteFile(*out, []byte(rep.Markdown), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "archivebench:", err)
		os.Exit(1)
	}
}
