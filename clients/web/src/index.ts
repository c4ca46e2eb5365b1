// @sandmanhq/web: Sandman in a customer's front end. Importing it defines
// <sandman-preview> (SandmanPreviewElement), a session's preview with every
// state; the React wrapper is "@sandmanhq/web/react" and the bare client
// module "@sandmanhq/web/sandman".
import { define } from "./preview.js";

export { SandmanPreviewElement, define, tagName } from "./preview.js";
export type { StateChangeDetail, TokenAnswer, TokenSource } from "./preview.js";
export { defaultMessages, isUsable, viewOf } from "./state.js";
export type { Messages, PreviewState, SessionStatus, View } from "./state.js";
export { connect, isReady, recoveryText, SandmanSession } from "./sandman.js";

define();
