// The React wrapper of <sandman-preview>: a component that renders the
// element, sets its properties and listens to its events. React is a peer
// dependency (any version from 18); the element works without it.
import { createElement, forwardRef, useEffect, useImperativeHandle, useRef, type CSSProperties } from "react";
import "./index.js";
import type { SandmanPreviewElement, StateChangeDetail, TokenSource } from "./preview.js";
import type { Messages, PreviewState, SessionStatus } from "./state.js";

/** The props of SandmanPreview: the element's attributes, properties and events. */
export interface SandmanPreviewProps {
  /** The app's endpoint that answers POST with a client token ({"token","expires_at","ws_url"}). */
  tokenUrl?: string;
  /** Fetches a client token (instead of tokenUrl). */
  getToken?: TokenSource;
  /** A client token and its channel, as such (no refresh). */
  token?: string;
  wsUrl?: string;
  expiresAt?: string;
  /** A path of the app to open. */
  path?: string;
  /** The iframe's title (default "Preview"). */
  label?: string;
  /** The iframe's allow attribute. */
  allow?: string;
  /** "light" or "dark"; default: the page's. */
  theme?: "light" | "dark";
  /** At most one heartbeat per this many milliseconds (default 30000). */
  heartbeatInterval?: number;
  /** Words to override. */
  messages?: Partial<Messages>;
  /** Called with each new state and the status body that caused it. */
  onStateChange?: (state: PreviewState, status: SessionStatus | null) => void;
  /** Called on the retry button; call event.preventDefault() to retry your own way. */
  onRetry?: (event: CustomEvent<{ status: SessionStatus | null }>) => void;
  /** Called when a token cannot be had or the channel reports an error. */
  onError?: (detail: { message: string; error?: unknown }) => void;
  className?: string;
  style?: CSSProperties;
  id?: string;
}

/** SandmanPreview renders <sandman-preview>; its ref is the element. */
export const SandmanPreview = forwardRef<SandmanPreviewElement | null, SandmanPreviewProps>(function SandmanPreview(props, ref) {
  const el = useRef<SandmanPreviewElement | null>(null);
  useImperativeHandle(ref, () => el.current as SandmanPreviewElement, []);
  const handlers = useRef(props);
  handlers.current = props;

  // A getToken given later replaces the one the ref set.
  useEffect(() => {
    const e = el.current;
    if (!e) return;
    e.getToken = props.getToken ?? null;
  }, [props.getToken]);
  useEffect(() => {
    const e = el.current;
    if (e && props.messages) e.messages = props.messages;
  }, [props.messages]);
  useEffect(() => {
    const e = el.current;
    if (!e) return;
    const onState = (ev: Event) => {
      const d = (ev as CustomEvent<StateChangeDetail>).detail;
      handlers.current.onStateChange?.(d.state, d.status);
    };
    const onRetry = (ev: Event) => handlers.current.onRetry?.(ev as CustomEvent<{ status: SessionStatus | null }>);
    const onError = (ev: Event) => handlers.current.onError?.((ev as CustomEvent<{ message: string; error?: unknown }>).detail);
    e.addEventListener("sandman-state", onState);
    e.addEventListener("sandman-retry", onRetry);
    e.addEventListener("sandman-error", onError);
    return () => {
      e.removeEventListener("sandman-state", onState);
      e.removeEventListener("sandman-retry", onRetry);
      e.removeEventListener("sandman-error", onError);
    };
  }, []);

  const attrs: Record<string, unknown> = {
    ref: (node: SandmanPreviewElement | null) => {
      // The element connects its channel a microtask after it is inserted;
      // React attaches refs in the same commit, so the first connect has
      // getToken.
      if (node) node.getToken = handlers.current.getToken ?? null;
      el.current = node;
    },
    "token-url": props.tokenUrl,
    token: props.token,
    "ws-url": props.wsUrl,
    "expires-at": props.expiresAt,
    path: props.path,
    label: props.label,
    allow: props.allow,
    theme: props.theme,
    "heartbeat-interval": props.heartbeatInterval,
    id: props.id,
    className: props.className,
    style: props.style,
  };
  return createElement("sandman-preview", attrs);
});
