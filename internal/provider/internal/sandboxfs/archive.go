package sandboxfs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sandmanhq/sandman/internal/archive"
)

// The archive path of a checkpoint (lifecycle.WorkspaceArchiver) in a
// cloud sandbox: a workspace folder goes out as the stdout of
// archive.TarCommand, or, where the provider's command API cannot stream
// bytes, as a tar file the provider's file API downloads; it comes back
// through the file API as one or more part files that a `tar -x` unpacks.
// These are the command lines, built by the adapters and parsed by the
// fakes (ParseArchive).
//
// A transfer's temporary files live under Transfer() in the sandbox's /tmp:
// a file "<transfer>.tar" for an export, a folder "<transfer>/" of parts
// "part-000000", "part-000001", … for an import (PartName), concatenated in
// name order. Every line removes them, or the adapter does (RemoveCommand).

// ExportOK reports whether an export's exit code leaves a whole archive:
// GNU tar's 0, or 1 when a file changed or vanished while it was read.
func ExportOK(code int) bool { return code == 0 || code == 1 }

// Transfer returns a fresh path for one transfer's temporary files in a
// sandbox: /tmp/sandman-archive-<16 hex digits>.
func Transfer() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "/tmp/sandman-archive-" + hex.EncodeToString(b[:])
}

// PartName returns the path of part i of an import in the folder parts.
func PartName(parts string, i int) string { return fmt.Sprintf("%s/part-%06d", parts, i) }

// ExportCommand returns the command line (for sh -c) that writes the tar of
// dir, leaving out the exclude patterns (archive.TarCommand, which needs
// GNU tar), to its stdout, or, when out is set, to the file out, readable
// by its owner only. Its exit code is tar's (ExportOK). Errors: a pattern
// archive.ParseExcludes refuses (archive.ErrBadPattern), a relative dir,
// an out path as WriteCommand's.
func ExportCommand(dir string, excludes []string, out string) (string, error) {
	ex, err := archive.ParseExcludes(excludes)
	if err != nil {
		return "", err
	}
	line, err := archive.TarCommand(dir, ex)
	if err != nil || out == "" {
		return line, err
	}
	if err := checkPath(out); err != nil {
		return "", err
	}
	return "umask 077 && " + line + " > '" + out + "'", nil
}

// ImportCommand returns the command line (for sh -c) that makes dir and
// unpacks into it the tar stream the part files of the folder parts hold,
// concatenated in name order, then removes parts, exiting with tar's code:
//
//	mkdir -p -- '<dir>' && cat -- '<parts>'/part-* | tar -C '<dir>' -xf - --no-same-owner --no-same-permissions; rc=$?; rm -rf -- '<parts>'; exit $rc
//
// GNU tar skips a member whose name holds "..", strips a leading "/",
// restores no owner (the files belong to the command's user) and applies
// the umask to the modes, which drops setuid and setgid bits; it exits 2
// on any error. Errors: a relative dir or one holding a NUL byte, a parts
// path as WriteCommand's.
func ImportCommand(dir, parts string) (string, error) {
	if !strings.HasPrefix(dir, "/") || strings.ContainsRune(dir, 0) {
		return "", fmt.Errorf("sandboxfs: folder %q must be an absolute path without NUL bytes", dir)
	}
	if err := checkPath(parts); err != nil {
		return "", err
	}
	d := archive.ShellQuote(dir)
	return "mkdir -p -- " + d + " && cat -- '" + parts + "'/part-* | tar -C " + d +
		" -xf - --no-same-owner --no-same-permissions; rc=$?; rm -rf -- '" + parts + "'; exit $rc", nil
}

// RemoveCommand returns the command line that removes the file or folder p
// (a transfer's temporary files), succeeding when it is absent.
func RemoveCommand(p string) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	return "rm -rf -- '" + p + "'", nil
}

// ArchiveOp is an archive command line a fake recognised (ParseArchive).
type ArchiveOp struct {
	Kind     string   // "export", "import" or "remove"
	Dir      string   // export, import: the workspace folder
	Excludes []string // export
	Path     string   // export: the output file ("" for stdout); import: the parts folder; remove: the path
}

// ParseArchive recognises a line built by ExportCommand, ImportCommand or
// RemoveCommand, for the fakes: it reads the line's words as sh would and
// accepts it only when building that kind of line from them gives the line
// back. ok is false for any other line.
func ParseArchive(line string) (op ArchiveOp, ok bool) {
	w, ok := shellWords(line)
	if !ok || len(w) < 2 {
		return ArchiveOp{}, false
	}
	var again string
	switch {
	case w[0] == "rm" && len(w) == 4:
		op = ArchiveOp{Kind: "remove", Path: w[3]}
		again, _ = RemoveCommand(op.Path)
	case w[0] == "mkdir" && len(w) > 7:
		op = ArchiveOp{Kind: "import", Dir: w[3], Path: strings.TrimSuffix(w[7], "/part-*")}
		again, _ = ImportCommand(op.Dir, op.Path)
	default:
		op = ArchiveOp{Kind: "export"}
		if w[0] == "umask" && len(w) > 3 {
			w, op.Path = w[3:], w[len(w)-1]
		}
		if w[0] != "tar" || len(w) < 3 {
			return ArchiveOp{}, false
		}
		op.Dir = w[2]
		for _, a := range w {
			if p, found := strings.CutPrefix(a, "--exclude="); found {
				op.Excludes = append(op.Excludes, p)
			}
		}
		again, _ = ExportCommand(op.Dir, op.Excludes, op.Path)
	}
	return op, again == line
}

// shellWords splits line into words as sh does for lines without
// expansions: blanks separate words, single quotes quote, a backslash
// outside them escapes the next byte. ok is false for an unclosed quote.
func shellWords(line string) (words []string, ok bool) {
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, inWord = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, !quoted
}
