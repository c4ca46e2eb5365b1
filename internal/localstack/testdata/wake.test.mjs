// Wake browser test (docs/WAKE.md): the real local stack (`sandman run`,
// DynamoDB Local in memory, the local provider whose pause kills the app,
// a 2 s sweep) in real headless Chromium. Run from the repository root:
//
//   bash scripts/browser.sh internal/localstack/testdata/wake.test.mjs
//
// 1. An <iframe> whose src is the stable link (/v1/sessions/{id}/open?token=)
//    of a paused session: the waking page shows (it imports the client
//    module from the API, GET /v1/sandman.js), the session resumes, and the
//    iframe ends at the app's own page with no user action; none of the
//    iframe's documents is a 5xx or the provider's error page.
//    Then twenty clients open the paused link at once: one resume, and all
//    twenty end at the app's page.
// 2. A page with presence on (away timeout 3 s) is hidden: the session is
//    paused, reason away; the page is shown again and, before any click, the
//    client's visible heartbeat resumes it with reason return.
// Every wait polls the API for a state, bounded; nothing sleeps for a result.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { startStack } from "./stack.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const started = Date.now();

const { base, key, dir, log, stop } = await startStack("wake");
const api = async (method, path, body) => {
  const res = await fetch(base + path, { method, headers: { "x-api-key": key }, body: body && JSON.stringify(body) });
  const data = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
};
// until polls the session every 100 ms until pred holds, for at most ms.
const until = async (id, what, pred, ms) => {
  const t0 = Date.now();
  for (;;) {
    const s = await api("GET", `/v1/sessions/${id}`);
    if (pred(s)) return s;
    if (Date.now() - t0 > ms) throw new Error(`${id} not ${what} within ${ms} ms: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
// resumes returns session id's paused → resuming events once events.jsonl
// holds n of its resuming → running ones (the outbox poller writes a line a
// moment after the commit), waiting at most 10 s.
const resumes = async (id, n) => {
  const t0 = Date.now();
  for (;;) {
    const evs = readFileSync(join(dir, "state", "events.jsonl"), "utf8").split("\n").filter(Boolean)
      .map((l) => JSON.parse(l)).filter((e) => e.detail.session_id === id);
    if (evs.filter((e) => e.detail.from === "resuming" && e.detail.to === "running").length >= n) {
      return evs.filter((e) => e.detail.from === "paused" && e.detail.to === "resuming");
    }
    if (Date.now() - t0 > 10_000) throw new Error(`not ${n} resuming → running events for ${id} within 10 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
};
// An app that is a real server on $PORT; the local pause kills it, so every
// resume is cold (the app is started again).
const appLine = `node -e "require('http').createServer((q, r) => r.end('<!doctype html><title>app</title><p>app ok</p>')).listen(+process.env.PORT, '127.0.0.1')"`;

const context = await chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
  executablePath: process.env.SANDMAN_CHROMIUM,
  args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
  headless: true,
});
let ok = false;
const created = []; // killed at the end: their sandboxes are processes
try {
  // 1. The stable link in an iframe wakes a paused session.
  const s1 = await api("POST", "/v1/sessions", { template: "base", away_timeout_seconds: 0, app: { port: 3000, start_command: appLine } });
  created.push(s1.id);
  await until(s1.id, "ready", (s) => s.readiness === "ready", 30_000);
  await api("POST", `/v1/sessions/${s1.id}/snapshot`);
  await until(s1.id, "paused", (s) => s.state === "paused", 10_000);
  const tok = await api("POST", `/v1/sessions/${s1.id}/client-tokens`);
  const link = `${base}/v1/sessions/${s1.id}/open?token=${encodeURIComponent(tok.token)}`;
  const page = await context.newPage();
  page.on("pageerror", (e) => console.log("page error:", e.message));
  const docs = []; // every document the iframe loaded: status and URL
  let script = 0; // the waking page's imports of the client module from the API
  let firstAnswerMs = -1; // the first open's answer, from its request
  page.on("response", (r) => {
    if (r.request().isNavigationRequest() && r.frame() !== page.mainFrame()) {
      docs.push(`${r.status()} ${r.url().replace(/token=[^&]+/, "token=…")}`);
      if (docs.length === 1) firstAnswerMs = Math.round(r.request().timing().responseStart);
    }
    if (r.frame() !== page.mainFrame() && new URL(r.url()).pathname === "/v1/sandman.js" && r.status() === 200) script++;
  });
  await page.goto(`${base}/sandman.js`); // a page of the stack's origin to hold the iframe
  const t0 = Date.now();
  await page.evaluate((src) => {
    document.body.replaceChildren();
    const f = document.createElement("iframe");
    f.src = src;
    f.style.width = "600px";
    f.style.height = "400px";
    document.body.append(f);
  }, link);
  const frame = page.frameLocator("iframe");
  await frame.locator("p", { hasText: "app ok" }).waitFor({ timeout: 30_000 });
  const tookMs = Date.now() - t0;
  assert.ok(docs.some((d) => d.startsWith("200 ") && d.includes("/open")), `the waking page showed: ${JSON.stringify(docs)}`);
  assert.ok(!docs.some((d) => /^5\d\d /.test(d)), `no 5xx in the iframe: ${JSON.stringify(docs)}`);
  assert.ok(script > 0, "the waking page imported /v1/sandman.js from the API");
  const now1 = await api("GET", `/v1/sessions/${s1.id}`);
  assert.equal(now1.state, "running");
  assert.equal(now1.readiness, "ready");
  const resumed1 = await resumes(s1.id, 1);
  assert.equal(resumed1.length, 1, `one resume: ${JSON.stringify(resumed1)}`);
  console.log(`ok   iframe of the link: waking page after ${firstAnswerMs} ms, one resume, the app's page after ${tookMs} ms; documents ${JSON.stringify(docs)}`);
  await page.close();

  // 1b. Twenty opens of the paused link at once (clients that hold,
  // ?wait=25): one resume, and every one of them ends at the app's page.
  await api("POST", `/v1/sessions/${s1.id}/snapshot`);
  await until(s1.id, "paused", (s) => s.state === "paused", 10_000);
  const t1 = Date.now();
  const ends = await Promise.all(Array.from({ length: 20 }, async () => {
    const r = await fetch(`${link}&wait=25`, { redirect: "manual" });
    if (r.status !== 302) return `open answered ${r.status}`;
    const app = await fetch(r.headers.get("location"));
    return app.status === 200 && (await app.text()).includes("app ok") ? "app" : `preview answered ${app.status}`;
  }));
  assert.deepEqual(ends, Array(20).fill("app"), JSON.stringify(ends));
  await until(s1.id, "running", (s) => s.state === "running", 10_000);
  const burst = (await resumes(s1.id, 2)).length - resumed1.length;
  assert.equal(burst, 1, `resumes for 20 concurrent opens: ${burst}`);
  console.log(`ok   20 concurrent opens: one resume, all 20 at the app's page within ${Date.now() - t1} ms`);

  // 2. Hidden → paused (away); shown → resumed (return) before any click.
  const s2 = await api("POST", "/v1/sessions", { template: "base", away_timeout_seconds: 3 });
  created.push(s2.id);
  assert.equal(s2.resume_on_return, true, "resume on return defaults on with presence");
  await until(s2.id, "running", (s) => s.state === "running", 30_000);
  const tok2 = await api("POST", `/v1/sessions/${s2.id}/client-tokens`);
  const page2 = await context.newPage();
  page2.on("pageerror", (e) => console.log("page error:", e.message));
  const clicks = [];
  await page2.exposeFunction("sawInput", (type) => clicks.push(type));
  // A page of the stack's origin holding only this session's channel; its
  // visibility is overridden, as a tab in the background has it.
  await page2.goto(`${base}/sandman.js`);
  await page2.evaluate(async ({ url, token }) => {
    let state = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => state === "hidden" });
    window.setVisibility = (v) => { state = v; document.dispatchEvent(new Event("visibilitychange")); };
    for (const t of ["pointerdown", "keydown", "click"]) document.addEventListener(t, () => window.sawInput(t), true);
    const { connect } = await import("/sandman.js");
    const ch = connect({ url, token });
    window.pushes = [];
    ch.addEventListener("session", (e) => window.pushes.push(e.detail.state));
    await new Promise((r) => ch.addEventListener("connection", (e) => { if (e.detail.state === "open") r(); }));
  }, { url: tok2.ws_url, token: tok2.token });
  await page2.evaluate(() => window.setVisibility("hidden"));
  const hid = Date.now();
  const paused = await until(s2.id, "paused", (s) => s.state === "paused", 30_000);
  assert.equal(paused.reason, "away", JSON.stringify(paused));
  console.log(`ok   hidden: paused, reason away, after ${Date.now() - hid} ms (away timeout 3 s)`);
  const shown = Date.now();
  await page2.evaluate(() => window.setVisibility("visible"));
  const back = await until(s2.id, "running again", (s) => s.state === "running", 30_000);
  assert.equal(back.reason, "return", JSON.stringify(back));
  assert.deepEqual(clicks, [], "no user input");
  const moves = await resumes(s2.id, 1);
  assert.equal(moves.length, 1, JSON.stringify(moves));
  assert.equal(moves[0].detail.reason, "return");
  console.log(`ok   shown: resumed with reason return ${Date.now() - shown} ms after the page became visible, no click`);
  await page2.close();
  ok = true;
} catch (e) {
  console.log(`FAIL wake: ${e.stack ?? e}`);
  console.log(log().split("\n").slice(-30).join("\n"));
} finally {
  await context.close();
  await stop(created);
}
console.log(`wake: ${ok ? "passed" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(ok ? 0 : 1);
