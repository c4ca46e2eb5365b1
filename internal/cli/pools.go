package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// PoolsUsage is the help of `sandman pools`.
const PoolsUsage = `usage: sandman pools [list] [flags]

The deployment's warm pools (GET /v1/pools, docs/POOLS.md): per pool its size and tier,
spares ready and being made, failures, claims, hit rate, last error and backoff.

flags: -o table|json, --url-api URL (default $SANDMAN_URL), --api-key KEY
(default $SANDMAN_API_KEY). Exit status as for sandman sessions.
`

// PoolsMain runs `sandman pools <args>` and returns the exit status.
func PoolsMain(ctx context.Context, args []string, env Env) int {
	err := runPools(ctx, args, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "sandman pools: %v\n", err)
		if ExitCode(err) == ExitUsage {
			fmt.Fprint(env.Stderr, "\n"+PoolsUsage)
		}
	}
	return ExitCode(err)
}

func runPools(ctx context.Context, args []string, env Env) error {
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
		fmt.Fprint(env.Stdout, PoolsUsage)
		return nil
	}
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("sandman pools", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &command{name: "pools"}
	fs.StringVar(&c.output, "o", "table", "output: table or json")
	baseURL := fs.String("url-api", "", "the API's URL")
	apiKey := fs.String("api-key", "", "the API key")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if c.output != "table" && c.output != "json" {
		return usagef("-o must be table or json, not %q", c.output)
	}
	if err := c.connect(*baseURL, *apiKey, env); err != nil {
		return err
	}
	var l api.PoolList
	raw, err := c.client.do(ctx, http.MethodGet, "/v1/pools", nil, nil, nil, &l)
	return c.print(env.Stdout, raw, err, func(w io.Writer) { poolsTable(w, l) })
}

// poolsTable writes one row per pool.
func poolsTable(w io.Writer, l api.PoolList) {
	fmt.Fprintln(w, "ID\tPROVIDER\tTEMPLATE\tTIER\tSIZE\tREADY\tMAKING\tFAILED\tHITS\tMISSES\tLOST\tHIT RATE\tBACKOFF UNTIL\tLAST ERROR")
	for _, p := range l.Pools {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f%%\t%s\t%s\n", p.ID, p.Provider, p.Template, p.Tier,
			p.Size, p.Ready, p.Making, p.Failed, p.Hits, p.Misses, p.Lost, 100*p.HitRate, orDash(p.BackoffUntil), oneLine(orDash(p.LastError)))
	}
}

// oneLine keeps the first line of s, so a command's output in an error
// does not break the table.
func oneLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i] + " …"
		}
	}
	return s
}
