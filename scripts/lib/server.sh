# shellcheck shell=bash
# server.sh holds what scripts/dynamodb-local.sh and scripts/moto.sh share:
# a local test server started in the background on 127.0.0.1, found again
# through its pidfile, and stopped. It is sourced, never run.
#
# The caller sets, before calling anything here:
#   server_name     prefix of every log line ("moto" gives "moto: ...")
#   server_label    the server's name in messages ("DynamoDB Local")
#   server_match    a grep pattern its /proc/PID/cmdline matches, so a pid
#                   reused by another process is never taken for the server
#   endpoint_env    the variable `start --export` prints ("S3_ENDPOINT")
#   wait_seconds    how long start waits for the server to answer HTTP
#   pidfile         the pidfile (a .endpoint and a .log file sit beside it)
#   export_env      non-empty when start was given --export (start_option
#                   sets it, and start_port and pidfile, from start's options)
# and defines server_spawn PORT ENDPOINT LOGFILE, which logs what it starts
# and starts the server in the background (so $! is its pid) in its own
# session, stdin from /dev/null and stdout and stderr to LOGFILE.

# log writes one line, prefixed with the server's name, to stderr.
log() { printf '%s: %s\n' "$server_name" "$*" >&2; }

# die logs an error and exits 1.
die() {
	log "error: $*"
	exit 1
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	node -e '
const s = require("net").createServer();
s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });
' 2>/dev/null && return 0
	python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
' 2>/dev/null && return 0
	# Fallback without node or python3: probe a random high port with bash's /dev/tcp.
	local port i
	for i in $(seq 1 50); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "could not find a free port on 127.0.0.1"
}

# running_pid prints the pid from the pidfile when that process is alive and
# its command line matches $server_match; it removes a stale pidfile.
running_pid() {
	[[ -f "$pidfile" ]] || return 0
	local pid
	pid="$(cat "$pidfile" 2>/dev/null || true)"
	if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$server_match"; then
		echo "$pid"
		return 0
	fi
	rm -f "$pidfile" "${pidfile%.pid}.endpoint"
}

# answers reports whether something answers HTTP at the endpoint (any status).
answers() {
	local code
	code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1/" 2>/dev/null || true)"
	[[ -n "$code" && "$code" != "000" ]]
}

# require_curl dies unless curl, which start waits with, is on PATH.
require_curl() {
	command -v curl >/dev/null 2>&1 || die "curl is not on PATH; it is needed to wait for $server_label"
}

# launch starts the server on port $1 with server_spawn and waits for it,
# printing the endpoint (or the export line) to stdout once it answers; it
# returns 1 (leaving the log) when the process exits before answering.
launch() {
	local port="$1" endpoint="http://127.0.0.1:$1" logfile="${pidfile%.pid}.log"
	server_spawn "$port" "$endpoint" "$logfile"
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
				echo "export $endpoint_env=$endpoint"
			else
				echo "$endpoint"
			fi
			return 0
		fi
		sleep 0.2
	done
	log "error: $server_label did not answer on $endpoint within ${wait_seconds}s; last lines of $logfile:"
	tail -n 20 "$logfile" >&2 || true
	kill "$pid" 2>/dev/null || true
	rm -f "$pidfile" "${pidfile%.pid}.endpoint"
	exit 1
}

# start_option takes the start option at the front of its arguments when it
# is --port N (sets start_port), --pidfile FILE or --export (sets export_env),
# dying on a bad value, and sets start_shift to how many words it used; it
# returns 1 for any other option.
start_option() {
	case "$1" in
	--port)
		[[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || die "--port needs a number"
		start_port="$2"
		start_shift=2
		;;
	--pidfile)
		[[ $# -ge 2 && -n "$2" ]] || die "--pidfile needs a file"
		pidfile="$2"
		start_shift=2
		;;
	--export)
		export_env=1
		start_shift=1
		;;
	*) return 1 ;;
	esac
}

# start_server starts the server on port $1, or on a free port (three tries)
# when $1 is empty; it dies when one already runs for the pidfile or the
# port is taken, and exits 1 when the server never answers.
start_server() {
	local port="$1"
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
		# A port picked free can be taken before the server binds it: try a few.
		local attempt
		for attempt in 1 2 3; do
			launch "$(free_port)" && return 0
			log "attempt $attempt: $server_label exited early; retrying on another port"
		done
	fi
	log "error: $server_label exited before answering; last lines of ${pidfile%.pid}.log:"
	tail -n 20 "${pidfile%.pid}.log" >&2 || true
	exit 1
}

# absolute_pidfile makes a relative pidfile absolute (relative to $PWD).
absolute_pidfile() {
	[[ "$pidfile" == /* ]] || pidfile="$PWD/$pidfile"
}

# parse_pidfile_only accepts only --pidfile FILE (for stop and endpoint).
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
	absolute_pidfile
}

# cmd_stop stops the server in the pidfile (TERM, then KILL after 10 s) and
# removes the pidfile; a no-op when none runs.
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

# cmd_endpoint prints the endpoint of the server in the pidfile; it dies
# when none runs.
cmd_endpoint() {
	parse_pidfile_only "$@"
	local pid
	pid="$(running_pid)"
	[[ -n "$pid" ]] || die "not running (no live pid in $pidfile)"
	cat "${pidfile%.pid}.endpoint"
}
