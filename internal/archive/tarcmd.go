package archive

import (
	"errors"
	"strings"
)

// TarCommand returns the shell command line (for `sh -c`) that writes an
// uncompressed tar stream of dir to stdout, leaving out what ex excludes,
// for a sandbox's command API; its stdout is what Compress takes:
//
//	tar -C '/home/user/app' --wildcards --no-anchored --no-wildcards-match-slash --exclude='node_modules/.cache' -cf - .
//
// Every argument is single-quoted, so dir and the patterns may hold spaces,
// quotes or shell syntax. The matching options come before the --exclude
// options because GNU tar applies them to the patterns that follow; they
// make tar match as Excludes documents. It needs GNU tar (Debian, Ubuntu
// and Amazon Linux images have it; BusyBox tar lacks these options).
//
// GNU tar exits 0 when all went well, 1 when a file changed or vanished
// while it was read (the stream is still a whole archive: the file is
// stored as it was read, or left out), 2 on a fatal error (the stream
// must not be kept). dir must be absolute and must not be empty.
func TarCommand(dir string, ex Excludes) (string, error) {
	if !strings.HasPrefix(dir, "/") {
		return "", errors.New("tar command: the folder must be an absolute path")
	}
	if strings.ContainsRune(dir, 0) {
		return "", errors.New("tar command: the folder holds a NUL byte")
	}
	var b strings.Builder
	b.WriteString("tar -C ")
	b.WriteString(ShellQuote(dir))
	b.WriteString(" --wildcards --no-anchored --no-wildcards-match-slash")
	for _, p := range ex.raw {
		b.WriteString(" ")
		b.WriteString(ShellQuote("--exclude=" + p))
	}
	b.WriteString(" -cf - .")
	return b.String(), nil
}

// ShellQuote returns s as one word of a POSIX shell: in single quotes, each
// single quote written as '\”.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
