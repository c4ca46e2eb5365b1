import { Webhook } from "standardwebhooks";
import { SandmanError } from "./errors.js";

/** A verified delivery's body (docs/WEBHOOKS.md "What a delivery looks like"). */
export interface WebhookEvent {
  type: string;
  timestamp: string;
  data: {
    event_id: string;
    session_id: string;
    account_id: string;
    sandbox_id?: string | null;
    from: string;
    to: string;
    version: number;
    reason?: string;
    time: string;
    [k: string]: unknown;
  };
}

/**
 * Verifies a Standard Webhooks delivery from Sandman and returns its body.
 * body is the raw request body exactly as received (read it with
 * `await req.text()`, before any JSON parsing); headers the request's
 * headers (webhook-id, webhook-timestamp, webhook-signature); secret the
 * endpoint's whsec_… secret, or several while rotating. A timestamp more
 * than 5 minutes away is refused. Throws SandmanError invalid_signature.
 */
export function verifyWebhook(
  secret: string | readonly string[],
  body: string,
  headers: Headers | Record<string, string | undefined>,
): WebhookEvent {
  const h: Record<string, string> = {};
  const get = (k: string) => (headers instanceof Headers ? headers.get(k) : (headers[k] ?? headers[k.toLowerCase()]));
  for (const k of ["webhook-id", "webhook-timestamp", "webhook-signature"]) h[k] = get(k) ?? "";
  let last: unknown;
  for (const s of typeof secret === "string" ? [secret] : secret) {
    try {
      return new Webhook(s).verify(body, h) as WebhookEvent;
    } catch (e) {
      last = e;
    }
  }
  throw new SandmanError({
    status: 0,
    errorType: "invalid_signature",
    message: "webhook delivery refused: " + (last instanceof Error ? last.message : String(last)),
    cause: last,
  });
}
