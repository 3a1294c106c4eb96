// The web console: one page over the console REST API (/console/v1), signed in with a console
// session (or the operator's console token). No framework: DOM built with el(), never innerHTML
// from data; the chart is uPlot's, served from its npm package under /vendor/.
import uPlot from "/vendor/uPlot.esm.js";
import { renderOptOuts } from "/opt-outs.js";
import { renderSender } from "/sender.js";

const state = { token: sessionStorage.getItem("console-token"), me: null, workspaces: [], workspaceId: null };
const app = document.getElementById("app");
/** Event types an endpoint may select (spec §Events). */
const EVENT_TYPES = ["message.sent", "message.delivered", "message.read", "message.failed", "message.canceled", "message.received", "flow.completed", "contact.opted_out", "contact.opted_in"];
const SCOPES = ["senders:read", "templates:read", "messages:send", "messages:read", "webhooks:read", "flow_responses:read"];

/** Builds an element: el("td", { class: "x", onclick: f }, "text", child…). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces `node`'s children, leaving out null, undefined and false (replaceChildren would print "null"). */
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((child) => child !== undefined && child !== null && child !== false));
}

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
  }
}

/** Calls the console REST API; throws ApiError with the error body's message. */
async function api(method, path, body) {
  const headers = { authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && !path.endsWith("/sessions")) signOut();
    throw new ApiError(res.status, json);
  }
  return json;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");

/**
 * A table of `headers` and `rows`. On a phone (CSS, max-width 640 px) each row is a card: its cells stacked, each
 * under its column's name (the cell's data-label), so status, credits and actions stay on screen; a row of one
 * cell spanning the table (details shown on demand) stays one block.
 */
function table(headers, rows, attrs = {}) {
  const body = el("tbody", {}, rows);
  for (const row of body.rows) {
    if (row.cells.length === 1 && row.cells[0].colSpan > 1) row.classList.add("detail");
    else [...row.cells].forEach((cell, i) => cell.setAttribute("data-label", headers[i] ?? ""));
  }
  return el("div", { class: "scroll" }, el("table", { class: "cards", ...attrs }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), body));
}

/** A long id as people read it: its prefix, its first 8 characters, "…", its last 4 (msg_01a21a6e…f581). */
const shortId = (id) => {
  const at = id.indexOf("_") + 1;
  const rest = id.slice(at);
  return rest.length > 16 ? `${id.slice(0, at)}${rest.slice(0, 8)}…${rest.slice(-4)}` : id;
};

/** Writes `text` to the clipboard; `button` says "Copied" for a moment. */
async function copyText(text, button) {
  await navigator.clipboard.writeText(text);
  const label = button.textContent;
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = label), 1500);
}

/**
 * An id shortened (shortId), whole in its title and data-id, with a button that copies it whole; a link when
 * `href` is given. Never breaks across lines.
 */
function idChip(id, href) {
  if (!id) return el("span", { class: "muted" }, "—");
  const text = href ? el("a", { href, title: id, class: "mono" }, shortId(id)) : el("code", { title: id }, shortId(id));
  return el("span", { class: "id-chip", "data-id": id }, text,
    el("button", { type: "button", class: "copy", "aria-label": `Copy ${id}`, onclick: (event) => copyText(id, event.currentTarget) }, "Copy"));
}

/** A number (a phone number, an amount) that never breaks across lines; amounts with the locale's separators. */
const num = (value, test) => el("span", { class: "num", "data-test": test }, typeof value === "number" ? value.toLocaleString() : value);
/** Asks before a change that cannot be undone or cuts something off; resolves to the answer. */
const confirmed = (question) => window.confirm(question);
/** The query of the hash: "#messages?status=failed" → URLSearchParams("status=failed"). */
const hashQuery = () => new URLSearchParams(location.hash.split("?")[1] ?? "");
/** A JSON value, indented, in a <pre>. */
const jsonBlock = (value, test) => el("pre", { class: "json", "data-test": test }, JSON.stringify(value, null, 2));
const statusBadge = (status, test = "status") =>
  el("span", { class: `badge ${["succeeded", "delivered", "read", "active", "ok"].includes(status) ? "ok" : ["failed", "revoked", "disabled", "refused", "canceled"].includes(status) ? "bad" : ""}`, "data-test": test }, status);
const ws = () => `/console/v1/workspaces/${state.workspaceId}`;
const errorLine = (err) => el("p", { class: "error", role: "alert" }, err.message);

function signOut() {
  if (state.token?.startsWith("cs_")) fetch("/console/v1/sessions:logout", { method: "POST", headers: { authorization: `Bearer ${state.token}` }, body: "{}" });
  sessionStorage.removeItem("console-token");
  state.token = null;
  renderSignIn();
}

function renderSignIn(message) {
  document.getElementById("workspace").hidden = true;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("who").textContent = "";
  // Email and password, or the console token instead: neither pair is required on its own.
  const email = el("input", { type: "email", name: "email", id: "email", autocomplete: "username" });
  const password = el("input", { type: "password", name: "password", id: "password", autocomplete: "current-password" });
  const token = el("input", { type: "password", name: "token", id: "token", autocomplete: "off" });
  const form = createForm("Sign in", async () => {
    try {
      if (token.value) {
        state.token = token.value;
      } else {
        if (!email.value || !password.value) throw new Error("Enter your email and password, or a console token");
        state.token = (await api("POST", "/console/v1/sessions", { email: email.value, password: password.value })).token;
      }
      sessionStorage.setItem("console-token", state.token);
      await start();
    } catch (err) {
      state.token = null;
      throw err;
    }
  },
    el("label", { for: "email" }, "Email"), email,
    el("label", { for: "password" }, "Password"), password,
    el("label", { for: "token" }, "or console token"), token,
  );
  fill(app, el("section", { class: "card" }, el("h2", {}, "Sign in"), message ? el("p", { class: "muted" }, message) : null, form));
}

async function start() {
  const me = await api("GET", "/console/v1/me");
  state.me = me;
  const operator = me.kind === "operator" || me.user?.operator;
  document.getElementById("who").textContent = me.kind === "operator" ? "operator" : me.user.email;
  document.getElementById("sign-out").hidden = false;
  if (operator) {
    state.workspaces = (await api("GET", "/console/v1/workspaces?page_size=100")).data;
  } else {
    state.workspaces = await Promise.all(me.user.roles.map((r) => api("GET", `/console/v1/workspaces/${r.workspace_id}`)));
  }
  const select = document.getElementById("workspace");
  fill(select, ...state.workspaces.map((w) => el("option", { value: w.id }, w.name)));
  select.hidden = state.workspaces.length === 0;
  state.workspaceId = state.workspaces.find((w) => w.id === sessionStorage.getItem("workspace"))?.id ?? state.workspaces[0]?.id ?? null;
  select.value = state.workspaceId ?? "";
  route();
}

