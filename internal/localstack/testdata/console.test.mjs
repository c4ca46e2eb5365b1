// Browser test of the console (docs/CONSOLE.md) in real headless Chromium,
// against the console over the real API handlers on memstore
// (internal/localstack/consoletest/serve: 500 sessions, 480 killed, 20 live
// of which 10 paused sessions that resume on return and 10 running ones
// whose last client left). Run from the repository root:
//
//   bash scripts/browser.sh internal/localstack/testdata/console.test.mjs
//
// The first view shows the 20 live sessions; paging reaches all 500 once;
// filters (state, provider, template, metadata) show what the API answers
// for them; a column sorts; a search by id opens the session's page, whose
// paused session stays paused with nothing written and no provider call
// however long it is watched; a session made and paused elsewhere appears
// and moves live (the feed), its timeline growing with reason, actor and
// duration; pools and webhooks show; at 390 px nothing overflows sideways.
// Screenshots at 1280 and 390 px go to $SANDMAN_SCREENSHOTS (default
// build/screenshots).
import { createRequire } from "node:module";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const started = Date.now();
const LIVE = ["provisioning", "running", "pausing", "paused", "resuming"];
const shots = process.env.SANDMAN_SCREENSHOTS || join("build", "screenshots");
mkdirSync(shots, { recursive: true });

const dir = mkdtempSync(join(tmpdir(), "sandman-console-"));
const bin = join(dir, "serve");
execFileSync("go", ["build", "-o", bin, "./internal/localstack/consoletest/serve"], { stdio: "inherit" });
const server = spawn(bin, ["-sessions", "500", "-live", "20"], { stdio: ["pipe", "pipe", "inherit"] });
const base = await new Promise((resolve, reject) => {
  let buf = "";
  server.stdout.on("data", (d) => {
    buf += d;
    const nl = buf.indexOf("\n");
    if (nl >= 0) resolve(buf.slice(0, nl).trim());
  });
  server.on("exit", (code) => reject(new Error(`server exited ${code}`)));
});
const get = async (path) => (await fetch(base + path)).json();
const post = async (path) => (await fetch(base + path, { method: "POST" })).json();

