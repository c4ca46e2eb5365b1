#!/usr/bin/env bash
# test.sh runs every test of the repository (what `make test` runs): it
# starts a throwaway in-memory DynamoDB Local (installing it through npm on
# first use) and moto's S3 server (scripts/moto.sh), runs `go test -race ./...`
# against them in each Go module (the product, then the CDK stack in infra/
# and the lab in internal/lab/, which the root's ./... does not reach) with
# SANDMAN_TEST_REQUIRE=1 (a test's skip for want of a server or tool fails),
# runs the local-stack smoke test when it exists, and stops both however the
# run ends.
#
# Usage: scripts/test.sh [go test flags...]   e.g. scripts/test.sh -run TestStore
# Env:   GOTEST_TIMEOUT (default 20m)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
mkdir -p .sandman
# jsii (the CDK tests) prints an end-of-life banner for Node 20; it works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# One pidfile per run, so two runs in one tree never stop each other's.
export DYNAMODB_LOCAL_PIDFILE="$repo/.sandman/dynamodb-local-test-$$.pid"
export MOTO_PIDFILE="$repo/.sandman/moto-test-$$.pid"

trap 'bash scripts/dynamodb-local.sh stop >/dev/null 2>&1 || true; bash scripts/moto.sh stop >/dev/null 2>&1 || true' EXIT
DYNAMODB_ENDPOINT="$(bash scripts/dynamodb-local.sh start --in-memory)"
export DYNAMODB_ENDPOINT
# Every test that would skip for want of DynamoDB Local or a tool fails
# instead (internal/testenv): this run has them all.
export SANDMAN_TEST_REQUIRE=1
echo "test.sh: DynamoDB Local at $DYNAMODB_ENDPOINT" >&2
# moto's S3 for the archive store tests, which fail rather than skip here.
S3_ENDPOINT="$(bash scripts/moto.sh start)"
export S3_ENDPOINT
echo "test.sh: moto's S3 at $S3_ENDPOINT" >&2

# Each module builds alone, as CI builds it, even beside a local go.work.
export GOWORK=off
for m in . infra internal/lab; do
  (cd "$m" && go test -race -timeout "${GOTEST_TIMEOUT:-20m}" "$@" ./...)
done

if [ -x scripts/smoke.sh ] && [ "$#" -eq 0 ]; then
  bash scripts/smoke.sh
fi

# The client channel end to end in headless Chromium, the stable link and
# resume on return (docs/WAKE.md), and the
# browser client's own behaviours (heartbeat throttling, reconnect backoff,
# token refresh) against a scripted channel.
if [ "$#" -eq 0 ]; then
  bash scripts/browser.sh internal/localstack/testdata/fullstack.test.mjs
  bash scripts/browser.sh internal/localstack/testdata/wake.test.mjs
  bash scripts/browser.sh internal/webclient/webclienttest/testdata/client.test.mjs
fi

# What people see (scripts/web.sh): the stable link's pages and the
# <sandman-preview> component (clients/web), each page and state at 1280
# and 375 px, light and dark, audited by axe-core and saved as a screenshot
# (build/screenshots/); the component embedded in a plain and a React page
# against the local stack; the console that only watches, with a session's
# checkpoints and their confirmed Restore and Fork (docs/CONSOLE.md),
# audited by axe-core too (it runs here for clients/web's axe-core).
if [ "$#" -eq 0 ]; then
  bash scripts/web.sh
fi

# The providers' own JS SDKs (E2B, Daytona, Vercel Sandbox) against
# `sandman fake <provider>`: a background command reaches its port through
# the preview. Each run is bounded by a timeout inside sdk.sh.
if [ "$#" -eq 0 ]; then
  bash scripts/sdk.sh
fi

# The customer SDKs in clients/ (TypeScript and Python): unit and drift
# tests, packed artifacts installed outside the repository, and each
# conformance suite against one local stack (scripts/sdk-clients.sh).
if [ "$#" -eq 0 ]; then
  bash scripts/sdk-clients.sh
fi
