// Vercel's own JS SDK (@vercel/sandbox) against `sandman fake vercel`: a
// detached command serves its port, and the preview at sandbox.domain(port)
// answers Vercel's 502 SANDBOX_NOT_LISTENING until it listens, then the
// app; a command's exit code and logs read back; a stop and resume is a new
// session where nothing runs. A snapshot stops the sandbox (the SDK resumes
// it on the next call), Snapshot.get reads it, a sandbox created from it
// holds the files written before it and not those written after, and once
// deleted it makes no sandbox (410 snapshot_not_found). Files written and
// read through the file API (writeFiles, readFileToBuffer) are the files the
// commands see. The SDK has no base
// URL option: its documented seam, a custom fetch, sends its calls to the
// fake.
// scripts/sdk.sh sets VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, fakeURL, get, until } from './preview.mjs';

const { Sandbox, Snapshot } = sdk('@vercel/sandbox');
const port = 3000;
const api = 'https://vercel.com/api';

// toFake sends a call the SDK makes to Vercel's API to the fake instead.
function toFake(input, init) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  assert.ok(url.startsWith(api), `the SDK called ${url}`);
  return fetch(fakeURL.origin + url.slice(api.length), init);
}

const creds = {
  token: process.env.VERCEL_TOKEN, teamId: process.env.VERCEL_TEAM_ID,
  projectId: process.env.VERCEL_PROJECT_ID, fetch: toFake,
};

function notListening(r) {
  return r.status === 502 && JSON.parse(r.body).error?.code === 'SANDBOX_NOT_LISTENING';
}

test('a detached command serves its port through domain(port), after the not-listening 502', async () => {
  const sandbox = await Sandbox.create({ ...creds, ports: [port], timeout: 120_000 });
  try {
    const url = sandbox.domain(port);
    assert.match(url, /^https:\/\/[^.]+\.vercel\.run$/);
    const before = await get(url);
    assert.ok(notListening(before), `before the command: ${JSON.stringify(before)}`);

    const cmd = await sandbox.runCommand({
      cmd: 'python3', args: ['-m', 'http.server', String(port)], detached: true,
    });
    assert.ok(cmd.cmdId, 'a command id');
    assert.equal(cmd.exitCode, null, 'a detached server is still running');
    const booting = await get(url);
    assert.ok(notListening(booting), `while it boots: ${JSON.stringify(booting)}`);
    const up = await until('the preview answers 200', async () => {
      const r = await get(url);
      return { ok: r.status === 200, ...r };
    });
    assert.equal(up.status, 200);
    const again = await sandbox.getCommand(cmd.cmdId);
    assert.equal(again.exitCode, null, 'found again by its id, still running');

    // A command that exits: its code and its logs read back.
    const failing = await sandbox.runCommand({ cmd: 'sh', args: ['-c', 'exit 3'], detached: true });
    const done = await failing.wait();
    assert.equal(done.exitCode, 3);
    assert.match(await failing.stderr(), /exited with 3/);

    // A stop snapshots the files only: the resumed session runs nothing.
    await sandbox.stop({ blocking: true });
    const back = await Sandbox.get({ ...creds, name: sandbox.name, resume: true });
    const url2 = back.domain(port);
    assert.ok(notListening(await get(url2)), 'after stop and resume nothing listens');
  } finally {
    await sandbox.delete().catch(() => {});
  }
});

// sandboxfs's command lines (internal/provider/internal/sandboxfs), which
// the fake runs on the session's files as a shell would.
const b64 = (s) => Buffer.from(s).toString('base64');
const dir = (p) => p.slice(0, p.lastIndexOf('/'));
async function writeFile(sandbox, p, data) {
  const r = await sandbox.runCommand('sh', ['-c', `mkdir -p -- '${dir(p)}' && printf '%s' '${b64(data)}' | base64 -d > '${p}'`]);
  assert.equal(r.exitCode, 0, `write ${p}`);
}
async function readFile(sandbox, p) {
  const r = await sandbox.runCommand('sh', ['-c', `if [ -e '${p}' ]; then base64 -w0 -- '${p}'; else exit 44; fi`]);
  if (r.exitCode === 44) return null;
  assert.equal(r.exitCode, 0, `read ${p}`);
  return Buffer.from((await r.stdout()).trim(), 'base64').toString();
}

