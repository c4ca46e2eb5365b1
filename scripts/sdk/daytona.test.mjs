// Daytona's own JS SDK (@daytonaio/sdk) against `sandman fake daytona`: a
// command run asynchronously in a toolbox session serves its port, and the
// preview link answers Daytona's empty 502 until it listens, then the app;
// a stop and start loses the command, as Daytona's stop clears memory.
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
