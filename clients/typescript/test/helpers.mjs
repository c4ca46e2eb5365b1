// Test plumbing shared by the unit and conformance suites: a
// fault-injecting HTTP proxy and a webhook receiver, both on loopback.
import http from "node:http";

/**
 * startProxy(upstream) forwards every request to upstream (a base URL)
 * unless a fault planned with proxy.fault(match, action, times) takes it:
 *   { status, headers, body }  answer that instead, upstream never sees it;
 *   "drop"                     close the connection without an answer;
 *   "drop-after-forward"       forward, let upstream act, then close the
 *                              connection without passing the answer on;
 *   "hang"                     never answer (until the proxy closes).
 * proxy.log has each request's method, url, headers and, when it was
 * forwarded, upstream's status and headers.
 */
export async function startProxy(upstream) {
  const faults = [];
  const log = [];
  const held = new Set();
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const entry = { method: req.method, url: req.url, headers: req.headers };
    log.push(entry);
    const i = faults.findIndex((f) => f.match(req));
    const fault = i >= 0 ? faults[i] : null;
    if (fault && --fault.times <= 0) faults.splice(i, 1);
    const action = fault?.action;
    if (action === "drop") return req.socket.destroy();
    if (action === "hang") return held.add(res);
    if (action && typeof action === "object") {
      entry.injected = action.status;
      res.writeHead(action.status, { "content-type": "application/json", ...action.headers });
      return res.end(typeof action.body === "string" ? action.body : JSON.stringify(action.body ?? {}));
    }
    const up = await fetch(upstream + req.url, {
      method: req.method,
      headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length"].includes(k))),
      body: ["GET", "HEAD"].includes(req.method) ? undefined : body,
      redirect: "manual",
    });
    const text = await up.text();
    entry.status = up.status;
    entry.upstreamHeaders = Object.fromEntries(up.headers);
    if (action === "drop-after-forward") return req.socket.destroy();
    const headers = Object.fromEntries([...up.headers].filter(([k]) => !["content-length", "transfer-encoding", "connection", "keep-alive"].includes(k)));
    res.writeHead(up.status, headers);
    res.end(text);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    log,
    /** fault(match, action, times = 1): match is a function of the request, or "METHOD /path-prefix". */
    fault(match, action, times = 1) {
      const m = typeof match === "function" ? match : (req) => {
        const [method, prefix] = match.split(" ");
        return req.method === method && req.url.startsWith(prefix);
      };
      faults.push({ match: m, action, times });
    },
    clear() {
      faults.length = 0;
      log.length = 0;
    },
    async close() {
      for (const res of held) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/**
 * startReceiver() is a webhook endpoint: it answers 204 to every POST and
 * keeps its raw body and headers; next(pred, ms) waits for a delivery.
 */
export async function startReceiver() {
  const got = [];
  const waiters = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const d = { body: Buffer.concat(chunks).toString("utf8"), headers: req.headers, path: req.url };
    got.push(d);
    res.writeHead(204).end();
    for (const w of [...waiters]) if (w.pred(d)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(d); }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    got,
    next(pred = () => true, ms = 15_000) {
      const seen = got.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { pred, resolve };
        waiters.push(w);
        setTimeout(() => reject(new Error(`no matching delivery within ${ms} ms (got ${got.length})`)), ms).unref();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
