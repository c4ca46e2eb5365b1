// Daytona's own JS SDK (@daytonaio/sdk) against `sandman fake daytona`: a
// command run asynchronously in a toolbox session serves its port, and the
// preview link answers Daytona's empty 502 until it listens, then the app;
// a stop and start loses the command, as Daytona's stop clears memory.
// Checkpoints: a snapshot keeps the files written before it, a sandbox made
// from it has them, and a deleted one is gone; a fork copies a VM sandbox.
// Files uploaded through the toolbox's file API are there for a command.
// scripts/sdk.sh sets DAYTONA_API_URL and DAYTONA_API_KEY to the fake.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, get, until } from './preview.mjs';

const { Daytona } = sdk('@daytonaio/sdk');
const port = 3000;

async function preview(sandbox) {
  const link = await sandbox.getPreviewLink(port);
  const open = (headers = {}) => get(link.url, { 'x-daytona-preview-token': link.token, ...headers });
  open.token = link.token;
  return open;
}

const portClosed = (r) => r.status === 502 && r.body === '';

// The file commands of internal/provider/internal/sandboxfs (what the
// adapter's WriteFile and ReadFile run), sent as the adapter sends them
// through process/execute, which runs no shell: sh -c "echo <base64> |
// base64 -d | sh".
const b64 = (s) => Buffer.from(s).toString('base64');
const dirOf = (p) => p.slice(0, p.lastIndexOf('/'));
async function run(sandbox, line) {
  return sandbox.process.executeCommand(`sh -c "echo ${b64(line)} | base64 -d | sh"`);
}
async function writeFile(sandbox, path, text) {
  const r = await run(sandbox, `mkdir -p -- '${dirOf(path)}' && printf '%s' '${b64(text)}' | base64 -d > '${path}'`);
  assert.equal(r.exitCode, 0, `write ${path}: ${JSON.stringify(r)}`);
}
async function readFile(sandbox, path) {
  const r = await run(sandbox, `if [ -e '${path}' ]; then base64 -w0 -- '${path}'; else exit 44; fi`);
  return r.exitCode === 44 ? null : Buffer.from(r.result.trim(), 'base64').toString();
}

test('a session command serves its port through the preview link, after the empty 502', async () => {
  const daytona = new Daytona();
  const sandbox = await daytona.create({}, { timeout: 60 });
  try {
    let open = await preview(sandbox);
    const before = await open();
    assert.ok(portClosed(before), `before the command: ${JSON.stringify(before)}`);
    const anonymous = await open({ 'x-daytona-preview-token': '' });
    assert.equal(anonymous.status, 307, 'a preview without its token is sent to sign in');

    await sandbox.process.createSession('dev');
    const started = await sandbox.process.executeSessionCommand('dev', {
      command: `python3 -m http.server ${port}`, runAsync: true,
    });
    assert.ok(started.cmdId, `exec: ${JSON.stringify(started)}`);
    const cmd = await sandbox.process.getSessionCommand('dev', started.cmdId);
    assert.equal(cmd.exitCode ?? null, null, `a running command has no exit code: ${JSON.stringify(cmd)}`);
    const booting = await open();
    assert.ok(portClosed(booting), `while it boots: ${JSON.stringify(booting)}`);

    const up = await until('the preview answers 200', async () => {
      const r = await open();
      return { ok: r.status === 200, ...r };
    });
    assert.equal(up.status, 200);

    // Stop clears memory: the command is gone after a start, and the
    // preview token is new.
    await sandbox.stop();
    await sandbox.start();
    const oldToken = open.token;
    open = await preview(sandbox);
    assert.notEqual(open.token, oldToken, 'a start resets the preview token');
    assert.ok(portClosed(await open()), 'after stop and start nothing listens');
    const sessions = await sandbox.process.listSessions();
    assert.ok(!sessions.some((s) => s.sessionId === 'dev'), `sessions after a start: ${JSON.stringify(sessions)}`);
  } finally {
    await sandbox.delete();
  }
});

test('a snapshot keeps the files written before it; a sandbox made from it has them; a deleted one is gone', async () => {
  const { DaytonaNotFoundError } = sdk('@daytonaio/sdk');
  const daytona = new Daytona();
  const sandbox = await daytona.create({}, { timeout: 60 });
  const made = [];
  try {
    await writeFile(sandbox, '/home/user/app/before.txt', 'v1');
    const name = `chk_sdk_${Date.now()}`;
    await sandbox.createSnapshot(name); // waits until the sandbox leaves snapshotting
    const snapshot = await daytona.snapshot.get(name);
    assert.equal(snapshot.state, 'active', JSON.stringify(snapshot));
    assert.equal(snapshot.sourceSandboxId, sandbox.id);
    const listed = await daytona.snapshot.list({ sourceSandboxId: sandbox.id });
    assert.deepEqual(listed.items.map((s) => s.name), [name]);
    await writeFile(sandbox, '/home/user/app/after.txt', 'v2');

    const restored = await daytona.create({ snapshot: name }, { timeout: 60 });
    made.push(restored);
    assert.notEqual(restored.id, sandbox.id);
    assert.equal(await readFile(restored, '/home/user/app/before.txt'), 'v1');
    assert.equal(await readFile(restored, '/home/user/app/after.txt'), null, 'a file written after the snapshot');

    await daytona.snapshot.delete(name); // by name: the SDK resolves the id first
    await assert.rejects(daytona.snapshot.get(name), DaytonaNotFoundError);
    await assert.rejects(daytona.create({ snapshot: name }, { timeout: 60 }), /not found/);
  } finally {
    for (const s of made) await s.delete();
    await sandbox.delete();
  }
});

test('a fork copies a VM sandbox and goes its own way', async () => {
  const daytona = new Daytona();
  const source = await daytona.create({ snapshot: 'daytona-vm-small', labels: { team: 'a' } }, { timeout: 60 });
  let fork;
  try {
    await writeFile(source, '/home/user/app/before.txt', 'v1');
    fork = await source.fork(); // waits until the child is started
    assert.notEqual(fork.id, source.id);
    assert.equal(fork.state, 'started');
    assert.equal(fork.labels.team, 'a', 'a fork copies its source\'s labels');
    await writeFile(fork, '/home/user/app/fork.txt', 'f');
    assert.equal(await readFile(fork, '/home/user/app/before.txt'), 'v1');
    assert.equal(await readFile(source, '/home/user/app/fork.txt'), null);
  } finally {
    if (fork) await fork.delete();
    await source.delete();
  }
});

// The toolbox's file API, which Sandman's adapter moves a workspace archive
// through (docs/providers/daytona.md "Checkpoints"): uploadFile and
// uploadFileStream send the multipart POST /files/bulk-upload the adapter
// sends, and the file is there for a command to read.
test('uploadFile and uploadFileStream go through the toolbox\'s bulk upload', async () => {
  const daytona = new Daytona();
  const sandbox = await daytona.create({}, { timeout: 60 });
  try {
    await sandbox.fs.uploadFile(Buffer.from('uploaded \u00e9'), '/home/user/app/up/load.txt');
    assert.equal(await readFile(sandbox, '/home/user/app/up/load.txt'), 'uploaded \u00e9');
    const { Readable } = await import('node:stream');
    await sandbox.fs.uploadFileStream(Readable.from([Buffer.from('str'), Buffer.from('eamed')]), '/tmp/s/part-000000');
    assert.equal(await readFile(sandbox, '/tmp/s/part-000000'), 'streamed');
  } finally {
    await sandbox.delete();
  }
});
