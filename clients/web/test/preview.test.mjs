// <sandman-preview> in real headless Chromium against the scripted channel
// (internal/webclient/webclienttest). Run from the repository root after
// `npm run build` in clients/web (scripts/web.sh does both):
//
//   bash scripts/browser.sh clients/web/test/preview.test.mjs
//
// Every state (connecting, sleeping, going to sleep, waking, restoring, a
// lost session's recovery ("Restoring your work from <time>"),
// starting, ready, failed: app and no preview, ended: killed and
// unrecoverable, a wake that failed) at 1280 and 375 px, light and dark:
// an axe-core audit with no serious or critical violation and a screenshot
// (build/screenshots/web/). Then what it does: one wake button that sends
// {"action":"resume"} and shows the wake at once, the steps announced in
// its live region, the app in the iframe when ready, heartbeats while the
// person is over or in the iframe (page time on Playwright's clock), a
// retry that asks the host page first, keyboard use, and the theme's
// custom properties.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { audit, finish, hideable, host, launch, newPage as tab, noSidewaysScroll, schemes, scripted, shoot, shots, test, until, widths } from "../../../scripts/lib/browsertest.mjs";
import { elementModule, plainPage } from "./pages.mjs";

const started = Date.now();
const ch = await scripted();
const context = await launch();
const module = elementModule();

// The customer's page with the element, and the preview's app, each on
// an origin of its own.
const preview = await host((u) => (u.pathname === "/" ? { type: "text/html", body: "<!doctype html><title>app</title><p>app ok</p>" } : undefined));
const app = preview.base + "/";
const site = await host((u) => {
  if (u.pathname === "/index.js") return { type: "text/javascript", body: module };
  if (u.pathname !== "/web/") return undefined;
  const attrs = { token: u.searchParams.get("token") ?? "tok-1", "ws-url": ch.base.replace("http", "ws") + "/v1/ws" };
  for (const k of ["heartbeat-interval", "theme", "path"]) if (u.searchParams.has(k)) attrs[k] = u.searchParams.get(k);
  return { type: "text/html", body: plainPage("/index.js", attrs, u.searchParams.get("class") ?? "") };
});

const failedDetail = "the start command exited with code 3 before the preview answered; last output:\n$ npm run dev\n> vite\nError: Cannot find module 'vite'";

// Each state, the status that shows it (null: the token is refused, so the
// element stays connecting) and what its card says.
const states = [
  ["connecting", null, "Connecting to the preview"],
  ["sleeping", { state: "paused", sandbox_paused: true, preview_url: null }, "This preview is sleeping"],
  ["sleeping-pausing", { state: "pausing", sandbox_paused: false, preview_url: app }, "going to sleep"],
  ["waking", { state: "resuming", sandbox_paused: true, preview_url: null }, "Waking up the preview"],
  ["restoring", { state: "restoring", sandbox_paused: true, preview_url: null }, "Restore from a checkpoint"],
  ["starting", { state: "running", sandbox_paused: false, readiness: "starting", preview_url: app }, "Start the app"],
  ["ready", { state: "running", sandbox_paused: false, readiness: "ready", preview_url: app }, null],
  ["failed-app", { state: "running", sandbox_paused: false, readiness: "failed", readiness_detail: failedDetail, preview_url: app }, "exited with code 3"],
  ["failed-no-preview", { state: "running", sandbox_paused: false, preview_url: null }, "nothing to show"],
  ["ended", { state: "killed", sandbox_paused: false, preview_url: null }, "This session has ended"],
  ["ended-unrecoverable", { state: "expired", sandbox_paused: false, preview_url: null }, "can't be recovered"],
  ["restoring-lost", { state: "restoring", sandbox_paused: true, preview_url: null,
    recovery: { lost: "gone", checkpoint_id: "chk_a", checkpoint_created_at: "2026-12-06T17:05:00Z" } }, "Restoring your work from"],
];

/** newPage opens a tab at width in scheme whose visibility the test can set. */
async function newPage(width, scheme) {
  const page = await tab(context, width, scheme);
  await hideable(page);
  return page;
}

const elState = (page) => page.evaluate(() => document.querySelector("sandman-preview").getAttribute("state"));
const inCard = (page) => page.locator("sandman-preview .card"); // Playwright's locators pierce open shadow roots
const messages = async (action) => (await ch.log()).messages.filter((m) => m.data.action === action);

