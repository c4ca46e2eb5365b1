// The stable link's pages (internal/linkpage) in real headless Chromium,
// from the gallery of the scripted channel (internal/webclient/webclienttest
// pages.go). Run from the repository root (scripts/web.sh does):
//
//   bash scripts/browser.sh internal/linkpage/testdata/pages.test.mjs
//
// Every page at 1280 and 375 px, light and dark: an axe-core audit with no
// serious or critical violation, a screenshot (build/screenshots/pages/),
// and no sideways scroll from 320 px up. A deployment's brand with a pale
// accent still passes (the accent is adjusted). The failed page works by
// keyboard. The waking page follows the scripted channel through the real
// steps, announcing each in its live region, and opens the link again
// with reopen=1 once the session is usable or its app failed. A waking
// page follows the channel, whose status is set to the page's own first
// (its one timer, a re-open after 25 s, is far off).
import assert from "node:assert/strict";
import { audit, finish, launch, newPage as tab, noSidewaysScroll, schemes, scripted, shoot, test, until, widths } from "../../../scripts/lib/browsertest.mjs";

const started = Date.now();
const ch = await scripted();
const context = await launch();
const names = await (await fetch(ch.base + "/pages/")).json();

// The status the channel pushes to each waking page of the gallery: the
// state its page was rendered for.
const wakingStatus = {
  "waking-paused": { state: "paused", sandbox_paused: true, preview_url: null },
  "waking-restoring": { state: "restoring", sandbox_paused: true, preview_url: null },
  "waking-recovering": { state: "restoring", sandbox_paused: true, preview_url: null,
    recovery: { lost: "gone", checkpoint_id: "chk_a", checkpoint_created_at: "2026-12-06T17:05:00Z" } },
  "waking-starting": { state: "running", sandbox_paused: false, readiness: "starting", preview_url: "http://127.0.0.1:1/" },
  "waking-no-app": { state: "resuming", sandbox_paused: true, preview_url: null },
};

const newPage = (width, scheme) => tab(context, width, scheme);

/** load loads a gallery page in page; a waking page follows the channel, set to its state. */
async function load(page, path) {
  const name = new URL(path, ch.base).pathname.split("/").pop();
  if (wakingStatus[name]) {
    await ch.control("POST", "/control/status", wakingStatus[name]);
    if (!path.includes("token=")) path += (path.includes("?") ? "&" : "?") + "token=tok-1";
  }
  const res = await page.goto(ch.base + path);
  if (wakingStatus[name]) await until("the channel's status", () => page.evaluate(() => document.querySelector(".step.current") !== null));
  return res.status();
}

/** open loads a gallery page in a new tab at width in scheme. */
async function open(path, width, scheme) {
  const page = await newPage(width, scheme);
  const status = await load(page, path);
  return { page, status };
}

