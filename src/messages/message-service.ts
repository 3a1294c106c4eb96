import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { MessageService, type BatchSendMessagesResultSchema, type SendMessageRequest } from "../../gen/messaging/v1/messages_pb.js";
import type { CreditStore, Reservation } from "../credits/credit-store.js";
import { principalOf, requestState, type Principal } from "../gateway/request-state.js";
import { answerViolationsInHandler, contractViolationsOf } from "../gateway/validation.js";
import type { SenderRecord, SenderStore } from "../senders/sender-store.js";
import type { Clock } from "../shared/clock.js";
import { apiError, describeError, notFound, violationsError, type FieldViolation } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { charLength, Violations } from "../shared/validation.js";
import { MAX_BODY_CHARS, renderBody } from "../templates/template-body.js";
import { categoryOf, type TemplateRecord, type TemplateStore } from "../templates/template-store.js";
import type { OptOutStore } from "../optouts/opt-out-store.js";
import { fingerprintOf, IDEMPOTENCY_KEY_RULE, isValidIdempotencyKey, type IdempotencyStore, type StoredBatchResult } from "./idempotency.js";
import { messageToProto, statusFromProto } from "./message-proto.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Dispatcher } from "./dispatch.js";
import type { Inbound } from "./inbound.js";
import type { MessageRecord, MessageStore } from "./message-store.js";


/** What the message service needs. */
export interface MessageServiceDeps {
  messages: MessageStore;
  senders: SenderStore;
  templates: TemplateStore;
  credits: CreditStore;
  idempotency: IdempotencyStore;
  clock: Clock;
  logger: Logger;
  /** Credits one message costs (MESSAGE_PRICE_CREDITS). */
  priceCredits: number;
  /** Whether senders need a WhatsApp phone number ID (NETWORK=whatsapp). */
  requirePhoneNumberId: boolean;
  /** Dispatch: the fields a new message starts with (held by this process, or a batch's beyond its room waiting), and the start of its dispatch. */
  dispatcher: Pick<Dispatcher, "newDispatch" | "dispatch" | "newDispatches" | "dispatchWaiting" | "newScheduledDispatch" | "wakeAt">;
  /** The event and refund of a canceled message. */
  inbound: Pick<Inbound, "stopped">;
  /** Counts accepted sends (msgsvc_messages_accepted_total). */
  metrics: Pick<Metrics, "messagesAccepted">;
  /** The workspaces' opt-out lists: a send to a listed number is refused. */
  optOuts: Pick<OptOutStore, "isListed" | "listedAmong">;
}

/** The refusal of a send to a number on the workspace's opt-out list (README "Errors"). */
export function optedOutError(to: string): ConnectError {
  return apiError("recipient_opted_out", `The recipient ${to} is on the workspace's opt-out list (it asked not to be contacted); nothing was spent`, { phone_number: to });
}

/** How long a message may wait to be handed to the network when the send names no ttl_seconds, in seconds (24 hours). */
export const DEFAULT_TTL_SECONDS = 86_400;

/**
 * The canonical form of a send's body, as its Idempotency-Key compares it
 * (send_at and ttl_seconds only when given, so that the form of a send
 * without them is the one earlier releases stored).
 */
function canonicalSend(req: SendMessageRequest) {
  return {
    to: req.to,
    sender: req.sender,
    template: { id: req.template?.id ?? "", variables: req.template?.variables ?? {}, flow_token: req.template?.flow?.token ?? "" },
    ...(req.sendAt ? { send_at: timestampDate(req.sendAt).toISOString() } : {}),
    ...(req.ttlSeconds !== undefined ? { ttl_seconds: req.ttlSeconds } : {}),
  };
}

/** The refusal of a cancellation of a message already handed to the network, or under way to it (README "Scheduled sends, cancellation and validity"). */
function notCancelable(message: MessageRecord): ConnectError {
  const why =
    message.status === "scheduled" || message.status === "accepted"
      ? "it is being handed to the network right now"
      : message.status === "canceled"
        ? "it is canceled already"
        : `it was handed to the network already (status ${message.status})`;
  return apiError("failed_precondition", `The message ${message._id} cannot be canceled: ${why}; only a scheduled message, or one waiting for dispatch, can be`, {
    message_id: message._id,
    status: message.status,
  });
}