try {
  await test(`every state (${states.length} and a failed wake) at ${widths.join(" and ")} px, light and dark: 0 serious or critical axe violations, a screenshot`, async () => {
    for (const width of widths) {
      for (const scheme of schemes) {
        const page = await newPage(width, scheme);
        for (const [name, status, says] of states) {
          if (status) await ch.control("POST", "/control/status", status);
          await page.goto(site.base + "/web/" + (status ? "" : "?token=refused"));
          const want = name.split("-")[0];
          await until(`state ${want}`, async () => (await elState(page)) === want);
          if (says) assert.match(await inCard(page).innerText(), new RegExp(says.replace("'", ".")), `${name} says ${says}`);
          if (name === "ready") await page.frameLocator("sandman-preview iframe").locator("text=app ok").waitFor();
          await audit(page, `${name} ${width} ${scheme}`);
          await noSidewaysScroll(page, `${name} at ${width} px`);
          await shoot(page, "web", `${name}-${width}-${scheme}`);
        }
        // A wake that failed: the sleeping card says so.
        await ch.control("POST", "/control/status", states[1][1]);
        await page.goto(site.base + "/web/");
        await until("sleeping", async () => (await elState(page)) === "sleeping");
        await page.getByRole("button", { name: "Wake it up" }).click();
        await ch.control("POST", "/control/status", states[3][1]);
        await until("waking", async () => (await elState(page)) === "waking");
        await ch.control("POST", "/control/status", states[1][1]);
        await inCard(page).getByText("could not be woken up").waitFor();
        await audit(page, `wake-failed ${width} ${scheme}`);
        await shoot(page, "web", `wake-failed-${width}-${scheme}`);
        await page.close();
      }
    }
  });

  await test("the wake button sends one resume, shows the wake at once, announces each step, and lands on the app", async () => {
    await ch.control("POST", "/control/status", states[1][1]);
    const page = await newPage(1280, "light");
    await page.goto(site.base + "/web/");
    await until("sleeping", async () => (await elState(page)) === "sleeping");
    assert.equal(await page.getByRole("button").count(), 1, "one button on the sleeping card");
    await page.evaluate(() => {
      const el = document.querySelector("sandman-preview");
      const live = el.shadowRoot.querySelector('[role="status"]');
      window.said = [];
      window.states = [];
      new MutationObserver(() => window.said.push(live.textContent)).observe(live, { childList: true, characterData: true, subtree: true });
      el.addEventListener("sandman-state", (e) => window.states.push(e.detail.state));
    });
    const before = (await messages("resume")).length;
    await page.getByRole("button", { name: "Wake it up" }).click();
    await until("the resume", async () => (await messages("resume")).length === before + 1);
    assert.equal(await elState(page), "waking", "the wake shows before the server answers");
    await ch.control("POST", "/control/status", states[3][1]);
    await ch.control("POST", "/control/status", states[5][1]);
    await until("starting", async () => (await elState(page)) === "starting");
    await ch.control("POST", "/control/status", states[6][1]);
    await page.frameLocator("sandman-preview iframe").locator("text=app ok").waitFor();
    assert.equal(await page.locator("sandman-preview iframe").getAttribute("src"), app);
    assert.equal(await page.locator("sandman-preview iframe").getAttribute("title"), "Preview");
    assert.deepEqual(await page.evaluate(() => window.states), ["waking", "starting", "ready"]);
    assert.deepEqual(await page.evaluate(() => window.said.filter((s, i, a) => s !== a[i - 1])),
      ["Waking the sandbox…", "Starting the app…", "The preview is ready."]);
    assert.equal((await messages("resume")).length, before + 1, "one resume");
    // Asleep again: the iframe is emptied, the sleeping card is back.
    await ch.control("POST", "/control/status", states[1][1]);
    await until("sleeping again", async () => (await elState(page)) === "sleeping");
    assert.equal(await page.locator("sandman-preview iframe").getAttribute("src"), "about:blank");
    await page.close();
  });

  await test("by keyboard: Tab reaches the one wake button, Enter wakes, and the focus stays on the card", async () => {
    await ch.control("POST", "/control/status", states[1][1]);
    const page = await newPage(375, "light");
    await page.goto(site.base + "/web/");
    await until("sleeping", async () => (await elState(page)) === "sleeping");
    await page.keyboard.press("Tab");
    const focused = () => page.evaluate(() => document.activeElement?.shadowRoot?.activeElement?.className ?? null);
    assert.equal(await focused(), "button");
    const before = (await messages("resume")).length;
    await page.keyboard.press("Enter");
    await until("the resume", async () => (await messages("resume")).length === before + 1);
    assert.equal(await focused(), "card", "the focus moved to the card when the button went away");
    await page.close();
  });

  await test("heartbeats while the pointer is over the iframe and while it has the focus, one per interval, none once asleep", async () => {
    await ch.control("POST", "/control/status", states[6][1]);
    const page = await newPage(1280, "light");
    await page.clock.install({ time: new Date("2026-11-23T01:00:00Z") });
    await page.goto(site.base + "/web/?heartbeat-interval=5000");
    await page.frameLocator("sandman-preview iframe").locator("text=app ok").waitFor();
    const beats = async () => (await messages("heartbeat")).length;
    const n0 = await beats();
    const box = await page.locator("sandman-preview iframe").boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await until("a heartbeat on entering the iframe", async () => (await beats()) === n0 + 1);
    await page.clock.runFor(5_000);
    await until("one more after the interval", async () => (await beats()) === n0 + 2);
    await page.mouse.move(1, 1); // back on the page, outside the preview
    await page.clock.runFor(10_000);
    // Leaving the iframe stops the element's own; the page's own input may add one (sandman.js).
    const afterLeave = await beats();
    await page.clock.runFor(10_000);
    assert.equal(await beats(), afterLeave, "no heartbeat while the person is elsewhere");
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2); // into the iframe: it takes the focus
    await page.mouse.move(1, 1);
    await page.clock.runFor(5_000);
    await until("heartbeats while the iframe has the focus", async () => (await beats()) > afterLeave);
    assert.deepEqual((await messages("heartbeat")).at(-1).data, { action: "heartbeat", visible: true });
    await page.close();
  });

  await test("return: a hidden page that is shown again sends a visible heartbeat, whose resume the card follows", async () => {
    await ch.control("POST", "/control/status", states[1][1]);
    const page = await newPage(1280, "light");
    await page.goto(site.base + "/web/");
    await until("sleeping", async () => (await elState(page)) === "sleeping");
    await page.evaluate(() => window.setVisibility("hidden"));
    const n = (await messages("heartbeat")).length;
    await page.evaluate(() => window.setVisibility("visible"));
    await until("the visible heartbeat", async () => (await messages("heartbeat")).slice(n).some((m) => m.data.visible === true));
    await ch.control("POST", "/control/status", states[3][1]);
    await ch.control("POST", "/control/status", states[6][1]);
    await page.frameLocator("sandman-preview iframe").locator("text=app ok").waitFor();
    await page.close();
  });

  await test("retry: the failed card's button asks the host page first (sandman-retry), then connects again", async () => {
    await ch.control("POST", "/control/status", states[7][1]);
    const page = await newPage(1280, "light");
    await page.goto(site.base + "/web/");
    await until("failed", async () => (await elState(page)) === "failed");
    await page.evaluate(() => {
      window.retries = 0;
      document.querySelector("sandman-preview").addEventListener("sandman-retry", (e) => {
        window.retries++;
        if (window.retries === 1) e.preventDefault(); // the host retries its own way once
      });
    });
    const connects = async () => (await ch.log()).connects.length;
    const c0 = await connects();
    await page.getByRole("button", { name: "Try again" }).click();
    assert.equal(await page.evaluate(() => window.retries), 1);
    assert.equal(await connects(), c0, "a cancelled retry does nothing more");
    await page.getByRole("button", { name: "Try again" }).click();
    await until("a new connection", async () => (await connects()) === c0 + 1);
    await until("failed, as the new connection says", async () => (await elState(page)) === "failed");
    await ch.control("POST", "/control/status", states[6][1]);
    await page.frameLocator("sandman-preview iframe").locator("text=app ok").waitFor();
    await page.close();
  });

  await test("theming: the host's custom properties reach the card (accent, radius, font), light and dark, and pass the audit", async () => {
    await ch.control("POST", "/control/status", states[1][1]);
    for (const scheme of schemes) {
      for (const width of widths) {
        const page = await newPage(width, scheme);
        await page.goto(site.base + "/web/?class=acme");
        await until("sleeping", async () => (await elState(page)) === "sleeping");
        const look = await page.evaluate(() => {
          const root = document.querySelector("sandman-preview").shadowRoot;
          const b = getComputedStyle(root.querySelector(".button"));
          return { bg: b.backgroundColor, font: getComputedStyle(root.querySelector(".card")).fontFamily, radius: getComputedStyle(root.querySelector(".card")).borderRadius };
        });
        assert.equal(look.bg, scheme === "light" ? "rgb(15, 118, 110)" : "rgb(94, 234, 212)");
        assert.match(look.font, /Georgia/);
        assert.equal(look.radius, "6px");
        await audit(page, `themed ${scheme} ${width}`);
        await shoot(page, "web", `themed-sleeping-${width}-${scheme}`);
        await page.close();
      }
    }
    // The two side by side, for docs/EMBEDDING.md: the default look, light,
    // and the themed one, dark.
    const side = await newPage(750, "light");
    const img = (name) => `<img alt="" src="data:image/png;base64,${readFileSync(join(shots, "web", name)).toString("base64")}">`;
    await side.setContent(`<body style="margin:0;display:flex">${img("sleeping-375-light.png")}${img("themed-sleeping-375-dark.png")}</body>`);
    await shoot(side, "web", "sleeping-default-light-and-themed-dark");
    await side.close();
    const page = await newPage(1280, "light");
    await page.goto(site.base + "/web/?theme=dark");
    await until("sleeping", async () => (await elState(page)) === "sleeping");
    const bg = await page.evaluate(() => getComputedStyle(document.querySelector("sandman-preview").shadowRoot.querySelector(".card")).backgroundColor);
    assert.equal(bg, "rgb(23, 26, 32)", 'theme="dark" on a light page');
    await page.close();
  });
} finally {
  await context.close();
  ch.stop();
  site.close();
  preview.close();
}
finish("sandman-preview (scripted channel)", started);
