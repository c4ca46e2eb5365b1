package local

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// serveApp is this test binary as an app command: HTTP on $PORT.
func serveApp() {
	fmt.Println("app listening on", os.Getenv("PORT"))
	err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "app ok")
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// appCommand runs this test binary as an app serving on $PORT.
func appCommand(t testing.TB) lifecycle.Command {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return lifecycle.Command{Name: lifecycle.AppCommandName, Line: "exec '" + exe + "'", Env: map[string]string{envServe: "1"}, Port: 3000}
}

// awaitAnswer GETs url until it answers 200 or 10 s pass.
func awaitAnswer(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(body) == "app ok" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refuses reports whether nothing of the sandbox answers at url: the
// connection is refused (no front), or the preview front answers that
// nothing listens behind it.
func refuses(url string) bool {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get(url)
	if err != nil {
		return true
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusBadGateway && resp.Header.Get(FrontHeader) != ""
}

func TestStartCommandServesOnTheMappedPort(t *testing.T) {
	p := MustProvider(t, Config{})
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	ctx := MustContext(t)
	url, err := p.PortURL(ctx, sb.ID, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := p.PortURL(ctx, sb.ID, 3000); again != url {
		t.Errorf("PortURL changed from %s to %s", url, again)
	}
	if _, err := p.CommandStatus(ctx, sb.ID, lifecycle.AppCommandName); !errors.Is(err, lifecycle.ErrNoCommand) {
		t.Fatalf("CommandStatus before a start = %v, want ErrNoCommand", err)
	}
	if _, err := p.StartCommand(ctx, sb.ID, appCommand(t)); err != nil {
		t.Fatal(err)
	}
	awaitAnswer(t, url)
	pid := MustRecord(t, p, sb.ID).Commands[lifecycle.AppCommandName].PID
	if _, err := p.StartCommand(ctx, sb.ID, appCommand(t)); err != nil {
		t.Fatal(err)
	}
	if again := MustRecord(t, p, sb.ID).Commands[lifecycle.AppCommandName].PID; again != pid {
		t.Errorf("a second start of a running command started pid %d (first %d)", again, pid)
	}
	if st, err := p.CommandStatus(ctx, sb.ID, lifecycle.AppCommandName); err != nil || !st.Running ||
		!strings.Contains(st.Output, "app listening on") {
		t.Errorf("CommandStatus = %+v, %v; want running with its output", st, err)
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if commandAlive(commandRecord{PID: pid}) && !refuses(url) {
		t.Errorf("the app still answers after the sandbox was killed")
	}
}

func TestPauseKeepsOrDropsCommands(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("DropProcesses=%v", drop), func(t *testing.T) {
			p := MustProvider(t, Config{DropProcesses: drop})
			if p.KeepsProcesses() == drop {
				t.Fatalf("KeepsProcesses = %v with DropProcesses %v", p.KeepsProcesses(), drop)
			}
			sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
			ctx := MustContext(t)
			url, _ := p.PortURL(ctx, sb.ID, 3000)
			if _, err := p.StartCommand(ctx, sb.ID, appCommand(t)); err != nil {
				t.Fatal(err)
			}
			awaitAnswer(t, url)
			c := MustRecord(t, p, sb.ID).Commands[lifecycle.AppCommandName]
			if err := p.Pause(ctx, sb.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Resume(ctx, sb.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
			_, err := p.CommandStatus(ctx, sb.ID, lifecycle.AppCommandName)
			if drop {
				if !errors.Is(err, lifecycle.ErrNoCommand) {
					t.Errorf("CommandStatus after a cold resume = %v, want ErrNoCommand", err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for commandAlive(c) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if commandAlive(c) || !refuses(url) {
					t.Errorf("the app process survived a pause that drops processes")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			awaitAnswer(t, url) // continued, same process
			if now := MustRecord(t, p, sb.ID).Commands[lifecycle.AppCommandName]; now.PID != c.PID {
				t.Errorf("pid %d after resume, want the kept %d", now.PID, c.PID)
			}
		})
	}
}

func TestCommandExitReportsCodeAndOutput(t *testing.T) {
	p := MustProvider(t, Config{})
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	ctx := MustContext(t)
	if _, err := p.StartCommand(ctx, sb.ID, lifecycle.Command{Name: lifecycle.AppCommandName, Line: "echo boom; exit 7", Port: 3000}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := p.CommandStatus(ctx, sb.ID, lifecycle.AppCommandName)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Running && st.ExitCode == 7 {
			if !strings.Contains(st.Output, "boom") {
				t.Errorf("output %q, want boom", st.Output)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CommandStatus = %+v, want exited with code 7", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillOfAGoneSandboxEndsItsCommands: a sandbox whose own process died
// (gone) while its app command still runs in its own session: Kill ends
// the command too, so `make reset` leaves no process of the folder.
func TestKillOfAGoneSandboxEndsItsCommands(t *testing.T) {
	p := MustProvider(t, Config{})
	sb := MustCreate(t, p, lifecycle.CreateRequest{Template: TemplateBase})
	ctx := MustContext(t)
	url, err := p.PortURL(ctx, sb.ID, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.StartCommand(ctx, sb.ID, appCommand(t)); err != nil {
		t.Fatal(err)
	}
	awaitAnswer(t, url)
	rec := MustRecord(t, p, sb.ID)
	c := rec.Commands[lifecycle.AppCommandName]
	proc, err := os.FindProcess(rec.PID)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil { // the sandbox's process only, not its command's session
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := p.Get(ctx, sb.ID); errors.Is(err, lifecycle.ErrSandboxGone) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox is not gone after its process was killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !commandAlive(c) {
		t.Fatal("the command died with the sandbox's process; the test needs it alive")
	}
	if err := p.Kill(ctx, sb.ID); err != nil {
		t.Fatalf("Kill of a gone sandbox: %v", err)
	}
	if commandAlive(c) {
		t.Error("the command outlives the Kill of its gone sandbox")
	}
}
