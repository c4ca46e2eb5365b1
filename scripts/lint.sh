#!/usr/bin/env bash
# lint.sh is the one lint gate: gofmt, go vet, staticcheck,
# a `go mod tidy` diff check, and the OpenAPI TypeScript check
# (scripts/openapi-ts.sh). staticcheck (pinned below) is installed into
# .tools/bin on first use from the Go module proxy.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
status=0

unformatted="$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)"
if [ -n "$unformatted" ]; then
  echo "lint: gofmt would change:" >&2
  echo "$unformatted" >&2
  status=1
fi

go vet ./... || status=1

# Pinned, so a new staticcheck release cannot break CI on its own.
staticcheck_version=v0.8.2
bin="$repo/.tools/bin"
if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "(${staticcheck_version#v})"; then
  GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
"$bin/staticcheck" ./... || status=1

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp go.mod go.sum "$tmp/"
go mod tidy
if ! diff -q "$tmp/go.mod" go.mod >/dev/null || ! diff -q "$tmp/go.sum" go.sum >/dev/null; then
  echo "lint: go.mod/go.sum are not tidy; run go mod tidy and commit:" >&2
  diff -u "$tmp/go.mod" go.mod >&2 || true
  cp "$tmp/go.mod" "$tmp/go.sum" .
  status=1
fi

# The OpenAPI document makes a TypeScript client that type-checks (npm tools
# pinned in the script, installed into .tools/openapi-ts on first use).
bash scripts/openapi-ts.sh || status=1

[ "$status" = 0 ] && echo "lint: gofmt, go vet, staticcheck, go mod tidy and the OpenAPI TypeScript check are clean"
exit "$status"
