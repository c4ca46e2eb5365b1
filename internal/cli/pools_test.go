package cli_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/cli"
	apishape "github.com/sandmanhq/sandman/internal/openapi/api"
)

// TestPoolsCommand: `sandman pools` prints GET /v1/pools as a table (the
// last error on one line) or as the API's JSON, and refuses a bad flag.
func TestPoolsCommand(t *testing.T) {
	backoff, lastErr := "2026-11-27T10:00:00Z", "the start command exited with code 3\n$ exit 3"
	list := apishape.PoolList{Pools: []apishape.Pool{{ID: "pool_0123456789abcdef", Provider: "local", Template: "web",
		Size: 2, Tier: "paused", Ready: 1, Hits: 3, Misses: 1, HitRate: 0.75, Failed: 3, BackoffUntil: &backoff, LastError: &lastErr}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/pools" || r.Header.Get("x-api-key") == "" && r.Header.Get("Authorization") == "" {
			http.Error(w, `{"status":"error","error":"no","error_type":"not_found"}`, 404)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	defer srv.Close()
	run := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
			return map[string]string{"SANDMAN_URL": srv.URL, "SANDMAN_API_KEY": "sk_test"}[k]
		}}
		return cli.PoolsMain(t.Context(), args, env), out.String(), errOut.String()
	}
	code, out, errOut := run()
	if code != 0 || !strings.Contains(out, "pool_0123456789abcdef") || !strings.Contains(out, "75%") ||
		!strings.Contains(out, "exited with code 3 …") || strings.Contains(out, "$ exit 3") {
		t.Errorf("table: code %d, out %q, err %q", code, out, errOut)
	}
	code, out, _ = run("list", "-o", "json")
	var got apishape.PoolList
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Pools) != 1 || got.Pools[0].Hits != 3 {
		t.Errorf("json: code %d, out %q", code, out)
	}
	if code, _, errOut := run("-o", "yaml"); code != cli.ExitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "-o must be table or json") {
		t.Errorf("bad flag: code %d, err %q; want one line naming -o", code, errOut)
	}
}
