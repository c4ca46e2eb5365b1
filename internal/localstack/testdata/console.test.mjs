// Browser test of the console (docs/CONSOLE.md) in real headless Chromium,
// against the console over the real API handlers on memstore
// (internal/localstack/consoletest/serve: 500 sessions, 480 killed, 20 live
// of which 10 paused sessions that resume on return and 10 running ones
// whose last client left; the newest paused one has 25 checkpoints of
// every state). Run from the repository root (scripts/web.sh console does,
// with axe-core on NODE_PATH):
//
//   NODE_PATH=clients/web/node_modules bash scripts/browser.sh internal/localstack/testdata/console.test.mjs
//
// The first view shows the 20 live sessions; paging reaches all 500 once;
// filters (state, provider, template, metadata) show what the API answers
// for them; Created sorts through the API (order=asc, oldest first), another
// column the page; a search by id opens the session's page, whose paused
// session stays paused with nothing written and no provider call however
// long it and its checkpoints (paged) are watched; a session made and
// paused elsewhere appears and moves live (the feed), its timeline growing
// with reason, actor and duration; its checkpoint's Restore and Fork ask
// first (Cancel sends nothing), then send one POST each with an
// Idempotency-Key and show the answer, the error envelope included; pools
// and webhooks show; at 390 px nothing overflows sideways. The checkpoints
// view and the confirmation pass an axe-core audit (0 serious or critical)
// at 1280 and 375 px. Screenshots go to $SANDMAN_SCREENSHOTS (default
// build/screenshots).
import { createRequire } from "node:module";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { audit } from "../../../scripts/lib/browsertest.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const started = Date.now();
const LIVE = ["provisioning", "running", "pausing", "paused", "resuming", "restoring", "archived"];
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
const until = async (what, fn, ms = 10_000) => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

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
  const urls = [];
  page.on("request", (r) => {
    made.push(`${r.method()} ${new URL(r.url()).pathname}`);
    urls.push(r.url());
  });
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
  // Created sorts through the API: oldest first over every page.
  const oldest = (await get("/console/api/sessions?limit=100&metadata%5Buser%5D=u1&order=asc")).sessions.map((s) => s.id);
  await page.locator("#sessions th[data-key=created_at] button").click(); // back to the API's order, newest first
  await page.locator("#sessions th[data-key=created_at] button").click(); // oldest first
  await page.waitForFunction((w) => [...document.querySelectorAll("#sessions tbody tr")].map((tr) => tr.dataset.id).join() === w.join(), oldest);
  assert.equal(await page.locator("#sessions th[data-key=created_at]").getAttribute("aria-sort"), "ascending");
  assert.ok(urls.some((u) => u.includes("/console/api/sessions?") && u.includes("order=asc")), "the list was asked with order=asc");
  await page.locator("#sessions th[data-key=created_at] button").click(); // newest first again
  await page.waitForFunction((w) => document.querySelector("#sessions tbody tr")?.dataset.id === w, [...oldest].reverse()[0]);
  console.log(`ok   sort: provider on the page, descending then ascending; Created through the API, oldest first (${oldest.length} sessions) and back`);

  // Search by id: a paused session that resumes on return, watched for a while.
  // The newest paused session: the one with checkpoints.
  const paused = live.sessions.find((s) => s.state === "paused");
  const before = await get(`/control/sessions/${paused.id}`);
  await page.locator("input[name=id]").fill(paused.id.slice(4)); // without ses_
  await page.getByRole("button", { name: "Find" }).click();
  await page.locator("#view-session h2 .badge", { hasText: "paused" }).waitFor();
  await page.getByText("No events yet").waitFor();
  const ckRows = page.locator("#view-session .checkpoints tbody tr");
  await until("20 checkpoints", async () => (await ckRows.count()) === 20);
  await page.getByRole("button", { name: "Older checkpoints" }).click();
  await until("25 checkpoints", async () => (await ckRows.count()) === 25);
  assert.equal(await page.getByRole("button", { name: "Older checkpoints" }).isHidden(), true);
  const ckStates = new Set(await page.locator("#view-session .checkpoints tbody td[data-label=State] .badge").allTextContents());
  for (const st of ["ready", "saving", "failed", "expired"]) assert.ok(ckStates.has(st), `a ${st} checkpoint is listed: ${[...ckStates]}`);
  const newest = await ckRows.first().locator("td").allTextContents();
  assert.match(newest[1], /saving/);
  assert.equal(await ckRows.first().getByRole("button", { name: /^Restore/ }).isDisabled(), true, "a saving checkpoint cannot be restored");
  const readyRow = ckRows.filter({ has: page.locator(".badge", { hasText: /^ready$/ }) }).first();
  assert.equal(await readyRow.getByRole("button", { name: /^Restore/ }).isEnabled(), true);
  assert.match(await page.locator("#view-session .checkpoints tbody").textContent(), /kept until deleted \(pinned\)/);
  await page.mouse.move(10, 10);
  await page.keyboard.press("Tab");
  await page.mouse.wheel(0, 300);
  await page.waitForTimeout(2500);
  await page.screenshot({ path: join(shots, "console-session-1280.png"), fullPage: true });
  await page.locator("#checkpoints-title").scrollIntoViewIfNeeded();
  await audit(page, "the session page with its checkpoints at 1280 px");
  await page.screenshot({ path: join(shots, "console-checkpoints-1280.png"), fullPage: true });
  const after = await get(`/control/sessions/${paused.id}`);
  assert.deepEqual(after, before, "watching changed the paused session");
  const stats = await get("/control/stats");
  assert.equal(stats.provider_calls, 0);
  assert.equal(stats.events, 0);
  assert.deepEqual(made.filter((r) => !r.startsWith("GET ")), [], "watching wrote");
  console.log(`ok   watching: ${paused.id} and its 25 checkpoints (2 pages) still paused at version ${after.version} after 2.5 s of input on its page; 0 activity: 0 events, 0 provider calls, 0 writes; axe: 0 serious or critical`);

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

  // Acting: a checkpoint of the live session, then Restore and Fork, each
  // confirmed, each one POST with an Idempotency-Key, each answer shown.
  const writesBefore = made.filter((r) => !r.startsWith("GET ")).length;
  const keys = [];
  page.on("request", (r) => r.method() === "POST" && keys.push(r.headers()["idempotency-key"]));
  const chk = await post(`/control/sessions/${fresh.id}/checkpoints?label=before%20the%20change`);
  await until("the checkpoint ready", async () => (await get(`/console/api/sessions/${fresh.id}/checkpoints`)).checkpoints[0]?.state === "ready");
  await page.goto(`${base}/console/?acting#/sessions/${fresh.id}`);
  const row = page.locator(`#view-session .checkpoints tbody tr[data-id="${chk.id}"]`);
  await row.locator(".badge", { hasText: "ready" }).waitFor();
  const dialog = page.locator("#confirm-action");
  await row.getByRole("button", { name: /^Restore/ }).click();
  await dialog.getByRole("heading", { name: "Restore this checkpoint?" }).waitFor();
  assert.match(await dialog.locator(".explain").textContent(), /in place: the same id, link and client tokens/);
  assert.match(await dialog.locator(".key").textContent(), /^Idempotency-Key console-[0-9a-f]{32}$/);
  await audit(page, "the restore confirmation at 1280 px");
  await page.screenshot({ path: join(shots, "console-confirm-restore-1280.png") });
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await page.locator("#action-result", { hasText: "cancelled: nothing was sent" }).waitFor();
  assert.equal(made.filter((r) => !r.startsWith("GET ")).length, writesBefore, "Cancel sent nothing");

  await row.getByRole("button", { name: /^Restore/ }).click();
  await dialog.getByRole("button", { name: "Restore", exact: true }).click();
  await page.locator("#action-result", { hasText: "Restore accepted (HTTP 202)" }).waitFor();
  assert.match(await page.locator("#action-result pre").textContent(), /"state": "restoring"/);
  await page.waitForFunction(() => [...document.querySelectorAll("#view-session .timeline td[data-label=Transition]")].some((td) => td.textContent.includes("restoring →")), null, { timeout: 10_000 });
  const restored = await until("the restore done", async () => {
    const s = await get(`/console/api/sessions/${fresh.id}`);
    return s.state !== "restoring" && s;
  });
  assert.equal(restored.id, fresh.id, "restored in place: the same session");
  assert.ok(["running", "paused"].includes(restored.state), `after the restore: ${restored.state} (${restored.restore_error})`);
  console.log(`ok   restore: confirmed, 202, ${fresh.id} restoring then ${restored.state}, the same id; Cancel sent nothing`);

  await row.getByRole("button", { name: /^Fork/ }).click();
  await dialog.getByRole("button", { name: "Fork", exact: true }).click();
  await page.locator("#action-result", { hasText: "Fork made (HTTP 201)" }).waitFor();
  await page.screenshot({ path: join(shots, "console-fork-result-1280.png"), fullPage: true });
  const forkLink = page.locator("#action-result a");
  const forkId = (await forkLink.textContent()).replace("Open ", "");
  await forkLink.click();
  await page.locator("#view-session h2 .id", { hasText: forkId }).waitFor();
  await page.locator("#view-session .facts dd", { hasText: `${fresh.id} at ${chk.id}` }).waitFor();
  console.log(`ok   fork: confirmed, 201, new session ${forkId} forked from ${fresh.id} at ${chk.id}`);

  // An action the API refuses shows its error envelope.
  await page.goto(`${base}/console/?refused#/sessions/${fresh.id}`);
  await row.getByRole("button", { name: /^Restore/ }).click();
  await dialog.getByRole("button", { name: "Restore", exact: true }).waitFor();
  await post(`/control/sessions/${fresh.id}/kill`); // meanwhile, elsewhere
  await dialog.getByRole("button", { name: "Restore", exact: true }).click();
  await page.locator("#action-result[data-outcome=error]", { hasText: "Restore refused (HTTP 409 conflict)" }).waitFor();
  const envelope = JSON.parse(await page.locator("#action-result pre").textContent());
  assert.equal(envelope.status, "error");
  assert.equal(envelope.error_type, "conflict");
  await page.screenshot({ path: join(shots, "console-restore-refused-1280.png"), fullPage: true });
  const writes = made.filter((r) => !r.startsWith("GET ")).slice(writesBefore);
  assert.deepEqual(writes, [`POST /console/api/sessions/${fresh.id}/restore`, `POST /console/api/sessions/${fresh.id}/fork`, `POST /console/api/sessions/${fresh.id}/restore`]);
  assert.equal(keys.length, 3);
  assert.ok(keys.every((k) => /^console-[0-9a-f]{32}$/.test(k)) && new Set(keys).size === 3, `keys ${keys}`);
  console.log(`ok   refused: ${envelope.error_type} "${envelope.error}" shown as its envelope; 3 confirmed actions, 3 POSTs, each its own Idempotency-Key`);

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

  // The checkpoints view and the confirmation at 375 px: the audit, no
  // sideways scroll, screenshots.
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(`${base}/console/?narrow#/sessions/${paused.id}`);
  await until("20 checkpoints at 375 px", async () => (await ckRows.count()) === 20);
  const wide375 = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(wide375 <= 375, `the checkpoints view is ${wide375} px wide at 375`);
  await audit(page, "the session page with its checkpoints at 375 px");
  await page.screenshot({ path: join(shots, "console-session-checkpoints-375-full.png"), fullPage: true });
  await page.evaluate(() => document.getElementById("checkpoints-title").scrollIntoView());
  await page.screenshot({ path: join(shots, "console-checkpoints-375.png") }); // the section, as a phone shows it
  await readyRow.getByRole("button", { name: /^Fork/ }).click();
  await dialog.getByRole("heading", { name: "Fork a new session?" }).waitFor();
  await audit(page, "the fork confirmation at 375 px");
  await page.screenshot({ path: join(shots, "console-confirm-fork-375.png") });
  await dialog.getByRole("button", { name: "Cancel" }).click();
  console.log("ok   375 px: the checkpoints view and the confirmation, axe 0 serious or critical, no sideways scroll");

  // Beyond the three confirmed actions, the console only read: no other
  // write, no channel, no link, no token.
  const allWrites = made.filter((r) => !r.startsWith("GET "));
  const banned = made.filter((r) => r.includes("/v1/ws") || r.includes("/open") || r.includes("client-tokens") || r.includes("sandman.js"));
  assert.equal(allWrites.length, 3, `the console wrote ${allWrites}`);
  assert.deepEqual(banned, [], "the console used the channel, the link or a token");
  console.log(`ok   ${made.length} requests, all reads but the 3 confirmed actions; none to the channel, the link or the tokens`);
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
