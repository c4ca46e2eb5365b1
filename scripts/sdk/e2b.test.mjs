// E2B's own JS SDK (e2b) against `sandman fake e2b`: a background command
// started through envd's process API serves its port, and the preview at
// sandbox.getHost(port) answers E2B's "port is not open" 502 until it
// listens, then the app. scripts/sdk.sh sets E2B_API_URL, E2B_SANDBOX_URL
// and E2B_API_KEY to the fake, as E2B documents for a self-hosted cluster.
// The second test takes snapshots (createSnapshot), lists them
// (listSnapshots), makes a sandbox from one (create), forks (fork) and
// deletes them (deleteSnapshot), checking what each keeps; the third fails
// a snapshot through the fake's fault control (/_fake/faults), which kills
// its sandbox as E2B does; the fourth uploads files through envd's file API
// (files.write).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, get, until, fakeURL } from './preview.mjs';

const { Sandbox } = sdk('e2b');
const port = 3000;

function portClosed(r) {
  if (r.status !== 502) return false;
  const b = JSON.parse(r.body);
  return b.port === port && b.message === 'The sandbox is running but port is not open';
}

test('a background command serves its port through getHost, after the port-closed 502', async () => {
  const sbx = await Sandbox.create();
  try {
    const url = `http://${sbx.getHost(port)}/`;
    assert.match(url, new RegExp(`^http://${port}-${sbx.sandboxId}\\.`));
    const before = await get(url);
    assert.ok(portClosed(before), `before the command: ${JSON.stringify(before)}`);

    // E2B's own example; timeoutMs 0, or envd kills the server after the
    // SDK's default 60 s.
    const cmd = await sbx.commands.run(`python3 -m http.server ${port}`, { background: true, timeoutMs: 0 });
    assert.ok(cmd.pid > 0, `pid ${cmd.pid}`);
    const booting = await get(url);
    assert.ok(portClosed(booting), `while it boots: ${JSON.stringify(booting)}`);
    const listed = await sbx.commands.list();
    assert.ok(listed.some((p) => p.pid === cmd.pid), `list: ${JSON.stringify(listed)}`);

    const up = await until('the preview answers 200', async () => {
      const r = await get(url);
      return { ok: r.status === 200, ...r };
    });
    assert.equal(up.status, 200);

    // A command that exits: the SDK's wait sees its code.
    await assert.rejects(sbx.commands.run('exit 3'), (e) => e.name === 'CommandExitError' && e.exitCode === 3);

    // A paused sandbox keeps its processes (E2B's memory snapshot).
    await sbx.pause();
    const back = await Sandbox.connect(sbx.sandboxId);
    assert.equal((await get(url)).status, 200, 'after pause and connect');
    assert.ok((await back.commands.list()).some((p) => p.pid === cmd.pid), 'the process survived the pause');

    assert.equal(await back.commands.kill(cmd.pid), true);
    assert.ok(portClosed(await get(url)), 'after the kill');
    assert.equal(await back.commands.kill(cmd.pid), false, 'a second kill finds nothing');
  } finally {
    await sbx.kill();
  }
});

// The shell lines Sandman's adapter writes and reads a file with
// (internal/provider/internal/sandboxfs): plain coreutils, which the fake
// runs on the sandbox's files as a real sandbox would.
const writeLine = (path, text) => {
  const dir = path.slice(0, path.lastIndexOf('/'));
  return `mkdir -p -- '${dir}' && printf '%s' '${Buffer.from(text).toString('base64')}' | base64 -d > '${path}'`;
};
const readLine = (path) => `if [ -e '${path}' ]; then base64 -w0 -- '${path}'; else exit 44; fi`;
async function readFile(sbx, path) {
  const r = await sbx.commands.run(readLine(path));
  return Buffer.from(r.stdout.trim(), 'base64').toString();
}
const missing = (e) => e.name === 'CommandExitError' && e.exitCode === 44;

