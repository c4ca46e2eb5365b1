// A webhook receiver that verifies every request with the npm
// `standardwebhooks` library, once per secret in the file SECRETS_FILE
// (comma-separated, read on every request so a test can rotate).
// It prints {"port":N} when listening, then one JSON line per request:
// {"id":<webhook-id>,"type":<body type>,"verified":[bool per secret]}.
// It answers 204 when every secret verifies, else 401.
const fs = require("fs");
const http = require("http");
const { Webhook } = require("standardwebhooks");

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const secrets = fs.readFileSync(process.env.SECRETS_FILE, "utf8").trim().split(",").filter(Boolean);
    const hooks = secrets.map((s) => new Webhook(s));
    const verified = hooks.map((wh) => {
      try {
        wh.verify(body, req.headers);
        return true;
      } catch {
        return false;
      }
    });
    let type = "";
    try { type = JSON.parse(body).type; } catch {}
    process.stdout.write(JSON.stringify({ id: req.headers["webhook-id"], type, verified }) + "\n");
    res.writeHead(verified.every(Boolean) ? 204 : 401);
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
