// Command cmd prints the cost replay report of package costsim as Markdown:
//
//	go run ./internal/cmd/costsim [-seed 1] [-sessions 1000] [-days 7]
//
// Without flags it prints the report of costsim.DefaultConfig, the one the
// bench runner embeds in docs/BENCH.md.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sandmanhq/sandman/internal/costsim"
)

func main() {
	cfg := costsim.DefaultConfig()
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the trace and of missed sweeps")
	flag.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "number of sessions")
	flag.IntVar(&cfg.Days, "days", cfg.Days, "days over which sessions start")
	flag.Parse()
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Print(costsim.Run(cfg).Markdown())
}
