package vercel_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

func appCommand(line string) lifecycle.Command {
	return lifecycle.Command{Name: lifecycle.AppCommandName, Line: line, Port: 3000, Cwd: "/app",
		Env: map[string]string{"NODE_ENV": "development"}}
}

// TestStartCommandRunsDetachedShellWithPort: the command is sent as sh -c
// with the line (through the start guard) with PORT and the app's env, in the current session, and a second
// start while it runs starts nothing.
func TestStartCommandRunsDetachedShellWithPort(t *testing.T) {
	f, p := setup(t, verceltest.Config{BootDelay: time.Minute}, nil)
	sb := create(t, p, "ses_cmd", nil)
	for range 2 {
		st, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev"))
		if err != nil || !st.Running {
			t.Fatalf("StartCommand = %+v, %v; want running", st, err)
		}
	}
	rec := mustSandbox(t, f, sb.ID)
	cmds := f.Commands(rec.CurrentSessionID)
	if len(cmds) != 1 {
		t.Fatalf("the session holds %d commands, want 1 (the second start finds the first by its id)", len(cmds))
	}
	if line, ok := startguard.Line(cmds[0].Args); cmds[0].Name != "sh" || !ok || line != "npm run dev" || cmds[0].Cwd != "/app" {
		t.Errorf("command = %+v; want sh -c <the start guard> … \"npm run dev\" in /app", cmds[0])
	}
	if got := f.Requests(verceltest.OpCommand); got != 1 {
		t.Errorf("run-command requests = %d, want 1", got)
	}
}

// TestAnotherProcessFindsTheCommandByItsTag: the command's session and id
// are recorded on the sandbox as a tag, so a Provider that did not start
// it (a readiness job redelivered to another process, a new Lambda
// container) finds it running while the server still boots (its preview
// answers nothing yet) and starts no second server. The tag keeps the
// sandbox's own tags and is not reported as metadata.
func TestAnotherProcessFindsTheCommandByItsTag(t *testing.T) {
	f, p := setup(t, verceltest.Config{BootDelay: time.Minute}, nil)
	sb := create(t, p, "ses_redeliver", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	rec := mustSandbox(t, f, sb.ID)
	if rec.Tags[lifecycle.MetadataSessionID] != "ses_redeliver" || rec.Tags["sandman-cmd-"+lifecycle.AppCommandName] == "" {
		t.Fatalf("sandbox tags = %v; want the session's tags and the command's", rec.Tags)
	}
	other := f.MustProvider(t, nil) // a fresh process: no command ids in memory
	st, err := other.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName)
	if err != nil || !st.Running {
		t.Fatalf("CommandStatus of another Provider = %+v, %v; want running", st, err)
	}
	if st, err := other.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil || !st.Running {
		t.Fatalf("StartCommand = %+v, %v; want running", st, err)
	}
	if got := len(f.Commands(rec.CurrentSessionID)); got != 1 {
		t.Errorf("the session holds %d commands, want 1", got)
	}
	got, err := other.Get(t.Context(), sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Metadata["sandman-cmd-"+lifecycle.AppCommandName]; ok || got.Metadata[lifecycle.MetadataSessionID] != "ses_redeliver" {
		t.Errorf("Get's metadata = %v; want the session's tags only", got.Metadata)
	}
}

// TestStartCommandTakesAnAnsweringPortAsRunning: with no record of the
// command (its tag could not be written), a Provider that did not start it
// sees the app answer on its port and starts no second server.
func TestStartCommandTakesAnAnsweringPortAsRunning(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_untagged", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	f.SetTags(project, sb.ID, map[string]string{lifecycle.MetadataSessionID: "ses_untagged", lifecycle.MetadataDeployment: "dep1"})
	other := f.MustProvider(t, nil)
	if _, err := other.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus without the tag = %v, want ErrNoCommand", err)
	}
	st, err := other.StartCommand(t.Context(), sb.ID, appCommand("npm run dev"))
	if err != nil || !st.Running {
		t.Fatalf("StartCommand = %+v, %v; want running", st, err)
	}
	if got := len(f.Commands(mustSandbox(t, f, sb.ID).CurrentSessionID)); got != 1 {
		t.Errorf("the session holds %d commands, want 1", got)
	}
}

// TestCommandStatusReportsTheExitCode: a command that ended is not running
// and carries its exit code and the end of its logs.
func TestCommandStatusReportsTheExitCode(t *testing.T) {
	_, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_exit", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("exit 3")); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	st, err := p.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName)
	if err != nil || st.Running || st.ExitCode != 3 {
		t.Errorf("CommandStatus = %+v, %v; want exited with 3", st, err)
	}
	if !strings.Contains(st.Output, "starting exit 3\n") || !strings.HasSuffix(st.Output, "exited with 3\n") {
		t.Errorf("CommandStatus output = %q; want the command's logs, stdout and stderr in order", st.Output)
	}
}

// TestCommandsAreLostWithTheSession: after a pause and resume the command
// is gone (a new session) and a start runs it again in the new session.
func TestCommandsAreLostWithTheSession(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_lost", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	if err := p.Pause(t.Context(), sb.ID); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if _, err := p.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Errorf("CommandStatus while paused = %v, want ErrNoCommand", err)
	}
	if _, err := p.Resume(t.Context(), sb.ID, 10*time.Minute); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if _, err := p.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Errorf("CommandStatus after resume = %v, want ErrNoCommand", err)
	}
	u, err := p.PortURL(t.Context(), sb.ID, 3000)
	if err != nil {
		t.Fatalf("PortURL: %v", err)
	}
	if got := fetch(t, u); got != http.StatusBadGateway {
		t.Errorf("preview after resume answered %d, want 502 (nothing listens)", got)
	}
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil {
		t.Fatalf("StartCommand after resume: %v", err)
	}
	if got := fetch(t, u); got != http.StatusOK {
		t.Errorf("preview after the new start answered %d, want 200", got)
	}
	if got := len(f.Commands(mustSandbox(t, f, sb.ID).CurrentSessionID)); got != 1 {
		t.Errorf("the new session holds %d commands, want 1", got)
	}
}

// TestPortClosedAnswers: the preview's own answers are told from the app's.
func TestPortClosedAnswers(t *testing.T) {
	_, p := setup(t, verceltest.Config{}, nil)
	for _, c := range []struct {
		status int
		body   string
		want   bool
	}{
		{502, `{"error":{"code":"SANDBOX_NOT_LISTENING","message":"nothing listens"}}`, true},
		{502, `<html>Bad Gateway</html>`, true},
		{410, `{"error":{"code":"SANDBOX_STOPPED","message":"stopped"}}`, true},
		{410, `the app says gone`, false},
		{200, `hello`, false},
		{404, `{"error":{"code":"not_found"}}`, false},
	} {
		if got := p.PortClosed(c.status, nil, []byte(c.body)); got != c.want {
			t.Errorf("PortClosed(%d, %s) = %v, want %v", c.status, c.body, got, c.want)
		}
	}
}
