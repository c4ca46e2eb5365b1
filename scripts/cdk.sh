#!/usr/bin/env bash
# Runs the AWS CDK CLI on this repository's app (cdk.json: infra/app, a module
# of its own, built into build/cdk/app and run from the repository root),
# installing the pinned CLI into .tools/cdk (git-ignored) on first use.
#
#   scripts/cdk.sh synth                 # needs Node.js and `make build`, no AWS credentials
#   scripts/cdk.sh synth -c sandman:functionsDir=/some/dir
#   scripts/cdk.sh deploy                # needs AWS credentials
#   scripts/cdk.sh bootstrap [aws://ACCOUNT/REGION]   # needs AWS credentials, not `make build`
#
# bootstrap runs outside the app (in an empty directory, so no cdk.json): it
# prepares the account/region of the credentials (or the one given) without
# synthesizing the stack, which would need the built functions (issue 14).
# CDK_CLI, when set, is the CLI to run instead of the pinned one (tests).
#
# The CLI is pinned to the 2.x line: npm's 3.x CLI rejects the cloud assembly
# schema that aws-cdk-go v2.248.0 writes.
set -euo pipefail

CDK_CLI_VERSION=2.1148.1

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools/cdk"
cli="$tools/node_modules/.bin/cdk"

installed_version() {
	node -p 'require(process.argv[1]).version' "$tools/node_modules/aws-cdk/package.json" 2>/dev/null || true
}

if [[ -n "${CDK_CLI:-}" ]]; then
	cli="$CDK_CLI"
elif [[ ! -x "$cli" || "$(installed_version)" != "$CDK_CLI_VERSION" ]]; then
	echo "cdk.sh: installing aws-cdk@$CDK_CLI_VERSION into .tools/cdk" >&2
	mkdir -p "$tools"
	npm install --prefix "$tools" --no-audit --no-fund --loglevel=error "aws-cdk@$CDK_CLI_VERSION" >&2
fi

# Node 20 is past end of life for jsii; it still works, so keep the banner quiet.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# No network beyond the package registries: skip the CLI's version check and telemetry.
export CDK_DISABLE_VERSION_CHECK=1
export CDK_DISABLE_CLI_TELEMETRY=true

if [[ "${1:-}" == bootstrap ]]; then
	outside="$(mktemp -d)"
	trap 'rm -rf "$outside"' EXIT
	cd "$outside"
	"$cli" "$@"
	exit
fi

cd "$root"
exec "$cli" "$@"
