#!/usr/bin/env bash
# moto.sh starts and stops moto's S3 server (an in-memory imitation of S3)
# for the archive store tests (docs/ARCHIVES.md), as dynamodb-local.sh does
# for DynamoDB Local.
#
# Usage:
#   scripts/moto.sh check
#   scripts/moto.sh start [--port N] [--pidfile FILE] [--export]
#   scripts/moto.sh stop [--pidfile FILE]
#   scripts/moto.sh endpoint [--pidfile FILE]
#
# check     exits 0 when python3 can import moto's server, else says how to
#           get it and exits 1. When moto is missing it tries
#           `pip install 'moto[server]'` once, but only when pip reaches a
#           package index (MOTO_PIP_TIMEOUT seconds, default 20); Debian
#           ships no python3-moto package, so there is no apt fallback.
# start     checks, starts `python3 -m moto.server` in the background on
#           127.0.0.1 (a free port unless --port is given), waits until it
#           answers HTTP (up to MOTO_WAIT seconds, default 30) and prints
#           exactly one line to stdout, the endpoint:
#               http://127.0.0.1:N
#           so callers can write
#               export S3_ENDPOINT=$(scripts/moto.sh start)
#           With --export it prints "export S3_ENDPOINT=http://127.0.0.1:N".
#           moto keeps everything in memory: a restart starts empty. It
#           accepts any credentials and region. Everything else goes to
#           stderr; the server's own output goes to the log file next to the
#           pidfile (<pidfile without .pid>.log).
# stop      stops the instance whose pid is in the pidfile (TERM, then KILL
#           after 10 s) and removes the pidfile; a no-op when none runs.
# endpoint  prints the endpoint of the instance in the pidfile.
#
# Several instances can run side by side: give each its own pidfile, with
# --pidfile or MOTO_PIDFILE (default <repo>/.sandman/moto.pid).
#
# Requires: python3 with moto[server] (moto 5), curl.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wait_seconds="${MOTO_WAIT:-30}"
pip_timeout="${MOTO_PIP_TIMEOUT:-20}"
pidfile="${MOTO_PIDFILE:-$repo/.sandman/moto.pid}"

