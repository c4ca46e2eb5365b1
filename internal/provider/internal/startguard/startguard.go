// Package startguard is the in-VM lock every command adapter starts the
// app's command through, so that the command runs at most once per boot
// of the sandbox however many readiness jobs start it at once
// (docs/READINESS.md "One start per boot").
//
// The providers' command APIs cannot start a command "unless one runs" in
// one atomic call: E2B lists processes and then starts one, Daytona makes a
// session and then executes in it, Vercel lists nothing at all. Two jobs
// for one session (a queue's duplicate, a redelivery while the first job
// still runs, a start that died between its two calls) can therefore both
// start the line. The guard makes the second start run nothing: it follows
// the first and ends with its exit code.
package startguard

import "strings"

// Script is the sh script a command is started through: sh -c Script
// followed by Args. Its arguments: $0 the command's name (for messages),
// $1 a lock key (Key), $2 the shell that runs the line (sh, or bash on
// E2B), $3 the command line, always the last argument.
//
// The lock is a directory $TMPDIR/sandman-cmd-<key>-<boot>.<n> (mkdir is
// atomic). <boot> is the VM's boot identity: the kernel's boot_id and the
// start time of pid 1, read from /proc. A sandbox resumed from a memory
// snapshot (E2B) keeps both, and keeps its processes, so a second start
// follows the server that still runs; a container restarted (Daytona's
// stop and start) has a new pid 1, and a new VM (Vercel's new session) a
// new boot_id, so a filesystem that survived with an old lock does not
// stop the app from starting again.
//
// <n> is the lock's generation. A start takes the highest generation
// there is; while its holder runs (the pid in its pid file lives, is no
// zombie, and has the start time it recorded, so a reused pid is not taken
// for it) the start
// follows it: it runs nothing, prints that it follows, and ends when the
// holder ends, with the holder's exit code (1 when the holder died without
// one, or left no pid within a minute). Once the holder ended, a start
// makes generation n+1 (again by mkdir, so of two starts at once one runs
// the line and the other follows it): an app that exited is started again
// by the next start. When no lock can be made at all (no writable
// temporary directory) the line runs unguarded.
const Script = `d="${TMPDIR:-/tmp}"
[ -d "$d" ] && [ -w "$d" ] || exec "$2" -c "$3"
ident() {
  if [ -r /proc/self/stat ]; then
    s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
    set -- "$1" ${s##*") "}
    case $2 in Z | X) return 0 ;; esac
    echo "$1 ${21}"
  elif kill -0 "$1" 2>/dev/null; then
    echo "$1"
  fi
}
ended() {
  [ -s "$1/exit" ] && return 0
  h=$(cat "$1/pid" 2>/dev/null)
  [ -n "$h" ] && [ "$(ident "${h%% *}")" != "$h" ]
}
follow() {
  echo "sandman: $0 already runs in this sandbox; following it"
  w=0
  while [ ! -s "$1/exit" ]; do
    h=$(cat "$1/pid" 2>/dev/null)
    if [ -n "$h" ]; then
      [ "$(ident "${h%% *}")" = "$h" ] || [ -s "$1/exit" ] || { echo "sandman: $0 ended without an exit code" >&2; exit 1; }
    elif [ "$((w += 1))" -gt 60 ]; then
      echo 1 >"$1/exit"
      echo "sandman: $0 left no pid" >&2
      exit 1
    fi
    sleep 1
  done
  c=$(cat "$1/exit")
  echo "sandman: $0 exited with code $c" >&2
  exit "$c"
}
b=$(ident 1)
l="$d/sandman-cmd-$1-$(cat /proc/sys/kernel/random/boot_id 2>/dev/null).${b#* }"
while :; do
  n=0
  while [ -d "$l.$((n + 1))" ]; do n=$((n + 1)); done
  if [ "$n" -gt 0 ] && ! ended "$l.$n"; then follow "$l.$n"; fi
  g="$l.$((n + 1))"
  mkdir "$g" 2>/dev/null && break
  [ -d "$g" ] || exec "$2" -c "$3"
done
ident $$ >"$g/pid.new" && mv "$g/pid.new" "$g/pid"
"$2" -c "$3"
c=$?
echo "$c" >"$g/exit"
exit "$c"
`

// Args are the arguments that follow sh -c (or bash -c) to run line
// through Script: the script, then name, Key(key), shell and line. shell
// runs the line ("sh" when empty). The line is the last argument.
func Args(name, key, shell, line string) []string {
	if shell == "" {
		shell = "sh"
	}
	return []string{Script, name, Key(key), shell, line}
}

// Line returns the command line of a command started as a shell's -c
// Script with Args, and whether args are such: what a fake that runs
// nothing reads to know what the app would do.
func Line(args []string) (string, bool) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-c" && args[i+1] == Script {
			return args[len(args)-1], len(args) == i+6
		}
	}
	return "", false
}

// Unwrap removes Script, single-quoted for sh as Quote does, from a one
// string command line (Daytona's exec takes one), so a fake reads the rest
// (the name, key, shell and the line) without the script's own words.
func Unwrap(cmdline string) string { return strings.Replace(cmdline, Quote(Script), "", 1) }

// Quote quotes s for sh in single quotes.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Key makes s safe as part of a file name: every byte other than ASCII
// letters, digits, '-', '_' and '.' becomes '_'.
func Key(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
