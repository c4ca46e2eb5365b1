#!/usr/bin/env bash
# smoke.sh drives the local stack over real HTTP, as a newcomer would with
# curl: it builds the sandman binary, starts `sandman run` on a free loopback
# port with a 2 s sweep interval and its own state folder, and then
#   creates a `web` session and fetches its preview URL, heartbeats, reads
#   status, pauses twice (…/pause, then its alias …/snapshot), reconnects (paused, and the sandbox process stays
#   stopped), restarts the stack (sessions and paused sandboxes survive),
#   resumes and fetches the preview again, lets a session with a 60 s idle
#   timeout go idle and sees the sweep pause it (status paused, an event with
#   reason idle in events.jsonl), deletes everything, checks the served
#   OpenAPI document, drives one more session through its whole lifecycle
#   with the CLI (`sandman sessions`), runs README.md's "Try it" commands,
#   taken from README.md, twice (two sessions), stops the stack and checks
#   that no sandbox process is left.
# It prints one line per check and ends with "smoke: N passed, M failed".
#
# SANDMAN_PROVIDER=e2b-fake runs the same walk on the E2B adapter against the
# fake E2B (`sandman fake e2b`, started here so its state outlives the
# restart): the sandbox's state is read from the fake's API instead of
# /proc, and the preview URL (which does not resolve) is only checked for
# E2B's form. SANDMAN_PROVIDER=daytona-fake and vercel-fake do the same on
# the Daytona and Vercel adapters against their fakes (`sandman fake daytona
# -local-previews`, `sandman fake vercel`): their previews answer 502 while
# nothing listens and 400 (Daytona) or 410 (Vercel) once stopped. On a fake,
# the walk ends with a session whose app comes up ready.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
for tool in curl jq; do
  if ! command -v "$tool" >/dev/null; then
    echo "smoke: installing $tool" >&2
    (apt-get update -qq && apt-get install -y -qq "$tool") >/dev/null
  fi
done

go build -o build/sandman ./internal/cmd/sandman
state="$(mktemp -d /tmp/sandman-smoke.XXXXXX)"
provider="${SANDMAN_PROVIDER:-local}"
case "$provider" in local | e2b-fake | daytona-fake | vercel-fake) ;;
  *) echo "smoke: SANDMAN_PROVIDER=$provider: want local, e2b-fake, daytona-fake or vercel-fake" >&2; exit 2 ;; esac
fake_name="${provider%-fake}"
# The stack starts its own DynamoDB Local (data under $state, so the restart
# below really restarts it) and its own table: nothing from the caller's
# shell may point it elsewhere.
unset DYNAMODB_ENDPOINT SANDMAN_TABLE SANDMAN_PROVIDER SANDMAN_EVENT_BUS SANDMAN_EVENTS_FILE \
  SANDMAN_LOCAL_DIR SANDMAN_LOCAL_WEBHOOK_URL SANDMAN_DEV_API_KEY SANDMAN_DDB_IN_MEMORY
passed=0 failed=0 pid="" fake_pid="" fake=""

ok()   { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { # check NAME GOT WANT
  if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}

start_fake() { # the provider's fake, once for the whole run
  local flags=(-addr 127.0.0.1:0 -boot-delay 1s)
  # Daytona's own preview hosts do not resolve: serve them on the fake.
  [ "$fake_name" = daytona ] && flags+=(-local-previews)
  ./build/sandman fake "$fake_name" "${flags[@]}" >"$state/fake.out" 2>>"$state/fake.log" &
  fake_pid=$!
  for _ in $(seq 1 40); do
    fake="$(sed -n "s/^fake $fake_name listening on \(http[^ ]*\).*/\1/p" "$state/fake.out")"
    [ -n "$fake" ] && return
    sleep 0.25
  done
  echo "smoke: sandman fake $fake_name never got ready"; exit 1
}

start_stack() {
  : > "$state/out.log"
  local env=()
  case "$provider" in
    e2b-fake) env=(SANDMAN_PROVIDER=e2b-fake SANDMAN_E2B_BASE_URL="$fake") ;;
    daytona-fake) env=(SANDMAN_PROVIDER=daytona-fake SANDMAN_DAYTONA_BASE_URL="$fake") ;;
    vercel-fake) env=(SANDMAN_PROVIDER=vercel-fake SANDMAN_VERCEL_BASE_URL="$fake") ;;
  esac
  env "${env[@]}" SANDMAN_ADDR=127.0.0.1:0 SANDMAN_STATE_DIR="$state" SANDMAN_SWEEP_INTERVAL=5m \
    ./build/sandman run >"$state/out.log" 2>>"$state/err.log" &
  pid=$!
  for _ in $(seq 1 120); do
    base="$(sed -n 's/^Sandman is ready on \(http[^ ]*\).*/\1/p' "$state/out.log")"
    [ -n "$base" ] && break
    kill -0 "$pid" 2>/dev/null || { tail -20 "$state/err.log"; echo "smoke: sandman run exited"; exit 1; }
    sleep 0.5
  done
  [ -n "$base" ] || { tail -20 "$state/err.log"; echo "smoke: sandman run never got ready"; exit 1; }
  key="$(cat "$state/dev_api_key")"
}

