// app/api/sandbox-token/route.ts: a Next.js App Router handler that gives
// the signed-in user's page a client token for that user's own session.
// The page hands the token to sandman.js or opens openUrl; it never sees
// the API key.
import { Sandman, SandmanError } from "@sandmanhq/sdk";

const sandman = new Sandman(); // SANDMAN_URL and SANDMAN_API_KEY from the server's environment

/** Your auth and your database: replace both (NextAuth's auth(), a users table). */
export const app = {
  /** The signed-in user, here from a `user` cookie. */
  async currentUser(req: Request): Promise<{ id: string } | null> {
    const m = /(?:^|;\s*)user=([^;]+)/.exec(req.headers.get("cookie") ?? "");
    return m ? { id: decodeURIComponent(m[1]) } : null;
  },
  /** The Sandman session you stored for the user when you created it. */
  async sessionOf(userId: string): Promise<string | null> {
    void userId;
    return null;
  },
};

export async function POST(req: Request): Promise<Response> {
  const user = await app.currentUser(req);
  if (!user) return Response.json({ error: "sign in first" }, { status: 401 });
  const sessionId = await app.sessionOf(user.id);
  if (!sessionId) return Response.json({ error: "you have no session" }, { status: 404 });
  try {
    const { token, expires_at, ws_url } = await sandman.clientTokens.create(sessionId, { ttl_seconds: 900 });
    return Response.json({
      session_id: sessionId,
      token,
      expires_at,
      ws_url,
      open_url: sandman.sessions.openUrl(sessionId, token),
    });
  } catch (e) {
    if (e instanceof SandmanError && e.errorType === "not_found") {
      return Response.json({ error: "your session is gone" }, { status: 404 });
    }
    throw e; // Next.js answers 500 and logs it
  }
}