/**
 * The message a send creates, as stored (status accepted, or scheduled with
 * a send_at; its dispatch fields from Dispatcher.newDispatch, or
 * newScheduledDispatch): the send snapshot fixes what dispatch hands the
 * network, whatever later happens to the sender or template. Its
 * valid_until is send_at (or `now`) plus the send's ttl_seconds
 * (DEFAULT_TTL_SECONDS unless given).
 */
function newMessageRecord(
  messageId: string,
  req: SendMessageRequest,
  sender: SenderRecord,
  template: TemplateRecord,
  principal: Principal,
  price: number,
  now: Date,
  dispatch: ReturnType<MessageServiceDeps["dispatcher"]["newDispatch"]>["fields"],
): MessageRecord {
  const variables = req.template?.variables ?? {};
  const givenToken = req.template?.flow?.token ?? "";
  const flowToken = template.flow_id ? givenToken || randomUUID() : null;
  const sendAt = req.sendAt ? timestampDate(req.sendAt) : null;
  const ttlMs = (req.ttlSeconds ?? DEFAULT_TTL_SECONDS) * 1000;
  return {
    _id: messageId,
    workspace_id: principal.workspaceId,
    direction: "outbound",
    api_key_id: principal.apiKeyId,
    to: req.to,
    from: sender.phone_number,
    sender_id: sender._id,
    template_id: template._id,
    template_category: categoryOf(template),
    flow_token: flowToken,
    status: sendAt ? "scheduled" : "accepted",
    send_at: sendAt,
    valid_until: new Date((sendAt ?? now).getTime() + ttlMs),
    wa_message_id: null,
    error: null,
    credits: price,
    created_at: now,
    refund_state: "none",
    send: {
      from_phone_number: sender.phone_number,
      from_phone_number_id: sender.whatsapp_phone_number_id,
      template_name: template.name,
      language: template.language,
      parameters: template.variables.map((x) => ({ name: x.name, value: variables[x.name] ?? "" })),
      flow: template.flow_id && flowToken ? { flow_id: template.flow_id, token: flowToken } : null,
      text: renderBody(template.body, variables),
    },
    ...dispatch,
  };
}

/** An item's error as a batch answers it: the error body of a single send (code, message, details with field_violations), without request id. */
function itemError(err: ConnectError): { code: string; message: string; details: JsonObject } {
  const { code, message, details, violations } = describeError(err);
  const body: JsonObject = { ...details };
  if (violations.length > 0) body.field_violations = violations.map((v) => ({ field: v.field, description: v.description }));
  return { code, message, details: body };
}

/**
 * The contract's violations of a batch, split: those of an item
 * (`messages[3].to`), by item and named as in a single send (`to`), and
 * those of the request as a whole (no items, too many).
 */
function splitBatchViolations(violations: readonly FieldViolation[]): { whole: FieldViolation[]; byItem: Map<number, FieldViolation[]> } {
  const whole: FieldViolation[] = [];
  const byItem = new Map<number, FieldViolation[]>();
  for (const v of violations) {
    const match = /^messages\[(\d+)\]\.(.+)$/.exec(v.field);
    if (!match) {
      whole.push(v);
      continue;
    }
    const index = Number(match[1]);
    const list = byItem.get(index) ?? [];
    list.push({ field: match[2] as string, description: v.description });
    byItem.set(index, list);
  }
  return { whole, byItem };
}

/**
 * The rules of a send that need the sender and template of the workspace,
 * added to the contract's (messages.proto: the shapes of to, sender,
 * template.id, the variable values and the flow token) in `v`. A field the
 * contract already refused (`named`) is not checked again: a malformed
 * sender or template id is not looked up, and a template's variables are
 * checked whenever its id is well-formed.
 */