stop_stack() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    wait "$pid" || true
  fi
  pid=""
}

cleanup() {
  stop_stack
  [ -n "$fake_pid" ] && kill -INT "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null || true
  # leave nothing behind even when a check failed half way
  for f in "$state"/sandboxes/*/sandbox.json; do
    [ -f "$f" ] && kill -KILL -- "-$(jq -r .pgid "$f")" 2>/dev/null || true
  done
  bash scripts/dynamodb-local.sh stop --pidfile "$state/dynamodb-local.pid" >/dev/null 2>&1 || true
  rm -rf "$state"
}
trap cleanup EXIT

api() { # api METHOD PATH [BODY] -> body on stdout, status in $code
  local out
  out="$(curl -s -w '\n%{http_code}' -X "$1" "$base$2" -H "x-api-key: $key" \
    -H 'content-type: application/json' ${3:+-d "$3"})"
  code="${out##*$'\n'}"
  body="${out%$'\n'*}"
}

fake_api() { # fake_api PATH -> the provider fake's answer; status in $fcode
  local out auth=(-H 'x-api-key: e2b_test_key')
  case "$provider" in
    daytona-fake) auth=(-H 'Authorization: Bearer dtn_test_key') ;;
    vercel-fake) auth=(-H 'Authorization: Bearer vercel_test_token') ;;
  esac
  out="$(curl -s -w '\n%{http_code}' "$fake$1" "${auth[@]}")"
  fcode="${out##*$'\n'}"
  fbody="${out%$'\n'*}"
}

proc_state() { # proc_state SESSION_SANDBOX_ID -> the sandbox process state letter, or "gone"
  if [ "$provider" = e2b-fake ]; then # the fake's view: paused as T, running as R
    fake_api "/sandboxes/$1"
    [ "$fcode" = 200 ] || { echo gone; return; }
    case "$(jq -r .state <<<"$fbody")" in paused) echo T ;; running) echo R ;; *) echo "?" ;; esac
    return
  fi
  if [ "$provider" = daytona-fake ]; then # stopped as T, started as R
    fake_api "/sandbox/$1"
    [ "$fcode" = 200 ] || { echo gone; return; }
    case "$(jq -r .state <<<"$fbody")" in stopped) echo T ;; started) echo R ;; *) echo "?" ;; esac
    return
  fi
  if [ "$provider" = vercel-fake ]; then # a stopped session as T, a running one as R
    fake_api "/v2/sandboxes/$1?projectId=prj_sandmantest&teamId=team_sandmantest"
    [ "$fcode" = 200 ] || { echo gone; return; }
    case "$(jq -r .sandbox.status <<<"$fbody")" in stopped) echo T ;; running) echo R ;; *) echo "?" ;; esac
    return
  fi
  local f="$state/sandboxes/$1/sandbox.json" p
  [ -f "$f" ] || { echo gone; return; }
  p="$(jq -r .pid "$f")"
  [ -r "/proc/$p/stat" ] || { echo gone; return; }
  sed 's/.*) \(.\).*/\1/' "/proc/$p/stat"
}

