// The real local stack for the browser tests: builds the sandman binary
// into a temporary folder and runs `sandman run` on a free port with the
// local provider whose pause kills the app (every resume is cold) and a 2 s
// sweep. On a shared DynamoDB Local (DYNAMODB_ENDPOINT, as make test
// exports) each stack gets a table of its own; without one, an in-memory
// instance of its own.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import net from "node:net";

// startStack starts the stack named name (the temporary folder's prefix and
// the table's suffix) and resolves once it printed its dev API key.
// Returns { base, key, dir, log(), stop(ids) }: stop deletes the sessions ids
// (a local sandbox is a process that outlives the stack otherwise), stops
// the stack and removes its folder.
export async function startStack(name) {
  const port = await new Promise((res) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); });
  });
  const dir = mkdtempSync(join(tmpdir(), `sandman-fullstack-${name}-`));
  const bin = join(dir, "sandman");
  execFileSync("go", ["build", "-o", bin, "./internal/cmd/sandman"], { stdio: "inherit" });
  const env = { ...process.env, SANDMAN_ADDR: `127.0.0.1:${port}`, SANDMAN_STATE_DIR: join(dir, "state"),
    SANDMAN_DDB_IN_MEMORY: "1", SANDMAN_SWEEP_INTERVAL: "2s", SANDMAN_LOCAL_KEEP_PROCESSES: "false",
    SANDMAN_TABLE: `sandman-browser-${name}-${process.pid}` };
  const server = spawn(bin, ["run"], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  server.stdout.on("data", (d) => { out += d; });
  server.stderr.on("data", (d) => { out += d; });
  const base = `http://127.0.0.1:${port}`;
  const key = await new Promise((resolve, reject) => {
    const t = setInterval(() => {
      const m = out.match(/dev API key\s+(sk_[a-z0-9]+)/);
      if (m) { clearInterval(t); resolve(m[1]); }
    }, 100);
    server.on("exit", (code) => { clearInterval(t); reject(new Error(`sandman run exited ${code}\n${out}`)); });
  });
  const stop = async (ids) => {
    for (const id of ids) {
      await fetch(`${base}/v1/sessions/${id}`, { method: "DELETE", headers: { "x-api-key": key } })
        .catch((e) => console.log(`delete ${id}: ${e.message ?? e}`));
    }
    server.kill("SIGINT");
    await new Promise((r) => server.on("exit", r));
    rmSync(dir, { recursive: true, force: true });
  };
  return { base, key, dir, log: () => out, stop };
}