function checkAgainst(
  req: SendMessageRequest,
  sender: SenderRecord | null,
  template: TemplateRecord | null,
  deps: MessageServiceDeps,
  v: Violations,
  named: (field: string) => boolean,
): void {
  if (!named("sender")) {
    if (!sender) v.add("sender", "no sender with this id in the workspace (see GET /v1/senders)");
    else if (sender.status !== "active") v.add("sender", "is archived; send from an active sender");
    else v.addIf(deps.requirePhoneNumberId && !sender.whatsapp_phone_number_id, "sender", "has no WhatsApp phone number ID; set one in the console");
  }
  if (named("template") || named("template.id")) return;
  const given = req.template?.variables ?? {};
  if (!template) {
    v.add("template.id", "no template with this id in the workspace (see GET /v1/templates)");
    return;
  }
  const add = (broken: boolean, field: string, rule: string) => v.addIf(broken && !named(field), field, rule);
  add(template.status !== "active", "template.id", "is archived; use an active template");
  const known = template.variables.map((x) => x.name);
  for (const variable of template.variables) {
    add(variable.required && (given[variable.name] ?? "") === "", `template.variables.${variable.name}`, "is required by the template");
  }
  for (const name of Object.keys(given)) {
    add(!known.includes(name), `template.variables.${name}`, `is not a variable of the template (it has: ${known.join(", ") || "none"})`);
  }
  add(!template.flow_id && (req.template?.flow?.token ?? "") !== "", "template.flow.token", "the template carries no flow");
  add(charLength(renderBody(template.body, given)) > MAX_BODY_CHARS, "template.variables", `the rendered message must be at most ${MAX_BODY_CHARS} characters`);
}

/**
 * Handlers of messaging.v1.MessageService.
 *
 * SendMessage (POST /v1/messages, scope messages:send): validates every rule
 * at once, the contract's and those that need the database (one
 * invalid_argument naming each field), then, with an
 * Idempotency-Key, replays the first answer for the same body (header
 * Idempotent-Replayed: true) or refuses another body with conflict; then
 * refuses a recipient on the workspace's opt-out list (recipient_opted_out,
 * the key not kept); then reserves the price with one conditional update of
 * the balance (insufficient_credits otherwise, creating nothing), stores the
 * message (status accepted: the outbox) and hands it to dispatch.
 *
 * BatchSendMessages (POST /v1/messages:batch, scope messages:send; README
 * "Sending messages", Batch sends): 1 to 1,000 items, each checked as a
 * single send is and refused on its own with that send's error body; a
 * request wrong as a whole (no items, more than 1,000, a malformed
 * Idempotency-Key) is one invalid_argument. The Idempotency-Key covers the
 * batch (its results replayed). The recipients are looked up on the opt-out
 * list in one find; the items the balance pays for are reserved with one
 * conditional update (CreditStore.reserveMany; those beyond it get
 * insufficient_credits), stored with one insertMany, and dispatched once the
 * answer is written: as many held by this process as it has room for, the
 * others stored due now for the claims (Dispatcher.newDispatches). The
 * answer lists one result per item, in order, with the counts, which the
 * request log records (RequestState.batchCounts).
 *
 * GetMessage and ListMessages (scope messages:read) show only the calling
 * key's messages; another key's message is not_found.
 *
 * A send with send_at is stored scheduled, waiting in dispatch's queue until
 * then; every send gets a valid_until (README "Scheduled sends, cancellation
 * and validity"). CancelMessage (POST /v1/messages/{id}:cancel, scope
 * messages:send, the calling key's messages only) cancels a message not yet
 * handed to the network with one conditional update (MessageStore.cancel),
 * then fires message.canceled and refunds it; a message handed over or
 * under way is failed_precondition, an unknown one not_found.
 */