preview_check() { # preview_check NAME URL WANT_CODE|paused SANDBOX
  case "$provider" in
    e2b-fake) check "$1 (E2B form only)" "$2" "https://3000-$4.e2b.test" ;;
    daytona-fake) # the fake's own preview page: an empty 502 while running (these
      # sessions start no app), 400 "Is the Sandbox started?" once stopped
      local want="$3"; [ "$want" = paused ] && want=400; [ "$want" = 200 ] && want=502
      check "$1" "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$2" || true)" "$want" ;;
    vercel-fake) # the fake's route: 502 SANDBOX_NOT_LISTENING while running (these
      # sessions start no app), 410 SANDBOX_STOPPED once stopped
      local want="$3"; [ "$want" = paused ] && want=410; [ "$want" = 200 ] && want=502
      check "$1" "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$2" || true)" "$want" ;;
    *) # the local provider's preview front answers a paused sandbox 502 at once
      local want="$3"; [ "$want" = paused ] && want=502
      check "$1" "$(curl -s -m 2 -o /dev/null -w '%{http_code}' "$2" || true)" "$want" ;;
  esac
}

fake_count() { # fake_count -> how many sandboxes the provider fake lists
  case "$provider" in
    e2b-fake) fake_api /v2/sandboxes; jq length <<<"$fbody" ;;
    daytona-fake) fake_api /sandbox; jq '.items | length' <<<"$fbody" ;;
    vercel-fake) fake_api "/v2/sandboxes?project=prj_sandmantest&teamId=team_sandmantest"; jq '.sandboxes | length' <<<"$fbody" ;;
  esac
}

[ "$provider" != local ] && start_fake
start_stack
echo "smoke: stack at $base, state in $state, provider $provider${fake:+ (fake $fake_name at $fake)}"

api POST /v1/sessions '{"template":"web","idle_timeout_seconds":600}'
check "create web session: 201" "$code" 201
id="$(jq -r .id <<<"$body")"; sandbox="$(jq -r .sandbox_id <<<"$body")"; url="$(jq -r .preview_url <<<"$body")"
check "create web session: running" "$(jq -r .state <<<"$body")" running
preview_check "preview URL answers" "$url" 200 "$sandbox"

api POST "/v1/sessions/$id/activity"
check "heartbeat: 204" "$code" 204
api GET "/v1/sessions/$id/status"
check "status: running" "$(jq -r '.state + " " + (.sandbox_paused|tostring)' <<<"$body")" "running false"

api POST "/v1/sessions/$id/pause"
check "pause 1: 200 paused" "$code $(jq -r .paused <<<"$body")" "200 true"
api POST "/v1/sessions/$id/snapshot"
check "pause 2 (the alias …/snapshot): 200 paused" "$code $(jq -r .paused <<<"$body")" "200 true"
check "sandbox process stopped (T)" "$(proc_state "$sandbox")" T

api GET "/v1/sessions/$id/reconnect"
check "reconnect: paused" "$code $(jq -r .status <<<"$body")" "200 paused"
check "reconnect did not wake the sandbox" "$(proc_state "$sandbox")" T
preview_check "paused preview answers at once (local: its front's 502)" "$url" paused "$sandbox"

stop_stack
check "sandbox stays paused while the stack is down" "$(proc_state "$sandbox")" T
start_stack
echo "smoke: restarted at $base"
api GET "/v1/sessions/$id/status"
check "after restart: session kept, paused" "$code $(jq -r .state <<<"$body")" "200 paused"

api POST "/v1/sessions/$id/resume"
check "resume after restart: 200 running" "$code $(jq -r .session.state <<<"$body")" "200 running"
url="$(jq -r .preview_url <<<"$body")"
preview_check "preview answers again" "$url" 200 "$sandbox"

api POST /v1/sessions '{"template":"base","idle_timeout_seconds":60}'
check "create idle candidate: 201" "$code" 201
idle_id="$(jq -r .id <<<"$body")"; idle_sandbox="$(jq -r .sandbox_id <<<"$body")"
state_now=""
# The deadline is 90 s out (the 60 s idle timeout plus the 30 s heartbeat
# coalescing window, docs/DESIGN.md "Activity and idle") and the sweep runs
# every 5 min: only the pause timer (docs/DESIGN.md "Precise pausing")
# pauses it within 20 s of its deadline.
for _ in $(seq 1 110); do
  api GET "/v1/sessions/$idle_id/status"
  state_now="$(jq -r .state <<<"$body")"
  [ "$state_now" = paused ] && break
  sleep 1