const views = {
  overview: renderOverview,
  messages: renderMessages,
  forms: renderForms,
  senders: renderSenders,
  templates: renderTemplates,
  credits: renderCredits,
  keys: renderKeys,
  webhooks: renderWebhooks,
  refused: renderRefused,
  "opt-outs": (body) => renderOptOuts(body, { el, fill, api, table, when, ws, errorLine, createForm, confirmed, statusBadge, canChange }),
  users: renderUsers,
  audit: renderAudit,
};
const titles = {
  overview: "Overview", messages: "Messages", forms: "Forms", senders: "Senders", templates: "Templates", credits: "Credits",
  keys: "API keys", webhooks: "Webhooks", refused: "Refused requests", "opt-outs": "Opt-outs",
  users: "Users", audit: "Audit log",
};

function route() {
  if (!state.token) return renderSignIn();
  if (!state.workspaceId) return fill(app, el("p", { class: "muted" }, "No workspace yet."));
  // "#refused?since=7d" and "#messages/msg_…" both name their view before "?" or "/".
  const name = (location.hash.slice(1) || "overview").split(/[/?]/)[0];
  const view = views[name] ?? renderOverview;
  // The tabs wrap on a wide screen; on a phone they are a menu that opens below its button, every tab in reach.
  const current = views[name] ? name : "overview";
  const toggle = el("button", { type: "button", class: "menu-toggle", "aria-expanded": "false", "aria-controls": "tabs" }, `Menu · ${titles[current]}`);
  const tabs = el("div", { class: "tabs", id: "tabs" }, Object.keys(views).map((key) => el("a", { href: `#${key}`, class: key === current ? "active" : undefined }, titles[key])));
  const nav = el("nav", {}, toggle, tabs);
  const setOpen = (open) => {
    nav.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", String(open));
  };
  toggle.addEventListener("click", () => setOpen(!nav.classList.contains("open")));
  tabs.addEventListener("click", () => setOpen(false)); // a tab chosen (even the current one) closes the menu
  const body = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  fill(app, el("h2", {}, "Developers"), nav, body);
  view(body).catch((err) => fill(body, errorLine(err)));
}

async function renderOverview(body) {
  const [workspace, stats, ledger] = await Promise.all([
    api("GET", ws()),
    api("GET", `${ws()}/message_stats`),
    api("GET", `${ws()}/credit_ledger?page_size=10`),
  ]);
  const stat = (label, value, test) => el("div", { class: "stat" }, el("span", { class: "muted" }, label), el("b", { class: "num", "data-test": test }, value));
  const statuses = ["accepted", "sent", "delivered", "read", "failed", "scheduled", "canceled"];
  fill(
    body,
    el("section", { class: "card" },
      el("h2", {}, workspace.name),
      el("p", { class: "muted" }, "Workspace ", idChip(workspace.id), ` · ${workspace.status}`),
      el("div", { class: "stats" },
        stat("Credit balance", workspace.credit_balance, "credit-balance"),
        stat("Messages sent (24 h)", stats.recent, "messages-recent"),
        stat("Replies (24 h)", stats.recent_replies, "replies-recent"),
        stat("Messages, all time", stats.total, "messages-total"),
        stat("Unique recipients (24 h)", messagingLimit(workspace), "messaging-limit"),
      )),
    el("section", { class: "card" }, el("h2", {}, "Messages by status"),
      el("div", { class: "scroll" }, el("table", {}, el("tbody", {}, statuses.map((s) => el("tr", { "data-status": s }, el("td", {}, el("a", { href: `#messages?status=${s}` }, s)), el("td", { "data-test": "count", class: "num" }, stats.by_status[s] ?? 0))))))),
    el("section", { class: "card" }, el("h2", {}, "Credit ledger"),
      ledger.data.length === 0 ? el("p", { class: "muted" }, "No credit changes yet.") : ledgerTable(ledger.data),
      el("p", {}, el("a", { href: "#credits" }, "All credit changes, and top-ups →"))),
  );
}

/** How much of the workspace's messaging limit (unique recipients in a moving 24 hours) is used, e.g. "12 of 250". */
function messagingLimit(workspace) {
  const limits = { tier_250: 250, tier_2k: 2000, tier_10k: 10000, tier_100k: 100000 };
  const limit = limits[workspace.messaging_limit];
  return limit ? `${Number(workspace.messaging_limit_used ?? 0).toLocaleString()} of ${limit.toLocaleString()}` : "unlimited";
}

/** Credit ledger entries: when, the change, the balance after it, its kind, the message it was for, the note. */
function ledgerTable(entries) {
  return table(["When", "Change", "Balance after", "Kind", "Message", "Note"], entries.map((e) => el("tr", { "data-entry-id": e.id },
    el("td", {}, when(e.created_at)), el("td", {}, num(e.amount > 0 ? `+${e.amount.toLocaleString()}` : e.amount.toLocaleString())),
    el("td", {}, num(e.balance_after ?? "—")), el("td", {}, e.kind ?? ""),
    el("td", {}, e.message_id ? idChip(e.message_id, `#messages/${e.message_id}`) : ""), el("td", {}, e.note ?? ""))));
}

async function renderKeys(body) {
  const keys = (await api("GET", `${ws()}/api_keys?page_size=100`)).data;
  const canEdit = canChange();
  const rows = keys.map((k) =>
    el(
      "tr",
      { "data-key-id": k.id },
      el("td", {}, k.name, el("div", {}, idChip(k.id)), el("div", { class: "mono muted" }, `${k.secret_prefix}…`),
        k.previous_secret_prefix ? el("div", { class: "muted", "data-test": "previous-secret" }, `previous ${k.previous_secret_prefix}… works until ${when(k.previous_secret_expires_at)}`) : null),
      el("td", {}, k.scopes.length ? k.scopes.join(", ") : el("span", { class: "muted" }, "none")),
      el("td", {}, num(`${k.rate_limit_per_min}/min`)),
      el("td", {}, k.ip_allow_list.length ? k.ip_allow_list.join(", ") : el("span", { class: "muted" }, "any")),
      el("td", {}, when(k.expires_at)),
      el("td", {}, when(k.last_used_at)),
      el("td", {}, el("span", { class: `badge ${k.status === "active" ? "ok" : "bad"}` }, k.status)),
      el("td", { class: "actions" }, canEdit && k.status === "active" ? [rollControl(k, body), el("button", { class: "danger", onclick: async () => {
        if (!confirmed(`Revoke the key "${k.name}"? Requests with it are refused from then on; this cannot be undone.`)) return;
        await api("POST", `/console/v1/api_keys/${k.id}:revoke`, {});
        route();
      } }, "Revoke")] : null),
    ),
  );
  const name = el("input", { type: "text", id: "key-name", required: true });
  const scopes = checkboxes(SCOPES);
  const expires = el("input", { type: "datetime-local", id: "key-expires" });
  const allow = el("input", { type: "text", id: "key-allow", placeholder: "203.0.113.0/24, 2001:db8::/32 (empty: any)" });
  const rate = el("input", { type: "number", id: "key-rate", min: 1, max: 100, value: 30 });
  const form = createForm("Create key", async () => {
    const created = await api("POST", `${ws()}/api_keys`, {
      name: name.value,
      scopes: scopes.checked(),
      expires_at: expires.value ? new Date(expires.value).toISOString() : null,
      ip_allow_list: allow.value.split(",").map((s) => s.trim()).filter(Boolean),
      rate_limit_per_min: Number(rate.value),
    });
    await renderKeys(body);
    body.prepend(secretPanel("API key created. Copy its secret now: it is shown once.", created.secret));
  },
    el("label", { for: "key-name" }, "Name"), name,
    el("span", {}, "Scopes"), scopes.node,
    el("label", { for: "key-expires" }, "Expires"), expires,
    el("label", { for: "key-allow" }, "IP allow-list"), allow,
    el("label", { for: "key-rate" }, "Requests per minute"), rate,
  );
  fill(
    body,
    el("section", { class: "card" }, el("h2", {}, "API keys"), keys.length === 0 ? el("p", { class: "muted" }, "No keys yet.") :
      table(["Name", "Scopes", "Budget", "Allowed from", "Expires", "Last used", "Status", ""], rows)),
    canEdit ? el("section", { class: "card" }, el("h2", {}, "Create a key"), form) : null,
  );
}

