// The conformance suite: the SDK against the local stack (`make run`'s),
// started by scripts/sdk-clients.sh, which sets SANDMAN_URL,
// SANDMAN_API_KEY, SANDMAN_TEST_QUOTA_KEY (a key with a running limit of 1)
// and SANDMAN_TEST_OTHER_KEY (another account's key).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile, mkdir } from "node:fs/promises";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { Sandman, SandmanError, verifyWebhook } from "@sandmanhq/sdk";
import { startProxy, startReceiver } from "./helpers.mjs";

const here = fileURLToPath(new URL("..", import.meta.url));
const { SANDMAN_URL: url, SANDMAN_API_KEY: key, SANDMAN_TEST_QUOTA_KEY: quotaKey, SANDMAN_TEST_OTHER_KEY: otherKey } = process.env;
const skip = !url || !key ? "needs the local stack: bash scripts/sdk-clients.sh" : false;
if (skip && process.env.SANDMAN_REQUIRE_STACK) throw new Error("SANDMAN_REQUIRE_STACK is set but SANDMAN_URL or SANDMAN_API_KEY is not");

const APP = { port: 3000, start_command: "python3 -m http.server $PORT" };
const made = [];
let sm, proxy, viaProxy;
before(async () => {
  if (skip) return;
  sm = new Sandman({ baseUrl: url, apiKey: key });
  proxy = await startProxy(url);
  viaProxy = (retry = {}, timeoutMs) =>
    new Sandman({ baseUrl: proxy.url, apiKey: key, retry: { baseDelayMs: 50, ...retry }, timeoutMs });
});
after(async () => {
  if (skip) return;
  for (const id of made) await sm.sessions.delete(id).catch(() => {});
  await proxy.close();
});
const create = async (body = { template: "base" }, options, client = sm) => {
  const s = await client.sessions.create(body, options);
  made.push(s.id);
  return s;
};
const rejects = async (p, status, errorType) => {
  const e = await p.then(() => assert.fail(`want ${errorType}, got success`), (e) => e);
  assert.ok(e instanceof SandmanError, `want a SandmanError, got ${e}`);
  assert.equal(e.errorType, errorType, e.message);
  assert.equal(e.status, status, e.message);
  assert.equal(e.error_type, errorType);
  assert.ok(e.message.length > 0);
  return e;
};