done
check "idle session paused by its timer" "$state_now" paused
api GET "/v1/sessions/$idle_id"
late="$(jq -r '((.paused_at | sub("\\.[0-9]+";"") | fromdate) - (.idle_deadline | sub("\\.[0-9]+";"") | fromdate))' <<<"$body")"
check "idle pause within 10 s after the deadline (late ${late} s)" "$([ "$late" -ge 0 ] && [ "$late" -le 10 ] && echo yes)" yes
# Events come from the table's stream through the outbox poller, a moment
# after the commit: wait up to 10 s for the line.
idle_event=""
for _ in $(seq 1 20); do
  idle_event="$(jq -c --arg id "$idle_id" 'select(.detail.session_id == $id and .detail.to == "paused") | .detail.reason' "$state/events.jsonl" | head -1)"
  [ -n "$idle_event" ] && break
  sleep 0.5
done
check "idle pause event in events.jsonl" "$idle_event" '"idle"'
check "idle sandbox process stopped (T)" "$(proc_state "$idle_sandbox")" T

if [ "$provider" != local ]; then
  sandbox_pids=""
  check "sandboxes at the fake $fake_name before the deletes" "$(fake_count)" 2
else
  sandbox_pids="$(cat "$state"/sandboxes/*/sandbox.json 2>/dev/null | jq -r .pid)"
  check "sandbox processes seen before the deletes" "$(wc -w <<<"$sandbox_pids" | tr -d ' ')" 2
fi
for s in "$id" "$idle_id"; do
  api DELETE "/v1/sessions/$s"
  check "delete $s: 200 killed" "$code $(jq -r .state <<<"$body")" "200 killed"
done
api DELETE "/v1/sessions/$id"
check "delete twice: 200" "$code" 200

# The publisher (the local poller) keeps each session's last events and the
# account's usage: wait until it has seen the delete, then read both.
for _ in $(seq 1 25); do
  api GET "/v1/sessions/$id/diagnose"
  [ "$(jq -r '.events[0].to' <<<"$body")" = killed ] && break; sleep 0.2
done
check "diagnose lists the last events, newest first" "$(jq -r '[.events[].to] | .[0:2] | join(" ")' <<<"$body")" "killed running"
api GET "/v1/usage?from=$(date -u -d yesterday +%F)&to=$(date -u +%F)"
check "usage: 2 pauses, 1 resume, running time counted" \
  "$code $(jq -r '"\(.total.pauses) \(.total.resumes) \(.total.running_seconds > 0)"' <<<"$body")" "200 2 1 true"

# The OpenAPI document the stack serves, without a key, is docs/openapi.json.
check "GET /v1/openapi.json is docs/openapi.json" \
  "$(curl -s "$base/v1/openapi.json" | jq -S -c . | md5sum)" "$(jq -S -c . docs/openapi.json | md5sum)"

# One full lifecycle through the CLI (sandman sessions) over the same API.
sm() { SANDMAN_URL="$base" SANDMAN_API_KEY="$key" ./build/sandman sessions "$@"; }
cli_id="$(sm create --template web --idle-timeout 5m --metadata via=cli -o json | jq -r .id)"
check "cli create: running" "$(sm get "$cli_id" -o json | jq -r .state)" running
check "cli list shows it" "$(sm list | grep -c "^$cli_id .*running")" 1
check "cli pause: paused" "$(sm pause "$cli_id" -o json | jq -r '(.paused|tostring) + " " + .session.state')" "true paused"
check "cli status: paused" "$(sm status "$cli_id" -o json | jq -r .state)" paused
check "cli reconnect: paused" "$(sm reconnect "$cli_id" -o json | jq -r .status)" paused
check "cli watch --until paused" "$(sm watch "$cli_id" --until paused -o json | tail -1 | jq -r .state)" paused
cli_resumed="$(sm resume "$cli_id" -o json)"
cli_url="$(jq -r 'select(.session.state == "running") | .preview_url' <<<"$cli_resumed")"
preview_check "cli resume: preview answers" "$cli_url" 200 "$(jq -r .session.sandbox_id <<<"$cli_resumed")"
check "cli delete: killed" "$(sm delete "$cli_id" -o json | jq -r .state)" killed
check "cli watch ends at killed" "$(sm watch "$cli_id" | tail -1 | awk '{print $2}')" killed
rc=0; sm get ses_aaaaaaaaaaaaaaaaaaaaaaaaaa >/dev/null 2>&1 || rc=$?
check "cli exit status of not_found" "$rc" 6
rc=0; SANDMAN_URL="$base" SANDMAN_API_KEY=sk_wrong ./build/sandman sessions list >/dev/null 2>&1 || rc=$?
check "cli exit status of unauthorized" "$rc" 4

