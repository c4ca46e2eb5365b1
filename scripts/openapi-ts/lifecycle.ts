// A small Sandman client program: create a session, pause it and
// resume it, typed by the types openapi-typescript generates from
// docs/openapi.json (./sandman.ts) through openapi-fetch. scripts/openapi-ts.sh
// type-checks it (`make lint`); it is not run. A change of the document that
// breaks a client like this one (a renamed route, field or type) fails the
// check.
import createClient from "openapi-fetch";
import type { components, paths } from "./sandman";

type Session = components["schemas"]["Session"];
type State = components["schemas"]["SessionState"];

const client = createClient<paths>({
  baseUrl: "http://127.0.0.1:8080",
  headers: { Authorization: "Bearer sk_dev" },
});

function fail(what: string, error: components["schemas"]["Error"] | undefined): never {
  throw new Error(`${what}: ${error?.error ?? "no answer"} (${error?.error_type ?? "?"})`);
}

export async function lifecycle(): Promise<string | null> {
  const created = await client.POST("/v1/sessions", {
    params: { header: { "Idempotency-Key": "demo-1" } },
    body: { template: "web", idle_timeout_seconds: 600, metadata: { user: "ada" } },
  });
  if (!created.data) fail("create", created.error);
  const session: Session = created.data;
  const id: string = session.id;
  const running: State = session.state;

  const paused = await client.POST("/v1/sessions/{id}/pause", { params: { path: { id } } });
  if (!paused.data) fail("pause", paused.error);
  const wasPaused: true = paused.data.paused;

  const status = await client.GET("/v1/sessions/{id}/status", { params: { path: { id } } });
  if (!status.data) fail("status", status.error);
  const hasSnapshot: boolean = status.data.has_snapshot;
  const pauseDeadline: string | null = status.data.lifecycle.pause_deadline;

  const resumed = await client.POST("/v1/sessions/{id}/resume", { params: { path: { id } } });
  if (!resumed.data) {
    if (resumed.error?.error_type === "sandbox_expired") return null;
    fail("resume", resumed.error);
  }
  const version: number = resumed.data.session.version;
  console.log(running, wasPaused, hasSnapshot, pauseDeadline, version);
  return resumed.data.preview_url;
}
