#!/usr/bin/env bash
# standardwebhooks.sh runs a Node script with the npm package
# `standardwebhooks` (the Standard Webhooks reference verifier), pinned,
# installed on first use into .tools/standardwebhooks (git-ignored). The
# delivery tests (internal/delivery) run their receiver through it, so what
# Sandman signs is checked by the library customers use.
# Usage: scripts/standardwebhooks.sh <script.js> [args...]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION=1.1.1

if [ "$#" -lt 1 ]; then
  echo "usage: scripts/standardwebhooks.sh <script.js> [args...]" >&2
  exit 2
fi
dir="$repo/.tools/standardwebhooks"
if [ ! -f "$dir/node_modules/standardwebhooks/package.json" ] ||
   [ "$(node -p "require('$dir/node_modules/standardwebhooks/package.json').version")" != "$VERSION" ]; then
  echo "standardwebhooks.sh: installing standardwebhooks@$VERSION into .tools/standardwebhooks" >&2
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"private":true}' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --silent --save-exact "standardwebhooks@$VERSION" >&2)
fi
export NODE_PATH="$dir/node_modules${NODE_PATH:+:$NODE_PATH}"
exec node "$@"
