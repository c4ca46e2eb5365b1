package vercel_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/vercel/verceltest"
)

func appCommand(line string) lifecycle.Command {
	return lifecycle.Command{Name: lifecycle.AppCommandName, Line: line, Port: 3000, Cwd: "/app",
		Env: map[string]string{"NODE_ENV": "development"}}
}

// TestStartCommandRunsDetachedShellWithPort: the command is sent as sh -c
// <line> with PORT and the app's env, in the current session, and a second
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
	if c := cmds[0]; c.Name != "sh" || !slices.Equal(c.Args, []string{"-c", "npm run dev"}) || c.Cwd != "/app" {
		t.Errorf("command = %+v; want sh -c \"npm run dev\" in /app", c)
	}
	if got := f.Requests(verceltest.OpCommand); got != 1 {
		t.Errorf("run-command requests = %d, want 1", got)
	}
}

// TestStartCommandTakesAnAnsweringPortAsRunning: a Provider that did not
// start the command (a readiness job redelivered to another process) sees
// the app answer on its port and starts no second server.
func TestStartCommandTakesAnAnsweringPortAsRunning(t *testing.T) {
	f, p := setup(t, verceltest.Config{}, nil)
	sb := create(t, p, "ses_redeliver", nil)
	if _, err := p.StartCommand(t.Context(), sb.ID, appCommand("npm run dev")); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	other := f.MustProvider(t, nil) // knows no command ids
	if _, err := other.CommandStatus(t.Context(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus of another Provider = %v, want ErrNoCommand", err)
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
// and carries its exit code.
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
