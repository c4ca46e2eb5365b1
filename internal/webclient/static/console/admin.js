// The deployment's warm pools (#/pools, GET /v1/pools) and the account's
// webhook endpoints with their last deliveries (#/webhooks, GET
// /v1/webhook-endpoints and …/deliveries): read when shown and on Refresh.
import { read, el, when, say } from "./api.js";

/** Shows the pools. */
export async function showPools() {
  const root = /** @type {HTMLElement} */ (document.getElementById("view-pools"));
  let data;
  try {
    data = await read("/console/api/pools");
  } catch (e) {
    say(`cannot list pools: ${e.message ?? e}`);
    return;
  }
  const pools = data.pools ?? [];
  /** @type {HTMLElement} */ (root.querySelector(".empty")).hidden = pools.length > 0;
  root.querySelector("tbody").replaceChildren(...pools.map((p) => {
    const tr = el("tr");
    for (const [label, text] of [["Pool", p.id], ["Provider", p.provider], ["Template", p.template], ["Size", `${p.size} (${p.tier})`],
      ["Ready", String(p.ready)], ["Making", String(p.making)], ["Hit rate", `${Math.round(100 * p.hit_rate)}% (${p.hits} of ${p.hits + p.misses})`],
      ["Last error", p.last_error ?? "–"]]) {
      tr.append(el("td", text, { "data-label": label }));
    }
    return tr;
  }));
}

/** Shows the webhook endpoints and each one's last 5 deliveries. */
export async function showWebhooks() {
  const root = /** @type {HTMLElement} */ (document.getElementById("view-webhooks"));
  const box = /** @type {HTMLElement} */ (root.querySelector(".endpoints"));
  let data;
  try {
    data = await read("/console/api/webhook-endpoints");
  } catch (e) {
    say(`cannot list webhook endpoints: ${e.message ?? e}`);
    return;
  }
  const endpoints = data.webhook_endpoints ?? [];
  /** @type {HTMLElement} */ (root.querySelector(".empty")).hidden = endpoints.length > 0;
  const boxes = [];
  for (const ep of endpoints) {
    const article = el("article", undefined, { class: "endpoint" });
    const title = el("header");
    title.append(el("code", ep.id), " ", el("span", ep.url), " · ",
      el("span", ep.disabled ? `disabled: ${ep.disabled_reason ?? ""}` : (ep.event_types.length ? ep.event_types.join(", ") : "every event")));
    article.append(title);
    const table = el("table");
    const head = el("tr");
    for (const h of ["Event", "Type", "Status", "Attempts (status codes)", "Next attempt"]) head.append(el("th", h, { scope: "col" }));
    const thead = el("thead");
    thead.append(head);
    const tbody = el("tbody");
    table.append(thead, tbody);
    try {
      const log = await read(`/console/api/webhook-endpoints/${encodeURIComponent(ep.id)}/deliveries?limit=5`);
      for (const d of log.deliveries ?? []) {
        const row = el("tr");
        row.dataset.status = d.status;
        const codes = d.attempts.map((a) => a.status_code ?? "–").join(", ");
        for (const [label, text] of [["Event", d.event_id], ["Type", d.event_type], ["Status", d.status],
          ["Attempts", codes || "–"], ["Next attempt", when(d.next_attempt_at)]]) {
          row.append(el("td", text, { "data-label": label }));
        }
        tbody.append(row);
      }
    } catch (e) {
      article.append(el("p", `cannot read deliveries: ${e.message ?? e}`));
    }
    article.append(table);
    boxes.push(article);
  }
  box.replaceChildren(...boxes);
}

document.getElementById("webhooks-refresh")?.addEventListener("click", showWebhooks);
