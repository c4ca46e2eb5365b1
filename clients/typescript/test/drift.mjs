// drift(docPath) lists what docs/openapi.json has and the SDK does not:
// types generated from another document than the one given, a route
// neither in ROUTES nor in NOT_IN_SDK, a query parameter or request header
// of a route the SDK does not send, a route of ROUTES the document lost,
// and a package version that is not the document's info.version.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { ROUTES, NOT_IN_SDK, API_VERSION } from "@sandmanhq/sdk";

const pkg = fileURLToPath(new URL("..", import.meta.url));
const METHODS = ["get", "post", "put", "patch", "delete"];

export async function drift(docPath) {
  const problems = [];
  const doc = JSON.parse(await readFile(docPath, "utf8"));

  // Fields: the SDK's types are src/openapi.ts; it must be what
  // openapi-typescript makes of this document.
  const dir = await mkdtemp(join(tmpdir(), "sandman-drift-"));
  try {
    await promisify(execFile)(join(pkg, "node_modules/.bin/openapi-typescript"), [docPath, "-o", join(dir, "openapi.ts")]);
    const want = await readFile(join(dir, "openapi.ts"), "utf8");
    const have = await readFile(join(pkg, "src/openapi.ts"), "utf8");
    if (want !== have) {
      // The lines the document makes more often than src/openapi.ts has
      // them: a new field is one, even when another schema has its twin.
      const count = new Map();
      for (const l of have.split("\n")) count.set(l, (count.get(l) ?? 0) + 1);
      const missing = [];
      for (const l of want.split("\n")) {
        const n = count.get(l) ?? 0;
        if (n > 0) count.set(l, n - 1);
        else if (l.trim() !== "") missing.push(l.trim());
      }
      problems.push(`src/openapi.ts is not what the document makes (npm run gen); it lacks:\n  ${missing.slice(0, 20).join("\n  ") || "(nothing: lines moved)"}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  // Routes and their parameters.
  const sdk = new Map(Object.entries(ROUTES).map(([op, r]) => [`${r.method} ${r.path}`, { op, ...r }]));
  const seen = new Set();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const key = `${m.toUpperCase()} ${path}`;
      seen.add(key);
      const r = sdk.get(key);
      if (!r) {
        if (!(key in NOT_IN_SDK)) problems.push(`route ${key} (${op.operationId}) is in the document but not in the SDK's ROUTES`);
        continue;
      }
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const param = p.$ref ? p.$ref.split("/").reduce((o, k) => (k === "#" ? doc : o[k]), doc) : p;
        if (param.in === "query" && ![...(r.query ?? []), ...(r.pageQuery ?? [])].includes(param.name)) {
          problems.push(`query parameter ${param.name} of ${key} is not sent by the SDK (ROUTES.${r.op}.query)`);
        }
        if (param.in === "header" && !(r.headers ?? []).some((h) => h.toLowerCase() === param.name.toLowerCase())) {
          problems.push(`header ${param.name} of ${key} is not sent by the SDK (ROUTES.${r.op}.headers)`);
        }
      }
    }
  }
  for (const key of sdk.keys()) if (!seen.has(key)) problems.push(`ROUTES has ${key}, which the document does not`);

  const version = JSON.parse(await readFile(join(pkg, "package.json"), "utf8")).version;
  if (version !== doc.info.version || API_VERSION !== doc.info.version) {
    problems.push(`the document is version ${doc.info.version}; package.json says ${version}, API_VERSION ${API_VERSION}`);
  }
  return problems;
}
