package localstack_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/app"
	"github.com/sandmanhq/sandman/internal/dynamo/dynamotest"
	"github.com/sandmanhq/sandman/internal/envnames"
	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/localstack"
	"github.com/sandmanhq/sandman/internal/provider/fake"
)

// TestInvokeChannel: `sandman invoke -fn channel|notifier` runs the
// functions' handlers on the events/ws and events/bus fixtures with the
// local stack's client-token keys: a $connect with a token it minted is
// accepted, hello is answered with one push, and a lifecycle event on the
// bus pushes to that connection.
func TestInvokeChannel(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv(envnames.Table, dynamotest.MustTable(t)) // needs DYNAMODB_ENDPOINT
	t.Setenv(envnames.StateDir, stateDir)
	t.Setenv(envnames.Provider, fake.DefaultName)

	// A session and a token, as the local stack mints them (the same key
	// file in the state folder).
	cfg, err := app.ConfigFromEnv(func(k string) string {
		if k == envnames.ClientTokenKeysFile {
			return filepath.Join(stateDir, "client_token_keys.json")
		}
		return os.Getenv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(t.Context(), cfg, app.Needs{Provider: true}, localstack.Deps(app.NewLogger(io.Discard, 0)))
	if err != nil {
		t.Fatal(err)
	}
	sess, _, err := a.Service.Create(t.Context(), "acct_1", lifecycle.CreateInput{Template: "base"})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.Tokens.Mint(sess.ID, "acct_1", 0)
	if err != nil {
		t.Fatal(err)
	}

	invoke := func(fn, fixture string, edit func(string) string) localstack.ChannelInvocation {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", fixture))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "event.json")
		if err := os.WriteFile(path, []byte(edit(string(raw))), 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := localstack.InvokeCommand(t.Context(), []string{"-fn", fn, "-event", path}, &out); err != nil {
			t.Fatalf("invoke %s %s: %v", fn, fixture, err)
		}
		var got localstack.ChannelInvocation
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("invoke output %s: %v", out.Bytes(), err)
		}
		return got
	}
	states := func(inv localstack.ChannelInvocation) []string {
		var out []string
		for _, p := range inv.Pushes {
			var m struct {
				Session struct {
					SessionID string `json:"session_id"`
					State     string `json:"state"`
				} `json:"session"`
			}
			if err := json.Unmarshal(p.Message, &m); err != nil || m.Session.SessionID != sess.ID {
				t.Fatalf("push %s: %v", p.Message, err)
			}
			out = append(out, p.ConnectionID+" "+m.Session.State)
		}
		return out
	}
	const conn = "Kx1bHc0nnId=" // the fixtures' connection

	if got := invoke("channel", "ws/connect.json", func(s string) string { return s }); got.Response.StatusCode != 401 {
		t.Errorf("$connect with the fixture's placeholder token: %d, want 401", got.Response.StatusCode)
	}
	withToken := func(s string) string { return strings.ReplaceAll(s, "REPLACE_WITH_A_CLIENT_TOKEN", tok) }
	if got := invoke("channel", "ws/connect.json", withToken); got.Response.StatusCode != 200 || len(got.Pushes) != 0 {
		t.Fatalf("$connect: %d with pushes %v, want 200 and none", got.Response.StatusCode, got.Pushes)
	}
	if got := states(invoke("channel", "ws/hello.json", withToken)); len(got) != 1 || got[0] != conn+" running" {
		t.Errorf("hello pushed %v, want [%s running]", got, conn)
	}
	onSession := func(s string) string {
		return strings.NewReplacer("ses_01JDEMO0000000000000000000", sess.ID, `"account_id": "dev"`, `"account_id": "acct_1"`).Replace(s)
	}
	if got := states(invoke("notifier", "bus/session-paused.json", onSession)); len(got) != 1 || got[0] != conn+" running" {
		t.Errorf("notifier pushed %v, want [%s running]", got, conn)
	}
}
