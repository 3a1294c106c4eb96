import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { MessageService, type SendMessageRequest } from "../../gen/messaging/v1/messages_pb.js";
import type { CreditStore } from "../credits/credit-store.js";
import { principalOf, requestState } from "../gateway/request-state.js";
import { answerViolationsInHandler, contractViolationsOf } from "../gateway/validation.js";
import type { SenderRecord, SenderStore } from "../senders/sender-store.js";
import type { Clock } from "../shared/clock.js";
import { apiError, notFound } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { charLength, Violations } from "../shared/validation.js";
import { MAX_BODY_CHARS, renderBody } from "../templates/template-body.js";
import type { TemplateRecord, TemplateStore } from "../templates/template-store.js";
import { fingerprintOf, IDEMPOTENCY_KEY_RULE, isValidIdempotencyKey, type IdempotencyStore } from "./idempotency.js";
import { messageToProto, statusFromProto } from "./message-proto.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Dispatcher } from "./dispatch.js";
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
  /** Dispatch: the fields a new message starts with (held by this process), and the start of its dispatch. */
  dispatcher: Pick<Dispatcher, "newDispatch" | "dispatch">;
  /** Counts accepted sends (msgsvc_messages_accepted_total). */
  metrics: Pick<Metrics, "messagesAccepted">;
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
 * reserves the price with one conditional update of the balance
 * (insufficient_credits otherwise, creating nothing), stores the message
 * (status accepted: the outbox) and hands it to dispatch.
 *
 * GetMessage and ListMessages (scope messages:read) show only the calling
 * key's messages; another key's message is not_found.
 */
export function createMessageService(deps: MessageServiceDeps): Partial<ServiceImpl<typeof MessageService>> {
  answerViolationsInHandler(MessageService.method.sendMessage);
  const { messages, senders, templates, credits, idempotency, clock } = deps;

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
      const [senderRecord, templateRecord] = await Promise.all([
        named("sender") ? null : senders.get(req.sender),
        lookUpTemplate ? templates.get(req.template?.id ?? "") : null,
      ]);
      const sender = senderRecord?.workspace_id === workspaceId ? senderRecord : null;
      const template = templateRecord?.workspace_id === workspaceId ? templateRecord : null;
      checkAgainst(req, sender, template, deps, v, named);
      v.check();
      if (!sender || !template || !req.template) throw new Error("unreachable: checked above");

      const variables = req.template.variables;
      const givenToken = req.template.flow?.token ?? "";
      let messageId = newId("msg");
      const decision = idempotencyKey
        ? await idempotency.begin(
            principal.apiKeyId,
            idempotencyKey,
            fingerprintOf({ to: req.to, sender: req.sender, template: { id: template._id, variables, flow_token: givenToken } }),
            messageId,
            messages.exists,
          )
        : undefined;
      if (decision?.kind === "replay") {
        const original = await messages.get(decision.messageId);
        if (!original) throw apiError("internal", "The message of this Idempotency-Key is missing");
        requestState(context).setHeader("idempotent-replayed", "true");
        return { message: messageToProto(original) };
      }
      if (decision) messageId = decision.messageId;

      try {
        const price = deps.priceCredits;
        const reservation = await credits.reserve(workspaceId, messageId, price);
        if (reservation === null) {
          throw apiError("insufficient_credits", `The workspace's credit balance cannot pay for this message, which costs ${price} credits`, {
            price_credits: String(price),
          });
        }
        const flowToken = template.flow_id ? givenToken || randomUUID() : null;
        const now = clock.now();
        const { fields: dispatch, lease } = deps.dispatcher.newDispatch(now);
        const record: MessageRecord = {
          _id: messageId,
          workspace_id: workspaceId,
          direction: "outbound",
          api_key_id: principal.apiKeyId,
          to: req.to,
          from: sender.phone_number,
          sender_id: sender._id,
          template_id: template._id,
          flow_token: flowToken,
          status: "accepted",
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
        try {
          await messages.insert(record);
        } catch (err) {
          await credits.releaseSpend(workspaceId, messageId).catch(() => undefined); // else the sweep gives it back
          throw err;
        }
        // Batched with other sends; not awaited: a crash before it is written is completed by the sweep.
        reservation.settle().catch((err: unknown) => deps.logger.warn({ err, messageId }, "ledger entry not written yet; the sweep completes it"));
        if (decision?.kind === "proceed") decision.done();
        deps.dispatcher.dispatch(record, lease);
        deps.metrics.messagesAccepted.inc();
        return { message: messageToProto(record) };
      } catch (err) {
        await decision?.abandon();
        throw err;
      }
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
