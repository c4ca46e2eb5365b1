// Unit tests of what <sandman-preview> shows for each status (src/state.ts,
// no DOM), and of the package's shape. `npm test` after `npm run build`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { build } from "esbuild";

const out = await build({ entryPoints: [new URL("../src/state.ts", import.meta.url).pathname], bundle: true, format: "esm", write: false, logLevel: "warning" });
const { viewOf, announcement, defaultMessages, isUsable, withPath, splitDetail } = await import(
  "data:text/javascript;base64," + Buffer.from(out.outputFiles[0].text).toString("base64")
);

test("viewOf: every session state maps to the state the component shows", () => {
  const app = "https://3000-sb.example.test/";
  const cases = [
    [null, { state: "connecting" }],
    [{ state: "paused" }, { state: "sleeping" }],
    [{ state: "pausing" }, { state: "sleeping", pausing: true }],
    [{ state: "resuming" }, { state: "waking", step: "wake" }],
    [{ state: "provisioning" }, { state: "waking", step: "wake" }],
    [{ state: "restoring" }, { state: "restoring", step: "wake" }],
    [{ state: "running", readiness: "starting", preview_url: app }, { state: "starting", step: "app" }],
    [{ state: "running", readiness: "ready", preview_url: app }, { state: "ready", previewURL: app }],
    [{ state: "running", readiness: null, preview_url: app }, { state: "ready", previewURL: app }],
    [{ state: "running", readiness: "failed", readiness_detail: "the start command exited with code 3; last output:\nboom" },
      { state: "failed", why: "app", reason: "The start command exited with code 3.", output: "boom" }],
    [{ state: "running", preview_url: null }, { state: "failed", why: "no_preview" }],
    [{ state: "killed" }, { state: "ended", why: "killed" }],
    [{ state: "expired" }, { state: "ended", why: "unrecoverable" }],
    [{ state: "failed" }, { state: "ended", why: "unrecoverable" }],
    [{ state: "something new" }, { state: "connecting" }],
  ];
  for (const [status, want] of cases) assert.deepEqual(viewOf(status), want, JSON.stringify(status));
});

test("announcement: one sentence per view, from the messages", () => {
  assert.equal(announcement({ state: "sleeping" }, defaultMessages), "This preview is sleeping.");
  assert.equal(announcement({ state: "restoring", step: "wake" }, defaultMessages), "Restoring the sandbox from a checkpoint…");
  assert.equal(announcement({ state: "ready" }, { ...defaultMessages, ready: "Prêt." }), "Prêt.");
});

test("isUsable, withPath, splitDetail", () => {
  assert.equal(isUsable({ state: "running", readiness: "ready", preview_url: "https://x/" }), true);
  assert.equal(isUsable({ state: "running", readiness: "ready", preview_url: null }), false);
  assert.equal(isUsable({ state: "paused" }), false);
  assert.equal(withPath("https://x.test/", "/docs/a"), "https://x.test/docs/a");
  assert.equal(withPath("https://x.test/base/", "docs"), "https://x.test/base/docs");
  assert.equal(withPath("https://x.test/", ""), "https://x.test/");
  assert.deepEqual(splitDetail("not ready within 120s"), { reason: "Not ready within 120s.", output: undefined });
  assert.deepEqual(splitDetail(null), {});
});

test("the package: ESM with types for each entry point, React only a peer", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(pkg.type, "module");
  for (const [entry, e] of Object.entries(pkg.exports)) {
    if (entry === "./package.json") continue;
    for (const f of [e.types, e.import]) assert.ok(readFileSync(new URL("../" + f, import.meta.url)).length > 0, `${entry}: ${f} is built`);
  }
  assert.equal(pkg.dependencies, undefined, "no runtime dependency");
  assert.equal(pkg.peerDependenciesMeta.react.optional, true);
  const react = readFileSync(new URL("../dist/react.js", import.meta.url), "utf8");
  assert.match(react, /from "react"/);
  assert.doesNotMatch(readFileSync(new URL("../dist/index.js", import.meta.url), "utf8"), /from "react"/, "the element needs no React");
});

test("a lost session's recovery says where the work comes back from", () => {
  const at = "2026-12-06T17:05:00Z";
  const v = viewOf({ state: "restoring", recovery: { lost: "gone", checkpoint_id: "chk_a", checkpoint_created_at: at } });
  assert.deepEqual(v, { state: "restoring", step: "wake", recoveringFrom: at });
  const said = announcement(v, defaultMessages);
  assert.match(said, /^Restoring your work from .*2026.*…$/);
  assert.ok(said.includes(new Date(at).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })));
  const fresh = viewOf({ state: "restoring", recovery: { lost: "foreign", checkpoint_id: null, checkpoint_created_at: null } });
  assert.equal(announcement(fresh, defaultMessages), "Starting a fresh sandbox.");
  assert.equal(announcement(viewOf({ state: "restoring" }), defaultMessages), "Restoring the sandbox from a checkpoint…");
});

test("sandman.js recoveryText", async () => {
  const { recoveryText } = await import(new URL("../../../internal/webclient/static/sandman.js", import.meta.url));
  assert.equal(recoveryText({ state: "restoring" }), null);
  assert.equal(recoveryText({ state: "running", recovery: null }), null);
  assert.equal(recoveryText({ state: "restoring", recovery: { lost: "gone", checkpoint_id: null, checkpoint_created_at: null } }), "Starting a fresh sandbox");
  assert.match(recoveryText({ state: "restoring", recovery: { lost: "partial", checkpoint_id: "c", checkpoint_created_at: "2026-12-06T17:05:00Z" } }), /^Restoring your work from .*2026/);
});
