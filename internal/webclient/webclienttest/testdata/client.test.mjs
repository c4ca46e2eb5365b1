// Browser test of sandman.js in real headless Chromium, against the scripted
// channel of package webclienttest. Run from the repository root:
//
//   bash scripts/browser.sh internal/webclient/webclienttest/testdata/client.test.mjs
//
// Page time is Playwright's fake clock (page.clock): throttles and backoff
// delays are advanced by hand, never waited for. The server's view (connect
// attempts, messages received) is read from its control API; the test waits
// only for real network round trips, each bounded by a deadline.
import { createRequire } from "node:module";
import assert from "node:assert/strict";
import { scripted, until } from "../../../../scripts/lib/browsertest.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const started = Date.now();
const results = [];

// --- the scripted server ---
const server = await scripted();
const { base, control } = server;
const serverLog = () => control("GET", "/control/log");
const heartbeats = async () => (await serverLog()).messages.map((m) => m.data).filter((d) => d.action === "heartbeat");

/** Checks that fn stays falsy for a short real-time window (nothing arrives). */
async function never(what, fn, windowMs = 300) {
  const deadline = Date.now() + windowMs;
  while (Date.now() < deadline) {
    if (await fn()) throw new Error(`unexpected: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - t0 });
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}

// --- the browser ---
const context = await chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
  executablePath: process.env.SANDMAN_CHROMIUM,
  args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
  headless: true,
});

async function freshPage() {
  await control("POST", "/control/tokens", ["tok-1"]);
  const page = await context.newPage();
  page.on("pageerror", (e) => console.log("page error:", e.message));
  await page.clock.install({ time: new Date("2026-11-23T01:00:00Z") });
  // install() lets the clock tick with real time; pause it so only runFor moves it.
  await page.clock.pauseAt(new Date("2026-11-23T01:00:01Z"));
  await page.goto(base + "/test/");
  await until("sandman.js loaded", () => page.evaluate(() => window.sandmanReady === true));
  // Headless Chromium never hides a tab, so visibility is emulated: the
  // getter reads window.__visibility and the test dispatches the event.
  await page.evaluate(() => {
    window.__visibility = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => window.__visibility });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__visibility === "hidden" });
  });
  return page;
}

async function setVisibility(page, v) {
  await page.evaluate((v) => {
    window.__visibility = v;
    document.dispatchEvent(new Event("visibilitychange"));
  }, v);
}

try {
  await test("state events arrive (at connect, asked for with hello, and on every push)", async () => {
    const page = await freshPage();
    const before = (await serverLog()).connects.length;
    const sentBefore = (await serverLog()).messages.length;
    await page.evaluate(() => {
      window.events = [];
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1" });
      window.s.on("session", (d) => window.events.push(d));
    });
    await until("first state", () => page.evaluate(() => window.events.length === 1));
    const log = await serverLog();
    assert.equal(log.connects.length, before + 1);
    assert.equal(log.connects.at(-1).token, "tok-1");
    assert.equal(await page.evaluate(() => window.events[0].state), "running");
    // The first message on a new connection asks for the status and says
    // whether the page is visible (a visible return may resume; API
    // Gateway cannot push during $connect; the server answers hello).
    assert.deepEqual(log.messages[sentBefore]?.data, { action: "hello", visible: true });
    await control("POST", "/control/status", { state: "pausing", sandbox_paused: false });
    await control("POST", "/control/status", { state: "paused", sandbox_paused: true, preview_url: null });
    await until("two pushes", () => page.evaluate(() => window.events.length === 3));
    assert.deepEqual(await page.evaluate(() => window.events.map((e) => e.state)), ["running", "pausing", "paused"]);
    assert.equal(await page.evaluate(() => window.s.status.state), "paused");
    await page.evaluate(() => window.s.close());
    await page.close();
    await control("POST", "/control/status", { state: "running", sandbox_paused: false });
  });

  await test("resume() sends {action:resume} and resolves on running", async () => {
    await control("POST", "/control/status", { state: "paused", sandbox_paused: true });
    const page = await freshPage();
    await page.evaluate(() => {
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1" });
      window.resumed = false;
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open" && window.s.status?.state === "paused"));
    await page.evaluate(() => { window.s.resume().then(() => { window.resumed = true; }); });
    await until("resume message", async () => (await serverLog()).messages.some((m) => m.data.action === "resume"));
    assert.equal(await page.evaluate(() => window.resumed), false);
    await control("POST", "/control/status", { state: "running", sandbox_paused: false });
    await until("resume resolved", () => page.evaluate(() => window.resumed));
    await page.evaluate(() => window.s.close());
    await page.close();
  });

  await test("readiness: ready and whenReady follow the pushed readiness", async () => {
    await control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "starting" });
    const page = await freshPage();
    await page.evaluate(() => {
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1" });
      window.outcome = null;
    });
    await until("starting", () => page.evaluate(() => window.s.readiness === "starting"));
    assert.equal(await page.evaluate(() => window.s.ready), false);
    await page.evaluate(() => { window.s.whenReady().then((st) => { window.outcome = "ready:" + st.readiness; }, (e) => { window.outcome = e.message; }); });
    await never("whenReady resolved while starting", () => page.evaluate(() => window.outcome));
    await control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "ready" });
    await until("whenReady resolved", () => page.evaluate(() => window.outcome === "ready:ready"));
    assert.equal(await page.evaluate(() => window.s.ready), true);
    await control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "failed", readiness_detail: "exited with code 1" });
    await until("failed", () => page.evaluate(() => window.s.readiness === "failed"));
    await page.evaluate(() => { window.s.whenReady().catch((e) => { window.outcome = e.message; }); });
    await until("whenReady rejected", () => page.evaluate(() => /exited with code 1/.test(window.outcome)));
    await page.evaluate(() => window.s.close());
    await page.close();
    await control("POST", "/control/status", { state: "running", sandbox_paused: false });
  });

  await test("heartbeats on input and on visibility change, throttled to 30 s", async () => {
    const page = await freshPage();
    const n0 = (await heartbeats()).length;
    await page.evaluate(() => {
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1" }); // default 30 s interval
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));
    // A visible page's connect is not activity: no heartbeat.
    await never("a heartbeat at a visible connect", async () => (await heartbeats()).length > n0);

    // The first input goes out at once; the burst behind it is held and sent
    // once when the 30 s window ends.
    await page.click("#field");
    await until("leading heartbeat", async () => (await heartbeats()).length === n0 + 1);
    assert.deepEqual((await heartbeats()).at(-1), { action: "heartbeat", visible: true });
    await page.keyboard.type("hello");
    await page.mouse.wheel(0, 100);
    await never("a heartbeat inside the throttle window", async () => (await heartbeats()).length > n0 + 1);
    await page.clock.runFor(29_000);
    await never("a heartbeat before 30 s", async () => (await heartbeats()).length > n0 + 1);
    await page.clock.runFor(1_000);
    await until("trailing heartbeat at 30 s", async () => (await heartbeats()).length === n0 + 2);

    // No input for a while: no heartbeats.
    await page.clock.runFor(90_000);
    await never("a heartbeat without input", async () => (await heartbeats()).length > n0 + 2);

    // Input after a quiet interval goes out at once, the burst behind it is held.
    await page.keyboard.press("a");
    await until("leading heartbeat after quiet", async () => (await heartbeats()).length === n0 + 3);
    for (let i = 0; i < 10; i++) await page.keyboard.press("b");
    await never("a second heartbeat in the window", async () => (await heartbeats()).length > n0 + 3);

    // A visibility change is presence: sent at once, even inside the window.
    await setVisibility(page, "hidden");
    await until("hidden heartbeat", async () => (await heartbeats()).length === n0 + 4);
    assert.deepEqual((await heartbeats()).at(-1), { action: "heartbeat", visible: false });
    // Hidden: input does not count, the pending trailing heartbeat was replaced.
    await page.keyboard.press("c");
    await page.clock.runFor(60_000);
    await never("a heartbeat while hidden", async () => (await heartbeats()).length > n0 + 4);
    await setVisibility(page, "visible");
    await until("visible heartbeat", async () => (await heartbeats()).length === n0 + 5);
    assert.deepEqual((await heartbeats()).at(-1), { action: "heartbeat", visible: true });
    await page.evaluate(() => window.s.close());

    // A page that connects while hidden says so at once.
    await setVisibility(page, "hidden");
    await page.evaluate(() => {
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1" });
    });
    await until("hidden connect heartbeat", async () => (await heartbeats()).length === n0 + 6);
    assert.deepEqual((await heartbeats()).at(-1), { action: "heartbeat", visible: false });
    await page.evaluate(() => window.s.close());
    await page.close();
  });

  await test("the throttle interval is configurable", async () => {
    const page = await freshPage();
    const n0 = (await heartbeats()).length;
    await page.evaluate(() => {
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1", heartbeatIntervalMs: 5_000 });
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));
    await page.keyboard.press("a");
    await until("leading heartbeat", async () => (await heartbeats()).length === n0 + 1);
    await page.keyboard.press("a");
    await page.clock.runFor(4_999);
    await never("a heartbeat before 5 s", async () => (await heartbeats()).length > n0 + 1);
    await page.clock.runFor(1);
    await until("heartbeat at 5 s", async () => (await heartbeats()).length === n0 + 2);
    await page.evaluate(() => window.s.close());
    await page.close();
  });

  await test("reconnect after a drop with capped exponential backoff and jitter", async () => {
    const page = await freshPage();
    await page.evaluate(() => {
      window.conn = [];
      window.s = window.sandman.connect({
        url: "/v1/ws", token: "tok-1",
        reconnectBaseMs: 1_000, reconnectMaxMs: 8_000,
        random: () => 0.5, // delay = cap * 0.75
      });
      window.s.on("connection", (d) => window.conn.push(d));
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));
    // Refuse every connect from now on, then drop the connection.
    await control("POST", "/control/tokens", []);
    const c0 = (await serverLog()).connects.length;
    await control("POST", "/control/drop");
    const caps = [1_000, 2_000, 4_000, 8_000, 8_000, 8_000];
    for (let i = 0; i < caps.length; i++) {
      const want = caps[i] * 0.75;
      const ev = await until(`reconnecting #${i + 1}`, () =>
        page.evaluate((n) => window.conn.filter((c) => c.state === "reconnecting")[n], i));
      assert.equal(ev.attempt, i + 1);
      assert.equal(ev.delayMs, want, `delay of attempt ${i + 1}`);
      await page.clock.runFor(want - 1);
      await never(`a connect before ${want} ms`, async () => (await serverLog()).connects.length > c0 + i);
      await page.clock.runFor(1);
      await until(`connect attempt ${i + 1}`, async () => (await serverLog()).connects.length === c0 + i + 1);
      assert.equal((await serverLog()).connects.at(-1).accepted, false);
    }
    // Let it in again: the next attempt (the 7th, still capped) opens and the backoff resets.
    const seventh = await until("reconnecting #7", () =>
      page.evaluate(() => window.conn.filter((c) => c.state === "reconnecting")[6]));
    assert.equal(seventh.delayMs, 6_000);
    await control("POST", "/control/tokens", ["tok-1"]);
    await page.clock.runFor(6_000);
    await until("reopened", () => page.evaluate(() => window.s.connectionState === "open"));
    assert.equal(await page.evaluate(() => window.s.attempt), 0);
    assert.equal((await serverLog()).connects.at(-1).accepted, true);
    await control("POST", "/control/drop");
    const ev = await until("reconnecting after reset", () =>
      page.evaluate(() => window.conn.filter((c) => c.state === "reconnecting")[7]));
    assert.equal(ev.delayMs, 750, "backoff starts over after a successful open");
    // Input while disconnected is sent as soon as the channel is back.
    const n0 = (await heartbeats()).length;
    await page.keyboard.press("x");
    await page.clock.runFor(750);
    await until("reopened again", () => page.evaluate(() => window.s.connectionState === "open"));
    await until("held input heartbeat", async () => (await heartbeats()).length === n0 + 1);
    await page.evaluate(() => window.s.close());
    await page.close();
  });

  await test("default jitter stays within [cap/2, cap)", async () => {
    const page = await freshPage();
    await page.evaluate(() => {
      window.conn = [];
      window.s = window.sandman.connect({ url: "/v1/ws", token: "tok-1", reconnectBaseMs: 1_000, reconnectMaxMs: 1_000 });
      window.s.on("connection", (d) => window.conn.push(d));
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));
    await control("POST", "/control/tokens", []);
    const delays = [];
    for (let i = 0; i < 8; i++) {
      if (i === 0) await control("POST", "/control/drop");
      const ev = await until(`reconnecting #${i + 1}`, () =>
        page.evaluate((n) => window.conn.filter((c) => c.state === "reconnecting")[n], i));
      delays.push(ev.delayMs);
      await page.clock.runFor(1_000);
    }
    for (const d of delays) assert.ok(d >= 500 && d <= 1_000, `delay ${d} outside [500, 1000]`);
    assert.ok(new Set(delays).size > 1, `no jitter: ${delays}`);
    await page.evaluate(() => window.s.close());
    await page.close();
  });

  await test("a refused connect asks onTokenExpired for a fresh token and uses it", async () => {
    await control("POST", "/control/tokens", ["tok-2"]);
    const page = await context.newPage();
    await page.clock.install({ time: new Date("2026-11-23T01:00:00Z") });
    // install() lets the clock tick with real time; pause it so only runFor moves it.
    await page.clock.pauseAt(new Date("2026-11-23T01:00:01Z"));
    await page.goto(base + "/test/");
    await until("sandman.js loaded", () => page.evaluate(() => window.sandmanReady === true));
    const c0 = (await serverLog()).connects.length;
    await page.evaluate(() => {
      window.calls = [];
      window.s = window.sandman.connect({
        url: "/v1/ws", token: "tok-1", random: () => 0, reconnectBaseMs: 1_000,
        onTokenExpired: async (reason) => {
          window.calls.push(reason);
          return { token: "tok-2", expires_at: new Date(Date.now() + 15 * 60_000).toISOString(), ws_url: "/v1/ws" };
        },
      });
    });
    await until("refused connect", async () => (await serverLog()).connects.length === c0 + 1);
    assert.equal((await serverLog()).connects.at(-1).accepted, false);
    await until("callback called", () => page.evaluate(() => window.calls.length === 1));
    assert.deepEqual(await page.evaluate(() => window.calls), ["refused"]);
    await page.clock.runFor(500);
    await until("connect with the fresh token", async () => (await serverLog()).connects.length === c0 + 2);
    const last = (await serverLog()).connects.at(-1);
    assert.equal(last.token, "tok-2");
    assert.equal(last.accepted, true);
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));

    // Before the new token expires (15 min, refreshed 60 s early) the
    // callback is asked again, with reason "expiring", and the open
    // connection is kept.
    await page.clock.runFor(13 * 60_000);
    assert.deepEqual(await page.evaluate(() => window.calls), ["refused"]);
    await page.clock.runFor(60_000 + 1);
    await until("expiring refresh", () => page.evaluate(() => window.calls.length === 2));
    assert.deepEqual(await page.evaluate(() => window.calls), ["refused", "expiring"]);
    assert.equal(await page.evaluate(() => window.s.connectionState), "open");
    await page.evaluate(() => window.s.close());
    await page.close();
  });
  await test("a far expiry (past setTimeout's 24.8-day limit) does not refresh at once", async () => {
    const page = await freshPage();
    await page.evaluate(() => {
      window.calls = [];
      window.s = window.sandman.connect({
        url: "/v1/ws", token: "tok-1", expiresAt: "2099-01-01T00:00:00Z",
        onTokenExpired: (reason) => { window.calls.push(reason); return "tok-1"; },
      });
    });
    await until("open", () => page.evaluate(() => window.s.connectionState === "open"));
    await page.clock.runFor(60 * 60_000);
    assert.deepEqual(await page.evaluate(() => window.calls), []);
    await page.evaluate(() => window.s.close());
    await page.close();
  });
} finally {
  await context.close();
  server.stop();
}

const failed = results.filter((r) => !r.ok);
console.log(`browser: ${results.length - failed.length} passed, ${failed.length} failed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed.length ? 1 : 0);
