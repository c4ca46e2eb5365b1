#!/usr/bin/env bash
# lint.sh is the one lint gate: gofmt, go vet, staticcheck,
# a `go mod tidy` diff check, and the OpenAPI TypeScript check
# (scripts/openapi-ts.sh). staticcheck (pinned below) is installed into
# .tools/bin on first use from the Go module proxy. Each of the three Go
# modules is checked on its own: the product (.), the CDK stack (infra)
# and the lab (internal/lab); and the product's module graph must hold no
# CDK module.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
status=0
modules=(. infra internal/lab)
# Each module builds alone, as CI builds it, even beside a local go.work.
export GOWORK=off

unformatted="$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)"
if [ -n "$unformatted" ]; then
  echo "lint: gofmt would change:" >&2
  echo "$unformatted" >&2
  status=1
fi

for m in "${modules[@]}"; do
  (cd "$m" && go vet ./...) || status=1
done

# Pinned, so a new staticcheck release cannot break CI on its own.
staticcheck_version=v0.8.2
bin="$repo/.tools/bin"
if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "(${staticcheck_version#v})"; then
  GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
"$bin/staticcheck" ./... || status=1
for m in "${modules[@]:1}"; do
  (cd "$m" && "$bin/staticcheck" ./...) || status=1
done

for m in "${modules[@]}"; do
  if ! (cd "$m" && go mod tidy -diff >&2); then
    echo "lint: $m/go.mod or go.sum is not tidy (diff above); run go mod tidy there and commit" >&2
    status=1
  fi
done

# The CDK is infra's alone: the product builds without resolving it.
if ! mods="$(go list -m all)"; then
  status=1
elif cdk="$(grep -E 'aws-cdk-go|jsii|cdk-nag' <<<"$mods")"; then
  echo "lint: the product module's graph holds CDK modules (they belong in infra/go.mod):" >&2
  echo "$cdk" >&2
  status=1
fi

# The OpenAPI document makes a TypeScript client that type-checks (npm tools
# pinned in the script, installed into .tools/openapi-ts on first use).
bash scripts/openapi-ts.sh || status=1

[ "$status" = 0 ] && echo "lint: gofmt, go vet, staticcheck, go mod tidy and the OpenAPI TypeScript check are clean"
exit "$status"
