// The web console: one page over the console REST API (/console/v1), signed in with a console
// session (or the operator's console token). No framework: DOM built with el(), never innerHTML
// from data.

const state = { token: sessionStorage.getItem("console-token"), me: null, workspaces: [], workspaceId: null };
const app = document.getElementById("app");
/** Event types an endpoint may select (spec §Events). */
const EVENT_TYPES = ["message.sent", "message.delivered", "message.read", "message.failed", "message.received", "flow.completed"];
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
  app.replaceChildren(el("section", { class: "card" }, el("h2", {}, "Sign in"), message ? el("p", { class: "muted" }, message) : null, form));
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
  select.replaceChildren(...state.workspaces.map((w) => el("option", { value: w.id }, w.name)));
  select.hidden = state.workspaces.length === 0;
  state.workspaceId = state.workspaces.find((w) => w.id === sessionStorage.getItem("workspace"))?.id ?? state.workspaces[0]?.id ?? null;
  select.value = state.workspaceId ?? "";
  route();
}

const views = { overview: renderOverview, keys: renderKeys, webhooks: renderWebhooks, refused: renderRefused };
const titles = { overview: "Overview", keys: "API keys", webhooks: "Webhooks", refused: "Refused requests" };

function route() {
  if (!state.token) return renderSignIn();
  if (!state.workspaceId) return app.replaceChildren(el("p", { class: "muted" }, "No workspace yet."));
  const name = (location.hash.slice(1) || "overview").split("/")[0];
  const view = views[name] ?? renderOverview;
  const nav = el("nav", {}, Object.keys(views).map((key) => el("a", { href: `#${key}`, class: key === name ? "active" : undefined }, titles[key])));
  const body = el("div", {}, el("p", { class: "muted" }, "Loading…"));
  app.replaceChildren(el("h2", {}, "Developers"), nav, body);
  view(body).catch((err) => body.replaceChildren(errorLine(err)));
}

