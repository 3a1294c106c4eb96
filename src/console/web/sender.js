// One sender's page in the web console (#senders/<id>): the number, its throughput, and its queue as GetSender
// reads it (README "Pacing", "A sender's queue"): messages queued and why, the oldest wait, scheduled sends not yet
// due, the rate sent over the last minute against the configured one, and the network's refusals by code. Admins
// change its throughput and name (UpdateSender). Its own module, handed the page's helpers by console.js.

/** What each network error code a sender sees most means (WhatsApp Cloud API). */
const REFUSAL_CODES = {
  130429: "throughput: the number's messages per second",
  131056: "pair rate: too many messages to one recipient",
  131026: "undeliverable",
  131048: "spam rate limit",
  131049: "ecosystem engagement",
  131050: "user stopped marketing messages",
};

/** Why queued messages wait (their queued_reason). */
const REASONS = {
  sender_rate: "the number's throughput is used up for now",
  recipient_pair_rate: "the recipient had the burst the pair rate allows",
  daily_limit: "the portfolio's daily limit of new recipients",
};

/** Where the sender's throughput came from (its throughput_source; README "A sender's throughput"). */
const THROUGHPUT_SOURCES = {
  given: "given when it was created or changed",
  network: "read from the network when it was created",
  default: "the default (the network stated none)",
};

/**
 * Renders sender `id` into `body`. `ui` holds the page's helpers: el, fill, api, table, when, errorLine,
 * createForm, statusBadge, canChange, idChip, num.
 */
export async function renderSender(body, id, ui) {
  const { el, fill, api, table, when, errorLine, createForm, statusBadge, canChange, idChip, num } = ui;
  const sender = await api("GET", `/console/v1/senders/${encodeURIComponent(id)}`);
  const q = sender.queue;
  const rerender = () => renderSender(body, id, ui).catch((err) => body.prepend(errorLine(err)));
  const field = (label, value, test) => [el("dt", {}, label), el("dd", { "data-test": test }, value ?? "—")];
  const rate = (n) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
  const seconds = (s) => (s < 120 ? `${rate(s)} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${rate(s / 3600)} h`);

  const queueCard = el("section", { class: "card", "data-test": "sender-queue" }, el("h2", {}, "Queue"),
    el("dl", { class: "fields" },
      field("Queued", num(q.message_count), "queue-depth"),
      field("Oldest queued", q.oldest_queued_at ? `${when(q.oldest_queued_at)} (waiting ${seconds(q.oldest_wait_seconds)})` : "none", "queue-oldest"),
      field("Scheduled, not yet due", num(q.scheduled_count), "queue-scheduled"),
      field("Sent in the last minute", `${q.sent_last_minute_count.toLocaleString()} (${rate(q.sent_last_minute_mps)}/s of ${sender.throughput_mps}/s)`, "queue-sent")),
    el("h3", {}, "Why they wait"),
    q.reasons.length === 0
      ? el("p", { class: "muted" }, "No message was sent back to wait.")
      : table(["Reason", "Messages"], q.reasons.map((r) => el("tr", { "data-reason": r.reason },
        el("td", {}, el("code", {}, r.reason ?? "—"), el("div", { class: "muted" }, REASONS[r.reason] ?? "")), el("td", {}, num(r.message_count))))),
    el("p", {}, el("button", { type: "button", onclick: rerender }, "Refresh")));

  const refusals = el("section", { class: "card", "data-test": "sender-refusals" }, el("h2", {}, "Network refusals"),
    el("p", { class: "muted" }, "Sends of this number the network refused, by its error code, since the number was added."),
    q.network_refusals.length === 0
      ? el("p", { class: "muted" }, "None.")
      : table(["Code", "Refusals", "Last"], q.network_refusals.map((r) => el("tr", { "data-refusal-code": r.code },
        el("td", {}, el("code", {}, String(r.code)), el("div", { class: "muted" }, REFUSAL_CODES[r.code] ?? "")), el("td", {}, num(r.count)), el("td", {}, when(r.last_refused_at))))));

  let change = null;
  if (canChange()) {
    const throughput = el("input", { type: "number", id: "sender-throughput", min: 1, max: 1000, required: true, value: sender.throughput_mps });
    const name = el("input", { type: "text", id: "sender-rename", required: true, value: sender.name });
    change = el("section", { class: "card" }, el("h2", {}, "Change"),
      createForm("Save", async () => {
        await api("PATCH", `/console/v1/senders/${encodeURIComponent(id)}?update_mask=throughput_mps,name`, { throughput_mps: Number(throughput.value), name: name.value });
        await rerender();
      },
        el("label", { for: "sender-throughput" }, "Throughput (messages per second, 1 to 1,000)"), throughput,
        el("label", { for: "sender-rename" }, "Name"), name));
  }

  fill(body,
    el("p", {}, el("a", { href: "#senders" }, "← All senders")),
    el("section", { class: "card", "data-test": "sender" }, el("h2", {}, sender.name, " ", idChip(sender.id)),
      el("dl", { class: "fields" },
        field("Number", num(sender.phone_number, "phone-number")),
        field("Status", statusBadge(sender.status)),
        field("Throughput", `${sender.throughput_mps}/s`, "sender-throughput"),
        field("Throughput from", THROUGHPUT_SOURCES[sender.throughput_source] ?? sender.throughput_source, "sender-throughput-source"),
        field("WhatsApp ID", sender.whatsapp_phone_number_id ? num(sender.whatsapp_phone_number_id) : null),
        field("Created", when(sender.created_at)))),
    queueCard, refusals, change);
}
