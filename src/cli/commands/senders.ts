import { Command } from "commander";
import { SenderSchema, ListSendersResponseSchema, SenderService } from "../../../gen/messaging/console/v1/senders_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, UsageError, wholeNumber, type CliContext } from "../context.js";

/** A sender's queue as the REST JSON of messaging.console.v1.SenderQueue has it. */
interface SenderQueueJson {
  message_count: number;
  oldest_queued_at: string | null;
  oldest_wait_seconds: number;
  reasons: { reason: string | null; message_count: number }[];
  scheduled_count: number;
  sent_last_minute_count: number;
  sent_last_minute_mps: number;
  network_refusals: { code: number; count: number; last_refused_at: string | null }[];
}

/** The human form of a sender's queue (`msgsvc senders get`): counts, then its reasons and the network's refusals as tables. */
export function formatSenderQueue(queue: SenderQueueJson, throughputMps: number): string {
  const rate = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
  const rows = [
    { field: "queued", value: queue.message_count },
    { field: "oldest_queued_at", value: queue.oldest_queued_at ? `${queue.oldest_queued_at} (waiting ${rate(queue.oldest_wait_seconds)} s)` : "-" },
    { field: "scheduled_not_due", value: queue.scheduled_count },
    { field: "sent_last_minute", value: `${queue.sent_last_minute_count} (${rate(queue.sent_last_minute_mps)}/s of ${throughputMps}/s)` },
  ];
  const parts = ["Queue", formatTable(rows, ["field", "value"])];
  parts.push("\nQueued by reason", queue.reasons.length === 0 ? "none recorded" : formatTable(queue.reasons, ["reason", "message_count"]));
  parts.push("\nNetwork refusals", queue.network_refusals.length === 0 ? "none" : formatTable(queue.network_refusals, ["code", "count", "last_refused_at"]));
  return parts.join("\n");
}

/** `msgsvc senders …`: create, list, get (with its queue), update, archive. */
export function senderCommands(ctx: CliContext): Command {
  const columns = ["id", "phone_number", "name", "status", "throughput_mps", "throughput_source", "whatsapp_phone_number_id", "created_at"];
  const senders = new Command("senders").description("manage sender numbers");
  senders
    .command("create")
    .description("create a sender number")
    .requiredOption("--workspace <id>", "workspace of the sender")
    .requiredOption("--phone-number <digits>", "the number, digits with country code, for example 4915112345678")
    .requiredOption("--name <name>", "name of the sender")
    .option("--whatsapp-phone-number-id <id>", "its phone number ID on the WhatsApp Cloud API", "")
    .option("--throughput-mps <n>", "messages per second the network takes from it, 1 to 1000 (default: the network's figure for the number, else 80)")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; phoneNumber: string; name: string; whatsappPhoneNumberId: string; throughputMps?: string; json?: boolean }) => {
      const { sender } = await ctx.client(SenderService).createSender({
        workspaceId: o.workspace,
        phoneNumber: o.phoneNumber,
        name: o.name,
        whatsappPhoneNumberId: o.whatsappPhoneNumberId,
        throughputMps: o.throughputMps === undefined ? 0 : wholeNumber("--throughput-mps", o.throughputMps),
      });
      ctx.print(SenderSchema, sender!, columns, !!o.json);
    });
  senders
    .command("list")
    .description("list a workspace's senders, newest first")
    .requiredOption("--workspace <id>", "workspace of the senders")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(SenderService).listSenders({ workspaceId: o.workspace, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListSendersResponseSchema, res, columns, !!o.json);
    });
  senders
    .command("get <id>")
    .description("show one sender, archived ones included, with its queue, the rate it sent in the last minute and the network's refusals")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { sender } = await ctx.client(SenderService).getSender({ id });
      if (o.json) return ctx.print(SenderSchema, sender!, columns, true);
      ctx.print(SenderSchema, sender!, columns, false);
      const json = toRestJson(SenderSchema, sender!) as { queue: SenderQueueJson | null; throughput_mps: number };
      if (json.queue) ctx.say(`\n${formatSenderQueue(json.queue, json.throughput_mps)}`, false);
    });
  senders
    .command("update <id>")
    .description("change a sender's throughput or name (dispatch paces at a new throughput within a second)")
    .option("--throughput-mps <n>", "messages per second the network takes from it, 1 to 1000")
    .option("--name <name>", "new name")
    .option("--json", "print JSON")
    .action(async (id: string, o: { throughputMps?: string; name?: string; json?: boolean }) => {
      const paths: string[] = [];
      if (o.throughputMps !== undefined) paths.push("throughput_mps");
      if (o.name !== undefined) paths.push("name");
      if (paths.length === 0) throw new UsageError("give at least one of --throughput-mps, --name");
      const { sender } = await ctx.client(SenderService).updateSender({
        sender: { id, name: o.name ?? "", throughputMps: o.throughputMps === undefined ? 0 : wholeNumber("--throughput-mps", o.throughputMps) },
        updateMask: { paths },
      });
      ctx.print(SenderSchema, sender!, columns, !!o.json);
    });
  senders
    .command("archive <id>")
    .description("archive a sender: later sends from it are refused")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { sender } = await ctx.client(SenderService).archiveSender({ id });
      ctx.print(SenderSchema, sender!, columns, !!o.json);
    });
  return senders;
}
