package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/sandmanhq/sandman/internal/lab/bench"
	"github.com/sandmanhq/sandman/internal/lab/costsim"
)

// costReport runs the cost report (internal/lab/costsim's trace replay of
// costsim.DefaultConfig, on a simulated clock) and returns it as the
// report's cost section, its headings moved one level down to sit under
// the section's own. A panic in the replay (a bug, by costsim.Run's
// contract) becomes an error.
func costReport() (sec *bench.CostSection, err error) {
	defer func() {
		if p := recover(); p != nil {
			sec, err = nil, fmt.Errorf("cost replay panicked: %v", p)
		}
	}()
	start := time.Now()
	rep := costsim.Run(costsim.DefaultConfig())
	took := time.Since(start)
	return &bench.CostSection{
		Markdown: demoteHeadings(rep.Markdown()),
		Raw:      rep,
		Note: fmt.Sprintf("Computed in this run by `costsim.Run(costsim.DefaultConfig())` in %.1f s "+
			"(`go -C internal/lab run ./cmd/costsim` prints the same report alone).", took.Seconds()),
	}, nil
}

// demoteHeadings adds one '#' to every markdown heading line of md.
func demoteHeadings(md string) string {
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			lines[i] = "#" + l
		}
	}
	return strings.Join(lines, "\n")
}
