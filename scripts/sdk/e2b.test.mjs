// E2B's own JS SDK (e2b) against `sandman fake e2b`: a background command
// started through envd's process API serves its port, and the preview at
// sandbox.getHost(port) answers E2B's "port is not open" 502 until it
// listens, then the app. scripts/sdk.sh sets E2B_API_URL, E2B_SANDBOX_URL
// and E2B_API_KEY to the fake, as E2B documents for a self-hosted cluster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sdk, get, until } from './preview.mjs';

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
