package daytona_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
)

var app = lifecycle.Command{Name: lifecycle.AppCommandName, Line: "npm run dev -- --host 'all'", Cwd: "my app",
	Port: 3000, Env: map[string]string{"NODE_ENV": "development"}}

func TestStartCommandTwiceExecsOnce(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	for range 2 {
		if st, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil || !st.Running {
			t.Fatalf("StartCommand = %+v, %v; want running", st, err)
		}
	}
	cmds := e.srv.Commands(sb.ID, lifecycle.AppCommandName)
	if len(cmds) != 1 {
		t.Fatalf("commands executed: %q, want one", cmds)
	}
	want := `cd 'my app' && env 'NODE_ENV=development' PORT=3000 sh -c ` + startguard.Quote(startguard.Script) +
		` 'sandman-app' 'sandman-app' 'sh' 'npm run dev -- --host '\''all'\'''`
	if cmds[0] != want {
		t.Errorf("exec line = %s\nwant        %s", cmds[0], want)
	}
}

func TestCommandStatusReportsExitCodeAndOutput(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	bad := app
	bad.Line = "exit 3"
	if _, err := e.p.StartCommand(context.Background(), sb.ID, bad); err != nil {
		t.Fatal(err)
	}
	st, err := e.p.CommandStatus(context.Background(), sb.ID, lifecycle.AppCommandName)
	if err != nil || st.Running || st.ExitCode != 3 || !strings.Contains(st.Output, "exited with 3") {
		t.Fatalf("CommandStatus = %+v, %v; want exited 3 with its output", st, err)
	}
	// A start after the exit replaces the session and runs the command again.
	if st, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil || !st.Running {
		t.Fatalf("StartCommand after an exit = %+v, %v", st, err)
	}
	if cmds := e.srv.Commands(sb.ID, lifecycle.AppCommandName); len(cmds) != 1 || strings.Contains(cmds[0], "exit 3") {
		t.Errorf("session after the restart holds %q, want only the new command", cmds)
	}
}

func TestStopLosesTheCommand(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	if _, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Pause(context.Background(), sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.Resume(context.Background(), sb.ID, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.CommandStatus(context.Background(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus after stop and start = %v, want ErrNoCommand", err)
	}
	if e.p.KeepsProcesses() {
		t.Error("KeepsProcesses = true, but a stop loses processes")
	}
}

func TestCommandStatusOfAGoneSandboxIsGone(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	if _, err := e.p.CommandStatus(context.Background(), "no-such-sandbox", lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrSandboxGone) {
		t.Fatalf("CommandStatus = %v, want gone", err)
	}
}

func TestPortURLCarriesTheCurrentToken(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	u, err := e.p.PortURL(context.Background(), sb.ID, 5173)
	if err != nil {
		t.Fatal(err)
	}
	fake, _ := e.srv.Sandbox(sb.ID)
	if !strings.HasPrefix(u, "https://5173-"+sb.ID+"."+daytonatest.DefaultProxyDomain) || !strings.Contains(u, "DAYTONA_SANDBOX_AUTH_KEY="+fake.Token) {
		t.Errorf("PortURL = %s, want port 5173's preview with token %s", u, fake.Token)
	}
}

func TestPortClosedKnowsDaytonasAnswers(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	for _, tc := range []struct {
		name   string
		status int
		body   string
		closed bool
	}{
		{"nothing listens: empty 502", 502, "", true},
		{"sandbox not started", 400, `{"message":"Failed to get sandbox target. Is the Sandbox started?"}`, true},
		{"auth redirect", 307, "", true},
		{"the app's own 502", 502, "upstream of the app failed", false},
		{"the app's 404", 404, "not found", false},
		{"the app", 200, "hello", false},
	} {
		if got := e.p.PortClosed(tc.status, nil, []byte(tc.body)); got != tc.closed {
			t.Errorf("%s: PortClosed = %v, want %v", tc.name, got, tc.closed)
		}
	}
}

func TestFakePreviewAnswersAfterBootDelay(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{BootDelay: 3 * time.Second})
	sb := MustCreate(t, e, nil)
	client := &http.Client{Transport: e.srv.Preview(), CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	u, err := e.p.PortURL(context.Background(), sb.ID, app.Port)
	if err != nil {
		t.Fatal(err)
	}
	if st, body := get(u); st != 502 || body != "" {
		t.Fatalf("preview before a start = %d %q, want an empty 502", st, body)
	}
	if _, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil {
		t.Fatal(err)
	}
	if st, _ := get(u); st != 502 {
		t.Fatalf("preview before the boot delay = %d, want 502", st)
	}
	e.clock.Advance(3 * time.Second)
	if st, _ := get(u); st != 200 {
		t.Fatalf("preview after the boot delay = %d, want 200", st)
	}
	if st, _ := get(strings.Split(u, "?")[0]); st != http.StatusTemporaryRedirect {
		t.Errorf("preview without the token = %d, want 307", st)
	}
	if e.srv.Wakes(sb.ID) != 0 {
		t.Error("a preview request woke the sandbox")
	}
}

func TestFakePreviewBaseURLServesThePreviewAtAPath(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	e.srv.SetPreviewBaseURL(e.url)
	sb := MustCreate(t, e, nil)
	u, err := e.p.PortURL(context.Background(), sb.ID, app.Port)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, e.url+"/preview/3000-"+sb.ID+"/") {
		t.Fatalf("PortURL = %s, want it under %s/preview/", u, e.url)
	}
	if _, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("preview at a path = %d, want 200", resp.StatusCode)
	}
}

func TestStartCommandExecsInASessionAStartLeftEmpty(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	// A start that died after making the session, before its exec.
	req, _ := http.NewRequest(http.MethodPost, e.url+"/toolbox/"+sb.ID+"/process/session",
		strings.NewReader(`{"sessionId":"`+lifecycle.AppCommandName+`"}`))
	req.Header.Set("Authorization", "Bearer "+e.srv.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("make session = %d, want 201", resp.StatusCode)
	}
	if _, err := e.p.CommandStatus(context.Background(), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus of an empty session = %v, want ErrNoCommand", err)
	}
	if st, err := e.p.StartCommand(context.Background(), sb.ID, app); err != nil || !st.Running {
		t.Fatalf("StartCommand = %+v, %v; want running", st, err)
	}
	if cmds := e.srv.Commands(sb.ID, lifecycle.AppCommandName); len(cmds) != 1 {
		t.Errorf("commands executed: %q, want one", cmds)
	}
}
