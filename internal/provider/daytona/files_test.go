package daytona_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/lifecycle"
	"github.com/sandmanhq/sandman/internal/provider/daytona"
	"github.com/sandmanhq/sandman/internal/provider/daytona/daytonatest"
	"github.com/sandmanhq/sandman/internal/provider/internal/sandboxfs"
)

func TestFilesWriteAndRead(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	ctx := context.Background()
	data := []byte("bin\x00ary 'quoted' \"double\" $HOME\n")
	if err := e.p.WriteFile(ctx, sb.ID, "/home/user/app/a/b.txt", data); err != nil {
		t.Fatal(err)
	}
	if got, err := e.p.ReadFile(ctx, sb.ID, "/home/user/app/a/b.txt"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile = %q, %v; want %q", got, err, data)
	}
	if _, err := e.p.ReadFile(ctx, sb.ID, "/home/user/app/missing"); !errors.Is(err, lifecycle.ErrNoFile) {
		t.Errorf("ReadFile of a missing file = %v, want ErrNoFile", err)
	}
	if err := e.p.WriteFile(ctx, sb.ID, "relative/path", data); err == nil {
		t.Error("WriteFile took a relative path")
	}
	if err := e.p.Pause(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.ReadFile(ctx, sb.ID, "/home/user/app/a/b.txt"); err == nil || isKind(err, lifecycle.ErrProviderTransient) {
		t.Errorf("ReadFile of a stopped sandbox = %v, want a plain error (the toolbox's 400)", err)
	}
	if _, err := e.p.ReadFile(ctx, "nope", "/x"); !isKind(err, lifecycle.ErrSandboxGone) {
		t.Errorf("ReadFile of an unknown sandbox = %v, want gone", err)
	}
}

func TestFilesRetryATransientFailure(t *testing.T) {
	e := MustEnv(t, daytonatest.Config{})
	sb := MustCreate(t, e, nil)
	e.srv.Fail(daytonatest.OpToolbox, daytonatest.Fault{Status: 503})
	if err := e.p.WriteFile(context.Background(), sb.ID, "/tmp/x", []byte("x")); err != nil {
		t.Fatalf("WriteFile after one 503 = %v", err)
	}
	if got, want := e.srv.Requests(daytonatest.OpToolbox), 2; got != want {
		t.Errorf("toolbox requests = %d, want %d (one retry)", got, want)
	}
}

// The toolbox's process/execute runs no shell: it splits the command at
// spaces outside quotes, without escapes. ExecLine's command survives that
// split, and a real sh then runs the line as sandboxfs wrote it.
func TestExecLineSurvivesTheToolboxSplit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dir", "file")
	data := []byte("a 'quoted' \"line\"\x00\n")
	write, err := sandboxfs.WriteCommand(p, data)
	if err != nil {
		t.Fatal(err)
	}
	read, _ := sandboxfs.ReadCommand(p)
	for _, line := range []string{write, read} {
		args := toolboxSplit(daytona.ExecLine(line))
		if len(args) != 3 || args[0] != "sh" || args[1] != "-c" {
			t.Fatalf("split = %q, want sh -c <pipeline>", args)
		}
		out, err := exec.Command(args[0], args[1:]...).Output()
		if err != nil {
			t.Fatalf("run %q: %v", args, err)
		}
		if line == read {
			if got, err := sandboxfs.DecodeRead(out); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read back %q, %v; want %q", got, err, data)
			}
		}
	}
}

// toolboxSplit splits a command as Daytona's toolbox does for
// process/execute (daemon: parseCommand): at spaces outside single or
// double quotes, the quotes dropped, no escapes.
func toolboxSplit(command string) []string {
	var args []string
	var cur strings.Builder
	var quote rune
	for _, r := range command {
		switch {
		case (r == '"' || r == '\'') && quote == 0:
			quote = r
		case r == quote:
			quote = 0
		case r == ' ' && quote == 0:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}
