import { Sandman, SandmanError } from "@sandmanhq/sdk";

const sm = new Sandman(); // reads SANDMAN_URL and SANDMAN_API_KEY
const session = await sm.sessions.create({
  template: "web",
  app: { port: 3000, start_command: "python3 -m http.server $PORT" },
});
await sm.sessions.waitUntilReady(session.id, { timeoutMs: 60_000 });

// A browser gets a client token, never the API key.
const { token, ws_url } = await sm.clientTokens.create(session.id);
console.log("open", sm.sessions.openUrl(session.id, token), "channel", ws_url);

await sm.sessions.pause(session.id);
const { preview_url } = await sm.sessions.resume(session.id, { waitReady: true });
console.log("preview", preview_url);

try {
  await sm.sessions.activity("ses_aaaaaaaaaaaaaaaaaaaaaaaaaa");
} catch (e) {
  if (!(e instanceof SandmanError)) throw e;
  console.log(e.status, e.errorType, e.message); // 404 not_found session … not found
}
await sm.sessions.delete(session.id);
