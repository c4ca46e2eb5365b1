#!/usr/bin/env bash
# browser.sh runs a Node test script in real headless Chromium (Debian's
# `chromium` package driven by the npm package `playwright-core`). On a fresh
# Debian machine it installs both without asking: `apt-get install -y
# chromium` when /usr/bin/chromium is missing (CI runs as root; otherwise
# through sudo -n), and playwright-core, pinned, into .tools/playwright
# (git-ignored). The test script gets:
#   SANDMAN_CHROMIUM        /usr/bin/chromium (or $CHROMIUM)
#   SANDMAN_CHROMIUM_ARGS   the launch flags, one JSON array
#   SANDMAN_USER_DATA_DIR   a fresh profile folder, removed afterwards
#   NODE_PATH               so `require('playwright-core')` resolves
# Usage: scripts/browser.sh <test.js> [args...]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PLAYWRIGHT_VERSION=1.65.1
chromium="${CHROMIUM:-/usr/bin/chromium}"

if [ "$#" -lt 1 ]; then
  echo "usage: scripts/browser.sh <test.js> [args...]" >&2
  exit 2
fi

if [ ! -x "$chromium" ]; then
  echo "browser.sh: installing Debian's chromium" >&2
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo -n"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q >&2
  $sudo apt-get install -y -q --no-install-recommends chromium >&2
fi

pw="$repo/.tools/playwright"
if [ ! -f "$pw/node_modules/playwright-core/package.json" ] ||
   [ "$(node -p "require('$pw/node_modules/playwright-core/package.json').version")" != "$PLAYWRIGHT_VERSION" ]; then
  echo "browser.sh: installing playwright-core@$PLAYWRIGHT_VERSION into .tools/playwright" >&2
  mkdir -p "$pw"
  [ -f "$pw/package.json" ] || echo '{"private":true}' >"$pw/package.json"
  (cd "$pw" && npm install --no-audit --no-fund --silent --save-exact "playwright-core@$PLAYWRIGHT_VERSION" >&2)
fi

profile="$(mktemp -d "${TMPDIR:-/tmp}/sandman-chromium.XXXXXX")"
trap 'rm -rf "$profile"' EXIT

export SANDMAN_CHROMIUM="$chromium"
export SANDMAN_USER_DATA_DIR="$profile"
export SANDMAN_CHROMIUM_ARGS='["--headless","--no-sandbox","--disable-gpu","--disable-quic","--no-first-run","--disable-background-networking","--disable-component-update","--disable-sync"]'
export NODE_PATH="$pw/node_modules${NODE_PATH:+:$NODE_PATH}"
exec node "$@"
