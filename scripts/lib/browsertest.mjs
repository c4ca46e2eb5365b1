// What the design browser tests share (scripts/web.sh runs them): Chromium
// through playwright-core as scripts/browser.sh sets it up, named tests
// with a pass/fail line each, polling with a bound, the scripted channel
// of internal/webclient/webclienttest (built and started), an axe-core
// audit that fails on a serious or critical violation, and screenshots
// under build/screenshots/ (SANDMAN_SCREENSHOTS to put them elsewhere).
import { createRequire } from "node:module";
import { spawn, execFileSync } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

/** The repository's root. */
export const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Where screenshots go. */
export const shots = process.env.SANDMAN_SCREENSHOTS ?? join(repo, "build", "screenshots");

/** The widths every page and state is rendered at, and the colour schemes. */
export const widths = [1280, 375];
export const schemes = ["light", "dark"];

const results = [];

/** test runs fn as a named test, printing ok or FAIL; a failure does not stop the others. */
export async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    results.push({ name, ok: true });
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e.stack ?? e}`);
  }
}

/** finish prints the summary and exits 0 only when every test passed. */
export function finish(what, started) {
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${what}: ${results.length - failed} passed, ${failed} failed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.exit(failed || results.length === 0 ? 1 : 0);
}

/** until polls fn (async) every 20 ms until it returns a truthy value, for at most timeoutMs. */
export async function until(what, fn, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** launch starts Chromium with scripts/browser.sh's flags and profile. */
export async function launch() {
  return chromium.launchPersistentContext(process.env.SANDMAN_USER_DATA_DIR, {
    executablePath: process.env.SANDMAN_CHROMIUM,
    args: JSON.parse(process.env.SANDMAN_CHROMIUM_ARGS),
    headless: true,
  });
}

/**
 * scripted builds and starts the scripted channel (webclienttest/serve,
 * token tok-1, and args) and returns { base, control(method, path, body),
 * log(), stop() }.
 */
export async function scripted(...args) {
  const dir = mkdtempSync(join(tmpdir(), "sandman-web-"));
  const bin = join(dir, "serve");
  execFileSync("go", ["build", "-o", bin, "./internal/webclient/webclienttest/serve"], { cwd: repo, stdio: "inherit" });
  const server = spawn(bin, ["-tokens", "tok-1", ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const base = await new Promise((resolve, reject) => {
    let buf = "";
    server.stdout.on("data", (d) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl >= 0) resolve(buf.slice(0, nl).trim());
    });
    server.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
  const control = async (method, path, body) => {
    const res = await fetch(base + path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status}`);
    return res.status === 204 ? null : res.json();
  };
  return {
    base,
    control,
    log: () => control("GET", "/control/log"),
    stop: () => {
      server.stdin.end();
      server.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * host serves a customer's front end on a loopback port of its own (an
 * origin apart from the API's, as a real app is): handle(url, body) answers
 * each request with {type, body, status} (undefined: 404). Returns
 * { base, close() }.
 */
export async function host(handle) {
  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    try {
      const a = await handle(new URL(req.url, "http://host"), req.method, Buffer.concat(chunks).toString());
      if (!a) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(a.status ?? 200, { "content-type": a.type, "cache-control": "no-store" }).end(a.body);
    } catch (e) {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(e));
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { base: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// axe-core, read on the first audit (from clients/web's node_modules:
// scripts/web.sh puts it on NODE_PATH).
let axeSource;

/**
 * audit runs axe-core on the page (WCAG 2.x A and AA, and best practices)
 * and throws on any serious or critical violation, naming each with its
 * nodes. It returns how many rules passed and the minor findings.
 */
export async function audit(page, what) {
  axeSource ??= readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ content: axeSource });
  const r = await Promise.race([
    page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] })),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`axe on ${what}: no answer in 30 s`)), 30_000)),
  ]);
  const bad = r.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  if (bad.length > 0) {
    const lines = bad.map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.map((n) => n.target.join(" ") + " " + (n.failureSummary ?? "")).join(" | ")}`);
    throw new Error(`axe on ${what}: ${bad.length} serious or critical violation(s):\n  ${lines.join("\n  ")}`);
  }
  return r.violations.map((v) => `${v.impact} ${v.id}`);
}

/** shoot saves a screenshot of the page as shots/<dir>/<name>.png. */
export async function shoot(page, dir, name) {
  mkdirSync(join(shots, dir), { recursive: true });
  await page.screenshot({ path: join(shots, dir, name + ".png"), fullPage: true, animations: "disabled" });
}

/** noSidewaysScroll throws when the page is wider than its viewport. */
export async function noSidewaysScroll(page, what) {
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  if (scroll > width) throw new Error(`${what} scrolls sideways: ${scroll} px wide in a ${width} px viewport`);
}

/** newPage opens a tab of context at width (800 px high; 740 below 600 px wide) in scheme, with a 15 s bound on each action. */
export async function newPage(context, width, scheme) {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on("pageerror", (e) => console.log("page error:", e.message));
  await page.setViewportSize({ width, height: width > 600 ? 800 : 740 });
  await page.emulateMedia({ colorScheme: scheme });
  return page;
}

/** hideable makes the page's visibility settable (window.setVisibility) before any script runs. */
export async function hideable(page) {
  await page.addInitScript(() => {
    let state = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
    Object.defineProperty(document, "hidden", { configurable: true, get: () => state === "hidden" });
    window.setVisibility = (v) => {
      state = v;
      document.dispatchEvent(new Event("visibilitychange"));
    };
  });
}