test('a snapshot keeps files and processes; a sandbox made from it and a fork are independent', async () => {
  const file = '/home/user/app/notes.txt';
  const sbx = await Sandbox.create();
  const made = [];
  try {
    await sbx.commands.run(writeLine(file, 'v1'));
    assert.equal(await readFile(sbx, file), 'v1');
    const server = await sbx.commands.run(`python3 -m http.server ${port}`, { background: true, timeoutMs: 0 });
    await until('the server listens', async () => ({ ok: (await get(`http://${sbx.getHost(port)}/`)).status === 200 }));

    const snap = await sbx.createSnapshot();
    assert.ok(snap.snapshotId, `snapshot ${JSON.stringify(snap)}`);
    assert.deepEqual(snap.names, []);
    const named = await Sandbox.createSnapshot(sbx.sandboxId, { name: 'sdk-snap' });
    assert.ok(named.snapshotId.endsWith('/sdk-snap:default') && named.names.length === 1, JSON.stringify(named));
    await sbx.commands.run(writeLine(file, 'v2')); // after the snapshot

    const paginator = Sandbox.listSnapshots({ sandboxId: sbx.sandboxId });
    const listed = await paginator.nextItems();
    assert.deepEqual(listed.map((s) => s.snapshotId).sort(), [snap.snapshotId, named.snapshotId].sort());
    assert.equal(paginator.hasNext, false);
    assert.equal((await sbx.listSnapshots().nextItems()).length, 2);

    const restored = await Sandbox.create(snap.snapshotId);
    made.push(restored);
    assert.notEqual(restored.sandboxId, sbx.sandboxId);
    assert.equal(await readFile(restored, file), 'v1', 'the file as it was at the snapshot');
    assert.ok((await restored.commands.list()).some((p) => p.pid === server.pid), 'the server runs on (memory kept)');
    assert.equal((await get(`http://${restored.getHost(port)}/`)).status, 200, 'the restored preview answers');
    assert.equal(await readFile(sbx, file), 'v2', 'the source keeps its own state');

    const forks = await Sandbox.fork(sbx.sandboxId, { timeoutMs: 60_000 });
    assert.equal(forks.length, 1);
    const [fork] = forks;
    assert.ok(fork instanceof Sandbox, `fork: ${fork}`);
    made.push(fork);
    assert.notEqual(fork.sandboxId, sbx.sandboxId);
    assert.equal(await readFile(fork, file), 'v2', 'a fork copies the current state');
    await fork.commands.run(writeLine('/home/user/app/fork.txt', 'f'));
    await assert.rejects(readFile(sbx, '/home/user/app/fork.txt'), missing, 'the source never sees the fork\'s file');
    assert.equal((await Sandbox.getInfo(sbx.sandboxId)).state, 'running', 'the source runs on');

    await assert.rejects(Sandbox.deleteSnapshot(snap.snapshotId), (e) => e.statusCode === 400 && /sandboxes using it/.test(e.message),
      'a snapshot a sandbox was made from is kept');
    await restored.kill();
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), true);
    assert.equal(await Sandbox.deleteSnapshot(snap.snapshotId), false, 'a second delete finds nothing');
    assert.equal(await Sandbox.deleteSnapshot(named.snapshotId), true);
    assert.deepEqual(await Sandbox.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems(), []);
    await assert.rejects(Sandbox.create(snap.snapshotId), (e) => e.statusCode === 404, 'a deleted snapshot makes no sandbox');
  } finally {
    for (const s of made) await s.kill().catch(() => {});
    await sbx.kill();
  }
});

test('a snapshot that fails midway answers 500 and kills its sandbox, as E2B does', async () => {
  const sbx = await Sandbox.create();
  const r = await fetch(`${fakeURL.origin}/_fake/faults`, {
    method: 'POST', body: JSON.stringify({ op: `snapshot:${sbx.sandboxId}`, fault: { status: 500 } }),
  });
  assert.equal(r.status, 204);
  await assert.rejects(sbx.createSnapshot(), (e) => e.statusCode === 500 && /Error creating snapshot template/.test(e.message));
  await assert.rejects(Sandbox.getInfo(sbx.sandboxId), (e) => /not found|doesn't exist/i.test(e.message), 'the sandbox is gone');
});

// envd's file API, which Sandman's adapter uploads a workspace archive
// through (docs/providers/e2b.md "Checkpoints"): the SDK's files.write
// sends the same multipart POST /files?path=…, and the file is there for a
// command to read; a relative path lands under /home/user.
test('files.write uploads through envd\'s file API', async () => {
  const sbx = await Sandbox.create();
  try {
    const info = await sbx.files.write('/home/user/app/up/load.bin', 'uploaded \u00e9');
    assert.equal(info.path, '/home/user/app/up/load.bin');
    assert.equal(await readFile(sbx, '/home/user/app/up/load.bin'), 'uploaded \u00e9');
    await sbx.files.write('rel.txt', 'r');
    assert.equal(await readFile(sbx, '/home/user/rel.txt'), 'r');
  } finally {
    await sbx.kill();
  }
});