const context = await chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
  executablePath: process.env.SANDMAN_CHROMIUM,
  args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
  headless: true,
  viewport: { width: 1280, height: 900 },
});
let ok = false;
try {
  const page = await context.newPage();
  const made = [];
  page.on("request", (r) => made.push(`${r.method()} ${new URL(r.url()).pathname}`));
  page.on("pageerror", (e) => console.log("page error:", e.message));
  const rows = page.locator("#sessions tbody tr");
  const ids = async () => rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.id));
  const states = async () => page.locator("#sessions tbody .badge").allTextContents();

  // The first view: the 20 live sessions, and only them.
  await page.goto(base + "/console/");
  await page.locator("#live[data-state=open]").waitFor();
  await rows.first().waitFor();
  assert.equal(await rows.count(), 20);
  assert.ok((await states()).every((s) => LIVE.includes(s)), `first view states ${await states()}`);
  const live = await get("/console/api/sessions?state=" + LIVE.join(",") + "&limit=100");
  assert.deepEqual(await ids(), live.sessions.map((s) => s.id));
  await page.screenshot({ path: join(shots, "console-sessions-1280.png"), fullPage: true });
  console.log("ok   first view: the 20 live sessions of 500, newest first");

  // Paging reaches every session once: 100 a page, the live ones first.
  await page.locator("select[name=limit]").selectOption("100");
  await page.getByRole("button", { name: "Filter" }).click();
  await page.locator("#page-label", { hasText: "Page 1" }).waitFor();
  const seen = new Set();
  for (let n = 1; ; n++) {
    await page.locator("#page-label", { hasText: `Page ${n}` }).waitFor();
    await rows.first().waitFor();
    for (const id of await ids()) {
      assert.ok(!seen.has(id), `${id} twice`);
      seen.add(id);
    }
    const next = page.getByRole("button", { name: "Next" });
    if (await next.isDisabled()) break;
    const before = (await ids())[0];
    await next.click();
    await page.waitForFunction((b) => document.querySelector("#sessions tbody tr")?.dataset.id !== b, before);
  }
  assert.equal(seen.size, 500);
  console.log(`ok   paging: all 500 sessions, each once, in ${Math.ceil(480 / 100) + 1} pages`);

  // Filters: what the API answers for the same filters.
  const filter = async (form, query) => {
    await page.locator("select[name=state]").selectOption(form.state ?? "");
    await page.locator("input[name=provider]").fill(form.provider ?? "");
    await page.locator("input[name=template]").fill(form.template ?? "");
    await page.locator("input[name=metadata]").fill(form.metadata ?? "");
    const want = (await get(`/console/api/sessions?limit=100&${query}`)).sessions.map((s) => s.id);
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForFunction((w) => [...document.querySelectorAll("#sessions tbody tr")].map((tr) => tr.dataset.id).join() === w.join(), want);
    return want.length;
  };
  const running = await filter({ state: "running" }, "state=running");
  assert.ok((await states()).every((s) => s === "running") && running === 10, `running: ${running}`);
  const killedE2b = await filter({ state: "killed", provider: "e2b", template: "web" }, "state=killed&provider=e2b&template=web");
  const u1 = await filter({ state: "", metadata: "user=u1" }, "metadata%5Buser%5D=u1");
  assert.ok(killedE2b > 0 && u1 === 100, `killed e2b web: ${killedE2b}, user=u1: ${u1}`);
  console.log(`ok   filters: running ${running}, killed on e2b from web ${killedE2b}, metadata user=u1 ${u1} (as the API answers)`);

  // Sorting this page by a column.
  await page.locator("#sessions th[data-key=provider] button").click();
  const providers = await page.locator("#sessions tbody td[data-label=Provider]").allTextContents();
  assert.deepEqual(providers, [...providers].sort().reverse());
  await page.locator("#sessions th[data-key=provider] button").click();
  assert.equal(await page.locator("#sessions th[data-key=provider]").getAttribute("aria-sort"), "ascending");
  console.log("ok   sort: provider descending, then ascending");

  // Search by id: a paused session that resumes on return, watched for a while.
  const paused = live.sessions.find((s) => s.state === "paused");
  const before = await get(`/control/sessions/${paused.id}`);
  await page.locator("input[name=id]").fill(paused.id.slice(4)); // without ses_
  await page.getByRole("button", { name: "Find" }).click();
  await page.locator("#view-session h2 .badge", { hasText: "paused" }).waitFor();
  await page.getByText("No events yet").waitFor();
  await page.mouse.move(10, 10);
  await page.keyboard.press("Tab");
  await page.mouse.wheel(0, 300);
  await page.waitForTimeout(2500);
  await page.screenshot({ path: join(shots, "console-session-1280.png"), fullPage: true });
  const after = await get(`/control/sessions/${paused.id}`);
  assert.deepEqual(after, before, "watching changed the paused session");
  const stats = await get("/control/stats");
  assert.equal(stats.provider_calls, 0);
  assert.equal(stats.events, 0);
  console.log(`ok   watching: ${paused.id} still paused at version ${after.version} after 2.5 s of input on its page; 0 events, 0 provider calls`);

  // Live: a session made elsewhere shows up; its page follows its pause.
  await page.goto(base + "/console/?again"); // a new page: the default filters
  await rows.first().waitFor();
  await page.locator("#live[data-state=open]").waitFor();
  const fresh = await post("/control/sessions");
  await page.locator(`#sessions tbody tr[data-id="${fresh.id}"]`).waitFor({ timeout: 5_000 });
  console.log(`ok   live: ${fresh.id} appeared on the first view without a reload`);
  await page.locator(`#sessions tbody tr[data-id="${fresh.id}"] a`).click();
  await page.locator("#view-session h2 .badge", { hasText: "running" }).waitFor();
  await post(`/control/sessions/${fresh.id}/pause`);
  await page.locator("#view-session h2 .badge", { hasText: "paused" }).waitFor({ timeout: 5_000 });
  const timeline = page.locator("#view-session .timeline tbody tr");
  await page.waitForFunction(() => document.querySelectorAll("#view-session .timeline tbody tr").length >= 4);
  const first = await timeline.first().locator("td").allTextContents();
  assert.match(first[1], /pausing → paused/);
  assert.equal(first[2], "request");
  assert.equal(first[3], "api");
  const usage = await page.locator("#view-session .usage").textContent();
  assert.match(usage, /running and .* paused/);
  console.log(`ok   live: the session page followed its pause; timeline ${await timeline.count()} entries, newest "${first.join(" | ")}"`);

  // Pools and webhooks.
  await page.getByRole("link", { name: "Pools" }).click();
  await page.getByText("No warm pools").waitFor();
  await page.getByRole("link", { name: "Webhooks" }).click();
  await page.getByText("No webhook endpoints").waitFor();
  console.log("ok   pools and webhooks: shown (none configured)");

  // 390 px wide: nothing overflows sideways.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const hash of ["#/sessions", `#/sessions/${fresh.id}`, "#/pools", "#/webhooks"]) {
    await page.goto(`${base}/console/${hash}`);
    await page.waitForLoadState("networkidle");
    if (hash === "#/sessions") await rows.first().waitFor();
    // Nothing wider than the viewport, nor clipped: every element's right
    // edge inside it.
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    const wide = await page.evaluate(() => [...document.querySelectorAll("body *")]
      .filter((e) => e.getClientRects().length && e.getBoundingClientRect().right > 390.5)
      .map((e) => `${e.tagName.toLowerCase()}.${e.className}`).slice(0, 5));
    assert.ok(width <= 390 && wide.length === 0, `${hash}: ${width} px wide at 390; past the edge: ${wide}`);
    if (hash.startsWith("#/sessions")) {
      await page.screenshot({ path: join(shots, `console-${hash.length > 10 ? "session" : "sessions"}-390.png`), fullPage: true });
    }
  }
  console.log("ok   390 px: no sideways overflow on any view");

  // The console only read: no write, no channel, no link, no token.
  const writes = made.filter((r) => !r.startsWith("GET "));
  const banned = made.filter((r) => r.includes("/v1/ws") || r.includes("/open") || r.includes("client-tokens") || r.includes("sandman.js"));
  assert.deepEqual(writes, [], "the console wrote");
  assert.deepEqual(banned, [], "the console used the channel, the link or a token");
  console.log(`ok   ${made.length} requests, all reads; none to the channel, the link or the tokens`);
  ok = true;
} catch (e) {
  console.log(`FAIL console: ${e.stack ?? e}`);
} finally {
  await context.close();
  server.stdin.end();
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`console: ${ok ? "passed" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(ok ? 0 : 1);