/** How long an old secret keeps working once replaced: a select of 0, 1 h, 24 h, 7 d (in ms), `chosen` first selected. */
function overlapSelect(testId, chosen) {
  return el("select", { "aria-label": "Old secret works for", "data-test": testId },
    [["0", "old stops now"], ["3600000", "old works 1 h"], ["86400000", "old works 24 h"], ["604800000", "old works 7 d"]].map(([v, label]) =>
      el("option", { value: v, ...(v === chosen ? { selected: "" } : {}) }, label)));
}

/** "Rotate secret" of a webhook endpoint, with how long the old secret keeps signing (24 h first); the new one is shown once. */
function rotateControl(endpoint, body) {
  const overlap = overlapSelect("rotate-overlap", "86400000");
  const rotate = async () => {
    const ms = Number(overlap.value);
    const question = `Rotate the signing secret of "${endpoint.name}"? Deliveries are signed with a new secret; the current one ${ms === 0 ? "stops at once" : `signs them too until ${new Date(Date.now() + ms).toLocaleString()}`}.`;
    if (!confirmed(question)) return;
    try {
      const rotated = await api("POST", `/console/v1/webhook_endpoints/${endpoint.id}:rotateSecret`, { previous_secret_expires_at: new Date(Date.now() + ms).toISOString() });
      await renderWebhooks(body);
      body.prepend(secretPanel(`Secret of "${endpoint.name}" rotated. Copy the new signing secret now: it is shown once.`, rotated.secret));
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  return el("span", { class: "roll" }, overlap, el("button", { onclick: rotate }, "Rotate secret"));
}

/** "Roll" with how long the old secret keeps working; the new secret is shown once above the table. */
function rollControl(key, body) {
  const overlap = overlapSelect("roll-overlap", "0");
  const roll = async () => {
    const ms = Number(overlap.value);
    const question = `Roll the key "${key.name}"? It gets a new secret; the current one ${ms === 0 ? "stops working at once" : `keeps working until ${new Date(Date.now() + ms).toLocaleString()}`}.`;
    if (!confirmed(question)) return;
    try {
      const rolled = await api("POST", `/console/v1/api_keys/${key.id}:roll`, ms === 0 ? {} : { previous_secret_expires_at: new Date(Date.now() + ms).toISOString() });
      await renderKeys(body);
      body.prepend(secretPanel(`Key "${key.name}" rolled. Copy its new secret now: it is shown once.`, rolled.secret));
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  return el("span", { class: "roll" }, overlap, el("button", { onclick: roll }, "Roll"));
}

function secretPanel(text, secret) {
  const copied = el("span", { class: "muted" });
  return el(
    "div",
    { class: "secret", role: "status" },
    el("span", {}, text),
    el("code", { "data-test": "secret" }, secret),
    el("button", { onclick: async () => { await navigator.clipboard.writeText(secret); copied.textContent = "copied"; } }, "Copy"),
    copied,
  );
}

async function renderWebhooks(body) {
  const endpoints = (await api("GET", `${ws()}/webhook_endpoints?page_size=100`)).data;
  const canEdit = canChange();
  const act = (path, payload, question) => async () => {
    if (question && !confirmed(question)) return;
    try {
      await api("POST", path, payload ?? {});
      await renderWebhooks(body);
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  const rows = endpoints.map((e) =>
    el(
      "tr",
      { "data-endpoint-id": e.id },
      el("td", {}, e.name, el("div", {}, idChip(e.id)), el("div", { class: "mono muted" }, e.url)),
      el("td", {}, el("span", { class: "mono", "data-test": "secret-hint" }, e.secret_hint),
        e.previous_secret_expires_at ? el("div", { class: "muted", "data-test": "previous-secret" }, `previous secret signs too until ${when(e.previous_secret_expires_at)}`) : null),
      el("td", {}, e.events.join(", "),
        el("div", { class: "muted", "data-test": "rate-limit-now" }, e.rate_limit === null ? "no rate limit" : `at most ${e.rate_limit} attempts/s`),
        canEdit ? rateLimitControl(e, body) : null),
      el("td", {},
        el("span", { class: `badge ${e.enabled ? "ok" : "bad"}`, "data-test": "enabled" }, e.enabled ? "enabled" : "disabled"),
        e.disabled_reason ? el("div", { class: "muted", "data-test": "disabled-reason" }, e.disabled_reason) : null),
      el("td", {}, when(e.last_success_at)),
      el("td", {}, e.consecutive_failures),
      el("td", {},
        el("a", { href: `#webhooks/${e.id}` }, "Deliveries"), " ",
        canEdit ? (e.enabled
          ? el("button", { class: "danger", onclick: act(`/console/v1/webhook_endpoints/${e.id}:disable`, { reason: "" }, `Disable the endpoint "${e.name}"? Its deliveries wait until it is enabled again.`) }, "Disable")
          : el("button", { onclick: act(`/console/v1/webhook_endpoints/${e.id}:enable`) }, "Enable")) : null,
        canEdit ? [" ", rotateControl(e, body)] : null),
    ),
  );
  const endpointId = location.hash.slice(1).split("?")[0].split("/")[1];
  const selected = endpoints.find((e) => e.id === endpointId);
  fill(
    body,
    el("section", { class: "card" }, el("h2", {}, "Webhook endpoints"), endpoints.length === 0 ? el("p", { class: "muted" }, "No endpoints yet.") :
      table(["Name", "Secret", "Events", "Status", "Last success", "Failures in a row", ""], rows)),
    selected ? await deliveriesCard(selected, canEdit) : null,
    canEdit ? endpointForm(body) : null,
  );
}

/** An endpoint's rate limit (attempts per second; empty: none), changed with "Set". */
function rateLimitControl(endpoint, body) {
  const input = el("input", { type: "number", min: 1, max: 10000, placeholder: "no limit", "aria-label": "Rate limit per second", "data-test": "rate-limit",
    value: endpoint.rate_limit ?? undefined, class: "narrow" });
  const set = async () => {
    try {
      await api("PATCH", `/console/v1/webhook_endpoints/${endpoint.id}?update_mask=rate_limit`, { rate_limit: input.value === "" ? null : Number(input.value) });
      await renderWebhooks(body);
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  return el("div", { class: "roll" }, input, " /s ", el("button", { onclick: set }, "Set limit"));
}

/** Whether the signed-in person may change the selected workspace (operators and its admins). */
function canChange() {
  if (state.me.kind === "operator" || state.me.user?.operator) return true;
  return state.me.user.roles.some((r) => r.workspace_id === state.workspaceId && r.role === "admin");
}

function endpointForm(body) {
  const name = el("input", { type: "text", id: "endpoint-name", required: true });
  const url = el("input", { type: "text", id: "endpoint-url", required: true, placeholder: "https://example.com/webhooks" });
  const events = checkboxes(EVENT_TYPES);
  const rateLimit = el("input", { type: "number", id: "endpoint-rate-limit", min: 1, max: 10000, placeholder: "no limit" });
  const form = createForm("Add endpoint", async () => {
    const created = await api("POST", `${ws()}/webhook_endpoints`, {
      name: name.value, url: url.value, events: events.checked(), ...(rateLimit.value === "" ? {} : { rate_limit: Number(rateLimit.value) }),
    });
    await renderWebhooks(body);
    body.prepend(secretPanel("Endpoint created. Copy its signing secret now: it is shown once.", created.secret));
  },
    el("label", { for: "endpoint-name" }, "Name"), name,
    el("label", { for: "endpoint-url" }, "URL"), url,
    el("span", {}, "Events"), events.node,
    el("label", { for: "endpoint-rate-limit" }, "Rate limit (attempts per second)"), rateLimit,
  );
  return el("section", { class: "card" }, el("h2", {}, "Add an endpoint"), form);
}

/** A two-column form of `fields` and a submit button; `submit`'s errors are shown under it. */
function createForm(label, submit, ...fields) {
  const status = el("div");
  const form = el(
    "form",
    {
      class: "grid",
      onsubmit: async (event) => {
        event.preventDefault();
        fill(status);
        try {
          await submit();
        } catch (err) {
          status.append(errorLine(err));
        }
      },
    },
    ...fields,
    el("span"), el("div", {}, el("button", { class: "primary", type: "submit" }, label)),
  );
  return el("div", {}, form, status);
}

/** Checkboxes for `values`: the element, and the values checked. */
function checkboxes(values) {
  const inputs = values.map((value) => el("input", { type: "checkbox", value }));
  return {
    node: el("div", { class: "checks" }, inputs.map((input) => el("label", {}, input, ` ${input.value}`))),
    checked: () => inputs.filter((i) => i.checked).map((i) => i.value),
  };
}

/** The endpoint's latest deliveries, each with its attempts on demand and a retry button. */
async function deliveriesCard(endpoint, canEdit) {
  const deliveries = (await api("GET", `/console/v1/deliveries?endpoint_id=${encodeURIComponent(endpoint.id)}&page_size=50`)).data;
  const rows = deliveries.map((d) => {
    const detail = el("tr", { hidden: true }, el("td", { colspan: 6 }));
    const payload = async () => {
      const event = await api("GET", `${ws()}/events/${d.event_id}`);
      detail.hidden = false;
      fill(detail.firstChild, el("h3", {}, `Event ${event.type}`), jsonBlock({ id: event.id, type: event.type, created_at: event.created_at, data: event.data }, "payload"));
    };
    const show = async () => {
      const attempts = (await api("GET", `/console/v1/deliveries/${d.id}/attempts?page_size=100`)).data;
      detail.hidden = false;
      fill(detail.firstChild, attempts.length === 0 ? el("p", { class: "muted" }, "No attempts yet.") :
        table(["#", "Trigger", "Started", "Duration", "HTTP", "Outcome", "Answer (excerpt)"], attempts.map((a) => el("tr", { "data-attempt-id": a.id },
            el("td", {}, a.number), el("td", { "data-test": "trigger" }, a.trigger), el("td", {}, when(a.started_at)),
            el("td", {}, a.duration_ms === null ? "—" : `${a.duration_ms} ms`), el("td", {}, a.http_status ?? "—"),
            el("td", {}, a.succeeded ? el("span", { class: "badge ok" }, "succeeded") : el("span", { class: "badge bad" }, a.error_kind ?? "failed"), a.error_message ? el("div", { class: "muted" }, a.error_message) : null),
            el("td", { class: "mono excerpt", "data-test": "answer" }, (a.response_body ?? "").slice(0, 200)))), { "data-test": "attempts" }));
    };
    const retry = async (event) => {
      event.target.disabled = true;
      try {
        await api("POST", `/console/v1/deliveries/${d.id}:retry`, {});
        route();
      } catch (err) {
        detail.hidden = false;
        fill(detail.firstChild, errorLine(err));
      }
    };
    return [
      el("tr", { "data-delivery-id": d.id },
        el("td", {}, d.event_type, d.test ? [" ", el("span", { class: "badge", "data-test": "test-badge" }, "test")] : null, el("div", {}, idChip(d.event_id))),
        el("td", {}, el("span", { class: `badge ${d.status === "succeeded" ? "ok" : d.status === "pending" ? "" : "bad"}`, "data-test": "status" }, d.status)),
        el("td", { "data-test": "attempt-count" }, d.attempt_count),
        el("td", {}, when(d.last_attempt_at), d.last_http_status ? ` · HTTP ${d.last_http_status}` : ""),
        el("td", {}, when(d.next_attempt_at)),
        el("td", {}, el("button", { class: "link", onclick: show }, "Attempts"), " ", el("button", { class: "link", "data-test": "show-payload", onclick: payload }, "Payload"), " ",
          canEdit ? el("button", { onclick: retry }, "Retry") : null)),
      detail,
    ];
  });
  return el("section", { class: "card", "data-test": "deliveries" }, el("h2", {}, `Deliveries to ${endpoint.name}`),
    canEdit ? testEventControl(endpoint) : null,
    canEdit ? recoverControl(endpoint) : null,
    rows.length === 0 ? el("p", { class: "muted" }, "No deliveries yet.") :
      table(["Event", "Status", "Attempts", "Last attempt", "Next attempt", ""], rows.flat()));
}

/** "Send test event": a signed event of the chosen type with sample data, to this endpoint now; its delivery then shows in the list. */
function testEventControl(endpoint) {
  const type = el("select", { "aria-label": "Test event type", "data-test": "test-event-type" },
    EVENT_TYPES.map((t) => el("option", { value: t }, t)));
  const outcome = el("span", { class: "muted", "data-test": "test-event-outcome" });
  const send = async (event) => {
    event.target.disabled = true;
    try {
      const sent = await api("POST", `/console/v1/webhook_endpoints/${endpoint.id}:sendTestEvent`, { type: type.value });
      outcome.textContent = sent.attempt?.succeeded ? "delivered" : `failed: ${sent.attempt?.error_kind ?? "no attempt"}`;
      route();
    } catch (err) {
      outcome.replaceChildren(errorLine(err));
    } finally {
      event.target.disabled = false;
    }
  };
  return el("p", { class: "roll" }, type, " ", el("button", { onclick: send }, "Send test event"), " ", outcome);
}

/**
 * "Recover": the endpoint's failed deliveries, and events that never reached it, of a chosen past window, queued
 * again; "Count" answers how many without changing anything. One call looks at 10,000 events at most, so it goes
 * on from next_since until the window is done.
 */
function recoverControl(endpoint) {
  const window = el("select", { "aria-label": "Recover events of", "data-test": "recover-window" },
    [["3600000", "last hour"], ["86400000", "last 24 h"], ["604800000", "last 7 days"]].map(([v, label]) => el("option", { value: v }, label)));
  const outcome = el("span", { class: "muted", "data-test": "recover-outcome" });
  const recover = (dryRun) => async (event) => {
    if (!dryRun && !confirmed(`Queue again the failed deliveries of "${endpoint.name}", and the events that never reached it, of the ${window.selectedOptions[0].textContent}?`)) return;
    event.target.disabled = true;
    try {
      const until = new Date().toISOString();
      const sum = { recovered: 0, failed: 0, unattempted: 0 };
      let since = new Date(Date.now() - Number(window.value)).toISOString();
      while (since) {
        const res = await api("POST", `/console/v1/webhook_endpoints/${endpoint.id}:recoverDeliveries`, { since, until, dry_run: dryRun });
        sum.recovered += res.recovered_count;
        sum.failed += res.failed_count;
        sum.unattempted += res.unattempted_count;
        since = res.next_since;
      }
      // The list is left as it is, so that the answer stays in view; the recovered deliveries show on the next visit.
      outcome.textContent = `${dryRun ? "would recover" : "recovered"} ${sum.recovered} (${sum.failed} failed, ${sum.unattempted} never attempted)`;
    } catch (err) {
      outcome.replaceChildren(errorLine(err));
    } finally {
      event.target.disabled = false;
    }
  };
  return el("p", { class: "roll" }, window, " ", el("button", { onclick: recover(true) }, "Count"), " ",
    el("button", { onclick: recover(false) }, "Recover"), " ", outcome);
}

async function renderRefused(body) {
  const range = hashQuery().get("since") ?? "24h";
  const hours = { "1h": 1, "24h": 24, "7d": 168 }[range] ?? 24;
  const since = new Date(Date.now() - hours * 3_600_000).toISOString();
  const [groups, timeline] = await Promise.all([
    api("GET", `${ws()}/refused_requests?since=${encodeURIComponent(since)}`),
    api("GET", `${ws()}/refused_requests:timeline?since=${encodeURIComponent(since)}&buckets=24`),
  ]);
  const ranges = el("div", { class: "ranges" }, ["1h", "24h", "7d"].map((r) =>
    el("a", { href: `#refused?since=${r}`, class: r === range ? "badge ok" : "badge", "aria-current": r === range ? "true" : undefined, "data-range": r }, r)));
  const rows = groups.data.map((g) =>
    el(
      "tr",
      { "data-error-code": g.error_code },
      el("td", {}, el("code", {}, g.error_code)),
      el("td", { "data-test": "count", class: "num" }, g.count),
      el("td", {}, when(g.first_seen)),
      el("td", {}, when(g.last_seen)),
      el("td", { class: "mono" }, g.sample ? [`${g.sample.http_method} ${g.sample.path} · ${g.sample.client_address} `, idChip(g.sample.id)] : ""),
    ),
  );
  const plot = el("div", { class: "chart", "data-test": "chart", "data-buckets": timeline.buckets.length, "data-total": timeline.buckets.reduce((n, b) => n + b.count, 0) });
  fill(
    body,
    el("section", { class: "card" }, el("h2", {}, "Refusals over time"), ranges, plot),
    el("section", { class: "card" }, el("h2", {}, "Refused requests by error"),
      rows.length === 0 ? el("p", { class: "muted" }, "No refused requests in this period.") :
        table(["Error", "Count", "First seen", "Last seen", "Sample"], rows)),
  );
  drawChart(plot, timeline);
}

/**
 * Bars of refusal counts per time bucket (uPlot): a time x axis and a count y axis,
 * as wide as its card, redrawn at that width when the window is resized.
 */
function drawChart(container, timeline) {
  const xs = timeline.buckets.map((b) => Date.parse(b.start) / 1000);
  const ys = timeline.buckets.map((b) => b.count);
  const width = () => Math.max(240, container.clientWidth);
  const plot = new uPlot(
    {
      width: width(),
      height: 180,
      legend: { show: false },
      cursor: { points: { show: false } },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      axes: [
        { label: "time", labelSize: 18, size: 40 },
        { label: "refused", labelSize: 18, size: 44, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] },
      ],
      series: [{}, { label: "refused", fill: "rgba(99, 91, 255, 0.6)", stroke: "#635bff", width: 1, paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false } }],
    },
    [xs, ys],
    container,
  );
  container.dataset.axes = plot.axes.map((axis) => axis.label).join(",");
  const resize = () => plot.setSize({ width: width(), height: 180 });
  window.addEventListener("resize", resize);
  window.addEventListener("hashchange", () => window.removeEventListener("resize", resize), { once: true });
}

/** The message log: filters by status, recipient and time, newest first, a page at a time; or one message. */
async function renderMessages(body) {
  const messageId = location.hash.slice(1).split("?")[0].split("/")[1];
  if (messageId) return renderMessage(body, messageId);
  const query = hashQuery();
  const range = query.get("since") ?? "all";
  const params = new URLSearchParams({ page_size: "25" });
  for (const name of ["status", "to", "page_token"]) if (query.get(name)) params.set(name, query.get(name));
  const hours = { "1h": 1, "24h": 24, "7d": 168 }[range];
  if (hours) params.set("created_after", new Date(Date.now() - hours * 3_600_000).toISOString());
  const page = await api("GET", `${ws()}/messages?${params}`);

  const status = el("select", { id: "message-status" }, el("option", { value: "" }, "any status"),
    ["accepted", "sent", "delivered", "read", "failed", "scheduled", "canceled"].map((s) => el("option", { value: s, selected: s === query.get("status") }, s)));
  const to = el("input", { type: "text", id: "message-to", inputmode: "numeric", placeholder: "4915112345678", value: query.get("to") ?? "" });
  const since = el("select", { id: "message-since" },
    [["all", "any time"], ["1h", "last hour"], ["24h", "last 24 hours"], ["7d", "last 7 days"]].map(([v, label]) => el("option", { value: v, selected: v === range }, label)));
  const filters = el("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (status.value) next.set("status", status.value);
    if (to.value.trim()) next.set("to", to.value.trim());
    if (since.value !== "all") next.set("since", since.value);
    location.hash = `messages?${next}`;
  } },
    el("label", {}, "Status ", status), el("label", {}, "Recipient ", to), el("label", {}, "Created ", since),
    el("button", { type: "submit" }, "Filter"));
  const rows = page.data.map((m) => el("tr", { "data-message-id": m.message_id },
    el("td", {}, when(m.created_at)),
    el("td", {}, idChip(m.message_id, `#messages/${m.message_id}`)),
    el("td", {}, num(m.to)),
    el("td", {}, statusBadge(m.status), m.error ? el("div", { class: "muted" }, `${m.error.code} ${m.error.title}`) : null),
    el("td", {}, num(m.credits, "credits"))));
  const nextPage = () => {
    const next = hashQuery();
    next.set("page_token", page.next_page_token);
    location.hash = `messages?${next}`;
  };
  fill(body, el("section", { class: "card" }, el("h2", {}, "Messages"), filters,
    el("p", { class: "muted", "data-test": "message-total" }, `${page.total} message${page.total === 1 ? "" : "s"}`),
    rows.length === 0 ? el("p", { class: "muted" }, "No messages match.") : table(["Created", "Message", "To", "Status", "Credits"], rows),
    page.next_page_token ? el("button", { onclick: nextPage, "data-test": "next-page" }, "Next page") : null));
}

/** One message: its fields, status timeline, credits charged and refunded, and the events it caused with their payloads. */
async function renderMessage(body, id) {
  const res = await api("GET", `${ws()}/messages/${encodeURIComponent(id)}`);
  const m = res.message;
  const field = (label, value) => [el("dt", {}, label), el("dd", {}, value ?? "—")];
  const events = res.events.map((e) => {
    const detail = el("tr", { hidden: true }, el("td", { colspan: 4 }, jsonBlock(e.data, "event-payload")));
    return [
      el("tr", { "data-event-id": e.id },
        el("td", {}, when(e.created_at)), el("td", {}, e.type), el("td", {}, idChip(e.id)),
        el("td", {}, el("button", { class: "link", onclick: () => (detail.hidden = !detail.hidden) }, "Payload"))),
      detail,
    ];
  });
  const credits = [res.charge, res.refund].filter(Boolean);
  fill(
    body,
    el("p", {}, el("a", { href: "#messages" }, "← All messages")),
    el("section", { class: "card", "data-test": "message" }, el("h2", {}, "Message ", idChip(m.message_id)),
      el("dl", { class: "fields" },
        field("Status", statusBadge(m.status)), field("To", num(m.to)), field("Sender", idChip(m.sender)), field("Template", idChip(m.template_id)),
        field("Network id", m.wa_message_id), field("Error", m.error ? `${m.error.code} ${m.error.title}` : null),
        field("Credits", num(m.credits)), field("Sent by key", idChip(res.api_key_id)))),
    el("section", { class: "card" }, el("h2", {}, "Timeline"),
      table(["Status", "At"], res.timeline.map((s) => el("tr", { "data-timeline-status": s.status }, el("td", {}, statusBadge(s.status, "timeline-status")), el("td", {}, when(s.at)))))),
    el("section", { class: "card" }, el("h2", {}, "Credits"),
      credits.length === 0 ? el("p", { class: "muted" }, "No credit change recorded.") :
        table(["Kind", "Change", "Balance after", "When"], credits.map((c) => el("tr", { "data-credit-kind": c.kind },
          el("td", {}, c.kind), el("td", {}, c.amount > 0 ? `+${c.amount}` : c.amount), el("td", {}, c.balance_after ?? "—"), el("td", {}, when(c.created_at)))))),
    el("section", { class: "card" }, el("h2", {}, "Events"),
      events.length === 0 ? el("p", { class: "muted" }, "No events yet.") : table(["Created", "Type", "Event", ""], events.flat())),
  );
}

/** Console users and their roles (the operator and bootstrap admin manage them); others see their own roles. */
async function renderUsers(body) {
  const operator = state.me.kind === "operator" || state.me.user?.operator;
  if (!operator) {
    fill(body, el("section", { class: "card" }, el("h2", {}, "Your roles"),
      table(["Workspace", "Role"], state.me.user.roles.map((r) => el("tr", {}, el("td", { class: "mono" }, state.workspaces.find((w) => w.id === r.workspace_id)?.name ?? r.workspace_id), el("td", {}, r.role)))),
      el("p", { class: "muted" }, "Only the operator manages users.")));
    return;
  }
  const users = (await api("GET", "/console/v1/users?page_size=100")).data;
  const act = async (question, method, path, payload) => {
    if (question && !confirmed(question)) return;
    try {
      await api(method, path, payload);
      await renderUsers(body);
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  const roleHere = (u) => u.roles.find((r) => r.workspace_id === state.workspaceId)?.role;
  const rows = users.map((u) => el("tr", { "data-user-id": u.id },
    el("td", {}, u.email, u.operator ? el("div", { class: "muted" }, "bootstrap admin") : null),
    el("td", {}, u.roles.length === 0 ? el("span", { class: "muted" }, "none") :
      u.roles.map((r) => el("div", {}, `${state.workspaces.find((w) => w.id === r.workspace_id)?.name ?? r.workspace_id}: ${r.role}`))),
    el("td", {}, when(u.created_at)),
    el("td", { class: "actions" }, u.operator ? null : [
      roleHere(u) !== "admin" ? el("button", { onclick: () => act(null, "POST", `/console/v1/users/${u.id}:grantRole`, { workspace_id: state.workspaceId, role: "admin" }) }, "Make admin here") : null,
      roleHere(u) !== "viewer" ? el("button", { onclick: () => act(null, "POST", `/console/v1/users/${u.id}:grantRole`, { workspace_id: state.workspaceId, role: "viewer" }) }, "Make viewer here") : null,
      roleHere(u) ? el("button", { class: "danger", onclick: () => act(`Take ${u.email}'s role in this workspace away?`, "POST", `/console/v1/users/${u.id}:revokeRole`, { workspace_id: state.workspaceId }) }, "Remove from here") : null,
      el("button", { class: "danger", onclick: () => act(`Delete ${u.email}? Their sessions end at once; this cannot be undone.`, "DELETE", `/console/v1/users/${u.id}`) }, "Delete"),
    ])));
  const email = el("input", { type: "email", id: "user-email", required: true });
  const password = el("input", { type: "password", id: "user-password", required: true, minlength: 12, autocomplete: "new-password" });
  const role = el("select", { id: "user-role" }, el("option", { value: "viewer" }, "viewer"), el("option", { value: "admin" }, "admin"));
  const form = createForm("Create user", async () => {
    await api("POST", "/console/v1/users", { email: email.value, password: password.value, roles: [{ workspace_id: state.workspaceId, role: role.value }] });
    await renderUsers(body);
  },
    el("label", { for: "user-email" }, "Email"), email,
    el("label", { for: "user-password" }, "Password (12+ characters)"), password,
    el("label", { for: "user-role" }, "Role in this workspace"), role,
  );
  fill(
    body,
    el("section", { class: "card" }, el("h2", {}, "Console users"), table(["Email", "Roles", "Created", ""], rows)),
    el("section", { class: "card" }, el("h2", {}, "Add a user"), form),
  );
}

/** The audit log of the workspace: who changed what, when, with the request (secrets redacted) and the outcome. */
async function renderAudit(body) {
  const entries = (await api("GET", `/console/v1/audit_entries?workspace_id=${encodeURIComponent(state.workspaceId)}&page_size=100`)).data;
  const rows = entries.map((a) => {
    const detail = el("tr", { hidden: true }, el("td", { colspan: 6 }, jsonBlock(a.request ?? {}, "audit-request")));
    return [
      el("tr", { "data-audit-id": a.id },
        el("td", {}, when(a.at)), el("td", {}, idChip(a.id)), el("td", {}, a.actor), el("td", { class: "mono" }, a.operation.split("/").pop()),
        el("td", {}, statusBadge(a.outcome === "ok" ? "ok" : a.outcome, "outcome")),
        el("td", {}, el("button", { class: "link", onclick: () => (detail.hidden = !detail.hidden) }, "Request"))),
      detail,
    ];
  });
  fill(body, el("section", { class: "card" }, el("h2", {}, "Audit log"),
    rows.length === 0 ? el("p", { class: "muted" }, "No changes recorded yet.") : table(["When", "Entry", "Who", "Operation", "Outcome", ""], rows.flat())));
}

/** The workspace's sender numbers, with the id a send names; admins add one, or archive one (after a confirmation). */
async function renderSenders(body) {
  const senderId = location.hash.slice(1).split("?")[0].split("/")[1];
  if (senderId) return renderSender(body, senderId, { el, fill, api, table, when, errorLine, createForm, statusBadge, canChange, idChip, num });
  const senders = (await api("GET", `${ws()}/senders?page_size=100`)).data;
  const canEdit = canChange();
  const archive = (sender) => async () => {
    if (!confirmed(`Archive the sender "${sender.name}" (${sender.phone_number})? Sends from it are refused from then on.`)) return;
    try {
      await api("POST", `/console/v1/senders/${sender.id}:archive`, {});
      await renderSenders(body);
    } catch (err) {
      body.prepend(errorLine(err));
    }
  };
  const rows = senders.map((s) => el("tr", { "data-sender-id": s.id },
    el("td", {}, el("a", { href: `#senders/${s.id}`, "data-test": "sender-page" }, s.name), el("div", {}, idChip(s.id))),
    el("td", {}, num(s.phone_number, "phone-number")),
    el("td", {}, statusBadge(s.status)),
    el("td", {}, num(`${s.throughput_mps}/s`, "throughput")),
    el("td", {}, s.whatsapp_phone_number_id ? num(s.whatsapp_phone_number_id) : el("span", { class: "muted" }, "none")),
    el("td", {}, when(s.created_at)),
    el("td", { class: "actions" }, canEdit && s.status === "active" ? el("button", { class: "danger", onclick: archive(s) }, "Archive") : null)));
  const phone = el("input", { type: "text", id: "sender-phone", inputmode: "numeric", required: true, placeholder: "4915112345678" });
  const name = el("input", { type: "text", id: "sender-name", required: true });
  const whatsapp = el("input", { type: "text", id: "sender-whatsapp", inputmode: "numeric", placeholder: "only with NETWORK=whatsapp" });
  const form = createForm("Add sender", async () => {
    await api("POST", `${ws()}/senders`, { phone_number: phone.value.trim(), name: name.value, whatsapp_phone_number_id: whatsapp.value.trim() });
    await renderSenders(body);
  },
    el("label", { for: "sender-phone" }, "Phone number (digits with country code)"), phone,
    el("label", { for: "sender-name" }, "Name"), name,
    el("label", { for: "sender-whatsapp" }, "WhatsApp phone number ID"), whatsapp,
  );
  fill(body,
    el("section", { class: "card" }, el("h2", {}, "Senders"),
      el("p", { class: "muted" }, "The numbers messages are sent from; a send names one by its id (", el("code", {}, "sender"), "). A sender's page shows its queue, the rate it sends and the network's refusals."),
      senders.length === 0 ? el("p", { class: "muted" }, "No senders yet.") : table(["Sender", "Number", "Status", "Throughput", "WhatsApp ID", "Created", ""], rows)),
    canEdit ? el("section", { class: "card" }, el("h2", {}, "Add a sender"), form) : null);
}

/**
 * The request that sends `template` (POST /v1/messages) as a curl command: its variables filled with their examples,
 * from `senderId`, to the public API at `apiUrl`, with a flow token when it carries a form.
 */
function sendRequest(template, senderId, apiUrl) {
  const variables = Object.fromEntries(template.variables.map((v) => [v.name, v.example || v.name]));
  const payload = { to: "4915112345678", sender: senderId, template: { id: template.id, variables, ...(template.flow_id ? { flow: { token: "signup-4711" } } : {}) } };
  return `curl -s ${apiUrl}/v1/messages -H "Authorization: Bearer $API_KEY" -H "Content-Type: application/json" \\\n  -d '${JSON.stringify(payload)}'`;
}

/**
 * The workspace's templates, each with its body, its variables (required or not, with examples), the form it
 * carries, and the request that sends it, ready to copy; admins archive one (after a confirmation).
 */
async function renderTemplates(body) {
  const [templates, senders] = await Promise.all([api("GET", `${ws()}/templates?page_size=100`), api("GET", `${ws()}/senders?page_size=100`)]);
  const sender = senders.data.find((s) => s.status === "active")?.id ?? "snd_…";
  const apiUrl = state.me.public_port ? `${location.protocol}//${location.hostname}:${state.me.public_port}` : "http://localhost:8080";
  const canEdit = canChange();
  const cards = templates.data.map((t) => {
    const snippet = sendRequest(t, sender, apiUrl);
    const archive = async () => {
      if (!confirmed(`Archive the template "${t.name}" (${t.language})? Sends with it are refused from then on.`)) return;
      try {
        await api("POST", `/console/v1/templates/${t.id}:archive`, {});
        await renderTemplates(body);
      } catch (err) {
        body.prepend(errorLine(err));
      }
    };
    return el("section", { class: "card template", "data-template-id": t.id },
      el("h2", {}, t.name, " ", el("span", { class: "muted" }, t.language), " ", statusBadge(t.status)),
      el("p", {}, idChip(t.id), t.flow_id ? [" · carries the form ", num(t.flow_id)] : null),
      el("pre", { class: "json template-body", "data-test": "template-body" }, t.body),
      t.variables.length === 0 ? el("p", { class: "muted" }, "No variables.") :
        table(["Variable", "Required", "Example"], t.variables.map((v) => el("tr", { "data-variable": v.name },
          el("td", {}, el("code", {}, v.name)), el("td", {}, v.required ? "required" : "optional"), el("td", { "data-test": "example" }, v.example || "—")))),
      el("h3", {}, "Send request"),
      el("pre", { class: "json", "data-test": "send-request" }, snippet),
      el("p", { class: "roll" }, el("button", { type: "button", "data-test": "copy-send-request", onclick: (event) => copyText(snippet, event.currentTarget) }, "Copy send request"),
        canEdit && t.status === "active" ? [" ", el("button", { class: "danger", onclick: archive }, "Archive")] : null));
  });
  fill(body,
    templates.data.length === 0 ? el("section", { class: "card" }, el("h2", {}, "Templates"), el("p", { class: "muted" }, "No templates yet (msgsvc templates create).")) : null,
    ...cards);
}

/** The balance, a top-up (after a confirmation, for admins) and the whole credit ledger, a page at a time. */
async function renderCredits(body) {
  const pageToken = hashQuery().get("page_token");
  const [workspace, ledger] = await Promise.all([
    api("GET", ws()),
    api("GET", `${ws()}/credit_ledger?page_size=50${pageToken ? `&page_token=${encodeURIComponent(pageToken)}` : ""}`),
  ]);
  const amount = el("input", { type: "number", id: "topup-amount", min: 1, max: 1000000000, required: true, value: 100 });
  const note = el("input", { type: "text", id: "topup-note", maxlength: 500, placeholder: "invoice 42" });
  const form = createForm("Add credits", async () => {
    const n = Number(amount.value);
    if (!confirmed(`Add ${n.toLocaleString()} credits to "${workspace.name}"? The balance goes from ${Number(workspace.credit_balance).toLocaleString()} to ${(Number(workspace.credit_balance) + n).toLocaleString()}.`)) return;
    await api("POST", `${ws()}/credits:add`, { amount: n, note: note.value });
    location.hash = "credits";
    await renderCredits(body);
  },
    el("label", { for: "topup-amount" }, "Credits to add"), amount,
    el("label", { for: "topup-note" }, "Note"), note,
  );
  const next = () => (location.hash = `credits?page_token=${encodeURIComponent(ledger.next_page_token)}`);
  fill(body,
    el("section", { class: "card" }, el("h2", {}, "Credit balance"),
      el("div", { class: "stats" }, el("div", { class: "stat" }, el("span", { class: "muted" }, workspace.name), el("b", { class: "num", "data-test": "credit-balance" }, Number(workspace.credit_balance).toLocaleString())))),
    canChange() ? el("section", { class: "card" }, el("h2", {}, "Top up"), form) : null,
    el("section", { class: "card" }, el("h2", {}, "Credit ledger"),
      el("p", { class: "muted", "data-test": "ledger-total" }, `${ledger.total} change${ledger.total === 1 ? "" : "s"}, newest first`),
      ledger.data.length === 0 ? el("p", { class: "muted" }, "No credit changes yet.") : ledgerTable(ledger.data),
      ledger.next_page_token ? el("button", { onclick: next, "data-test": "next-page" }, "Next page") : null));
}

/** Downloads file `index` of flow response `id` with the session's token: fetched, then saved under its own name. */
async function downloadFile(id, index, name, button) {
  button.disabled = true;
  try {
    const res = await fetch(`/console/v1/flow_responses/${encodeURIComponent(id)}/files/${index}`, { headers: { authorization: `Bearer ${state.token}` } });
    if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
    const url = URL.createObjectURL(await res.blob());
    const link = el("a", { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (err) {
    button.after(errorLine(err));
  } finally {
    button.disabled = false;
  }
}

/** Form submissions (flow responses), newest first: who, which form, the fields, and each file with a download. */
async function renderForms(body) {
  const query = hashQuery();
  const params = new URLSearchParams({ page_size: "25" });
  for (const name of ["flow_token", "page_token"]) if (query.get(name)) params.set(name, query.get(name));
  const page = await api("GET", `${ws()}/flow_responses?${params}`);
  const token = el("input", { type: "text", id: "form-token", placeholder: "signup-4711", value: query.get("flow_token") ?? "" });
  const filters = el("form", { class: "filters", onsubmit: (event) => {
    event.preventDefault();
    location.hash = token.value.trim() ? `forms?flow_token=${encodeURIComponent(token.value.trim())}` : "forms";
  } }, el("label", {}, "Flow token ", token), el("button", { type: "submit" }, "Filter"));
  const rows = page.data.map((r) => el("tr", { "data-flow-response-id": r.id },
    el("td", {}, when(r.received_at), el("div", {}, idChip(r.id))),
    el("td", {}, num(r.from)),
    el("td", {}, r.flow_id ? num(r.flow_id) : "—", el("div", { class: "muted mono" }, r.flow_token)),
    el("td", {}, r.source_message_id ? idChip(r.source_message_id, `#messages/${r.source_message_id}`) : el("span", { class: "muted" }, "not traced")),
    el("td", {}, el("dl", { class: "fields compact", "data-test": "response" }, Object.entries(r.response).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, typeof v === "string" ? v : JSON.stringify(v))]))),
    el("td", { class: "actions" }, r.files.length === 0 ? el("span", { class: "muted" }, "no files") : r.files.map((f) =>
      el("div", { class: "file", "data-file-index": f.index },
        f.error ? [el("span", {}, f.file_name), el("div", { class: "error" }, f.error)] :
          el("button", { type: "button", "data-test": "download", onclick: (event) => downloadFile(r.id, f.index, f.file_name, event.currentTarget) }, `${f.file_name}`),
        el("span", { class: "muted" }, ` ${f.field} · ${f.mime_type}${f.size_bytes === null ? "" : ` · ${num(f.size_bytes.toLocaleString()).textContent} bytes`}`))))));
  const nextPage = () => {
    const next = hashQuery();
    next.set("page_token", page.next_page_token);
    location.hash = `forms?${next}`;
  };
  fill(body, el("section", { class: "card" }, el("h2", {}, "Form responses"), filters,
    el("p", { class: "muted", "data-test": "forms-total" }, `${page.total} response${page.total === 1 ? "" : "s"}`),
    rows.length === 0 ? el("p", { class: "muted" }, "No form responses match.") : table(["Received", "From", "Form", "Sent with", "Fields", "Files"], rows),
    page.next_page_token ? el("button", { onclick: nextPage, "data-test": "next-page" }, "Next page") : null));
}

document.getElementById("workspace").addEventListener("change", (event) => {
  state.workspaceId = event.target.value;
  sessionStorage.setItem("workspace", state.workspaceId);
  route();
});
document.getElementById("sign-out").addEventListener("click", signOut);
window.addEventListener("hashchange", route);
if (state.token) start().catch(() => renderSignIn("Your session ended; sign in again."));
else renderSignIn();
