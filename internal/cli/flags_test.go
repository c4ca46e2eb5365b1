package cli_test

import (
	"bytes"
	"context"
	"encoding/json"

	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sandmanhq/sandman/internal/cli"
)

// recorder is an API that answers {} and records each request's method,
// path and query, Authorization header and body.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
	url  string
}

type recorded struct {
	line, auth string
	body       map[string]any
}

func newRecorder(tb testing.TB) *recorder {
	tb.Helper()
	r := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.Method + " " + req.URL.RequestURI(), req.Header.Get("Authorization"), body})
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"ses_x","token":"t.x","expires_at":"2026-11-21T12:15:00Z","ws_url":null,"sessions":[],"pools":[],"webhook_endpoints":[],"next_cursor":null}`)
	}))
	tb.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *recorder) last(tb testing.TB) recorded {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		tb.Fatal("no request reached the API")
	}
	return r.reqs[len(r.reqs)-1]
}

// mains are the CLI's commands by name.
var mains = map[string]func(context.Context, []string, cli.Env) int{
	"sessions": cli.Main, "webhooks": cli.WebhooksMain, "pools": cli.PoolsMain, "client-tokens": cli.ClientTokensMain,
	"checkpoints": cli.CheckpointsMain,
}

// runWith runs `sandman <cmd> args...` with vars as its environment and
// files as what it may read.
func runWith(tb testing.TB, vars, files map[string]string, cmd string, args ...string) (int, string, string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return vars[k] },
		ReadFile: func(name string) ([]byte, error) {
			if v, ok := files[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}}
	return mains[cmd](tb.Context(), args, env), out.String(), errOut.String()
}

// TestFlagErrorsAreOneLine: a bad flag, a bad duration or number, an
// unknown flag or one without its value is one line on stderr that names
// the flag and says what is wanted, with where the help is: no usage dump,
// no Go parse error; and nothing reaches the API.
func TestFlagErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	vars := map[string]string{"SANDMAN_URL": api.url, "SANDMAN_API_KEY": "sk_k"}
	for _, tc := range []struct {
		cmd  string
		args []string
		says []string
	}{
		{"sessions", []string{"create", "--template", "web", "--idle-timeout", "10x"}, []string{"--idle-timeout", `"10x" is not a duration`, "90s"}},
		{"sessions", []string{"create", "--idle-timeout", "1.5s"}, []string{"--idle-timeout", "whole number of seconds"}},
		{"sessions", []string{"create", "--away-timeout", "soon"}, []string{"--away-timeout", `"soon" is not a duration`}},
		{"sessions", []string{"create", "--max-lifetime", "-1h"}, []string{"--max-lifetime", "negative"}},
		{"sessions", []string{"create", "--app-port", "http"}, []string{"--app-port", `"http" is not a whole number`}},
		{"sessions", []string{"create", "--app", "{\"port\": \"x\"}"}, []string{"--app", "not an app spec"}},
		{"sessions", []string{"create", "--template"}, []string{"--template needs a value"}},
		{"sessions", []string{"list", "--limit", "ten"}, []string{"--limit", `"ten" is not a whole number`}},
		{"sessions", []string{"list", "--all=maybe"}, []string{"--all", `"maybe" is not a valid value`}},
		{"sessions", []string{"list", "--frobnicate"}, []string{"unknown flag --frobnicate"}},
		{"sessions", []string{"list", "-o", "yaml"}, []string{"-o must be table or json"}},
		{"sessions", []string{"open", "ses_x", "--ttl", "5m"}, []string{"--ttl", "--token"}},
		{"sessions", []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"webhooks", []string{"deliveries", "we_x", "--limit", "x"}, []string{"--limit"}},
		{"checkpoints", []string{"list", "ses_x", "--limit", "x"}, []string{"--limit"}},
		{"checkpoints", []string{"get", "ses_x"}, []string{"get takes 2 argument(s)"}},
		{"checkpoints", []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"pools", []string{"--nope"}, []string{"unknown flag --nope"}},
		{"client-tokens", []string{"create", "ses_x", "--ttl", "forever"}, []string{"--ttl", `"forever" is not a duration`}},
		{"client-tokens", []string{"create"}, []string{"one session id"}},
	} {
		t.Run(strings.Join(append([]string{tc.cmd}, tc.args...), " "), func(t *testing.T) {
			code, out, errOut := runWith(t, vars, nil, tc.cmd, tc.args...)
			if code != cli.ExitUsage || out != "" {
				t.Errorf("exit %d, stdout %q; want %d and nothing", code, out, cli.ExitUsage)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "sandman "+tc.cmd) || !strings.Contains(errOut, " help)") {
				t.Errorf("stderr %q: want one line, the command, its error and where the help is", errOut)
			}
			for _, s := range tc.says {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q does not say %q", errOut, s)
				}
			}
			for _, s := range []string{"usage:", "parse error", "invalid value", "strconv", "time: invalid"} {
				if strings.Contains(errOut, s) {
					t.Errorf("stderr %q holds %q", errOut, s)
				}
			}
		})
	}
	if len(api.reqs) != 0 {
		t.Errorf("bad command lines reached the API: %+v", api.reqs)
	}
	for cmd, help := range map[string]string{"sessions": "usage: sandman sessions", "webhooks": "usage: sandman webhooks",
		"pools": "usage: sandman pools", "client-tokens": "usage: sandman client-tokens",
		"checkpoints": "usage: sandman checkpoints"} {
		for _, args := range [][]string{{"help"}, {"--help"}} {
			if code, out, _ := runWith(t, vars, nil, cmd, args...); code != 0 || !strings.HasPrefix(out, help) {
				t.Errorf("sandman %s %v: exit %d, %q; want the usage on stdout", cmd, args, code, out)
			}
		}
	}
}

// TestOneURLFlag: every command takes --url for the API, over SANDMAN_URL;
// --url-api, its former name on pools and webhooks, still works and says it
// is deprecated.
func TestOneURLFlag(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	vars := map[string]string{"SANDMAN_URL": "http://127.0.0.1:1", "SANDMAN_API_KEY": "sk_k"}
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"sessions", []string{"list", "--url", api.url}, "GET /v1/sessions"},
		{"sessions", []string{"get", "ses_x", "--url", api.url}, "GET /v1/sessions/ses_x"},
		{"webhooks", []string{"list", "--url", api.url}, "GET /v1/webhook-endpoints"},
		{"webhooks", []string{"create", "https://example.com/hooks", "--url", api.url}, "POST /v1/webhook-endpoints"},
		{"pools", []string{"--url", api.url}, "GET /v1/pools"},
		{"client-tokens", []string{"create", "ses_x", "--url", api.url}, "POST /v1/sessions/ses_x/client-tokens"},
	} {
		code, _, errOut := runWith(t, vars, nil, tc.cmd, tc.args...)
		if got := api.last(t).line; code != 0 || got != tc.want {
			t.Errorf("sandman %s %v: exit %d (%s), API saw %q; want %q", tc.cmd, tc.args, code, errOut, got, tc.want)
		}
	}
	if got := api.last(t).body["url"]; got != nil {
		t.Errorf("the webhook create sent url %v: want the endpoint's URL only", got)
	}
	for _, cmd := range []string{"pools", "webhooks"} {
		args := []string{"--url-api", api.url}
		if cmd == "webhooks" {
			args = append([]string{"list"}, args...)
		}
		code, _, errOut := runWith(t, vars, nil, cmd, args...)
		if code != 0 || !strings.Contains(errOut, "--url-api is deprecated: use --url") {
			t.Errorf("sandman %s --url-api: exit %d, stderr %q; want it served, and a deprecation line", cmd, code, errOut)
		}
	}
}

// TestDevKey: with no key set, a command against an API on this machine
// sends the key `make run` keeps in .sandman/dev_api_key (or under
// SANDMAN_STATE_DIR); a key set wins; an API elsewhere never gets it; and
// without a key or the file the error says where the key is looked for.
func TestDevKey(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	files := map[string]string{".sandman/dev_api_key": "sk_dev_file\n", "/srv/state/dev_api_key": "sk_state_dir\n"}
	for name, tc := range map[string]struct {
		vars map[string]string
		want string
	}{
		"File":        {map[string]string{"SANDMAN_URL": api.url}, "Bearer sk_dev_file"},
		"StateDir":    {map[string]string{"SANDMAN_URL": api.url, "SANDMAN_STATE_DIR": "/srv/state"}, "Bearer sk_state_dir"},
		"KeySetWins":  {map[string]string{"SANDMAN_URL": api.url, "SANDMAN_API_KEY": "sk_env"}, "Bearer sk_env"},
		"LocalhostOK": {map[string]string{"SANDMAN_URL": strings.Replace(api.url, "127.0.0.1", "localhost", 1)}, "Bearer sk_dev_file"},
	} {
		code, _, errOut := runWith(t, tc.vars, files, "sessions", "list")
		if got := api.last(t).auth; code != 0 || got != tc.want {
			t.Errorf("%s: exit %d (%s), Authorization %q; want %q", name, code, errOut, got, tc.want)
		}
	}
	code, _, errOut := runWith(t, map[string]string{"SANDMAN_URL": "https://sandman.example.com"}, files, "sessions", "list")
	if code != cli.ExitUsage || !strings.Contains(errOut, "no API key") {
		t.Errorf("an API elsewhere: exit %d, %q; want no key (the dev key is not sent)", code, errOut)
	}
	code, _, errOut = runWith(t, map[string]string{"SANDMAN_URL": api.url}, nil, "pools")
	if code != cli.ExitUsage || !strings.Contains(errOut, ".sandman/dev_api_key") {
		t.Errorf("no key, no file: exit %d, %q; want a usage line naming the file", code, errOut)
	}
}

// TestCreateFlags: --provider, --away-timeout (0 is presence off, not
// "unset") and --app (a command, or a JSON spec) with --app-port reach the
// create's body.
func TestCreateFlags(t *testing.T) {
	t.Parallel()
	api := newRecorder(t)
	vars := map[string]string{"SANDMAN_URL": api.url, "SANDMAN_API_KEY": "sk_k"}
	check := func(args []string, want map[string]any) {
		t.Helper()
		if code, _, errOut := runWith(t, vars, nil, "sessions", append([]string{"create", "--template", "web"}, args...)...); code != 0 {
			t.Fatalf("create %v: exit %d, %s", args, code, errOut)
		}
		got, _ := json.Marshal(api.last(t).body)
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("create %v: body %s, want %s", args, got, w)
		}
	}
	check([]string{"--provider", "daytona", "--away-timeout", "0", "--app", "npm run dev", "--app-port", "5173"},
		map[string]any{"template": "web", "provider": "daytona", "away_timeout_seconds": 0,
			"app": map[string]any{"port": 5173, "start_command": "npm run dev"}})
	check([]string{"--away-timeout", "90s", "--app", `{"start_command":"bun dev","ready_path":"/health"}`, "--app-port", "3000"},
		map[string]any{"template": "web", "away_timeout_seconds": 90,
			"app": map[string]any{"port": 3000, "start_command": "bun dev", "ready_path": "/health"}})
	check(nil, map[string]any{"template": "web"})
}
