// The drift test: docs/openapi.json against the SDK's routes and types.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readFile, writeFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { drift } from "./drift.mjs";

const doc = fileURLToPath(new URL("../../../docs/openapi.json", import.meta.url));

test("the SDK covers every route, parameter and field of docs/openapi.json", async () => {
  assert.deepEqual(await drift(doc), []);
});

test("a route, a query parameter and a field added to a copy of the document fail the drift check", async () => {
  const d = JSON.parse(await readFile(doc, "utf8"));
  d.paths["/v1/sessions/{id}/branches"] = {
    post: { operationId: "createBranch", responses: { 201: { description: "the branch" } } },
  };
  d.paths["/v1/sessions"].get.parameters.push({ name: "sort_by", in: "query", schema: { type: "string" } });
  d.components.schemas.Session.properties.branch_id = { type: ["string", "null"], format: "date-time" };
  const dir = await mkdtemp(join(tmpdir(), "sandman-drift-test-"));
  try {
    await writeFile(join(dir, "openapi.json"), JSON.stringify(d));
    const problems = (await drift(join(dir, "openapi.json"))).join("\n");
    assert.match(problems, /route POST \/v1\/sessions\/\{id\}\/branches \(createBranch\) is in the document but not in the SDK/);
    assert.match(problems, /query parameter sort_by of GET \/v1\/sessions is not sent/);
    assert.match(problems, /branch_id\?: string \| null;/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