test('snapshot, Snapshot.get, create from the snapshot, snapshot.delete', async () => {
  const sandbox = await Sandbox.create({ ...creds, ports: [port], timeout: 120_000 });
  const made = [];
  try {
    await writeFile(sandbox, '/home/user/app/before.txt', 'v1');
    const snap = await sandbox.snapshot();
    assert.match(snap.snapshotId, /^snap_/);
    assert.equal(snap.status, 'created');
    assert.ok(snap.expiresAt instanceof Date, 'the default expiry');
    assert.equal(sandbox.status, 'stopped', 'a snapshot stops the sandbox');

    // The next call meets 410 sandbox_stopped: the SDK resumes and retries.
    await writeFile(sandbox, '/home/user/app/after.txt', 'v2');
    assert.equal(await readFile(sandbox, '/home/user/app/before.txt'), 'v1', 'the resume kept the files');

    const got = await Snapshot.get({ ...creds, snapshotId: snap.snapshotId });
    assert.equal(got.sourceSessionId, snap.sourceSessionId);
    assert.equal(got.status, 'created');
    const listed = await sandbox.listSnapshots();
    assert.ok(listed.snapshots.some((s) => s.id === snap.snapshotId), 'listed under its sandbox');

    const copy = await Sandbox.create({
      ...creds, ports: [port], timeout: 120_000, source: { type: 'snapshot', snapshotId: snap.snapshotId },
    });
    made.push(copy);
    assert.notEqual(copy.name, sandbox.name);
    assert.equal(copy.sourceSnapshotId, snap.snapshotId);
    assert.equal(await readFile(copy, '/home/user/app/before.txt'), 'v1');
    assert.equal(await readFile(copy, '/home/user/app/after.txt'), null, 'written after the snapshot');

    await got.delete();
    assert.equal(got.status, 'deleted');
    await assert.rejects(
      Sandbox.create({ ...creds, ports: [port], source: { type: 'snapshot', snapshotId: snap.snapshotId } }),
      (err) => err.response?.status === 410 && err.json?.error?.code === 'snapshot_not_found',
    );
  } finally {
    for (const s of [sandbox, ...made]) await s.delete().catch(() => {});
  }
});

// The file API, which Sandman's adapter moves a workspace archive through
// (docs/providers/vercel.md "Files"): writeFiles sends a gzipped tar to
// fs/write (x-cwd "/"), readFileToBuffer reads fs/read (null for a missing
// file), and the commands see the same files.
test('writeFiles and readFileToBuffer go through fs/write and fs/read', async () => {
  const sandbox = await Sandbox.create({ ...creds, ports: [port], timeout: 120_000 });
  try {
    await sandbox.writeFiles([
      { path: '/home/user/app/up/a.bin', content: Buffer.from([0, 1, 255, 10]) },
      { path: 'rel.txt', content: Buffer.from('relative') },
    ]);
    assert.deepEqual(await sandbox.readFileToBuffer({ path: '/home/user/app/up/a.bin' }), Buffer.from([0, 1, 255, 10]));
    assert.equal(await readFile(sandbox, '/vercel/sandbox/rel.txt'), 'relative', 'a relative path is from the cwd');
    await writeFile(sandbox, '/tmp/w.txt', 'by a command');
    assert.equal((await sandbox.readFileToBuffer({ path: '/tmp/w.txt' })).toString(), 'by a command');
    assert.equal(await sandbox.readFileToBuffer({ path: '/tmp/missing' }), null);
  } finally {
    await sandbox.delete().catch(() => {});
  }
});
