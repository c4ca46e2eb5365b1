package sandboxfs

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
)

// The command lines do what they say in a real shell, and the fakes' parser
// and Mem answer them the same way.
func TestCommandsRunInAShellAndInMem(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "nested", "dir", "file.bin")
	data := []byte("bin\x00ary 'quoted' $HOME `x`\n")
	w, err := WriteCommand(p, data)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReadCommand(p)
	if err != nil {
		t.Fatal(err)
	}
	missing, _ := ReadCommand(filepath.Join(dir, "missing"))

	if out, err := exec.Command("sh", "-c", w).CombinedOutput(); err != nil {
		t.Fatalf("write in sh: %v %s", err, out)
	}
	out, err := exec.Command("sh", "-c", r).Output()
	if err != nil {
		t.Fatalf("read in sh: %v", err)
	}
	if got, err := DecodeRead(out); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sh read back %q, %v; want %q", got, err, data)
	}
	var exit *exec.ExitError
	if err := exec.Command("sh", "-c", missing).Run(); !errors.As(err, &exit) || exit.ExitCode() != NoFileExit {
		t.Fatalf("sh read of a missing file: %v, want exit %d", err, NoFileExit)
	}

	var m Mem
	if _, _, handled := m.Run(w); !handled {
		t.Fatal("Mem did not take the write")
	}
	out, code, handled := m.Run(r)
	if got, err := DecodeRead(out); !handled || code != 0 || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Mem read = %q, exit %d, handled %v, %v", got, code, handled, err)
	}
	if _, code, handled := m.Run(missing); !handled || code != NoFileExit {
		t.Fatalf("Mem read of a missing file: exit %d, handled %v", code, handled)
	}
	c := m.Clone()
	w2, _ := WriteCommand(p, []byte("changed"))
	m.Run(w2)
	if out, _, _ := c.Run(r); !bytes.Equal(mustDecode(t, out), data) {
		t.Fatal("a clone changed with its source")
	}
	if got := m.Paths(dir); len(got) != 1 || got[0] != p {
		t.Fatalf("Paths = %v", got)
	}
}

func TestParseRefusesOtherLines(t *testing.T) {
	for _, line := range []string{"", "npm run dev", "cat /etc/passwd",
		"mkdir -p -- '/a' && printf '%s' 'aGk=' | base64 -d > '/b/c'"} {
		if _, err := Parse(line); !errors.Is(err, ErrNotFileCommand) {
			t.Errorf("Parse(%q) = %v, want ErrNotFileCommand", line, err)
		}
	}
	for _, p := range []string{"rel/path", "/a/../b", "/it's", "/", "/a\nb"} {
		if _, err := WriteCommand(p, nil); err == nil {
			t.Errorf("WriteCommand(%q) took it", p)
		}
	}
	if _, err := WriteCommand("/big", make([]byte, MaxWriteBytes+1)); err == nil {
		t.Error("WriteCommand took more than MaxWriteBytes")
	}
}

func mustDecode(t *testing.T, out []byte) []byte {
	t.Helper()
	b, err := DecodeRead(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
