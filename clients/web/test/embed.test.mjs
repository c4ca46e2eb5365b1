// <sandman-preview> embedded in a customer's front end, against the real
// local stack (`sandman run`, the local provider whose pause kills the app,
// a 2 s sweep; internal/localstack/testdata/stack.mjs), in real headless
// Chromium. Run from the repository root after `npm run build` in
// clients/web (scripts/web.sh does both):
//
//   bash scripts/browser.sh clients/web/test/embed.test.mjs
//
// The front end is a server of its own (its own origin) whose POST /token
// mints a client token with the API key, as a customer's backend does; it
// serves a plain HTML page and a React page (the wrapper, React from npm).
// On each, a paused session's sleeping card shows; "Wake it up" wakes it
// (reason request) and the app's page shows in the iframe; the page hidden,
// the session pauses (reason away) and the card is back; the page shown
// again, the session resumes on return (reason return) with no click and
// the app shows again. Every wait polls with a bound; nothing sleeps for a
// result.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack } from "../../../internal/localstack/testdata/stack.mjs";
import { audit, finish, hideable, host, launch, newPage, shoot, test, until } from "../../../scripts/lib/browsertest.mjs";
import { elementModule, plainPage, reactBundle, reactPage } from "./pages.mjs";

const started = Date.now();
const { base, key, dir, log, stop } = await startStack("web");
const api = async (method, path, body) => {
  const res = await fetch(base + path, { method, headers: { "x-api-key": key }, body: body && JSON.stringify(body) });
  const data = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
};
const session = (id) => api("GET", `/v1/sessions/${id}`);
// events returns session id's transitions from the stack's events.jsonl as "from→to:reason".
const events = (id) =>
  readFileSync(join(dir, "state", "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).detail)
    .filter((d) => d.session_id === id && d.from && d.to).map((d) => `${d.from}→${d.to}:${d.reason}`);

const module = elementModule();
const react = await reactBundle();
const site = await host(async (u, method) => {
  switch (u.pathname) {
    case "/index.js":
      return { type: "text/javascript", body: module };
    case "/react-app.js":
      return { type: "text/javascript", body: react };
    case "/plain":
      return { type: "text/html", body: plainPage("/index.js", { "token-url": "/token?session=" + u.searchParams.get("session"), label: "The app" }) };
    case "/react":
      return { type: "text/html", body: reactPage("/react-app.js") };
    case "/token": // the customer's backend: it holds the API key
      if (method !== "POST") return { status: 405, type: "text/plain", body: "POST" };
      return { type: "application/json", body: JSON.stringify(await api("POST", `/v1/sessions/${u.searchParams.get("session")}/client-tokens`)) };
  }
  return undefined;
});

// An app that is a real server on $PORT; the local pause kills it, so
// every wake starts it again.
const appLine = `node -e "require('http').createServer((q, r) => r.end('<!doctype html><title>app</title><p>app ok</p>')).listen(+process.env.PORT, '127.0.0.1')"`;
const context = await launch();
const created = [];

/** pausedSession creates a session with an app, waits until it is ready, and pauses it through the API. */
async function pausedSession() {
  const s = await api("POST", "/v1/sessions", { template: "base", away_timeout_seconds: 3, resume_on_return: true,
    app: { port: 3000, start_command: appLine } });
  created.push(s.id);
  await until(`${s.id} ready`, async () => (await session(s.id)).readiness === "ready", 30_000);
  await api("POST", `/v1/sessions/${s.id}/pause`);
  await until(`${s.id} paused`, async () => (await session(s.id)).state === "paused", 15_000);
  return s.id;
}

/**
 * embedded runs the whole story on a page of the front end at path (plain
 * or React), then after(page); on a failure it prints the stack's last log
 * lines.
 */
async function embedded(name, path, after) {
  try {
    await story(name, path, after);
  } catch (e) {
    console.log(log().split("\n").slice(-30).join("\n"));
    throw e;
  }
}

async function story(name, path, after) {
  const id = await pausedSession();
  const page = await newPage(context, 1280, "light");
  page.setDefaultTimeout(30_000);
  await hideable(page);
  await page.goto(site.base + path + "?session=" + id + "&token-url=" + encodeURIComponent("/token?session=" + id));
  const el = page.locator("sandman-preview");
  const state = () => el.getAttribute("state");
  const app = page.frameLocator("sandman-preview iframe").locator("text=app ok");

  await until("the sleeping card", async () => (await state()) === "sleeping", 15_000);
  assert.equal((await session(id)).state, "paused", "showing the card wakes nothing (the API paused it)");
  await audit(page, `${name}: sleeping`);
  await shoot(page, "web", `embed-${name}-sleeping-1280-light`);

  await page.getByRole("button", { name: "Wake it up" }).click();
  await app.waitFor();
  assert.equal(await page.locator("sandman-preview iframe").getAttribute("title"), "The app");
  assert.deepEqual(events(id).filter((e) => e.startsWith("paused→resuming")), ["paused→resuming:request"]);
  await shoot(page, "web", `embed-${name}-ready-1280-light`);

  await page.evaluate(() => window.setVisibility("hidden"));
  await until("paused, away", async () => (await session(id)).state === "paused", 30_000);
  assert.equal((await session(id)).reason, "away");
  await until("the sleeping card again", async () => (await state()) === "sleeping", 15_000);

  await page.evaluate(() => window.setVisibility("visible"));
  await app.waitFor();
  const now = await session(id);
  assert.equal(now.state, "running");
  assert.equal(now.reason, "return", "resumed on return, with no click");
  assert.deepEqual(events(id).filter((e) => e.startsWith("paused→resuming")), ["paused→resuming:request", "paused→resuming:return"]);
  await after?.(page);
  await page.close();
}

try {
  await test("plain HTML page: the sleeping card, a wake on click, a pause when hidden, a wake on return, the app each time", async () => {
    await embedded("plain", "/plain");
  });
  await test("React page (the wrapper): the same story, and the wrapper's onStateChange follows it", async () => {
    await embedded("react", "/react", async (page) => {
      const states = await page.evaluate(() => window.reactStates);
      const story = states.filter((s) => s === "sleeping" || s === "ready");
      assert.deepEqual(story.filter((s, i) => s !== story[i - 1]), ["sleeping", "ready", "sleeping", "ready"], JSON.stringify(states));
      assert.equal(await page.locator("#react-state").textContent(), "Preview: ready");
    });
  });
} finally {
  await context.close();
  site.close();
  await stop(created).catch((e) => console.log("stop:", e.message ?? e));
}
finish("sandman-preview (local stack)", started);