if [ "$provider" = local ]; then
  # README.md's "Try it" walkthrough, as written there, twice in a row: each
  # run must make its own session (a fixed Idempotency-Key would hand the
  # second run the first, killed one). Only the address and the state folder
  # are this stack's.
  walk="$(awk '/^## Try it/ {on = 1} on && /^```sh/ {inblock = 1; next} inblock && /^```/ {exit} inblock' README.md |
    sed -e "s#http://127.0.0.1:8080#$base#g" -e "s#\.sandman/#$state/#g")"
  walk_ids=() walk_out=""
  for run in 1 2; do
    out="$(bash -euo pipefail -c "$walk"$'\n''printf "\\nwalkthrough session %s\\n" "$S"' 2>&1)" || { fail "README walkthrough run $run: exit $?"; echo "$out" | tail -5; }
    walk_out+="$out"
    walk_ids+=("$(sed -n 's/^walkthrough session \(ses_[a-z0-9]*\)$/\1/p' <<<"$out")")
  done
  check "README walkthrough twice: two sessions" "$([ -n "${walk_ids[0]}" ] && [ "${walk_ids[0]}" != "${walk_ids[1]}" ] && echo yes)" yes
  check "README walkthrough twice: each preview answered after its resume" "$(grep -c 'Sandman sandbox' <<<"$walk_out")" 4
  for s in "${walk_ids[@]}"; do
    api GET "/v1/sessions/$s"
    check "README walkthrough session $s ends killed" "$code $(jq -r .state <<<"$body")" "200 killed"
  done
fi

if [ "$provider" != local ]; then
  # Readiness on the real adapter against its fake (docs/READINESS.md): the
  # app's command runs through the provider's command API, "listens" after
  # the fake's boot delay, and the preview answers.
  api POST /v1/sessions '{"template":"web","app":{"port":3000,"start_command":"python3 -m http.server $PORT"}}'
  check "create app session: 201 starting" "$code $(jq -r .readiness <<<"$body")" "201 starting"
  app_id="$(jq -r .id <<<"$body")"
  readiness=""
  for _ in $(seq 1 40); do
    api GET "/v1/sessions/$app_id/status"
    readiness="$(jq -r .readiness <<<"$body")"
    [ "$readiness" != starting ] && break
    sleep 0.5
  done
  check "app session ready on the fake $fake_name" "$readiness" ready
  if [ "$provider" != e2b-fake ]; then # E2B's preview host does not resolve
    api GET "/v1/sessions/$app_id"
    check "app preview answers 200" "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$(jq -r .preview_url <<<"$body")" || true)" 200
  fi
  api DELETE "/v1/sessions/$app_id"
  check "delete app session: 200 killed" "$code $(jq -r .state <<<"$body")" "200 killed"
fi
stop_stack

left=0
for p in /proc/[0-9]*; do # a sandbox process runs in its own folder under $state/sandboxes
  case "$(readlink "$p/cwd" 2>/dev/null)" in "$state/sandboxes/"*) left=$((left + 1)) ;; esac
done
for pid in $sandbox_pids; do
  [ -e "/proc/$pid" ] && left=$((left + 1))
done
check "no sandbox process left" "$left" 0
if [ "$provider" != local ]; then
  for _ in $(seq 1 10); do # Daytona's list shows a deleted sandbox for a moment
    n="$(fake_count)"; [ "$n" = 0 ] && break; sleep 0.5
  done
  check "no sandbox left at the fake $fake_name" "$n" 0
else
  check "no sandbox directory left" "$(find "$state/sandboxes" -mindepth 1 -maxdepth 1 | wc -l)" 0
fi

echo "smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
