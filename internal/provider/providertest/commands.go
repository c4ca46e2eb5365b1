package providertest

import (
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// The command rows (docs/READINESS.md "Providers"): run for a Provider
// that implements lifecycle.CommandRunner. The fake's preview of a port
// answers as the real provider does while nothing listens, and answers from
// the "app" once a started command has listened (after Env.BootDelay, which
// the rows wait out with Env.Advance when it is set).

func commandRows() []Behaviour {
	return []Behaviour{
		{Name: "BackgroundCommandStarts", Needs: "CommandRunner", Run: backgroundCommandStarts},
		{Name: "PreviewAnswersAfterTheCommand", Needs: "CommandRunner", Run: previewAnswersAfterTheCommand},
		{Name: "ProcessesAfterPauseAndResumeAsDeclared", Needs: "CommandRunner", Run: processesAfterPauseAndResume},
	}
}

const appPort = 3000

func appCommandOf(e Env) lifecycle.Command {
	if e.App != nil {
		return e.App()
	}
	return lifecycle.Command{Name: lifecycle.AppCommandName, Line: "npm run dev", Port: appPort,
		Env: map[string]string{"NODE_ENV": "development"}}
}

func runner(e Env) lifecycle.CommandRunner { return e.Provider.(lifecycle.CommandRunner) }

func backgroundCommandStarts(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if _, err := runner(e).CommandStatus(ctx(t), sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus before a start = %v, want ErrNoCommand", err)
	}
	if _, err := runner(e).StartCommand(ctx(t), sb.ID, appCommandOf(e)); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	st, err := runner(e).CommandStatus(ctx(t), sb.ID, lifecycle.AppCommandName)
	if err != nil || !st.Running {
		t.Fatalf("CommandStatus after the start = %+v, %v; want running", st, err)
	}
}

// previewAnswer GETs the preview of port and reports whether the app
// answered (not the provider's "port not open").
func previewAnswer(t *testing.T, e Env, id string) bool {
	t.Helper()
	u, err := runner(e).PortURL(ctx(t), id, appPort)
	if err != nil {
		t.Fatalf("PortURL: %v", err)
	}
	client := e.Preview
	if client == nil {
		client = http.DefaultClient
	}
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, u, nil)
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode < 500 && !runner(e).PortClosed(resp.StatusCode, resp.Header, body)
}

func previewAnswersAfterTheCommand(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if previewAnswer(t, e, sb.ID) {
		t.Fatal("the preview answered as the app before any command started")
	}
	if _, err := runner(e).StartCommand(ctx(t), sb.ID, appCommandOf(e)); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	if e.BootDelay > 0 && e.Advance != nil {
		if previewAnswer(t, e, sb.ID) {
			t.Error("the preview answered as the app before the command's boot delay")
		}
		e.Advance(e.BootDelay)
	}
	// A real process takes real time to listen: wait up to 10 s for it.
	for deadline := time.Now().Add(10 * time.Second); !previewAnswer(t, e, sb.ID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the preview does not answer after the command listened")
		}
	}
}

func processesAfterPauseAndResume(t *testing.T, e Env) {
	sb := mustCreate(t, e, 10*time.Minute, nil)
	if _, err := runner(e).StartCommand(ctx(t), sb.ID, appCommandOf(e)); err != nil {
		t.Fatalf("StartCommand: %v", err)
	}
	mustPause(t, e, sb.ID)
	if _, err := e.Provider.Resume(ctx(t), sb.ID, 10*time.Minute); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	st, err := runner(e).CommandStatus(ctx(t), sb.ID, lifecycle.AppCommandName)
	kept := err == nil && st.Running
	if err != nil && !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus after resume: %v", err)
	}
	if kept != runner(e).KeepsProcesses() {
		t.Errorf("after pause and resume the command runs: %v; the provider declares KeepsProcesses %v", kept, runner(e).KeepsProcesses())
	}
}
