package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sandmanhq/sandman/internal/openapi/api"
)

// PoolsUsage is the help of `sandman pools`.
const PoolsUsage = `usage: sandman pools [list] [flags]

The deployment's warm pools (GET /v1/pools, docs/POOLS.md): per pool its size and tier,
spares ready and being made, failures, claims, hit rate, last error and backoff.

flags: -o table|json, --url URL (default $SANDMAN_URL), --api-key KEY (default
$SANDMAN_API_KEY, else .sandman/dev_api_key for an API on this machine). Exit status as for
sandman sessions.
`

// PoolsMain runs `sandman pools <args>` and returns the exit status.
func PoolsMain(ctx context.Context, args []string, env Env) int {
	return report(env, "sandman pools", args, runPools(ctx, args, env))
}

func runPools(ctx context.Context, args []string, env Env) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(env.Stdout, PoolsUsage)
		return nil
	}
	if len(args) > 0 && args[0] == "list" {
		args = args[1:]
	}
	fs := newFlagSet("sandman pools")
	c := &command{name: "pools"}
	c.register(fs)
	pos, err := parseFlags(fs, args)
	if errors.Is(err, errHelp) {
		fmt.Fprint(env.Stdout, PoolsUsage)
		return nil
	}
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected arguments %q", pos)
	}
	if c.client, err = c.commonFlags.client(env, "sandman pools"); err != nil {
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
