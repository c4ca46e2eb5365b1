#!/usr/bin/env bash
# capacity.sh runs the capacity model (what `make capacity` runs): it starts
# its own in-memory DynamoDB Local (own pidfile, stopped however the run
# ends) and runs
#   go -C internal/lab run ./cmd/capacity [flags]
# (the lab, internal/lab, is a Go module of its own)
# against it. The report (markdown) goes to stdout, progress to stderr; it
# exits 1 when a key family is over 80 % of a DynamoDB limit
# (docs/CAPACITY.md). A run takes well under a minute.
#
# Usage: scripts/capacity.sh [capacity flags...]   e.g. scripts/capacity.sh -scale 10
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
pidfile="$repo/.sandman/dynamodb-local-capacity.pid"
mkdir -p .sandman

bash scripts/dynamodb-local.sh stop --pidfile "$pidfile" >/dev/null 2>&1 || true
trap 'bash scripts/dynamodb-local.sh stop --pidfile "$pidfile" >/dev/null 2>&1 || true' EXIT
DYNAMODB_ENDPOINT="$(bash scripts/dynamodb-local.sh start --in-memory --pidfile "$pidfile")"
export DYNAMODB_ENDPOINT
go -C internal/lab run ./cmd/capacity "$@"