export function createMessageService(deps: MessageServiceDeps): Partial<ServiceImpl<typeof MessageService>> {
  answerViolationsInHandler(MessageService.method.sendMessage);
  answerViolationsInHandler(MessageService.method.batchSendMessages);
  const { messages, senders, templates, credits, idempotency, clock } = deps;

  /** Writes a spend's ledger entry, batched with others; not awaited: a crash before it is written is completed by the sweep. */
  const settle = (reservation: Reservation, messageId: string) =>
    reservation.settle().catch((err: unknown) => deps.logger.warn({ err, messageId }, "ledger entry not written yet; the sweep completes it"));
  const insufficientCredits = (price: number) =>
    apiError("insufficient_credits", `The workspace's credit balance cannot pay for this message, which costs ${price} credits`, { price_credits: String(price) });

  /**
   * The answer of a batch: one result per item, in order (the message as
   * `messages` has it now, or the error), with the counts, which the request
   * log records.
   */
  function answerBatch(state: ReturnType<typeof requestState>, stored: readonly StoredBatchResult[], records: readonly MessageRecord[]) {
    const byId = new Map(records.map((r) => [r._id, r]));
    let accepted = 0;
    const results = stored.map((r, index): MessageInitShape<typeof BatchSendMessagesResultSchema> => {
      if ("error" in r) return { index, error: r.error };
      const record = byId.get(r.message_id);
      if (!record) throw apiError("internal", `The message ${r.message_id} of this batch is missing`);
      accepted++;
      return { index, message: messageToProto(record) };
    });
    state.batchCounts = { accepted, refused: stored.length - accepted };
    return { results, acceptedCount: accepted, refusedCount: stored.length - accepted };
  }

  return {
    async sendMessage(req, context) {
      const principal = principalOf(context);
      const workspaceId = principal.workspaceId;
      const idempotencyKey = context.requestHeader.get("idempotency-key");
      const contract = contractViolationsOf(context);
      const named = (field: string) => contract.some((c) => c.field === field);
      const v = new Violations().addAll(contract);
      v.addIf(idempotencyKey !== null && !isValidIdempotencyKey(idempotencyKey), "Idempotency-Key", IDEMPOTENCY_KEY_RULE);
      const lookUpTemplate = !named("template") && !named("template.id");
      const [senderRecord, templateRecord, listed] = await Promise.all([
        named("sender") ? null : senders.get(req.sender),
        lookUpTemplate ? templates.get(req.template?.id ?? "") : null,
        named("to") ? false : deps.optOuts.isListed(workspaceId, req.to),
      ]);
      const sender = senderRecord?.workspace_id === workspaceId ? senderRecord : null;
      const template = templateRecord?.workspace_id === workspaceId ? templateRecord : null;
      checkAgainst(req, sender, template, deps, v, named);
      v.check();
      if (!sender || !template || !req.template) throw new Error("unreachable: checked above");

      let messageId = newId("msg");
      const decision = idempotencyKey
        ? await idempotency.begin(principal.apiKeyId, idempotencyKey, fingerprintOf(canonicalSend(req)), messageId, messages.exists)
        : undefined;
      if (decision?.kind === "replay") {
        const original = await messages.get(decision.messageId);
        if (!original) throw apiError("internal", "The message of this Idempotency-Key is missing");
        requestState(context).setHeader("idempotent-replayed", "true");
        return { message: messageToProto(original) };
      }
      if (decision) messageId = decision.messageId;

      try {
        // A number on the opt-out list: refused before anything is spent (and the key is not kept).
        if (listed) throw optedOutError(req.to);
        const price = deps.priceCredits;
        const reservation = await credits.reserve(workspaceId, messageId, price);
        if (reservation === null) throw insufficientCredits(price);
        const now = clock.now();
        // A scheduled send waits in the queue, due at its send_at; any other is held here and dispatched at once.
        const sendAt = req.sendAt ? timestampDate(req.sendAt) : null;
        const { fields: dispatch, lease } = sendAt ? { fields: deps.dispatcher.newScheduledDispatch(sendAt), lease: null } : deps.dispatcher.newDispatch(now);
        const record = newMessageRecord(messageId, req, sender, template, principal, price, now, dispatch);
        try {
          await messages.insert(record);
        } catch (err) {
          await credits.releaseSpend(workspaceId, messageId).catch(() => undefined); // else the sweep gives it back
          throw err;
        }
        // Batched with other sends; not awaited: a crash before it is written is completed by the sweep.
        settle(reservation, messageId);
        if (decision?.kind === "proceed") decision.done();
        if (lease) deps.dispatcher.dispatch(record, lease);
        else if (sendAt) deps.dispatcher.wakeAt(sendAt);
        deps.metrics.messagesAccepted.inc();
        return { message: messageToProto(record) };
      } catch (err) {
        await decision?.abandon();
        throw err;
      }
    },
    async batchSendMessages(req, context) {
      const principal = principalOf(context);
      const workspaceId = principal.workspaceId;
      const state = requestState(context);
      const idempotencyKey = context.requestHeader.get("idempotency-key");
      const { whole, byItem } = splitBatchViolations(contractViolationsOf(context));
      if (idempotencyKey !== null && !isValidIdempotencyKey(idempotencyKey)) whole.push({ field: "Idempotency-Key", description: IDEMPOTENCY_KEY_RULE });
      // Scheduled sends are single sends (README "Batch sends", Decisions): an item's send_at refuses the request.
      req.messages.forEach((item, i) => {
        if (item.sendAt) whole.push({ field: `messages[${i}].send_at`, description: "is not taken in a batch: send a scheduled message with POST /v1/messages" });
      });
      if (whole.length > 0) throw violationsError(whole);
      const items = req.messages;
      const price = deps.priceCredits;
      const results: (StoredBatchResult & { record?: MessageRecord })[] = new Array(items.length);
      const refuse = (i: number, err: ConnectError) => (results[i] = { error: itemError(err) });

      // The database's rules, as a single send checks them: each sender, template and recipient looked up once.
      const itemNamed = (i: number) => (field: string) => byItem.get(i)?.some((c) => c.field === field) ?? false;
      const senderIds = new Set<string>();
      const templateIds = new Set<string>();
      const recipients = new Set<string>();
      items.forEach((item, i) => {
        const named = itemNamed(i);
        if (!named("sender")) senderIds.add(item.sender);
        if (!named("template") && !named("template.id")) templateIds.add(item.template?.id ?? "");
        if (!named("to")) recipients.add(item.to);
      });
      const [senderList, templateList, listed] = await Promise.all([
        Promise.all([...senderIds].map((id) => senders.get(id))),
        Promise.all([...templateIds].map((id) => templates.get(id))),
        deps.optOuts.listedAmong(workspaceId, [...recipients]),
      ]);
      const ofWorkspace = <T extends { _id: string; workspace_id: string }>(list: (T | null)[]) =>
        new Map(list.flatMap((r) => (r && r.workspace_id === workspaceId ? [[r._id, r] as const] : [])));
      const senderById = ofWorkspace(senderList);
      const templateById = ofWorkspace(templateList);
      const valid: number[] = [];
      items.forEach((item, i) => {
        const v = new Violations().addAll(byItem.get(i) ?? []);
        checkAgainst(item, senderById.get(item.sender) ?? null, templateById.get(item.template?.id ?? "") ?? null, deps, v, itemNamed(i));
        if (v.list.length > 0) refuse(i, violationsError(v.list));
        else valid.push(i);
      });

      let messageIds = items.map(() => newId("msg"));
      const decision = idempotencyKey
        ? await idempotency.beginBatch(principal.apiKeyId, idempotencyKey, fingerprintOf({ batch: items.map(canonicalSend) }), messageIds)
        : undefined;
      if (decision?.kind === "replay") {
        state.setHeader("idempotent-replayed", "true");
        return answerBatch(state, decision.results, await messages.getMany(decision.results.flatMap((r) => ("message_id" in r ? [r.message_id] : []))));
      }
      if (decision) messageIds = decision.messageIds;

      const reservations = new Map<number, Reservation>();
      try {
        // Taking over the key of a batch that stopped half-way: the messages it stored are accepted as they are.
        const stored = new Map((decision?.taken ? await messages.getMany(messageIds) : []).map((m) => [m._id, m]));
        const toCharge: number[] = [];
        for (const i of valid) {
          const earlier = stored.get(messageIds[i] as string);
          if (earlier) results[i] = { message_id: earlier._id, record: earlier };
          else if (listed.has(items[i]!.to)) refuse(i, optedOutError(items[i]!.to));
          else toCharge.push(i);
        }
        const reserved = await credits.reserveMany(workspaceId, toCharge.map((i) => messageIds[i] as string), price);
        const now = clock.now();
        const records: { index: number; record: MessageRecord; lease: string | null }[] = [];
        const dispatches = deps.dispatcher.newDispatches(now, reserved.filter((r) => r !== null).length);
        toCharge.forEach((i, k) => {
          const reservation = reserved[k];
          if (!reservation) return void refuse(i, insufficientCredits(price));
          reservations.set(i, reservation);
          const { fields, lease } = dispatches[records.length]!;
          const template = templateById.get(items[i]!.template?.id ?? "") as TemplateRecord;
          records.push({ index: i, lease, record: newMessageRecord(messageIds[i] as string, items[i]!, senderById.get(items[i]!.sender) as SenderRecord, template, principal, price, now, fields) });
        });
        const outcomes = records.length > 0 ? await messages.insertBatch(records.map((r) => r.record)) : [];
        const duplicates: string[] = [];
        const toDispatch: { record: MessageRecord; lease: string }[] = [];
        let waitingStored = false;
        for (const [k, { index, record, lease }] of records.entries()) {
          const outcome = outcomes[k];
          if (outcome instanceof Error) {
            reservations.delete(index);
            await credits.releaseSpend(workspaceId, record._id).catch(() => undefined); // else the sweep gives it back
            deps.logger.error({ err: outcome, messageId: record._id }, "a message of a batch could not be stored");
            refuse(index, apiError("internal", `The message could not be stored (request ${state.requestId}); nothing was spent for it`));
            continue;
          }
          settle(reservations.get(index) as Reservation, record._id);
          if (outcome === "duplicate") {
            duplicates.push(record._id); // stored by an earlier attempt of this batch, which dispatched it
            results[index] = { message_id: record._id };
            continue;
          }
          results[index] = { message_id: record._id, record };
          if (lease) toDispatch.push({ record, lease });
          else waitingStored = true;
        }
        for (const m of await messages.getMany(duplicates)) {
          const i = messageIds.indexOf(m._id);
          results[i] = { message_id: m._id, record: m };
        }
        deps.metrics.messagesAccepted.inc(records.length - duplicates.length);
        const answer = results.map((r) => ("error" in r ? { error: r.error } : { message_id: r.message_id }));
        await decision?.complete(answer);
        // Dispatched once the answer is on its way (the next turn of the event loop, after the handler's answer is
        // serialized): a thousand network calls starting at once would otherwise compete with writing it.
        setImmediate(() => {
          for (const { record, lease } of toDispatch) deps.dispatcher.dispatch(record, lease);
          if (waitingStored) deps.dispatcher.dispatchWaiting();
        });
        return answerBatch(state, answer, results.flatMap((r) => ("record" in r && r.record ? [r.record] : [])));
      } catch (err) {
        // Refused as a whole: what was reserved and not stored is given back (the sweep would, later), the key freed.
        for (const [i] of reservations) if (!results[i] || "error" in results[i]!) await credits.releaseSpend(workspaceId, messageIds[i] as string).catch(() => undefined);
        await decision?.abandon();
        throw err;
      }
    },
    async cancelMessage(req, context) {
      const { canceled, message } = await messages.cancel(req.id, principalOf(context).apiKeyId, clock.now());
      if (!message) throw notFound("message", req.id);
      if (!canceled) throw notCancelable(message);
      // Canceled: its event and refund follow; should they fail, the sweep completes them (the message marks both).
      await deps.inbound.stopped(message).catch((err: unknown) => deps.logger.warn({ err, messageId: message._id }, "event or refund of a canceled message not done yet; the sweep completes it"));
      return { message: messageToProto(message) };
    },
    async getMessage(req, context) {
      const record = await messages.getForKey(req.id, principalOf(context).apiKeyId);
      if (!record) throw notFound("message", req.id);
      return { message: messageToProto(record) };
    },
    async listMessages(req, context) {
      const page = await messages.listForKey(principalOf(context).apiKeyId, { status: statusFromProto(req.status), to: req.to || undefined }, req);
      return { object: "list", data: page.items.map(messageToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}
