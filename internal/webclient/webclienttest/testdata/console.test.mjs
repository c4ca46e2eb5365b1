// Browser test of the console page (/console/) in real headless Chromium,
// against webclienttest.Console (a fake of the local stack's console routes
// with one scripted channel per session). Run from the repository root:
//
//   bash scripts/browser.sh internal/webclient/webclienttest/testdata/console.test.mjs
//
// It creates a session, sees its preview in the iframe, pauses it and sees
// the sleeping card within 1 s with no status poll (every request the page
// makes is counted), resumes through "Resume preview" and sees the preview
// load again, reloads the page, and deletes the session.
import { createRequire } from "node:module";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const started = Date.now();

const dir = mkdtempSync(join(tmpdir(), "sandman-console-"));
const bin = join(dir, "serve");
execFileSync("go", ["build", "-o", bin, "./internal/webclient/webclienttest/serve"], { stdio: "inherit" });
const server = spawn(bin, ["-console"], { stdio: ["pipe", "pipe", "inherit"] });
const base = await new Promise((resolve, reject) => {
  let buf = "";
  server.stdout.on("data", (d) => {
    buf += d;
    const nl = buf.indexOf("\n");
    if (nl >= 0) resolve(buf.slice(0, nl).trim());
  });
  server.on("exit", (code) => reject(new Error(`server exited ${code}`)));
});
const requests = async () => (await fetch(base + "/control/requests")).json();
const apiRequests = async () => (await requests()).filter((r) => r.includes("/console/api/") || r.includes("/status"));

const context = await chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
  executablePath: process.env.SANDMAN_CHROMIUM,
  args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
  headless: true,
});
let ok = false;
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => console.log("page error:", e.message));
  await page.goto(base + "/console/");
  await page.getByText("No sessions yet.").waitFor();

  // Create: the card shows running and the preview loads in the iframe.
  await page.getByRole("button", { name: "New session" }).click();
  const card = page.locator("article.session[data-id=ses_1]");
  await card.locator(".badge", { hasText: "running" }).waitFor();
  const frame = page.frameLocator("article.session[data-id=ses_1] iframe");
  await frame.locator("#preview", { hasText: "preview of ses_1" }).waitFor();
  console.log("ok   create: running badge, preview in the iframe");

  // Pause: the sleeping card appears within 1 s, pushed, not polled.
  const before = await apiRequests();
  const t0 = Date.now();
  await card.getByRole("button", { name: "Pause", exact: true }).click();
  await card.locator(".sleeping").waitFor({ state: "visible", timeout: 1_000 });
  const pauseMs = Date.now() - t0;
  assert.equal(await card.locator(".badge").textContent(), "paused");
  assert.equal(await card.locator(".preview").isVisible(), false);
  const after = await apiRequests();
  assert.deepEqual(after.slice(before.length), ["POST /console/api/sessions/ses_1/snapshot"]);
  assert.deepEqual(after, [
    "GET /console/api/sessions",
    "POST /console/api/sessions",
    "POST /console/api/sessions/ses_1/client-tokens",
    "POST /console/api/sessions/ses_1/snapshot",
  ]);
  console.log(`ok   pause: sleeping card after ${pauseMs} ms, requests: ${after.length} (no status poll)`);

  // Resume preview: a resume message on the channel, the preview loads again.
  await card.getByRole("button", { name: "Resume preview" }).click();
  await card.locator(".badge", { hasText: "running" }).waitFor();
  await frame.locator("#preview", { hasText: "preview of ses_1" }).waitFor();
  assert.equal(await card.locator(".sleeping").isVisible(), false);
  assert.deepEqual((await apiRequests()).slice(after.length), [], "Resume preview used the channel, not HTTP");
  console.log("ok   resume preview: running, preview loaded, over the channel");

  // Reload: the list shows the session and its live state.
  await page.reload();
  await card.locator(".badge", { hasText: "running" }).waitFor();
  await frame.locator("#preview").waitFor();
  console.log("ok   reload: listed once, live again");

  // Delete: killed, the buttons are disabled.
  await card.getByRole("button", { name: "Delete" }).click();
  await card.locator(".badge", { hasText: "killed" }).waitFor();
  assert.equal(await card.getByRole("button", { name: "Delete" }).isDisabled(), true);
  assert.equal(await card.getByRole("button", { name: "Pause", exact: true }).isDisabled(), true);
  console.log("ok   delete: killed");
  const gets = (await apiRequests()).filter((r) => r === "GET /console/api/sessions").length;
  assert.equal(gets, 2, "one list per page load");
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
