// The console's two operator actions (docs/CONSOLE.md "Acting: restore and
// fork"): restore a session in place from one of its checkpoints, fork a
// new session from one. They are not watching: each is a button an
// operator presses, then confirms in a dialog that says what will happen;
// only then does the page send its one POST, with an Idempotency-Key made
// when the dialog opened (pressing again after a lost answer sends the same
// key), and it shows what the API answered, the error envelope included.
// This is the only console script that writes, and these are its only
// writes (a test holds it to that).
import { el } from "./api.js";

const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("confirm-action"));
const result = /** @type {HTMLElement} */ (document.getElementById("action-result"));

/** A fresh Idempotency-Key: 128 random bits as hex. */
function newKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return "console-" + [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * What each action does: its title, the sentence the dialog shows, the
 * route and body, and the sentence of its success.
 */
const ACTIONS = {
  restore: {
    title: "Restore this checkpoint?",
    confirm: "Restore",
    explain: (s, c) => `Session ${s.id} goes back to checkpoint ${c.id}${c.label ? ` (“${c.label}”)` : ""}, in place: the same id, link and client tokens, served by a new sandbox made from the checkpoint. Work done since it was taken is lost; the old sandbox is killed once the new one runs. A failed restore leaves the session as it is.`,
    path: (s) => `/console/api/sessions/${encodeURIComponent(s.id)}/restore`,
    body: (c) => ({ checkpoint_id: c.id }),
    done: (a) => `Restore accepted (HTTP ${a.status}): ${a.data.id} is ${a.data.state}; the timeline follows it.`,
  },
  fork: {
    title: "Fork a new session?",
    confirm: "Fork",
    explain: (s, c) => `A new session, with its own id and link, is made from checkpoint ${c.id}${c.label ? ` (“${c.label}”)` : ""} of ${s.id}, with its metadata. ${s.id} itself is not changed. The new session runs, and counts, like any other.`,
    path: (s) => `/console/api/sessions/${encodeURIComponent(s.id)}/fork`,
    body: (c) => ({ checkpoint_id: c.id }),
    done: (a) => `Fork ${a.status === 200 ? "replayed" : "made"} (HTTP ${a.status}): new session ${a.data.id}, ${a.data.state}, forked from ${a.data.forked_from?.checkpoint_id ?? "?"}.`,
  },
};

/**
 * Asks the operator to confirm action on checkpoint c of session s, and
 * when confirmed sends it and shows the answer. Resolves when done.
 * @param {"restore"|"fork"} action
 * @param {any} s the session
 * @param {any} c the checkpoint
 */
export async function act(action, s, c) {
  const a = ACTIONS[action];
  const key = newKey();
  dialog.querySelector("h2").textContent = a.title;
  dialog.querySelector(".explain").textContent = a.explain(s, c);
  dialog.querySelector(".key").textContent = `Idempotency-Key ${key}`;
  /** @type {HTMLButtonElement} */ (dialog.querySelector("button[value=confirm]")).textContent = a.confirm;
  dialog.returnValue = "";
  dialog.showModal();
  /** @type {HTMLButtonElement} */ (dialog.querySelector("button[value=cancel]")).focus();
  await new Promise((resolve) => dialog.addEventListener("close", resolve, { once: true }));
  if (dialog.returnValue !== "confirm") {
    show(`${action[0].toUpperCase()}${action.slice(1)} cancelled: nothing was sent.`, null, false);
    return;
  }
  show(`${a.confirm}: sending…`, null, false);
  let answer;
  try {
    answer = await send(a.path(s), a.body(c), key);
  } catch (e) {
    show(`${a.confirm} failed: no answer (${e.message ?? e}). Pressing ${a.confirm} again sends a new request.`, null, true);
    return;
  }
  if (answer.ok) {
    show(a.done(answer), answer.data, false, action === "fork" ? answer.data.id : "");
  } else {
    const env = answer.data ?? {};
    show(`${a.confirm} refused (HTTP ${answer.status} ${env.error_type ?? ""}): ${env.error ?? "no error envelope"}`, env, true);
  }
}

/**
 * POSTs body as JSON with the Idempotency-Key; resolves with the status,
 * whether it is 2xx, and the decoded answer.
 * @param {string} path
 * @param {any} body
 * @param {string} key
 */
async function send(path, body, key) {
  const res = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", "Idempotency-Key": key },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: text.slice(0, 200) };
  }
  return { ok: res.ok, status: res.status, data };
}

/**
 * Shows an action's outcome: a sentence, the answer as JSON, and a link to
 * a new session.
 * @param {string} sentence
 * @param {any} data
 * @param {boolean} failed
 * @param {string} [sessionId]
 */
function show(sentence, data, failed, sessionId) {
  result.dataset.outcome = failed ? "error" : "ok";
  const parts = [el("p", sentence)];
  if (sessionId) {
    const p = el("p");
    p.append(el("a", `Open ${sessionId}`, { href: `#/sessions/${sessionId}` }));
    parts.push(p);
  }
  if (data) parts.push(el("pre", JSON.stringify(data, null, 2), { class: "envelope" }));
  result.replaceChildren(...parts);
  result.hidden = false;
}

/** Clears the last outcome (another session shown). */
export function clearResult() {
  result.replaceChildren();
  result.hidden = true;
}
