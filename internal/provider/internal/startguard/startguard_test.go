package startguard_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandmanhq/sandman/internal/provider/internal/startguard"
	"github.com/sandmanhq/sandman/internal/testenv"
)

// app is a line that records each start in the file starts, prints "up",
// and runs until the file stop exists, then exits with code 7.
const app = `echo x >> starts; echo up; while [ ! -f stop ]; do sleep 0.05; done; exit 7`

type guarded struct {
	cmd   *exec.Cmd
	out   *bufio.Reader
	first string
}

// launch runs line through the guard with a real outer shell in dir, with
// TMPDIR=tmp, in its own process group, without waiting.
func launch(t *testing.T, outer, dir, tmp, line string) *guarded {
	t.Helper()
	cmd := exec.Command(outer, append([]string{"-c"}, startguard.Args("sandman-app", "sandman-app", "", line)...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return &guarded{cmd: cmd, out: bufio.NewReader(out)}
}

// readFirst waits for g's first line of output, then drains the rest.
func (g *guarded) readFirst(t *testing.T) *guarded {
	t.Helper()
	first, err := g.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the guarded command printed nothing: %v", err)
	}
	g.first = first
	go func() { _, _ = g.out.WriteTo(discard{}) }()
	return g
}

// start launches line through the guard and waits for its first line.
func start(t *testing.T, outer, dir, tmp, line string) *guarded {
	t.Helper()
	return launch(t, outer, dir, tmp, line).readFirst(t)
}

func starts(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "starts"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "x")
}

func exitCode(t *testing.T, g *guarded) int {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- g.cmd.Wait() }()
	select {
	case err := <-ch:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(10 * time.Second):
		t.Fatal("the guarded command did not end")
		return -1
	}
}

func TestTwoStartsAtOnceRunTheLineOnce(t *testing.T) {
	for _, outer := range []string{"sh", "bash"} {
		t.Run(outer, func(t *testing.T) {
			testenv.Tool(t, outer, "apt-get install "+outer)
			dir := t.TempDir()
			var gs []*guarded
			for range 3 {
				gs = append(gs, launch(t, outer, dir, dir, app))
			}
			for _, g := range gs {
				g.readFirst(t)
			}
			if n := starts(t, dir); n != 1 {
				t.Fatalf("the line started %d times, want once", n)
			}
			var follows int
			for _, g := range gs {
				if strings.Contains(g.first, "following it") {
					follows++
				}
			}
			if follows != 2 {
				t.Errorf("%d of 3 starts followed, want 2", follows)
			}
			if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for i, g := range gs {
				if c := exitCode(t, g); c != 7 {
					t.Errorf("start %d ended with %d, want the line's 7", i, c)
				}
			}
		})
	}
}

// A start whose holder still runs (a sandbox resumed with its processes)
// follows it; one whose holder's processes are gone (a container restart
// kills them without an exit code, its /tmp survives) runs the line again.
func TestAStartAfterTheHolderDiedRunsTheLineAgain(t *testing.T) {
	dir := t.TempDir()
	first := start(t, "sh", dir, dir, app)
	if second := start(t, "sh", dir, dir, app); !strings.Contains(second.first, "following it") {
		t.Fatalf("a start while the first runs printed %q, want it to follow", second.first)
	}
	if n := starts(t, dir); n != 1 {
		t.Fatalf("the line started %d times while the first runs, want once", n)
	}
	if err := syscall.Kill(-first.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	third := start(t, "sh", dir, dir, app)
	if third.first != "up\n" {
		t.Fatalf("a start after the holder died printed %q, want the line's own \"up\"", third.first)
	}
	if n := starts(t, dir); n != 2 {
		t.Fatalf("the line started %d times, want twice (again after its holder died)", n)
	}
}

// An app that exited is started again by the next start, not answered
// with its old exit code.
func TestAStartAfterTheLineExitedRunsItAgain(t *testing.T) {
	dir := t.TempDir()
	line := `echo x >> starts; echo up; exit 3`
	if c := exitCode(t, start(t, "sh", dir, dir, line)); c != 3 {
		t.Fatalf("the first start ended with %d, want 3", c)
	}
	if g := start(t, "sh", dir, dir, line); g.first != "up\n" || exitCode(t, g) != 3 {
		t.Fatalf("the second start printed %q, want the line's own \"up\"", g.first)
	}
	if n := starts(t, dir); n != 2 {
		t.Fatalf("the line started %d times, want twice", n)
	}
}

func TestTheLineRunsUnguardedWhenNoLockCanBeMade(t *testing.T) {
	dir := t.TempDir()
	g := start(t, "sh", dir, filepath.Join(dir, "missing"), `echo up; exit 4`)
	if g.first != "up\n" {
		t.Errorf("first line = %q, want the line's own \"up\"", g.first)
	}
	if c := exitCode(t, g); c != 4 {
		t.Errorf("the command ended with %d, want the line's 4", c)
	}
}

func TestLineFindsTheCommandLine(t *testing.T) {
	args := append([]string{"-l", "-c"}, startguard.Args("app", "k", "bash", "npm run dev")...)
	if line, ok := startguard.Line(args); !ok || line != "npm run dev" {
		t.Errorf("Line = %q, %v; want the line", line, ok)
	}
	if _, ok := startguard.Line([]string{"-l", "-c", "npm run dev"}); ok {
		t.Error("Line took an unguarded command for a guarded one")
	}
	quoted := "env PORT=3000 sh -c " + startguard.Quote(startguard.Script) + " 'app' 'k' 'sh' 'exit 3'"
	if got := startguard.Unwrap(quoted); strings.Contains(got, "exit 1") || !strings.Contains(got, "'exit 3'") {
		t.Errorf("Unwrap left %q", got)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A holder killed under a parent that does not reap it stays a zombie,
// which /proc still lists with its start time: it counts as gone, so the
// next start runs the line again.
func TestAZombieHolderCountsAsGone(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	dir := t.TempDir()
	// sleep, exec'd in place of the shell, never reaps the guard under it.
	args := append([]string{"-c", `sh -c "$@" & exec sleep 60`, "outer", "-c"},
		startguard.Args("sandman-app", "sandman-app", "", app)...)
	cmd := exec.Command("sh", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	var holder int
	for deadline := time.Now().Add(10 * time.Second); holder == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guard wrote no pid")
		}
		pids, _ := filepath.Glob(filepath.Join(dir, "sandman-cmd-*", "pid"))
		if len(pids) == 1 {
			b, _ := os.ReadFile(pids[0])
			holder, _ = strconv.Atoi(strings.Fields(string(b) + " 0")[0])
		}
	}
	if err := syscall.Kill(holder, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(holder), "stat"))
		if strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed holder is not a zombie: %q", b)
		}
	}
	if g := start(t, "sh", dir, dir, app); g.first != "up\n" {
		t.Fatalf("a start after the holder became a zombie printed %q, want the line's own \"up\"", g.first)
	}
	if n := starts(t, dir); n != 2 {
		t.Fatalf("the line started %d times, want twice", n)
	}
}
