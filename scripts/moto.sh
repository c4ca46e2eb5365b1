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
server_name="moto"
server_label="moto"
server_match="moto.server"
endpoint_env="S3_ENDPOINT"
export_env=""
# shellcheck source=scripts/lib/server.sh
source "$repo/scripts/lib/server.sh"

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

# server_spawn starts moto's server on port $1 in the background (see
# scripts/lib/server.sh).
server_spawn() {
	local port="$1" endpoint="$2" logfile="$3"
	log "starting on $endpoint, log $logfile"
	# Own session and no inherited stdout, so $(...) callers return at once.
	setsid python3 -m moto.server -H 127.0.0.1 -p "$port" </dev/null >"$logfile" 2>&1 &
}

cmd_start() {
	export_env="" start_port=""
	while (($#)); do
		start_option "$@" || die "unknown start option '$1' (want --port N, --pidfile FILE, --export)"
		shift "$start_shift"
	done
	absolute_pidfile
	cmd_check
	require_curl
	start_server "$start_port"
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
