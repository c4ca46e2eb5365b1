// Full-stack browser test (docs/DESIGN.md "Client channel"): the real local stack
// (`sandman run`, DynamoDB Local in memory, the local provider, a 2 s sweep)
// and a session as its user sees it (console/preview.html, a page on the
// client channel; the console itself only watches) in real headless
// Chromium. Run from the repository root:
//
//   bash scripts/browser.sh internal/localstack/testdata/fullstack.test.mjs
//
// Create a session (away timeout 3 s), see it running with its preview in the
// iframe; pause it through the API and see the sleeping card within 1 s with
// no status poll (every request the page makes is counted); "Resume preview"
// and see the preview load; close the page and see the session paused with
// reason away.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import assert from "node:assert/strict";
import { startStack } from "./stack.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const started = Date.now();

const { base, key, dir, log, stop } = await startStack("console");
const port = new URL(base).port;
const api = async (path, method = "GET", body) =>
  (await fetch(base + path, { method, headers: { "x-api-key": key }, body: body && JSON.stringify(body) })).json();

const context = await chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
  executablePath: process.env.SANDMAN_CHROMIUM,
  args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
  headless: true,
});
let ok = false;
const mine = []; // the sessions this test made, killed at the end
try {
  const page = await context.newPage();
  const seen = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.port === String(port) && (u.pathname.startsWith("/console/api/") || u.pathname.startsWith("/v1/"))) {
      seen.push(`${r.method()} ${u.pathname}`);
    }
  });
  page.on("pageerror", (e) => console.log("page error:", e.message));
  const { id } = await api("/v1/sessions", "POST", { template: "web", idle_timeout_seconds: 600, away_timeout_seconds: 3 });
  assert.ok(id, "created a session");
  mine.push(id);
  await page.goto(`${base}/console/preview.html?id=${id}`);
  const card = page.locator("article.session").first();
  await card.locator(".badge", { hasText: "running" }).waitFor({ timeout: 30_000 });
  await page.frameLocator("article.session iframe").locator("body").waitFor({ timeout: 30_000 });
  const preview = (await api(`/v1/sessions/${id}`)).preview_url;
  assert.ok(preview, "a running web session has a preview_url");
  assert.equal(await card.locator("iframe").getAttribute("src"), preview);
  console.log(`ok   create: ${id} running, preview ${preview} in the iframe`);

  const before = seen.length;
  const t0 = Date.now();
  await api(`/v1/sessions/${id}/pause`, "POST");
  await card.locator(".sleeping").waitFor({ state: "visible", timeout: 1_000 });
  const pauseMs = Date.now() - t0;
  const during = seen.slice(before);
  assert.deepEqual(during.filter((r) => !r.endsWith("/v1/ws")), [], "the page asked nothing: the pause was pushed");
  assert.equal(seen.filter((r) => r.includes("/status")).length, 0, "no status poll");
  console.log(`ok   pause: sleeping card after ${pauseMs} ms; requests while waiting: ${JSON.stringify(during)}`);

  await card.getByRole("button", { name: "Resume preview" }).click();
  await card.locator(".badge", { hasText: "running" }).waitFor({ timeout: 30_000 });
  await page.frameLocator("article.session iframe").locator("body").waitFor({ timeout: 30_000 });
  console.log("ok   resume preview: running, preview loaded");

  await page.close();
  const closed = Date.now();
  let s;
  for (;;) {
    s = await api(`/v1/sessions/${id}`);
    if (s.state === "paused") break;
    if (Date.now() - closed > 20_000) throw new Error(`not paused 20 s after close: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(s.reason, "away");
  console.log(`ok   page closed: paused, reason away, after ${Date.now() - closed} ms (away timeout 3 s, sweep 2 s)`);

  // The console on that paused session (which resumes on return): it
  // watches its page and timeline, with input, and the session stays paused
  // at the same version (docs/CONSOLE.md "Watching is not presence").
  assert.equal(s.resume_on_return, true);
  const con = await context.newPage();
  await con.goto(`${base}/console/#/sessions/${id}`);
  await con.locator("#view-session h2 .badge", { hasText: "paused" }).waitFor();
  await con.locator("#view-session .timeline tbody tr").nth(5).waitFor({ timeout: 10_000 });
  const actors = await con.locator("#view-session .timeline tbody td[data-label=Actor]").allTextContents();
  await con.mouse.move(20, 20);
  await con.keyboard.press("Tab");
  await con.waitForTimeout(3_000);
  const still = await api(`/v1/sessions/${id}`);
  assert.equal(still.state, "paused", "the console woke the session");
  assert.equal(still.version, s.version, "the console wrote the session");
  await con.close();
  console.log(`ok   console: watched the paused session for 3 s, still paused at version ${still.version}; timeline actors ${JSON.stringify(actors)}`);

  // Readiness on a cold resume (docs/READINESS.md): a session whose app is a
  // real server on $PORT, in a local sandbox whose pause kills it
  // (SANDMAN_LOCAL_KEEP_PROCESSES=false). The card shows the iframe only once
  // the app answers, after the create and again after a resume.
  const appLine = `node -e "require('http').createServer((q, r) => r.end('app ok')).listen(+process.env.PORT, '127.0.0.1')"`;
  const created = await (await fetch(base + "/v1/sessions", { method: "POST", headers: { "x-api-key": key },
    body: JSON.stringify({ template: "base", away_timeout_seconds: 0, app: { port: 3000, start_command: appLine } }) })).json();
  mine.push(created.id);
  assert.equal(created.readiness, "starting", JSON.stringify(created));
  const page2 = await context.newPage();
  await page2.goto(`${base}/console/preview.html?id=${created.id}`);
  const appCard = page2.locator(`article.session[data-id="${created.id}"]`);
  const shownWhenReady = async (what) => {
    await appCard.locator(".preview").waitFor({ state: "visible", timeout: 30_000 });
    const now = await api(`/v1/sessions/${created.id}`);
    assert.equal(now.readiness, "ready", `${what}: the iframe showed while readiness was ${now.readiness}`);
    await page2.frameLocator(`article.session[data-id="${created.id}"] iframe`).locator("body", { hasText: "app ok" }).waitFor({ timeout: 30_000 });
  };
  await shownWhenReady("create");
  console.log("ok   app: ready after create, the app in the iframe");
  await api(`/v1/sessions/${created.id}/pause`, "POST");
  await appCard.locator(".sleeping").waitFor({ state: "visible", timeout: 5_000 });
  // Record every text the card's waking line shows: on a fast machine the
  // app can be ready before a poll would see the line.
  await page2.evaluate((id) => {
    window.wakingSaid = [];
    const look = () => {
      const w = document.querySelector(`article.session[data-id="${id}"] .waking`);
      if (w && !w.hidden && w.textContent && window.wakingSaid.at(-1) !== w.textContent) window.wakingSaid.push(w.textContent);
    };
    new MutationObserver(look).observe(document.body, { attributes: true, childList: true, characterData: true, subtree: true });
  }, created.id);
  await appCard.getByRole("button", { name: "Resume preview" }).click();
  // The iframe must not show before the app is ready (shownWhenReady checks
  // the session's readiness when it appears), and the card says both steps
  // of the wake in order, even when a push skipped one (a push carries the
  // session as it is when sent: it can go from paused straight to ready).
  await shownWhenReady("resume");
  const said = await page2.evaluate(() => window.wakingSaid);
  assert.deepEqual(said, ["Waking…", "Starting the app…"], `the waking line said ${JSON.stringify(said)}`);
  console.log(`ok   app: cold resume read "${said.join(" → ")}", then ready, the app in the iframe again`);
  const events = readFileSync(join(dir, "state", "events.jsonl"), "utf8").split("\n").filter((l) => l.includes(created.id) && l.includes("Session Ready"));
  assert.equal(events.length, 2, `Session Ready events: ${events.length}`);
  console.log("ok   app: events.jsonl holds Session Ready twice");
  await page2.close();
  ok = true;
} catch (e) {
  console.log(`FAIL fullstack: ${e.stack ?? e}`);
} finally {
  await context.close();
  await stop(mine);
}
console.log(`fullstack: ${ok ? "passed" : "FAILED"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(ok ? 0 : 1);
