#!/usr/bin/env bash
# sdk.sh drives each provider's own JS SDK against `sandman fake <provider>`
# (docs/READINESS.md "The providers' own SDKs"): e2b, @daytonaio/sdk and
# @vercel/sandbox, pinned by scripts/sdk/package-lock.json and installed
# with `npm ci` into .tools/sdk (git-ignored) when missing or out of date.
# For each provider it starts the fake on a free port with a boot delay,
# points the SDK at it, and runs scripts/sdk/<provider>.test.mjs (node's
# test runner), each bounded by SDK_TEST_TIMEOUT seconds (default 120); the
# boot delay is SDK_BOOT_DELAY (default 2s).
# Usage: scripts/sdk.sh [e2b|daytona|vercel ...]   (default: all three)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
providers=("$@")
[ "${#providers[@]}" -gt 0 ] || providers=(e2b daytona vercel)
limit="${SDK_TEST_TIMEOUT:-120}"
boot_delay="${SDK_BOOT_DELAY:-2s}"

# Install the pinned SDKs; a stamp of the lock file says what is there.
mods="$repo/.tools/sdk"
stamp="$(sha256sum scripts/sdk/package-lock.json | cut -d' ' -f1)"
if [ ! -f "$mods/.installed" ] || [ "$(cat "$mods/.installed")" != "$stamp" ]; then
  echo "sdk.sh: installing the providers' SDKs into .tools/sdk" >&2
  mkdir -p "$mods"
  cp scripts/sdk/package.json scripts/sdk/package-lock.json "$mods/"
  (cd "$mods" && npm ci --no-audit --no-fund --silent >&2)
  echo "$stamp" >"$mods/.installed"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/sandman-sdk.XXXXXX")"
fake_pid=""
cleanup() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; wait "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/sandman" ./internal/cmd/sandman

failed=()
for p in "${providers[@]}"; do
  case "$p" in e2b|daytona|vercel) ;; *) echo "sdk.sh: no SDK test for $p" >&2; exit 2 ;; esac
  "$work/sandman" fake "$p" -addr 127.0.0.1:0 -boot-delay "$boot_delay" >"$work/$p.out" 2>"$work/$p.log" &
  fake_pid=$!
  base=""
  for _ in $(seq 100); do
    base="$(sed -n "s|^fake $p listening on ||p" "$work/$p.out")"
    [ -n "$base" ] && break
    sleep 0.1
  done
  [ -n "$base" ] || { echo "sdk.sh: fake $p did not start" >&2; cat "$work/$p.log" >&2; exit 1; }
  hint="$(cat "$work/$p.out")"
  field() { sed -n "s|.*$1=\([^ ]*\).*|\1|p" <<<"$hint" | head -1; }
  echo "sdk.sh: $p SDK against $base" >&2
  status=0
  env SANDMAN_SDK_MODULES="$mods/node_modules" SANDMAN_FAKE_URL="$base" \
    E2B_API_URL="$base" E2B_SANDBOX_URL="$base" E2B_API_KEY="$(field E2B_API_KEY)" \
    DAYTONA_API_URL="$base" DAYTONA_API_KEY="$(field DAYTONA_API_KEY)" \
    VERCEL_TOKEN="$(field VERCEL_TOKEN)" VERCEL_TEAM_ID="$(field teamId)" VERCEL_PROJECT_ID="$(field project)" \
    timeout "$limit" node "scripts/sdk/$p.test.mjs" || status=$?
  if [ "$status" -ne 0 ]; then
    failed+=("$p")
    echo "sdk.sh: $p failed ($status); the fake's log:" >&2
    tail -n 40 "$work/$p.log" >&2
  fi
  kill "$fake_pid" 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
  fake_pid=""
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "sdk.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "sdk.sh: ${providers[*]}: the SDKs ran a background command and reached its port through the preview" >&2
