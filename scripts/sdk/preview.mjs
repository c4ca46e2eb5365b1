// Helpers shared by the SDK tests (scripts/sdk.sh runs them against
// `sandman fake <provider>`): load an SDK from the install folder, and
// fetch a preview URL on the fake's own address, standing in for the DNS
// that would resolve the provider's preview host.
import http from 'node:http';
import { createRequire } from 'node:module';

// sdk requires an npm package installed by scripts/sdk.sh.
export const sdk = createRequire(process.env.SANDMAN_SDK_MODULES + '/');

// fakeURL is where `sandman fake <provider>` listens.
export const fakeURL = new URL(process.env.SANDMAN_FAKE_URL);

// get fetches url with GET, connecting to the fake whatever its host, with
// the URL's host in the Host header. It resolves {status, headers, body}.
export function get(url, headers = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.get({
      host: fakeURL.hostname, port: fakeURL.port, path: u.pathname + u.search,
      headers: { host: u.host, 'user-agent': 'sandman-sdk-test', ...headers },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error(`GET ${url}: no answer in 5 s`)));
  });
}

// until calls fn every 100 ms until it returns a truthy value, or throws
// after timeoutMs naming what was awaited and the last value.
export async function until(what, fn, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last && last.ok) return last;
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
