#!/usr/bin/env bash
# sdk-clients.sh builds and tests the customer SDKs in clients/ (the npm
# package @sandmanhq/sdk and the Python package sandman, clients/*/README.md):
#   1. installs what they need on a fresh machine: the TypeScript package's
#      pinned dev dependencies (npm ci, from its package-lock.json), and a
#      python3 with `requests` (Debian's python3-requests when none has it);
#   2. runs each SDK's unit and drift tests (no server);
#   3. packs both (npm pack of the built dist/; pip wheel --no-deps --no-build-isolation, on the
#      package's own standard-library build backend) and installs each
#      artifact into an empty folder outside the repository and imports it;
#   4. starts the local stack once (`sandman run` on a free loopback port,
#      its own state folder and table; DynamoDB Local from DYNAMODB_ENDPOINT
#      when set, as under scripts/test.sh, else its own in memory), mints a
#      key with a running limit of 1 and one of another account, and runs
#      both conformance suites against it, each bounded by
#      SDK_CLIENTS_TIMEOUT seconds (default 240);
#   5. stops everything it started, however the run ends.
# Usage: scripts/sdk-clients.sh          everything (make test runs it)
#        scripts/sdk-clients.sh serve    only start the stack and print the
#                                        variables the suites read; Ctrl-C stops
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
mode="${1:-all}"
limit="${SDK_CLIENTS_TIMEOUT:-240}"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
ts="$repo/clients/typescript"
pydir="$repo/clients/python"

work="$(mktemp -d "${TMPDIR:-/tmp}/sandman-sdk-clients.XXXXXX")"
state="$work/state"
mkdir -p "$state"
pid="" own_ddb=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  for f in "$state"/sandboxes/*/sandbox.json; do # sandboxes left by a failed run
    [ -f "$f" ] && kill -KILL -- "-$(sed -n 's/.*"pgid": *\([0-9]*\).*/\1/p' "$f")" 2>/dev/null || true
  done
  if [ -n "$own_ddb" ]; then
    bash scripts/dynamodb-local.sh stop --pidfile "$state/ddb.pid" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- tools ------------------------------------------------------------------
command -v npm >/dev/null || { echo "sdk-clients: node and npm are needed (Node 20+)" >&2; exit 1; }
py=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import sys, requests; assert sys.version_info >= (3, 11)' 2>/dev/null; then
    py="$(command -v "$cand")"; break
  fi
done
if [ -z "$py" ]; then
  echo "sdk-clients: installing Debian's python3 and python3-requests" >&2
  (apt-get update -qq && apt-get install -y -qq python3 python3-requests python3-pip) >/dev/null
  py=/usr/bin/python3
fi
if ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "sdk-clients: installing Debian's python3-pip" >&2
  (apt-get update -qq && apt-get install -y -qq python3-pip) >/dev/null
