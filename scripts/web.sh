#!/usr/bin/env bash
# web.sh builds and tests what people see in a browser (docs/EMBEDDING.md,
# docs/WAKE.md "What a browser sees"):
#   1. installs clients/web's pinned dev dependencies (npm ci, from its
#      package-lock.json: esbuild, TypeScript, React and react-dom for the
#      React page, axe-core for the audits) into clients/web/node_modules;
#   2. builds the package (dist/, types checked by tsc) and runs its unit tests;
#   3. runs the browser tests in headless Chromium (scripts/browser.sh, which
#      installs Chromium and playwright-core when missing): the stable link's
#      pages (internal/linkpage/testdata/pages.test.mjs), <sandman-preview>
#      against the scripted channel (clients/web/test/preview.test.mjs) and
#      embedded in a plain and a React page against the local stack
#      (clients/web/test/embed.test.mjs), and the operator's console
#      (internal/localstack/testdata/console.test.mjs: watching records
#      nothing; a session's checkpoints with Restore and Fork, audited).
# Screenshots of every page and state land in build/screenshots/ (pages/,
# web/, and console-*.png).
# Usage: scripts/web.sh            everything (make test runs it)
#        scripts/web.sh pages      only the pages' browser test
#        scripts/web.sh preview    only the scripted-channel component test
#        scripts/web.sh embed      only the local-stack component test
#        scripts/web.sh console    only the console's browser test
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
web="$repo/clients/web"
only="${1:-all}"

command -v npm >/dev/null || { echo "web.sh: node and npm are needed (Node 20+)" >&2; exit 1; }
stamp="$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$web/node_modules/.sandman-stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "web.sh: npm ci in clients/web" >&2
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error >&2)
  echo "$stamp" >"$web/node_modules/.sandman-stamp"
fi
(cd "$web" && npm run --silent build && npm test --silent >/dev/null)
echo "web.sh: clients/web built, unit tests passed" >&2

# axe-core, React and esbuild resolve from the package's node_modules.
export NODE_PATH="$web/node_modules${NODE_PATH:+:$NODE_PATH}"
run() { bash scripts/browser.sh "$1"; }
case "$only" in
  all)
    run internal/linkpage/testdata/pages.test.mjs
    run clients/web/test/preview.test.mjs
    run clients/web/test/embed.test.mjs
    run internal/localstack/testdata/console.test.mjs
    ;;
  pages) run internal/linkpage/testdata/pages.test.mjs ;;
  preview) run clients/web/test/preview.test.mjs ;;
  embed) run clients/web/test/embed.test.mjs ;;
  console) run internal/localstack/testdata/console.test.mjs ;;
  *) echo "usage: scripts/web.sh [pages|preview|embed|console]" >&2; exit 2 ;;
esac