async function renderOverview(body) {
  const [workspace, stats, ledger] = await Promise.all([
    api("GET", ws()),
    api("GET", `${ws()}/message_stats`),
    api("GET", `${ws()}/credit_ledger?page_size=10`),
  ]);
  const stat = (label, value, test) => el("div", { class: "stat" }, el("span", { class: "muted" }, label), el("b", { "data-test": test }, value));
  const statuses = ["accepted", "sent", "delivered", "read", "failed"];
  body.replaceChildren(
    el("section", { class: "card" },
      el("h2", {}, workspace.name),
      el("p", { class: "muted" }, `Workspace ${workspace.id} · ${workspace.status}`),
      el("div", { class: "stats" },
        stat("Credit balance", workspace.credit_balance, "credit-balance"),
        stat("Messages sent (24 h)", stats.recent, "messages-recent"),
        stat("Replies (24 h)", stats.recent_replies, "replies-recent"),
        stat("Messages, all time", stats.total, "messages-total"),
      )),
    el("section", { class: "card" }, el("h2", {}, "Messages by status"),
      el("table", {}, el("tbody", {}, statuses.map((s) => el("tr", { "data-status": s }, el("td", {}, s), el("td", { "data-test": "count" }, stats.by_status[s] ?? 0)))))),
    el("section", { class: "card" }, el("h2", {}, "Credit ledger"),
      ledger.data.length === 0 ? el("p", { class: "muted" }, "No credit changes yet.") :
        el("table", {}, el("thead", {}, el("tr", {}, ["When", "Change", "Kind", "Message", "Note"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ledger.data.map((e) => el("tr", {}, el("td", {}, when(e.created_at)), el("td", {}, e.amount > 0 ? `+${e.amount}` : e.amount), el("td", {}, e.kind ?? ""), el("td", { class: "mono" }, e.message_id ?? ""), el("td", {}, e.note ?? "")))))),
  );
}

async function renderKeys(body) {
  const keys = (await api("GET", `${ws()}/api_keys?page_size=100`)).data;
  const canEdit = canChange();
  const rows = keys.map((k) =>
    el(
      "tr",
      { "data-key-id": k.id },
      el("td", {}, k.name, el("div", { class: "mono muted" }, `${k.secret_prefix}…`)),
      el("td", {}, k.scopes.length ? k.scopes.join(", ") : el("span", { class: "muted" }, "none")),
      el("td", {}, `${k.rate_limit_per_min}/min`),
      el("td", {}, k.ip_allow_list.length ? k.ip_allow_list.join(", ") : el("span", { class: "muted" }, "any")),
      el("td", {}, when(k.expires_at)),
      el("td", {}, when(k.last_used_at)),
      el("td", {}, el("span", { class: `badge ${k.status === "active" ? "ok" : "bad"}` }, k.status)),
      el("td", {}, canEdit && k.status === "active" ? el("button", { class: "danger", onclick: async () => { await api("POST", `/console/v1/api_keys/${k.id}:revoke`, {}); route(); } }, "Revoke") : null),
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
  body.replaceChildren(
    el("section", { class: "card" }, el("h2", {}, "API keys"), keys.length === 0 ? el("p", { class: "muted" }, "No keys yet.") :
      el("table", {}, el("thead", {}, el("tr", {}, ["Name", "Scopes", "Budget", "Allowed from", "Expires", "Last used", "Status", ""].map((h) => el("th", {}, h)))), el("tbody", {}, rows))),
    canEdit ? el("section", { class: "card" }, el("h2", {}, "Create a key"), form) : null,
  );
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
  const act = (path, payload) => async () => {
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
      el("td", {}, e.name, el("div", { class: "mono muted" }, e.url)),
      el("td", { class: "mono", "data-test": "secret-hint" }, e.secret_hint),
      el("td", {}, e.events.join(", ")),
      el("td", {},
        el("span", { class: `badge ${e.enabled ? "ok" : "bad"}`, "data-test": "enabled" }, e.enabled ? "enabled" : "disabled"),
        e.disabled_reason ? el("div", { class: "muted", "data-test": "disabled-reason" }, e.disabled_reason) : null),
      el("td", {}, when(e.last_success_at)),
      el("td", {}, e.consecutive_failures),
      el("td", {},
        el("a", { href: `#webhooks/${e.id}` }, "Deliveries"), " ",
        canEdit ? (e.enabled
          ? el("button", { class: "danger", onclick: act(`/console/v1/webhook_endpoints/${e.id}:disable`, { reason: "" }) }, "Disable")
          : el("button", { onclick: act(`/console/v1/webhook_endpoints/${e.id}:enable`) }, "Enable")) : null),
    ),
  );
  const endpointId = location.hash.slice(1).split("?")[0].split("/")[1];
  const selected = endpoints.find((e) => e.id === endpointId);
  body.replaceChildren(
    el("section", { class: "card" }, el("h2", {}, "Webhook endpoints"), endpoints.length === 0 ? el("p", { class: "muted" }, "No endpoints yet.") :
      el("table", {}, el("thead", {}, el("tr", {}, ["Name", "Secret", "Events", "Status", "Last success", "Failures in a row", ""].map((h) => el("th", {}, h)))), el("tbody", {}, rows))),
    selected ? await deliveriesCard(selected, canEdit) : null,
    canEdit ? endpointForm(body) : null,
  );
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
  const form = createForm("Add endpoint", async () => {
    const created = await api("POST", `${ws()}/webhook_endpoints`, { name: name.value, url: url.value, events: events.checked() });
    await renderWebhooks(body);
    body.prepend(secretPanel("Endpoint created. Copy its signing secret now: it is shown once.", created.secret));
  },
    el("label", { for: "endpoint-name" }, "Name"), name,
    el("label", { for: "endpoint-url" }, "URL"), url,
    el("span", {}, "Events"), events.node,
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
        status.replaceChildren();
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
    const show = async () => {
      const attempts = (await api("GET", `/console/v1/deliveries/${d.id}/attempts?page_size=100`)).data;
      detail.hidden = false;
      detail.firstChild.replaceChildren(attempts.length === 0 ? el("p", { class: "muted" }, "No attempts yet.") :
        el("table", { "data-test": "attempts" }, el("thead", {}, el("tr", {}, ["#", "Trigger", "Started", "Duration", "HTTP", "Outcome", "Response"].map((h) => el("th", {}, h)))),
          el("tbody", {}, attempts.map((a) => el("tr", { "data-attempt-id": a.id },
            el("td", {}, a.number), el("td", { "data-test": "trigger" }, a.trigger), el("td", {}, when(a.started_at)),
            el("td", {}, a.duration_ms === null ? "—" : `${a.duration_ms} ms`), el("td", {}, a.http_status ?? "—"),
            el("td", {}, a.succeeded ? el("span", { class: "badge ok" }, "succeeded") : el("span", { class: "badge bad" }, a.error_kind ?? "failed"), a.error_message ? el("div", { class: "muted" }, a.error_message) : null),
            el("td", { class: "mono" }, (a.response_body ?? "").slice(0, 200)))))));
    };
    const retry = async (event) => {
      event.target.disabled = true;
      try {
        await api("POST", `/console/v1/deliveries/${d.id}:retry`, {});
        route();
      } catch (err) {
        detail.hidden = false;
        detail.firstChild.replaceChildren(errorLine(err));
      }
    };
    return [
      el("tr", { "data-delivery-id": d.id },
        el("td", {}, d.event_type, el("div", { class: "mono muted" }, d.event_id)),
        el("td", {}, el("span", { class: `badge ${d.status === "succeeded" ? "ok" : d.status === "pending" ? "" : "bad"}`, "data-test": "status" }, d.status)),
        el("td", { "data-test": "attempt-count" }, d.attempt_count),
        el("td", {}, when(d.last_attempt_at), d.last_http_status ? ` · HTTP ${d.last_http_status}` : ""),
        el("td", {}, when(d.next_attempt_at)),
        el("td", {}, el("button", { class: "link", onclick: show }, "Attempts"), " ", canEdit ? el("button", { onclick: retry }, "Retry") : null)),
      detail,
    ];
  });
  return el("section", { class: "card", "data-test": "deliveries" }, el("h2", {}, `Deliveries to ${endpoint.name}`),
    rows.length === 0 ? el("p", { class: "muted" }, "No deliveries yet.") :
      el("table", {}, el("thead", {}, el("tr", {}, ["Event", "Status", "Attempts", "Last attempt", "Next attempt", ""].map((h) => el("th", {}, h)))), el("tbody", {}, rows.flat())));
}

async function renderRefused(body) {
  const range = new URLSearchParams(location.hash.split("?")[1] ?? "").get("since") ?? "24h";
  const hours = { "1h": 1, "24h": 24, "7d": 168 }[range] ?? 24;
  const since = new Date(Date.now() - hours * 3_600_000).toISOString();
  const [groups, timeline] = await Promise.all([
    api("GET", `${ws()}/refused_requests?since=${encodeURIComponent(since)}`),
    api("GET", `${ws()}/refused_requests:timeline?since=${encodeURIComponent(since)}&buckets=24`),
  ]);
  const ranges = el("div", {}, Object.keys({ "1h": 1, "24h": 1, "7d": 1 }).map((r) =>
    el("a", { href: `#refused?since=${r}`, class: r === range ? "badge ok" : "badge" }, r)), " ");
  const rows = groups.data.map((g) =>
    el(
      "tr",
      { "data-error-code": g.error_code },
      el("td", {}, el("code", {}, g.error_code)),
      el("td", { "data-test": "count" }, g.count),
      el("td", {}, when(g.first_seen)),
      el("td", {}, when(g.last_seen)),
      el("td", { class: "mono" }, g.sample ? `${g.sample.http_method} ${g.sample.path} · ${g.sample.client_address} · ${g.sample.id}` : ""),
    ),
  );
  body.replaceChildren(
    el("section", { class: "card" }, el("h2", {}, "Refusals over time"), ranges, chart(timeline)),
    el("section", { class: "card" }, el("h2", {}, "Refused requests by error"),
      rows.length === 0 ? el("p", { class: "muted" }, "No refused requests in this period.") :
        el("table", {}, el("thead", {}, el("tr", {}, ["Error", "Count", "First seen", "Last seen", "Sample"].map((h) => el("th", {}, h)))), el("tbody", {}, rows))),
  );
}

/** A bar chart of refusal counts per bucket, as SVG. */
function chart(timeline) {
  const ns = "http://www.w3.org/2000/svg";
  const width = 720, height = 140, pad = 18;
  const max = Math.max(1, ...timeline.buckets.map((b) => b.count));
  const step = (width - pad) / Math.max(1, timeline.buckets.length);
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "Refused requests per time bucket");
  timeline.buckets.forEach((b, i) => {
    const h = ((height - pad * 2) * b.count) / max;
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", String(pad + i * step + 1));
    rect.setAttribute("y", String(height - pad - h));
    rect.setAttribute("width", String(Math.max(1, step - 2)));
    rect.setAttribute("height", String(h));
    rect.setAttribute("data-count", String(b.count));
    const title = document.createElementNS(ns, "title");
    title.textContent = `${new Date(b.start).toLocaleString()}: ${b.count}`;
    rect.append(title);
    svg.append(rect);
  });
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "0");
  label.setAttribute("y", "12");
  label.textContent = `max ${max}`;
  svg.append(label);
  return svg;
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
