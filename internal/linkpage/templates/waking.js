// The waking page's script (internal/linkpage): follows the session over
// the client channel with sandman.js, moves the steps as the pushes say
// (announced in the live region #status), and opens the link again, with
// reopen=1 (never activity, wakes nothing), once the session is usable,
// its app failed or it ended; the link then redirects to the preview or
// answers why not. Without a channel it opens the link again every 3 s,
// and after 25 s in any case.
const cfg = JSON.parse(document.getElementById("sandman-link").textContent);
const live = document.getElementById("status");
const said = { done: "(done)", current: "(under way)", todo: "(to do)" };
let restoring = document.querySelector(".steps")?.dataset.restoring === "true";
// A recovery's checkpoint time, in the reader's own zone ("Restoring your
// work from <time>"): the page's own, or a push's recovery.
const when = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
const recovered = (iso) => {
  if (!iso || isNaN(Date.parse(iso))) return;
  cfg.steps.restore = { ...cfg.steps.restore, doing: "Restoring your work from " + when(iso) + "…" };
  const t = document.querySelector("#recovery time");
  if (t) t.textContent = when(iso);
};
recovered(cfg.restoring_from);

const reopen = () => {
  const q = new URLSearchParams(location.search);
  q.set("reopen", "1");
  location.replace(cfg.link + "?" + q);
};

// The step under way for a pushed status (linkpage.current, the same rule).
const stepOf = (st) => {
  if (st.state === "restoring") return "restore";
  if (st.state !== "running") return "wake";
  if (cfg.app && st.readiness === "starting") return "app";
  return "open";
};

const show = (key) => {
  const id = key === "restore" ? "wake" : key;
  if (key === "restore") restoring = true;
  const first = document.querySelector('.step[data-step="wake"] .label');
  if (first) first.textContent = (restoring ? cfg.steps.restore : cfg.steps.wake).label;
  let done = true;
  for (const li of document.querySelectorAll(".step")) {
    const state = li.dataset.step === id ? "current" : done ? "done" : "todo";
    if (state === "current") done = false;
    li.className = "step " + state;
    if (state === "current") li.setAttribute("aria-current", "step");
    else li.removeAttribute("aria-current");
    li.querySelector(".said").textContent = said[state];
  }
  const doing = (key === "restore" ? cfg.steps.restore : cfg.steps[key]).doing;
  if (live.textContent !== doing) live.textContent = doing;
};

const ended = (st) => ["killed", "failed", "expired"].includes(st.state) || st.readiness === "failed";

if (!cfg.token || !cfg.ws_url) {
  setTimeout(reopen, 3000);
} else {
  try {
    const { connect, isReady } = await import(cfg.script);
    const s = connect({ url: cfg.ws_url, token: cfg.token });
    s.addEventListener("session", (e) => {
      const st = e.detail;
      if (!st) return;
      if (ended(st)) return reopen();
      recovered(st.recovery?.checkpoint_created_at);
      show(stepOf(st));
      if (isReady(st)) reopen();
    });
    setTimeout(reopen, 25000);
  } catch {
    setTimeout(reopen, 3000);
  }
}