fi
stamp="$(sha256sum "$ts/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$ts/node_modules/.sandman-stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "sdk-clients: npm ci in clients/typescript" >&2
  (cd "$ts" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$stamp" >"$ts/node_modules/.sandman-stamp"
fi

# --- the stack ----------------------------------------------------------------
start_stack() {
  go build -o "$work/sandman" ./internal/cmd/sandman
  local endpoint="${DYNAMODB_ENDPOINT:-}"
  if [ -z "$endpoint" ]; then
    endpoint="$(bash scripts/dynamodb-local.sh start --in-memory --pidfile "$state/ddb.pid")"
    own_ddb=1
  fi
  # Only what this script sets reaches the stack's configuration.
  unset SANDMAN_PROVIDER SANDMAN_EVENT_BUS SANDMAN_EVENTS_FILE SANDMAN_LOCAL_DIR \
    SANDMAN_LOCAL_WEBHOOK_URL SANDMAN_DEV_API_KEY SANDMAN_DDB_IN_MEMORY
  export DYNAMODB_ENDPOINT="$endpoint" SANDMAN_TABLE="sdkclients-$$"
  # A deployment limit, so the quota key's own limit of 1 counts
  # (docs/OPERATIONS.md "Per-key override"); 1000 limits nothing else.
  SANDMAN_MAX_RUNNING=1000 SANDMAN_ADDR=127.0.0.1:0 SANDMAN_STATE_DIR="$state" SANDMAN_SWEEP_INTERVAL=5m \
    "$work/sandman" run >"$state/out.log" 2>"$state/err.log" &
  pid=$!
  base=""
  for _ in $(seq 1 120); do
    base="$(sed -n 's/^Sandman is ready on \(http[^ ]*\).*/\1/p' "$state/out.log")"
    [ -n "$base" ] && break
    kill -0 "$pid" 2>/dev/null || { tail -20 "$state/err.log" >&2; echo "sdk-clients: sandman run exited" >&2; exit 1; }
    sleep 0.5
  done
  [ -n "$base" ] || { tail -20 "$state/err.log" >&2; echo "sdk-clients: sandman run never got ready" >&2; exit 1; }
  export SANDMAN_URL="$base"
  SANDMAN_API_KEY="$(cat "$state/dev_api_key")"
  SANDMAN_TEST_QUOTA_KEY="$("$work/sandman" apikey -account sdk-quota -max-running 1 2>/dev/null)"
  SANDMAN_TEST_OTHER_KEY="$("$work/sandman" apikey -account sdk-other 2>/dev/null)"
  export SANDMAN_API_KEY SANDMAN_TEST_QUOTA_KEY SANDMAN_TEST_OTHER_KEY SANDMAN_REQUIRE_STACK=1
  echo "sdk-clients: stack at $SANDMAN_URL (state $state)" >&2
}

if [ "$mode" = serve ]; then
  start_stack
  echo "export SANDMAN_URL=$SANDMAN_URL SANDMAN_API_KEY=$SANDMAN_API_KEY SANDMAN_TEST_QUOTA_KEY=$SANDMAN_TEST_QUOTA_KEY SANDMAN_TEST_OTHER_KEY=$SANDMAN_TEST_OTHER_KEY"
  wait "$pid"
  exit 0
fi

failed=()
step() { # step NAME command...: runs it, remembers a failure, goes on
  local name="$1"; shift
  local t0=$SECONDS
  echo "sdk-clients: $name" >&2
  if ! "$@"; then failed+=("$name"); echo "sdk-clients: FAIL $name" >&2; fi
  echo "sdk-clients: $name took $((SECONDS - t0)) s" >&2
}

# --- unit and drift tests, builds ---------------------------------------------------
step "typescript build" bash -c "cd '$ts' && npm run --silent build"
step "typescript unit and drift tests" bash -c "cd '$ts' && timeout $limit node --test test/unit.test.mjs test/drift.test.mjs"
step "python unit and drift tests" bash -c "cd '$pydir' && timeout $limit '$py' -m unittest discover -s tests -t . -p 'test_*.py'"

# --- artifacts, installed outside the repository -------------------------------
pack_ts() ( # a subshell: it changes folder
  local tgz
  tgz="$(cd "$ts" && npm pack --silent --ignore-scripts --pack-destination "$work" | tail -1)"
  mkdir -p "$work/ts-empty" && cd "$work/ts-empty"
  echo '{"name":"empty","private":true,"type":"module"}' >package.json
  npm install --no-audit --no-fund --loglevel=error "$work/$tgz" >&2
  cat >check.ts <<'TS'
import { Sandman, SandmanError, verifyWebhook, API_VERSION, type Session } from "@sandmanhq/sdk";
const sm = new Sandman({ baseUrl: "http://127.0.0.1:9", apiKey: "sk_x" });
const s: Promise<Session> = sm.sessions.create({ template: "web" });
void s.catch(() => {}); void verifyWebhook; void SandmanError;
console.log("installed @sandmanhq/sdk", API_VERSION);
TS
  echo '{"compilerOptions":{"strict":true,"module":"NodeNext","moduleResolution":"NodeNext","target":"ES2022","lib":["ES2022","DOM"],"types":[],"noEmit":true}}' >tsconfig.json
  "$ts/node_modules/.bin/tsc" -p . && node --input-type=module -e '
    import { Sandman, API_VERSION } from "@sandmanhq/sdk";
    import { createRequire } from "node:module";
    const where = createRequire(import.meta.url).resolve("@sandmanhq/sdk/package.json");
    if (!where.startsWith(process.cwd())) throw new Error("resolved from " + where);
    new Sandman({ apiKey: "x" });
    console.log("npm pack artifact imports outside the repository, API", API_VERSION);'
)
pack_py() ( # a subshell: it changes folder
  "$py" -m pip wheel --no-deps --no-build-isolation --quiet -w "$work/wheel" "$pydir" >&2
  local whl; whl="$(ls "$work"/wheel/sandman-*.whl)"
  mkdir -p "$work/py-empty" && cd "$work/py-empty"
  "$py" -m pip install --quiet --no-deps --no-index --target site "$whl" >&2
  PYTHONPATH=site "$py" -c '
import os, sandman
from sandman import Sandman, SandmanError, verify_webhook
assert sandman.__file__.startswith(os.getcwd()), sandman.__file__
Sandman(base_url="http://127.0.0.1:9", api_key="x")
print("pip wheel artifact", os.path.basename("'"$whl"'"), "imports outside the repository, API", sandman.API_VERSION)'
)
step "npm pack, install into an empty folder, import" pack_ts
step "pip wheel, install into an empty folder, import" pack_py

# --- conformance against the stack ------------------------------------------------
start_stack
step "typescript conformance" bash -c "cd '$ts' && timeout $limit node --test --test-concurrency=1 test/conformance.test.mjs"
step "python conformance" bash -c "cd '$pydir' && timeout $limit '$py' -m unittest -v tests.conformance"

if [ "${#failed[@]}" -gt 0 ]; then
  echo "sdk-clients: failed: ${failed[*]}" >&2
  tail -30 "$state/err.log" >&2 || true
  exit 1
fi
echo "sdk-clients: both SDKs built, packed, installed and passed against the stack" >&2
