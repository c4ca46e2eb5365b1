// What <sandman-preview> shows for a session's status body (the pushes of
// the client channel; docs/DESIGN.md "Client channel"): one of eight
// states, and the words it says for each. Pure: no DOM.

/** A state of the preview, as `<sandman-preview state="…">` reflects it. */
export type PreviewState =
  | "connecting" // no status yet
  | "sleeping" // paused (or pausing): the sleeping card with its one button
  | "waking" // resuming (or provisioning)
  | "restoring" // restoring from a checkpoint
  | "starting" // running, its app starting
  | "ready" // running with a preview: the iframe
  | "failed" // running but nothing to show: the app failed, or no preview URL
  | "ended"; // killed, expired or failed: the link opens nothing any more

/** The status body a push carries (GET /v1/sessions/{id}/status). */
export interface SessionStatus {
  session_id?: string;
  state: string;
  sandbox_paused?: boolean;
  preview_url?: string | null;
  readiness?: "starting" | "ready" | "failed" | null;
  readiness_detail?: string | null;
  /** A lost session's recovery while it is restoring (docs/RELIABILITY.md "Recovery"). */
  recovery?: { lost: string; checkpoint_id: string | null; checkpoint_created_at: string | null } | null;
  [field: string]: unknown;
}

/** What the card says: every sentence the component shows or announces. */
export interface Messages {
  connectingTitle: string;
  sleepingTitle: string;
  sleepingText: string;
  pausingTitle: string;
  pausingText: string;
  wakeButton: string;
  wakingTitle: string;
  progress: string;
  stepWake: string;
  stepRestore: string;
  stepApp: string;
  stepOpen: string;
  doingWake: string;
  doingRestore: string;
  /** A lost session's recovery: "{time}" stands for the checkpoint's time. */
  recoveringTitle: string;
  recoveringText: string;
  doingRecover: string;
  recreatingTitle: string;
  recreatingText: string;
  doingApp: string;
  ready: string;
  appFailedTitle: string;
  appFailedText: string;
  noPreviewTitle: string;
  noPreviewText: string;
  retryButton: string;
  details: string;
  endedTitle: string;
  endedText: string;
  unrecoverableTitle: string;
  unrecoverableText: string;
  wakeFailed: string;
  reconnecting: string;
  iframeTitle: string;
}

/** The default words (English); `element.messages` overrides any of them. */
export const defaultMessages: Messages = {
  connectingTitle: "Connecting to the preview…",
  sleepingTitle: "This preview is sleeping",
  sleepingText: "It was paused so that it costs nothing while nobody uses it. Wake it up to go on where you left off.",
  pausingTitle: "This preview is going to sleep",
  pausingText: "It is being paused; you can wake it up again in a moment.",
  wakeButton: "Wake it up",
  wakingTitle: "Waking up the preview",
  progress: "Progress",
  stepWake: "Wake the sandbox",
  stepRestore: "Restore from a checkpoint",
  stepApp: "Start the app",
  stepOpen: "Open the preview",
  doingWake: "Waking the sandbox…",
  doingRestore: "Restoring the sandbox from a checkpoint…",
  recoveringTitle: "Restoring your work from {time}",
  recoveringText: "Its sandbox was lost; the work saved then comes back here, on the same link.",
  doingRecover: "Restoring your work from {time}…",
  recreatingTitle: "Starting a fresh sandbox",
  recreatingText: "Its sandbox was lost and there was no checkpoint to restore, so a fresh one is made from its template.",
  doingApp: "Starting the app…",
  ready: "The preview is ready.",
  appFailedTitle: "The app didn't start",
  appFailedText: "Its start command failed, so there is nothing to show.",
  noPreviewTitle: "There's nothing to show",
  noPreviewText: "The sandbox is running but gave no preview address to open.",
  retryButton: "Try again",
  details: "Technical details",
  endedTitle: "This session has ended",
  endedText: "It was closed, so there is nothing to show any more. Start a new session to keep working.",
  unrecoverableTitle: "This preview can't be recovered",
  unrecoverableText: "Its sandbox is gone. Start a new session to keep working.",
  wakeFailed: "It could not be woken up. Try again in a moment.",
  reconnecting: "Reconnecting…",
  iframeTitle: "Preview",
};

/** The step under way while the preview wakes: which, and whether the first is a restore. */
export type Step = "wake" | "app" | "open";