try {
  await test(`every page (${names.length}) at ${widths.join(" and ")} px, light and dark: 0 serious or critical axe violations, a screenshot; none scrolls sideways at 320 px`, async () => {
    for (const width of widths) {
      for (const scheme of schemes) {
        const page = await newPage(width, scheme);
        for (const name of names) {
          const status = await load(page, `/pages/${name}`);
          assert.ok(status === 200 || status >= 400, `${name}: status ${status}`);
          assert.equal(await page.locator("h1").count(), 1, `${name}: one h1`);
          await audit(page, `${name} ${width} ${scheme}`);
          await noSidewaysScroll(page, `${name} at ${width} px`);
          await shoot(page, "pages", `${name}-${width}-${scheme}`);
        }
        await page.close();
      }
    }
    const page = await newPage(320, "light");
    for (const name of names) {
      await load(page, `/pages/${name}`);
      await noSidewaysScroll(page, `${name} at 320 px`);
    }
    await page.close();
  });

  await test("a deployment's brand: its name, logo and a pale accent (made readable) pass the audit in light and dark", async () => {
    for (const name of ["waking-starting", "app-failed", "asleep"]) {
      for (const scheme of schemes) {
        const { page } = await open(`/pages/${name}?brand=Acme%20Cloud&accent=%23facc15&logo=1`, 375, scheme);
        assert.equal(await page.locator(".brand span").textContent(), "Acme Cloud");
        assert.ok(await page.locator(".brand img").evaluate((img) => img.complete && img.naturalWidth > 0), "the logo loaded");
        assert.match(await page.title(), /· Acme Cloud$/);
        await audit(page, `${name} branded ${scheme}`);
        await shoot(page, "pages", `${name}-branded-375-${scheme}`);
        await page.close();
      }
    }
  });

  await test("the failed page by keyboard: Tab reaches the retry, then the details, which open with Enter, then the output", async () => {
    const { page } = await open("/pages/app-failed", 375, "light");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Try again");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, "none", "the focused retry shows a focus ring");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.tagName), "SUMMARY");
    await page.keyboard.press("Enter");
    assert.equal(await page.evaluate(() => document.querySelector("details").open), true);
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.tagName), "PRE");
    await audit(page, "app-failed with its details open");
    await shoot(page, "pages", "app-failed-details-375-light");
    await page.close();
  });

  await test("the waking page follows the channel through the real steps, announces each, and opens the link again when ready", async () => {
    await ch.control("POST", "/control/status", { state: "paused", sandbox_paused: true, preview_url: null });
    const { page } = await open("/pages/waking-paused?token=tok-1", 375, "light");
    await page.evaluate(() => {
      window.said = [];
      const live = document.getElementById("status");
      new MutationObserver(() => window.said.push(live.textContent)).observe(live, { childList: true, characterData: true, subtree: true });
    });
    const steps = () => page.evaluate(() => [...document.querySelectorAll(".step")].map((li) => `${li.querySelector(".label").textContent}:${li.className.replace("step ", "")}`));
    await until("the channel's hello", async () => (await ch.log()).messages.some((m) => m.data.action === "hello"));
    await ch.control("POST", "/control/status", { state: "resuming", sandbox_paused: true, preview_url: null });
    await ch.control("POST", "/control/status", { state: "restoring", sandbox_paused: true, preview_url: null });
    await until("restoring shown", async () => (await steps())[0] === "Restore from a checkpoint:current");
    await audit(page, "waking page, restoring");
    await shoot(page, "pages", "waking-live-restoring-375-light");
    await ch.control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "starting", preview_url: ch.base + "/app/" });
    await until("starting shown", async () => (await steps())[1] === "Start the app:current");
    assert.deepEqual(await steps(), ["Restore from a checkpoint:done", "Start the app:current", "Open the preview:todo"]);
    assert.equal(await page.locator('[aria-current="step"] .label').textContent(), "Start the app");
    assert.deepEqual(await page.evaluate(() => window.said.filter((s, i, a) => s !== a[i - 1])),
      ["Restoring the sandbox from a checkpoint…", "Starting the app…"], "the live region said each step once, in order");
    await shoot(page, "pages", "waking-live-starting-375-light");
    await ch.control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "ready", preview_url: ch.base + "/app/" });
    await page.waitForURL((u) => u.searchParams.get("reopen") === "1" && u.searchParams.get("token") === "tok-1", { timeout: 10_000 });
    await page.close();
  });

  await test("the waking page announces only what changed and leaves for the link when the app fails", async () => {
    await ch.control("POST", "/control/status", { state: "paused", sandbox_paused: true, preview_url: null });
    const { page } = await open("/pages/waking-paused?token=tok-1", 1280, "light");
    await page.evaluate(() => {
      window.said = [];
      const live = document.getElementById("status");
      new MutationObserver(() => window.said.push(live.textContent)).observe(live, { childList: true, characterData: true, subtree: true });
    });
    await until("the channel's hello", async () => (await ch.log()).messages.filter((m) => m.data.action === "hello").length >= 2);
    await ch.control("POST", "/control/status", { state: "resuming", sandbox_paused: true });
    await ch.control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "starting", preview_url: ch.base + "/app/" });
    await until("starting announced", () => page.evaluate(() => window.said.at(-1) === "Starting the app…"));
    assert.deepEqual(await page.evaluate(() => window.said.filter((s, i, a) => s !== a[i - 1])), ["Starting the app…"],
      "the live region says each step once (resuming is the step already shown)");
    await ch.control("POST", "/control/status", { state: "running", sandbox_paused: false, readiness: "failed", readiness_detail: "exited with code 3" });
    await page.waitForURL((u) => u.searchParams.get("reopen") === "1", { timeout: 10_000 });
    await page.close();
  });
} finally {
  await context.close();
  ch.stop();
}
finish("pages", started);
