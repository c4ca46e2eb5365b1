// Package sandboxfs is how the cloud adapters read and write a file in a
// sandbox through its command API (lifecycle.Files), and how their fakes
// understand it: one pair of command lines, built by the adapters and
// parsed by the fakes, so both sides agree on one spelling.
//
// A write is
//
//	mkdir -p -- '<dir>' && printf '%s' '<base64>' | base64 -d > '<path>'
//
// and a read prints the file in base64 on one line, or exits NoFileExit
// when it does not exist:
//
//	if [ -e '<path>' ]; then base64 -w0 -- '<path>'; else exit 44; fi
//
// Base64 keeps binary content intact through command APIs that carry
// output as text. Both need coreutils (every Debian, Ubuntu and Amazon Linux
// image has them). Files are meant to be small (Sandman's identity marker,
// the conformance rows): a write's content travels on the command line.
//
// The workspace archive's lines (archive.go: a tar of a folder out, tar
// parts back in through the provider's file API) are built here too, with
// the order of a transfer's steps (transfer.go: Import, ExportFile), and a
// fake's Mem carries them out (memtar.go) as GNU tar would.
package sandboxfs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// NoFileExit is the exit code of ReadCommand when the file does not exist.
const NoFileExit = 44

// MaxWriteBytes bounds what WriteCommand takes: its content travels base64
// encoded on a command line, and command lines are kept well under the
// 128 KiB Linux allows one argument.
const MaxWriteBytes = 64 << 10

// WriteCommand returns the command line (for sh -c) that writes data to
// the absolute path p. Errors: a relative path, one holding a NUL byte or
// a quote, or data over MaxWriteBytes.
func WriteCommand(p string, data []byte) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	if len(data) > MaxWriteBytes {
		return "", fmt.Errorf("sandboxfs: %d bytes is over the %d a write takes", len(data), MaxWriteBytes)
	}
	return fmt.Sprintf("mkdir -p -- '%s' && printf '%%s' '%s' | base64 -d > '%s'",
		path.Dir(p), base64.StdEncoding.EncodeToString(data), p), nil
}

// ReadCommand returns the command line (for sh -c) that prints the file at
// the absolute path p in base64, or exits NoFileExit. Errors: as
// WriteCommand's for the path.
func ReadCommand(p string) (string, error) {
	if err := checkPath(p); err != nil {
		return "", err
	}
	return fmt.Sprintf("if [ -e '%s' ]; then base64 -w0 -- '%s'; else exit %d; fi", p, p, NoFileExit), nil
}

// DecodeRead turns ReadCommand's output back into the file's bytes
// (surrounding white space ignored).
func DecodeRead(stdout []byte) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(stdout)))
	if err != nil {
		return nil, fmt.Errorf("sandboxfs: the read's output is not base64: %w", err)
	}
	return b, nil
}

// checkPath refuses what the command lines cannot carry safely: a path
// that is not absolute and clean, or that holds a single quote, a NUL or a
// line break (no quoting is needed for the rest inside single quotes).
func checkPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/":
		return fmt.Errorf("sandboxfs: path %q must be absolute and clean", p)
	case strings.ContainsAny(p, "'\x00\n\r"):
		return fmt.Errorf("sandboxfs: path %q holds a quote, a NUL or a line break", p)
	}
	return nil
}

// Op is a file operation a fake recognised in a command line.
type Op struct {
	Read bool   // a ReadCommand; else a WriteCommand
	Path string // absolute
	Data []byte // a write's content
}

var (
	writeLine = regexp.MustCompile(`^mkdir -p -- '([^']*)' && printf '%s' '([A-Za-z0-9+/=]*)' \| base64 -d > '([^']*)'$`)
	readLine  = regexp.MustCompile(`^if \[ -e '([^']*)' \]; then base64 -w0 -- '([^']*)'; else exit 44; fi$`)
)

// ErrNotFileCommand is Parse's error for a line that is neither command.
var ErrNotFileCommand = errors.New("sandboxfs: not a file command")

// Parse recognises a command line built by WriteCommand or ReadCommand,
// for the fakes. Errors: ErrNotFileCommand for any other line.
func Parse(line string) (Op, error) {
	if m := readLine.FindStringSubmatch(line); m != nil && m[1] == m[2] {
		return Op{Read: true, Path: m[1]}, nil
	}
	if m := writeLine.FindStringSubmatch(line); m != nil && m[1] == path.Dir(m[3]) {
		data, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			return Op{}, fmt.Errorf("%w: %v", ErrNotFileCommand, err)
		}
		return Op{Path: m[3], Data: data}, nil
	}
	return Op{}, ErrNotFileCommand
}

func encode(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