log() { printf 'moto: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

has_moto() { python3 -c 'import moto.server' >/dev/null 2>&1; }

cmd_check() {
	command -v python3 >/dev/null 2>&1 || die "python3 is not on PATH; moto's S3 server needs Python 3 with moto[server]"
	has_moto && return 0
	log "python3 cannot import moto.server"
	# Install only when pip reaches an index; a machine without one gets
	# the instructions at once instead of a long retry loop.
	if python3 -m pip --version >/dev/null 2>&1 &&
		timeout "$pip_timeout" python3 -m pip download --quiet --no-deps --retries 0 --timeout 5 \
			-d "$(mktemp -d)" 'moto' >/dev/null 2>&1; then
		log "installing moto[server] with pip"
		python3 -m pip install --quiet 'moto[server]' >&2 || die "pip install 'moto[server]' failed"
		has_moto && return 0
		die "pip installed moto[server] but python3 still cannot import moto.server"
	fi
	die "moto is not installed and pip reaches no package index here. Install moto[server] where an index is reachable (pip install 'moto[server]'), or from a wheelhouse (pip install --no-index --find-links DIR 'moto[server]'); Debian has no python3-moto package. Without it the S3 archive tests skip (or fail under SANDMAN_TEST_REQUIRE=1)."
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
'
}

# running_pid prints the pid from the pidfile when that process is alive and
# is moto's server; it removes a stale pidfile.
running_pid() {
	[[ -f "$pidfile" ]] || return 0
	local pid
	pid="$(cat "$pidfile" 2>/dev/null || true)"
	if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'moto.server'; then
		echo "$pid"
		return 0
	fi
	rm -f "$pidfile" "${pidfile%.pid}.endpoint"
}

# answers reports whether moto answers HTTP at the endpoint (any status).
answers() {
	local code
	code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/" 2>/dev/null || true)"
	[[ -n "$code" && "$code" != "000" ]]
}

# launch starts moto on port $1 and waits for it; it returns 1 (leaving the
# log) when the process exits before answering.
launch() {
	local port="$1" endpoint="http://127.0.0.1:$1" logfile="${pidfile%.pid}.log"
	log "starting on $endpoint, log $logfile"
	# Own session and no inherited stdout, so $(...) callers return at once.
	setsid python3 -m moto.server -H 127.0.0.1 -p "$port" </dev/null >"$logfile" 2>&1 &
	local pid=$!
	echo "$pid" >"$pidfile"
	echo "$endpoint" >"${pidfile%.pid}.endpoint"

	local deadline=$((SECONDS + wait_seconds + 1)) # SECONDS ticks whole seconds
	while ((SECONDS < deadline)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$pidfile" "${pidfile%.pid}.endpoint"
			return 1
		fi
		if answers "$endpoint"; then
			log "ready on $endpoint (pid $pid)"
			if [[ -n "$export_env" ]]; then
				echo "export S3_ENDPOINT=$endpoint"
			else
				echo "$endpoint"
			fi
			return 0
		fi
		sleep 0.2
	done
	log "error: moto did not answer on $endpoint within ${wait_seconds}s; last lines of $logfile:"
	tail -n 20 "$logfile" >&2 || true
	kill "$pid" 2>/dev/null || true
	rm -f "$pidfile" "${pidfile%.pid}.endpoint"
	exit 1
}

cmd_start() {
	local port=""
	export_env=""
	while (($#)); do
		case "$1" in
		--port)
			[[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--port needs a number"
			port="$2"
			shift 2
			;;
		--pidfile)
			[[ $# -ge 2 && -n "$2" ]] || die "--pidfile needs a file"
			pidfile="$2"
			shift 2
			;;
		--export)
			export_env=1
			shift
			;;
		*) die "unknown start option '$1' (want --port N, --pidfile FILE, --export)" ;;
		esac
	done
	[[ "$pidfile" == /* ]] || pidfile="$PWD/$pidfile"
	cmd_check
	command -v curl >/dev/null 2>&1 || die "curl is not on PATH; it is needed to wait for moto"
	mkdir -p "$(dirname "$pidfile")"

	local pid
	pid="$(running_pid)"
	if [[ -n "$pid" ]]; then
		die "already running (pid $pid, $(cat "${pidfile%.pid}.endpoint" 2>/dev/null || echo 'endpoint unknown')); stop it first or use another --pidfile"
	fi

	if [[ -n "$port" ]]; then
		if answers "http://127.0.0.1:$port"; then
			die "port $port on 127.0.0.1 is already in use"
		fi
		launch "$port" && return 0
	else
		# A port picked free can be taken before moto binds it: try a few.
		local attempt
		for attempt in 1 2 3; do
			launch "$(free_port)" && return 0
			log "attempt $attempt: moto exited early; retrying on another port"
		done
	fi
	log "error: moto exited before answering; last lines of ${pidfile%.pid}.log:"
	tail -n 20 "${pidfile%.pid}.log" >&2 || true
	exit 1
}

parse_pidfile_only() {
	while (($#)); do
		case "$1" in
		--pidfile)
			[[ $# -ge 2 && -n "$2" ]] || die "--pidfile needs a file"
			pidfile="$2"
			shift 2
			;;
		*) die "unknown option '$1' (want --pidfile FILE)" ;;
		esac
	done
	[[ "$pidfile" == /* ]] || pidfile="$PWD/$pidfile"
}

cmd_stop() {
	parse_pidfile_only "$@"
	local pid
	pid="$(running_pid)"
	if [[ -z "$pid" ]]; then
		log "not running (no live pid in $pidfile)"
		return 0
	fi
	kill "$pid" 2>/dev/null || true
	local i
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid did not stop after TERM; sending KILL"
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile" "${pidfile%.pid}.endpoint"
	log "stopped (pid $pid)"
}

cmd_endpoint() {
	parse_pidfile_only "$@"
	local pid
	pid="$(running_pid)"
	[[ -n "$pid" ]] || die "not running (no live pid in $pidfile)"
	cat "${pidfile%.pid}.endpoint"
}

case "${1:-}" in
check)
	shift
	(($# == 0)) || die "check takes no options"
	cmd_check
	;;
start)
	shift
	cmd_start "$@"
	;;
stop)
	shift
	cmd_stop "$@"
	;;
endpoint)
	shift
	cmd_endpoint "$@"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
