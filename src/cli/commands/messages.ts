import { Command } from "commander";
import {
  EventSchema,
  GetMessageResponseSchema,
  ListMessagesResponseSchema,
  MessageLogService,
} from "../../../gen/messaging/console/v1/messages_pb.js";
import { MessageStatus } from "../../../gen/messaging/v1/messages_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, since, UsageError, wholeNumber, type CliContext } from "../context.js";
import { batchSendCommand, type BatchSendOptions } from "./batch-send.js";

const columns = ["message_id", "status", "to", "template_id", "credits", "wa_message_id", "created_at"];

const STATUSES: Record<string, MessageStatus> = {
  accepted: MessageStatus.ACCEPTED,
  sent: MessageStatus.SENT,
  delivered: MessageStatus.DELIVERED,
  read: MessageStatus.READ,
  failed: MessageStatus.FAILED,
  scheduled: MessageStatus.SCHEDULED,
  canceled: MessageStatus.CANCELED,
};

/** Parses `--status`, or throws UsageError naming the statuses. */
function parseStatus(value: string | undefined): MessageStatus {
  if (value === undefined) return MessageStatus.UNSPECIFIED;
  const status = STATUSES[value];
  if (status === undefined) throw new UsageError(`--status: must be one of ${Object.keys(STATUSES).join(", ")}, got ${JSON.stringify(value)}`);
  return status;
}

/**
 * `msgsvc messages …`: the message log of a workspace (messaging.console.v1.MessageLogService).
 * `list` filters by status, recipient and creation time; `get` shows one message with its status
 * timeline, the credits charged and refunded, and the webhook events it caused.
 */
export function messageCommands(ctx: CliContext, env: NodeJS.ProcessEnv = process.env): Command {
  const client = () => ctx.client(MessageLogService);
  const messages = new Command("messages").description("send messages in batches; see a workspace's messages: status timeline, credits, events");
  messages
    .command("send")
    .description("send the messages of a file through the public API (BatchSendMessages, 1,000 a request): JSON Lines, or CSV with a header of variables")
    .requiredOption("--batch <file>", "JSON Lines (each line the body of a send) or .csv (columns to, [sender], [template], [flow_token] and the variables)")
    .option("--sender <id>", "sender of the items that name none (snd_…)")
    .option("--template <id>", "template of the items that name none (tpl_…)")
    .option("--results <file>", "where to write each item's result, JSON Lines (default: <file>.results.jsonl)")
    .option("--idempotency-key <key>", "makes a rerun safe: request n carries the Idempotency-Key <key>-n")
    .option("--batch-size <n>", "items per request, 1 to 1000", "1000")
    .option("--api-key <key>", "API key with the scope messages:send (default: API_KEY); the API is at API_URL (default http://127.0.0.1:8080)")
    .option("--json", "print the summary as JSON")
    .action(batchSendCommand(ctx, env) as (o: BatchSendOptions) => Promise<void>);
  messages
    .command("list")
    .description("list a workspace's outbound messages, newest first")
    .requiredOption("--workspace <id>", "workspace of the messages")
    .option("--status <status>", "only this status: accepted, sent, delivered, read, failed, scheduled or canceled")
    .option("--to <number>", "only messages to this number (digits with country code)", "")
    .option("--since <when>", "created at or after: a duration back from now (1h, 30m, 7d) or an ISO time")
    .option("--until <when>", "created before: a duration back from now or an ISO time")
    .option("--page-size <n>", "items per page (at most 100)", "20")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print the whole answer as JSON")
    .action(async (o: { workspace: string; status?: string; to: string; since?: string; until?: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await client().listMessages({
        workspaceId: o.workspace,
        status: parseStatus(o.status),
        to: o.to,
        createdAfter: since(o.since),
        createdBefore: since(o.until, "--until"),
        pageSize: wholeNumber("--page-size", o.pageSize),
        pageToken: o.pageToken,
      });
      ctx.printList(ListMessagesResponseSchema, res, columns, !!o.json);
    });
  messages
    .command("get <id>")
    .description("show a message: its status timeline, credits charged and refunded, and the events it caused")
    .option("--workspace <id>", "workspace of the message (optional: message ids are unique)", "")
    .option("--json", "print the whole answer as JSON")
    .action(async (id: string, o: { workspace: string; json?: boolean }) => {
      const res = await client().getMessage({ workspaceId: o.workspace, id });
      const whole = toRestJson(GetMessageResponseSchema, res) as Record<string, unknown> & {
        message: Record<string, unknown>;
        timeline: Record<string, unknown>[];
        events: Record<string, unknown>[];
        charge: Record<string, unknown> | null;
        refund: Record<string, unknown> | null;
      };
      if (o.json) return ctx.printJson(whole);
      const message = whole.message;
      const fields = ["message_id", "status", "to", "sender", "template_id", "flow_token", "wa_message_id", "error", "credits"];
      ctx.say(formatTable(fields.map((field) => ({ field, value: message[field] })), ["field", "value"]), false);
      ctx.say(`sent by key ${String(whole.api_key_id)}`, false);
      ctx.say("\nTimeline", false);
      ctx.say(formatTable(whole.timeline, ["status", "at"]), false);
      ctx.say("\nCredits", false);
      const credits = [whole.charge, whole.refund].filter((entry): entry is Record<string, unknown> => entry !== null);
      ctx.say(credits.length === 0 ? "none recorded" : formatTable(credits, ["id", "kind", "amount", "balance_after", "created_at"]), false);
      ctx.say("\nEvents", false);
      ctx.say(whole.events.length === 0 ? "none" : formatTable(whole.events, ["id", "type", "created_at"]), false);
    });
  return messages;
}

/** `msgsvc events get <id>`: one webhook event with its payload. */
export function eventCommands(ctx: CliContext): Command {
  const events = new Command("events").description("see webhook events and their payloads");
  events
    .command("get <id>")
    .description("show an event and its payload (the envelope's data)")
    .option("--workspace <id>", "workspace of the event (optional: event ids are unique)", "")
    .option("--json", "print JSON")
    .action(async (id: string, o: { workspace: string; json?: boolean }) => {
      const { event } = await ctx.client(MessageLogService).getEvent({ workspaceId: o.workspace, id });
      const json = toRestJson(EventSchema, event!);
      if (o.json) return ctx.printJson(json);
      ctx.say(formatTable([json], ["id", "type", "created_at"]), false);
      ctx.say(JSON.stringify(json.data, null, 2), false);
    });
  return events;
}