test("the README's first example runs as written", { skip }, async () => {
  const readme = await readFile(here + "README.md", "utf8");
  const example = await readFile(here + "examples/quickstart.mjs", "utf8");
  const first = /```(?:ts|js)\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.equal(first, example, "README's first code block is examples/quickstart.mjs");
  const { stdout } = await promisify(execFile)(process.execPath, [here + "examples/quickstart.mjs"], {
    env: { ...process.env, SANDMAN_URL: url, SANDMAN_API_KEY: key },
    timeout: 90_000,
  });
  assert.match(stdout, /^open http:\/\/.*\/open\?token=/m);
  assert.match(stdout, /^preview http:\/\//m);
  assert.match(stdout, /^404 not_found /m);
});

test("the whole flow: create, ready, token, pause, resume, list, diagnose, usage, delete", { skip }, async () => {
  const s = await create({ template: "web", app: APP, metadata: { user: "ada" } });
  assert.equal(s.state, "running");
  assert.equal(s.metadata.user, "ada");
  const ready = await sm.sessions.waitUntilReady(s.id, { timeoutMs: 60_000 });
  assert.equal(ready.readiness, "ready");
  await sm.sessions.activity(s.id);
  await sm.sessions.activity(s.id, { hold_seconds: 120 });

  const tok = await sm.clientTokens.create(s.id, { ttl_seconds: 300 });
  assert.match(tok.ws_url ?? "", /^ws:\/\//);
  const browser = new Sandman({ baseUrl: url, apiKey: tok.token });
  assert.equal((await browser.sessions.status(s.id)).state, "running");
  await rejects(browser.sessions.get(s.id), 403, "forbidden"); // a token opens status, activity, resume only
  const link = new URL(sm.sessions.openUrl(s.id, tok.token, { path: "/docs/a b" }));
  assert.equal(link.pathname, `/v1/sessions/${s.id}/open/docs/a%20b`);
  assert.equal(link.searchParams.get("token"), tok.token);
  const opened = await fetch(sm.sessions.openUrl(s.id, tok.token), { redirect: "manual" });
  assert.equal(opened.status, 302, "the link redirects a browser to the preview");

  const paused = await sm.sessions.pause(s.id);
  assert.equal(paused.paused, true);
  assert.equal(paused.session.state, "paused");
  assert.equal((await sm.sessions.pause(s.id)).paused, true, "pause twice is 200");
  assert.equal((await sm.sessions.reconnect(s.id)).status, "paused");
  const resumed = await sm.sessions.resume(s.id, { waitReady: true });
  assert.equal(resumed.session.state, "running");
  assert.ok(resumed.preview_url);
  await sm.sessions.waitUntilReady(s.id, { timeoutMs: 30_000 });

  const listed = [];
  for await (const x of sm.sessions.list({ limit: 1, state: "running" })) listed.push(x);
  assert.ok(listed.some((x) => x.id === s.id), "list follows the pages of 1 to the session");
  assert.ok(listed.every((x) => x.state === "running"));
  const page = await sm.sessions.listPage({ limit: 1 });
  assert.equal(page.sessions.length, 1);

  const d = await sm.sessions.diagnose(s.id);
  assert.equal(d.session.id, s.id);
  assert.equal(typeof d.verdict, "string");
  const today = new Date().toISOString().slice(0, 10);
  const u = await sm.usage.get({ from: today, to: today });
  assert.equal(u.group_by, "day");
  const lines = [];
  for await (const l of sm.usage.lines({ from: today, to: today, group_by: "session", limit: 1 })) lines.push(l);
  assert.ok(lines.some((l) => l.session_id === s.id), "usage lines follow the pages");
  assert.ok(Array.isArray(await sm.pools.list()));

  const killed = await sm.sessions.delete(s.id);
  assert.equal(killed.state, "killed");
  assert.equal((await sm.sessions.delete(s.id)).state, "killed", "delete twice is 200");
  await rejects(sm.sessions.waitUntilReady(s.id, { timeoutMs: 5_000 }), 0, "not_ready");
});

test("waitUntilReady fails clearly when the app fails", { skip }, async () => {
  const s = await create({ template: "base", app: { port: 3000, start_command: "echo no server here; exit 3" } });
  const e = await rejects(sm.sessions.waitUntilReady(s.id, { timeoutMs: 60_000 }), 0, "not_ready");
  assert.match(e.message, /app failed/);
});

test("every error_type the API answers maps to SandmanError", { skip }, async () => {
  const s = await create();
  const noRetry = { retry: { maxRetries: 0 } };
  await rejects(sm.sessions.create({}), 400, "invalid");
  await rejects(new Sandman({ baseUrl: url, apiKey: "sk_wrong" }).sessions.get(s.id), 401, "unauthorized");
  await rejects(new Sandman({ baseUrl: url, apiKey: otherKey }).sessions.get(s.id), 403, "forbidden");
  await rejects(sm.sessions.get("ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"), 404, "not_found");
  await rejects(sm.sessions.create({ template: "base", metadata: { big: "x".repeat(70_000) } }), 413, "too_large");
  await sm.sessions.pause(s.id);
  await rejects(sm.sessions.activity(s.id), 409, "sandbox_paused");
  await sm.sessions.delete(s.id);
  await rejects(sm.sessions.resume(s.id), 409, "conflict");

  const q = new Sandman({ baseUrl: url, apiKey: quotaKey });
  const first = await q.sessions.create({ template: "base" });
  try {
    const e = await rejects(q.sessions.create({ template: "base" }, noRetry), 429, "quota_exceeded");
    assert.equal(e.attempts, 1);
  } finally {
    await q.sessions.delete(first.id);
  }

  // The provider and the table failing cannot be caused at will: the proxy
  // answers those envelopes as the API does.
  const c = viaProxy({ maxRetries: 0 });
  for (const [status, type, retryAfter] of [[503, "sandbox_expired", null], [503, "sandbox_unreachable", "2"], [503, "unavailable", "1"]]) {
    proxy.fault(`POST /v1/sessions/${s.id}/resume`, {
      status,
      headers: retryAfter ? { "retry-after": retryAfter } : {},
      body: { status: "error", error: `injected ${type}`, error_type: type },
    });
    const e = await rejects(c.sessions.resume(s.id), status, type);
    assert.equal(e.retryAfter, retryAfter === null ? null : Number(retryAfter));
  }
  proxy.fault(`GET /v1/sessions/${s.id}/status`, {
    status: 500,
    headers: { "apigw-requestid": "Xy1-abc=" },
    body: { status: "error", error: "something went wrong on our side; if it keeps happening, report request id 0f1e2d3c", error_type: "internal" },
  });
  const e = await rejects(c.sessions.status(s.id), 500, "internal");
  assert.equal(e.requestId, "Xy1-abc=", "the apigw-requestid header");
  proxy.fault(`GET /v1/sessions/${s.id}/status`, {
    status: 500,
    body: { status: "error", error: "something went wrong on our side; if it keeps happening, report request id 0f1e2d3c", error_type: "internal" },
  });
  assert.equal((await rejects(c.sessions.status(s.id), 500, "internal")).requestId, "0f1e2d3c", "the id the sentence names");
});

test("retries: a 503 with Retry-After, a dropped connection, a timeout, the deadline", { skip }, async () => {
  const s = await create();
  proxy.clear();
  const c = viaProxy();
  proxy.fault(`GET /v1/sessions/${s.id}/status`, {
    status: 503,
    headers: { "retry-after": "1" },
    body: { status: "error", error: "the table is slow", error_type: "unavailable" },
  });
  const t0 = Date.now();
  assert.equal((await c.sessions.status(s.id)).session_id, s.id);
  assert.ok(Date.now() - t0 >= 950, `waited ${Date.now() - t0} ms, Retry-After said 1 s`);
  assert.equal(proxy.log.filter((r) => r.url.endsWith("/status")).length, 2);

  proxy.clear();
  proxy.fault(`GET /v1/sessions/${s.id}`, "drop");
  assert.equal((await c.sessions.get(s.id)).id, s.id, "a dropped connection is retried");
  assert.equal(proxy.log.length, 2);

  proxy.clear();
  proxy.fault(`GET /v1/sessions/${s.id}`, "hang");
  assert.equal((await viaProxy({}, 300).sessions.get(s.id)).id, s.id, "an attempt past its timeout is retried");
  proxy.fault(`GET /v1/sessions/${s.id}`, "hang", 2);
  const te = await rejects(viaProxy({ maxRetries: 1 }, 200).sessions.get(s.id), 0, "timeout");
  assert.equal(te.attempts, 2, "a timeout is retried, then reported");

  proxy.clear();
  proxy.fault(`GET /v1/sessions/${s.id}`, {
    status: 503, headers: { "retry-after": "1" }, body: { status: "error", error: "slow", error_type: "unavailable" },
  }, 100);
  const t1 = Date.now();
  const e = await rejects(viaProxy({ maxRetries: 10, deadlineMs: 2_500 }).sessions.get(s.id), 503, "unavailable");
  assert.ok(Date.now() - t1 < 2_500, "the deadline bounds the retries");
  assert.ok(e.attempts >= 2 && e.attempts <= 3, `attempts ${e.attempts}`);
  proxy.clear();

  // A webhook endpoint made twice is two endpoints: not retried but on 429.
  proxy.fault("POST /v1/webhook-endpoints", { status: 503, body: { status: "error", error: "slow", error_type: "unavailable" } });
  const we = await rejects(c.webhookEndpoints.create({ url: "http://127.0.0.1:9/x" }), 503, "unavailable");
  assert.equal(we.attempts, 1);
  proxy.clear();
});

test("idempotent creates: a key reused across the SDK's retries, and replays", { skip }, async () => {
  proxy.clear();
  const c = viaProxy();
  const tag = "idem-" + Date.now();
  // The stack makes the session, then the answer is lost: the SDK's retry
  // carries the same key and gets the same session back.
  proxy.fault("POST /v1/sessions", "drop-after-forward");
  const s = await create({ template: "base", metadata: { tag } }, undefined, c);
  const posts = proxy.log.filter((r) => r.method === "POST" && r.url === "/v1/sessions");
  assert.equal(posts.length, 2);
  assert.equal(posts[0].status, 201, "the first attempt made it");
  assert.ok(posts[0].headers["idempotency-key"]);
  assert.equal(posts[1].headers["idempotency-key"], posts[0].headers["idempotency-key"]);
  assert.equal(posts[1].upstreamHeaders["idempotent-replayed"], "true");
  let mine = 0;
  for await (const x of sm.sessions.list({ limit: 100 })) if (x.metadata?.tag === tag) mine++;
  assert.equal(mine, 1, "one session, not two");

  const key = "order-" + tag;
  const a = await create({ template: "base" }, { idempotencyKey: key });
  const b = await create({ template: "web" }, { idempotencyKey: key });
  assert.equal(b.id, a.id, "a replay answers the first create's session");
  const other = await create({ template: "base" });
  assert.notEqual(other.id, a.id, "a create without a key gets a fresh one");
  proxy.clear();
});

test("webhooks: real deliveries verify, a tampered one is refused", { skip }, async () => {
  const rx = await startReceiver();
  const ep = await sm.webhookEndpoints.create({ url: rx.url, event_types: ["session.paused"], description: "sdk test" });
  try {
    assert.match(ep.secret ?? "", /^whsec_/);
    assert.ok((await sm.webhookEndpoints.list()).some((x) => x.id === ep.id));
    assert.equal((await sm.webhookEndpoints.get(ep.id)).secret, undefined, "the secret is shown once");
    const s = await create();
    await sm.sessions.pause(s.id);
    const d = await rx.next((d) => JSON.parse(d.body).data.session_id === s.id);
    const ev = verifyWebhook(ep.secret, d.body, d.headers);
    assert.equal(ev.type, "session.paused");
    assert.equal(ev.data.session_id, s.id);
    assert.equal(ev.data.to, "paused");
    assert.equal(verifyWebhook(ep.secret, d.body, new Headers(d.headers)).data.event_id, d.headers["webhook-id"]);

    const tampered = d.body.replace('"to":"paused"', '"to":"running"');
    assert.notEqual(tampered, d.body);
    await rejects(Promise.resolve().then(() => verifyWebhook(ep.secret, tampered, d.headers)), 0, "invalid_signature");
    const wrong = "whsec_" + btoa("not the endpoint's secret, 32 by");
    await rejects(Promise.resolve().then(() => verifyWebhook(wrong, d.body, d.headers)), 0, "invalid_signature");

    let delivery;
    for (let i = 0; i < 50 && delivery?.status !== "succeeded"; i++) {
      for await (const x of sm.webhookDeliveries.list(ep.id, { limit: 1 })) if (x.event_id === ev.data.event_id) delivery = x;
      if (delivery?.status !== "succeeded") await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(delivery?.status, "succeeded");
    const rotated = await sm.webhookEndpoints.rotateSecret(ep.id);
    assert.notEqual(rotated.secret, ep.secret);
    const before = rx.got.length;
    const again = await sm.webhookDeliveries.retry(ep.id, delivery.id);
    assert.equal(again.id, delivery.id);
    const replay = await rx.next((x) => rx.got.indexOf(x) >= before);
    assert.equal(replay.headers["webhook-id"], d.headers["webhook-id"], "a replay keeps its webhook-id");
    verifyWebhook(rotated.secret, replay.body, replay.headers);
    verifyWebhook(ep.secret, replay.body, replay.headers); // the old secret signs for 24 h
    verifyWebhook([wrong, rotated.secret], replay.body, replay.headers);

    const off = await sm.webhookEndpoints.update(ep.id, { disabled: true, description: "off" });
    assert.equal(off.disabled, true);
    assert.equal(off.description, "off");
  } finally {
    await sm.webhookEndpoints.delete(ep.id);
    await rx.close();
  }
  await rejects(sm.webhookEndpoints.get(ep.id), 404, "not_found");
});

test("the Next.js route handler example mints a token for the signed-in user's session", { skip }, async () => {
  await mkdir(here + "test/.build", { recursive: true });
  await esbuild.build({ entryPoints: [here + "examples/next-route.ts"], outfile: here + "test/.build/next-route.mjs", format: "esm", platform: "neutral", logLevel: "warning" });
  process.env.SANDMAN_URL = url;
  process.env.SANDMAN_API_KEY = key;
  const route = await import(here + "test/.build/next-route.mjs");
  const s = await create();
  const sessions = new Map([["ada", s.id], ["bob", "ses_aaaaaaaaaaaaaaaaaaaaaaaaaa"]]);
  route.app.sessionOf = async (user) => sessions.get(user) ?? null;
  const call = (cookie) => route.POST(new Request("http://app.test/api/sandbox-token", { method: "POST", headers: cookie ? { cookie } : {} }));

  const res = await call("theme=dark; user=ada");
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.session_id, s.id);
  const browser = new Sandman({ baseUrl: url, apiKey: body.token });
  assert.equal((await browser.sessions.status(s.id)).session_id, s.id, "the token opens the user's session");
  await rejects(browser.sessions.status(made[0] === s.id ? made[1] : made[0]), 403, "forbidden");
  assert.ok(body.open_url.startsWith(`${url}/v1/sessions/${s.id}/open?token=`));
  assert.equal((await call(null)).status, 401);
  assert.equal((await call("user=carol")).status, 404);
  assert.equal((await call("user=bob")).status, 404, "a session Sandman does not know");
});

test("checkpoints: create with a label, wait until ready, list every page, restore in place, fork, delete; replays give one", { skip }, async () => {
  const s = await create({ template: "base", metadata: { user: "ada" } });
  await sm.sessions.waitUntilReady(s.id, { timeoutMs: 60_000 });
  const key = "chk-" + Date.now();
  const c = await sm.checkpoints.create(s.id, { label: "turn 3", metadata: { turn: "3" } }, { idempotencyKey: key });
  assert.match(c.id, /^chk_[0-9a-v]{26}$/);
  assert.equal(c.session_id, s.id);
  assert.equal(c.label, "turn 3");
  assert.equal(c.trigger, "api");
  const again = await sm.checkpoints.create(s.id, { label: "turn 3" }, { idempotencyKey: key });
  assert.equal(again.id, c.id, "a replayed create answers the first checkpoint");
  const ready = await sm.checkpoints.waitUntilReady(s.id, c.id, { timeoutMs: 60_000 });
  assert.equal(ready.state, "ready");
  assert.ok(["snapshot", "archive"].includes(ready.kind), ready.kind);
  assert.ok(["filesystem", "filesystem+memory"].includes(ready.keeps), ready.keeps);
  assert.ok(ready.size_bytes >= 0);

  // The SDK's own retry of a create whose answer was lost carries the same key: one checkpoint.
  proxy.clear();
  proxy.fault(`POST /v1/sessions/${s.id}/checkpoints`, "drop-after-forward");
  const c2 = await viaProxy().checkpoints.create(s.id, { label: "turn 4" });
  const posts = proxy.log.filter((r) => r.method === "POST");
  assert.equal(posts.length, 2);
  assert.equal(posts[0].status, 202, "the first attempt made it");
  assert.equal(posts[1].headers["idempotency-key"], posts[0].headers["idempotency-key"]);
  assert.equal(posts[1].upstreamHeaders["idempotent-replayed"], "true");
  proxy.clear();
  await sm.checkpoints.waitUntilReady(s.id, c2.id, { timeoutMs: 60_000 });
  const listed = [];
  for await (const x of sm.checkpoints.list(s.id, { limit: 1 })) listed.push(x.id);
  assert.deepEqual(listed, [c2.id, c.id], "pages of 1 followed, newest first, one checkpoint per key");
  assert.equal((await sm.checkpoints.listPage(s.id, { limit: 1 })).checkpoints.length, 1);

  // Restore in place; two restores of the same checkpoint at once are one.
  const [r1, r2] = await Promise.all([sm.sessions.restore(s.id, c.id), sm.sessions.restore(s.id, c.id)]);
  assert.equal(r1.id, s.id, "the same session");
  assert.equal(r2.id, s.id);
  assert.equal(r1.state, "restoring");
  assert.equal(r2.state, "restoring");
  await sm.sessions.waitUntilReady(s.id, { timeoutMs: 60_000 });
  const restored = await sm.sessions.get(s.id);
  assert.equal(restored.restore_error ?? null, null);
  let timeline = [];
  for (let i = 0; i < 100 && !timeline.some((e) => e.from === "restoring"); i++) {
    if (i) await new Promise((r) => setTimeout(r, 100));
    timeline = [];
    for await (const e of sm.sessions.events(s.id, { limit: 2 })) timeline.push(e);
  }
  assert.equal(timeline.filter((e) => e.to === "restoring").length, 1, "one restore");
  assert.ok(timeline.some((e) => e.from === "restoring" && e.to === "running"), "restoring → running on the timeline");

  // A restore repeated with its Idempotency-Key once it is done starts none.
  const rkey = "restore-" + Date.now();
  assert.equal((await sm.sessions.restore(s.id, { checkpointId: c.id }, { idempotencyKey: rkey })).state, "restoring");
  await sm.sessions.waitUntilReady(s.id, { timeoutMs: 60_000 });
  const replayed = await sm.sessions.restore(s.id, c.id, { idempotencyKey: rkey });
  assert.equal(replayed.state, "running", "a replayed restore answers the session as it is");
  const restores = [];
  for await (const e of sm.sessions.events(s.id)) if (e.to === "restoring") restores.push(e);
  assert.equal(restores.length, 2, "the replay started no restore");

  // Fork: a new session from the checkpoint; a replay with the key is the same one.
  const fkey = "fork-" + Date.now();
  const f = await sm.sessions.fork(s.id, { checkpoint_id: c.id, metadata: { user: "bob" } }, { idempotencyKey: fkey });
  made.push(f.id);
  assert.notEqual(f.id, s.id);
  assert.deepEqual(f.forked_from, { session_id: s.id, checkpoint_id: c.id });
  assert.equal(f.metadata.user, "bob");
  const f2 = await sm.sessions.fork(s.id, { checkpoint_id: c.id }, { idempotencyKey: fkey });
  assert.equal(f2.id, f.id, "a replayed fork answers the first new session");
  await sm.sessions.waitUntilReady(f.id, { timeoutMs: 60_000 });
  assert.equal((await sm.sessions.get(s.id)).state, "running", "the source is not changed by its fork");

  // Delete; a checkpoint of another session is not found; waiting on a gone one fails fast.
  await sm.checkpoints.delete(s.id, c2.id);
  await rejects(sm.checkpoints.get(s.id, c2.id), 404, "not_found");
  await rejects(sm.checkpoints.get(f.id, c.id), 404, "not_found");
  await rejects(sm.checkpoints.waitUntilReady(s.id, c2.id, { timeoutMs: 5_000 }), 404, "not_found");
  const left = [];
  for await (const x of sm.checkpoints.list(s.id)) left.push(x.id);
  assert.deepEqual(left, [c.id]);
});
