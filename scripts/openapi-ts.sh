#!/usr/bin/env bash
# openapi-ts.sh checks that the OpenAPI document makes a working TypeScript
# client (issue 17): it npm-installs pinned openapi-typescript, openapi-fetch
# and typescript into .tools/openapi-ts (git-ignored; once), generates types
# from the document with openapi-typescript, and type-checks
# scripts/openapi-ts/lifecycle.ts (create, pause, resume) with
# tsc --strict. It then breaks a copy of the document (the pause route
# renamed) and requires the same check to fail, so the check cannot pass
# vacuously. `make lint` runs it (scripts/lint.sh).
#
# Usage: scripts/openapi-ts.sh [document]   default docs/openapi.json; a URL
#        such as http://127.0.0.1:8080/v1/openapi.json is fetched first.
# Requires: node and npm (Node 20).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
doc="${1:-docs/openapi.json}"

# Pinned, so a new release cannot break the check on its own.
openapi_typescript=7.13.0
openapi_fetch=0.17.0
typescript=5.9.3

dir="$repo/.tools/openapi-ts"
mkdir -p "$dir"
stamp="openapi-typescript@$openapi_typescript openapi-fetch@$openapi_fetch typescript@$typescript"
if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$stamp" ]; then
  command -v npm >/dev/null 2>&1 || { echo "openapi-ts: npm is not on PATH" >&2; exit 1; }
  echo "openapi-ts: installing $stamp into $dir" >&2
  [ -f "$dir/package.json" ] || echo '{"private":true}' >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact \
    "openapi-typescript@$openapi_typescript" "openapi-fetch@$openapi_fetch" "typescript@$typescript" >&2
  echo "$stamp" >"$dir/.installed"
fi

work="$(mktemp -d "$dir/work.XXXXXX")"
trap 'rm -rf "$work"' EXIT
case "$doc" in
  http://*|https://*) curl -fsS "$doc" -o "$work/openapi.json" ;;
  *) cp "$doc" "$work/openapi.json" ;;
esac
cp scripts/openapi-ts/lifecycle.ts scripts/openapi-ts/tsconfig.json "$work/"
ln -s "$dir/node_modules" "$work/node_modules"

# check <document>: generate the types and type-check the program.
check() {
  "$dir/node_modules/.bin/openapi-typescript" "$1" -o "$work/sandman.ts" >/dev/null 2>"$work/gen.log" || {
    cat "$work/gen.log" >&2
    return 1
  }
  (cd "$work" && "$dir/node_modules/.bin/tsc" -p tsconfig.json)
}

if ! check "$work/openapi.json"; then
  echo "openapi-ts: the TypeScript client generated from $doc does not type-check" >&2
  exit 1
fi
echo "openapi-ts: openapi-typescript $openapi_typescript types from $doc type-check scripts/openapi-ts/lifecycle.ts (tsc $typescript --strict)"

# The check must be able to fail: rename the pause route in a copy.
node -e '
  const fs = require("fs");
  const d = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
  d.paths["/v1/sessions/{id}/suspend"] = d.paths["/v1/sessions/{id}/pause"];
  delete d.paths["/v1/sessions/{id}/pause"];
  fs.writeFileSync(process.argv[2], JSON.stringify(d));
' "$work/openapi.json" "$work/broken.json"
if check "$work/broken.json" >"$work/broken.log" 2>&1; then
  echo "openapi-ts: a document without the pause route still type-checks; the check proves nothing" >&2
  exit 1
fi
echo "openapi-ts: a document with the pause route renamed fails it, as it must: $(grep -c 'error TS' "$work/broken.log") type error(s)"
