// Unit tests: no server but scripted loopback ones.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { Sandman, SandmanError, verifyWebhook } from "@sandmanhq/sdk";
import { backoff, fillPath } from "../dist/transport.js";
import { parseRetryAfter } from "../dist/errors.js";

const pkg = fileURLToPath(new URL("..", import.meta.url));

/** A server answering each request with the next scripted [status, headers, body] and logging the requests. */
async function scripted(answers) {
  const log = [];
  const server = http.createServer(async (req, res) => {
    let body = "";
    for await (const c of req) body += c;
    log.push({ method: req.method, url: req.url, headers: req.headers, body });
    const [status, headers, out] = answers.shift() ?? [500, {}, "{}"];
    if (status === "drop") return req.socket.destroy();
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(typeof out === "string" ? out : JSON.stringify(out));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, log, close: () => { server.closeAllConnections(); return new Promise((r) => server.close(r)); } };
}
const env = (status, type) => [status, {}, { status: "error", error: `a ${type}`, error_type: type }];
const session = { id: "ses_x", state: "running" };
const fast = { baseDelayMs: 1, maxDelayMs: 2 };

test("a create sends one Idempotency-Key, the same on each retry; a given key is used as is", async () => {
  const s = await scripted([env(429, "quota_exceeded"), ["drop"], env(503, "unavailable"), [201, {}, session], [201, {}, session]]);
  try {
    const sm = new Sandman({ baseUrl: s.url, apiKey: "sk_1", retry: fast });
    assert.equal((await sm.sessions.create({ template: "web" })).id, "ses_x");
    const keys = s.log.map((r) => r.headers["idempotency-key"]);
    assert.equal(keys.length, 4);
    assert.match(keys[0], /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1);
    assert.equal(s.log[0].headers.authorization, "Bearer sk_1");
    assert.deepEqual(JSON.parse(s.log[0].body), { template: "web" });
    await sm.sessions.create({ template: "web" }, { idempotencyKey: "mine-1" });
    assert.equal(s.log[4].headers["idempotency-key"], "mine-1");
  } finally {
    await s.close();
  }
});

test("what is not retried: other 4xx, sandbox_expired, and 503s of calls that would act twice", async () => {
  const s = await scripted([env(409, "conflict"), env(503, "sandbox_expired"), env(503, "unavailable"), env(429, "quota_exceeded"), [201, {}, { id: "wh_1" }]]);
  try {
    const sm = new Sandman({ baseUrl: s.url, apiKey: "k", retry: fast });
    for (const [call, type] of [[() => sm.sessions.resume("ses_x"), "conflict"], [() => sm.sessions.resume("ses_x"), "sandbox_expired"], [() => sm.webhookEndpoints.create({ url: "https://x.test" }), "unavailable"]]) {
      const e = await call().catch((e) => e);
      assert.ok(e instanceof SandmanError);
      assert.equal(e.errorType, type);
      assert.equal(e.attempts, 1);
    }
    assert.equal((await sm.webhookEndpoints.create({ url: "https://x.test" })).id, "wh_1", "a 429 is retried on every route");
  } finally {
    await s.close();
  }
});

test("errors carry status, error_type, message, retry_after and the request id", async () => {
  const s = await scripted([
    [503, { "retry-after": "7", "apigw-requestid": "abc=" }, { status: "error", error: "slow table", error_type: "unavailable" }],
    [502, {}, "<html>bad gateway</html>"],
  ]);
  try {
    const sm = new Sandman({ baseUrl: s.url, apiKey: "k", retry: { maxRetries: 0 } });
    const e = await sm.sessions.get("ses_x").catch((e) => e);
    assert.deepEqual([e.status, e.errorType, e.message, e.retryAfter, e.requestId], [503, "unavailable", "slow table", 7, "abc="]);
    const h = await sm.sessions.get("ses_x").catch((e) => e);
    assert.deepEqual([h.status, h.errorType], [502, "internal"], "an answer without the envelope keeps its status");
  } finally {
    await s.close();
  }
});

test("network errors are retried, then reported as network", async () => {
  const s = await scripted([]);
  await s.close(); // nothing listens there now
  const sm = new Sandman({ baseUrl: s.url, apiKey: "k", retry: { ...fast, maxRetries: 2 } });
  const e = await sm.sessions.get("ses_x").catch((e) => e);
  assert.deepEqual([e.status, e.errorType, e.attempts], [0, "network", 3]);
});

test("backoff doubles up to its cap, jittered over the upper half; Retry-After parses", () => {
  const r = { maxRetries: 9, baseDelayMs: 100, maxDelayMs: 1000, deadlineMs: 1e9 };
  assert.deepEqual([1, 2, 3, 4, 5].map((n) => backoff(n, r, () => 1)), [100, 200, 400, 800, 1000]);
  assert.deepEqual([1, 5].map((n) => backoff(n, r, () => 0)), [50, 500]);
  assert.equal(parseRetryAfter("3"), 3);
  assert.equal(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString()) >= 9, true);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(fillPath("/v1/sessions/{id}/open/{path}", { id: "ses_a", path: "a b/c?d" }), "/v1/sessions/ses_a/open/a%20b/c%3Fd");
});

test("verifyWebhook: Standard Webhooks signatures, tampering and stale timestamps refused", () => {
  const secret = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
  const body = JSON.stringify({ type: "session.paused", timestamp: "2026-01-01T00:00:00Z", data: { session_id: "ses_x" } });
  const now = new Date();
  const headers = { "webhook-id": "ses_x:7", "webhook-timestamp": String(Math.floor(now / 1000)), "webhook-signature": new Webhook(secret).sign("ses_x:7", now, body) };
  assert.equal(verifyWebhook(secret, body, headers).data.session_id, "ses_x");
  const refused = (f) => assert.throws(f, (e) => e instanceof SandmanError && e.errorType === "invalid_signature");
  refused(() => verifyWebhook(secret, body.replace("ses_x", "ses_y"), headers));
  refused(() => verifyWebhook(secret, body, { ...headers, "webhook-id": "ses_x:8" }));
  const old = new Date(now - 10 * 60_000);
  refused(() => verifyWebhook(secret, body, { ...headers, "webhook-timestamp": String(Math.floor(old / 1000)), "webhook-signature": new Webhook(secret).sign("ses_x:7", old, body) }));
  // The Standard Webhooks spec's own example, checked at its time with the library.
  const spec = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign("msg_p5jXN8AQM9LWM0D4loKWxJek", new Date(1614265330 * 1000), '{"test": 2432232314}');
  assert.equal(spec, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
});

test("the built package runs on fetch alone: no node: import, no Node global but an optional process.env", async () => {
  for (const f of (await readdir(pkg + "dist")).filter((f) => f.endsWith(".js"))) {
    const js = await readFile(pkg + "dist/" + f, "utf8");
    assert.doesNotMatch(js, /from\s+["']node:|require\(|\bBuffer\b|__dirname/, f);
  }
});

test("the examples type-check against the SDK's declarations", async () => {
  await promisify(execFile)(pkg + "node_modules/.bin/tsc", ["-p", pkg + "tsconfig.examples.json"]);
});