/** What the component shows for a status: the state and its details. */
export interface View {
  state: PreviewState;
  /** sleeping: the session is pausing, so the wake button waits. */
  pausing?: boolean;
  /** waking, restoring, starting: the step under way. */
  step?: Step;
  /** failed: why ("app" failed, "no_preview"); ended: "killed" or "unrecoverable". */
  why?: "app" | "no_preview" | "killed" | "unrecoverable";
  /** failed with why "app": the reason, as a sentence, and the app's last output lines (from readiness_detail). */
  reason?: string;
  output?: string;
  /** ready: the preview URL to show. */
  previewURL?: string;
  /** restoring a lost session: the checkpoint's time (RFC 3339), or "" for a fresh sandbox. */
  recoveringFrom?: string;
}

/** Whether a status shows a usable preview (sandman.js isReady, plus a URL). */
export function isUsable(s: SessionStatus | null | undefined): boolean {
  return s?.state === "running" && (s.readiness == null || s.readiness === "ready") && !!s.preview_url;
}

/** viewOf maps a pushed status body (or null, none yet) to what the component shows. */
export function viewOf(s: SessionStatus | null | undefined): View {
  if (!s) return { state: "connecting" };
  switch (s.state) {
    case "paused":
      return { state: "sleeping" };
    case "pausing":
      return { state: "sleeping", pausing: true };
    case "resuming":
    case "provisioning":
      return { state: "waking", step: "wake" };
    case "restoring":
      if (s.recovery) return { state: "restoring", step: "wake", recoveringFrom: s.recovery.checkpoint_created_at ?? "" };
      return { state: "restoring", step: "wake" };
    case "killed":
      return { state: "ended", why: "killed" };
    case "expired":
    case "failed":
      return { state: "ended", why: "unrecoverable" };
    case "running":
      if (s.readiness === "starting") return { state: "starting", step: "app" };
      if (s.readiness === "failed") return { state: "failed", why: "app", ...splitDetail(s.readiness_detail) };
      if (!s.preview_url) return { state: "failed", why: "no_preview" };
      return { state: "ready", previewURL: s.preview_url };
  }
  return { state: "connecting" };
}

// readiness_detail is the reason, then, when the provider kept them, this
// separator and the app's last output lines (docs/READINESS.md).
const outputSeparator = "; last output:\n";

/** splitDetail splits a readiness_detail into its reason (a sentence) and output. */
export function splitDetail(detail: string | null | undefined): { reason?: string; output?: string } {
  if (!detail) return {};
  const at = detail.indexOf(outputSeparator);
  const why = (at < 0 ? detail : detail.slice(0, at)).trim();
  const output = at < 0 ? undefined : detail.slice(at + outputSeparator.length);
  const reason = why ? why[0].toUpperCase() + why.slice(1) + (/[.!?]$/.test(why) ? "" : ".") : undefined;
  return { reason, output };
}

/** The sentence the live region announces when the view becomes v. */
export function announcement(v: View, m: Messages): string {
  switch (v.state) {
    case "connecting":
      return m.connectingTitle;
    case "sleeping":
      return v.pausing ? m.pausingTitle + "." : m.sleepingTitle + ".";
    case "waking":
      return m.doingWake;
    case "restoring":
      if (v.recoveringFrom === "") return m.recreatingTitle + ".";
      if (v.recoveringFrom) return m.doingRecover.replace("{time}", when(v.recoveringFrom));
      return m.doingRestore;
    case "starting":
      return m.doingApp;
    case "ready":
      return m.ready;
    case "failed":
      return (v.why === "app" ? m.appFailedTitle : m.noPreviewTitle) + ".";
    case "ended":
      return (v.why === "killed" ? m.endedTitle : m.unrecoverableTitle) + ".";
  }
}

/** when writes an RFC 3339 time in the reader's own zone and words. */
export function when(iso: string): string {
  const t = Date.parse(iso);
  return isNaN(t) ? iso : new Date(t).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** withPath appends path (a path of the app, e.g. "/docs") to a preview URL. */
export function withPath(preview: string, path: string | null | undefined): string {
  if (!path) return preview;
  try {
    const u = new URL(preview);
    u.pathname = u.pathname.replace(/\/$/, "") + "/" + path.replace(/^\//, "");
    return u.toString();
  } catch {
    return preview;
  }
}
