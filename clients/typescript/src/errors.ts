/**
 * The one error every call of the SDK throws.
 *
 * An answer from the API carries its error envelope
 * (`{"status":"error","error":"<sentence>","error_type":"<type>"}`, docs/API.md
 * "Errors"): `status` is the HTTP status, `errorType` the envelope's type
 * (`invalid`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
 * `sandbox_paused`, `too_large`, `quota_exceeded`, `sandbox_expired`,
 * `sandbox_unreachable`, `unavailable`, `internal`).
 *
 * Failures without an answer have `status` 0 and a type of the SDK's own:
 * `network` (no answer: refused, reset, dropped), `timeout` (the per-call
 * timeout or the retry deadline passed), `aborted` (the caller's signal),
 * `not_ready` (waitUntilReady saw the session fail or end),
 * `invalid_signature` (verifyWebhook refused a delivery).
 */
export class SandmanError extends Error {
  /** HTTP status of the answer; 0 when there was none. */
  readonly status: number;
  /** The envelope's error_type, or the SDK's own type when status is 0. */
  readonly errorType: string;
  /** Seconds the API asked to wait (Retry-After), or null. */
  readonly retryAfter: number | null;
  /** The API Gateway request id of the answer (apigw-requestid header, or the one an internal error names), or null. */
  readonly requestId: string | null;
  /** Attempts made, retries included. */
  readonly attempts: number;

  constructor(init: {
    status: number;
    errorType: string;
    message: string;
    retryAfter?: number | null;
    requestId?: string | null;
    attempts?: number;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "SandmanError";
    this.status = init.status;
    this.errorType = init.errorType;
    this.retryAfter = init.retryAfter ?? null;
    this.requestId = init.requestId ?? null;
    this.attempts = init.attempts ?? 1;
  }

  /** The envelope's error_type under its wire name. */
  get error_type(): string {
    return this.errorType;
  }
}

/** The error_type an answer without an envelope gets, by its status. */
export function errorTypeOfStatus(status: number): string {
  switch (status) {
    case 400: return "invalid";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 409: return "conflict";
    case 413: return "too_large";
    case 429: return "quota_exceeded";
    case 503: return "unavailable";
    default: return status >= 500 ? "internal" : "http_" + status;
  }
}

/** Retry-After in whole seconds (RFC 9110: delay-seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value == null || value.trim() === "") return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/** Builds the SandmanError of a non-2xx answer from its envelope and headers. */
export async function errorFromResponse(res: Response, attempts: number): Promise<SandmanError> {
  const text = await res.text().catch(() => "");
  let message = text.slice(0, 500) || res.statusText || "HTTP " + res.status;
  let errorType = errorTypeOfStatus(res.status);
  try {
    const env = JSON.parse(text) as { error?: unknown; error_type?: unknown };
    if (typeof env.error === "string") message = env.error;
    if (typeof env.error_type === "string" && env.error_type !== "") errorType = env.error_type;
  } catch {
    // not the API's envelope (a proxy's page): keep the status's type
  }
  const requestId =
    res.headers.get("apigw-requestid") ??
    res.headers.get("x-amzn-requestid") ??
    res.headers.get("x-request-id") ??
    /request id ([A-Za-z0-9=_-]+)/.exec(message)?.[1] ??
    null;
  return new SandmanError({
    status: res.status,
    errorType,
    message,
    retryAfter: parseRetryAfter(res.headers.get("retry-after")),
    requestId,
    attempts,
  });
}
