import { Command } from "commander";
import { SenderSchema, ListSendersResponseSchema, SenderService } from "../../../gen/messaging/console/v1/senders_pb.js";
import { wholeNumber, type CliContext } from "../context.js";

/** `msgsvc senders …`: create, list, archive. */
export function senderCommands(ctx: CliContext): Command {
  const columns = ["id", "phone_number", "name", "status", "whatsapp_phone_number_id", "created_at"];
  const senders = new Command("senders").description("manage sender numbers");
  senders
    .command("create")
    .description("create a sender number")
    .requiredOption("--workspace <id>", "workspace of the sender")
    .requiredOption("--phone-number <digits>", "the number, digits with country code, for example 4915112345678")
    .requiredOption("--name <name>", "name of the sender")
    .option("--whatsapp-phone-number-id <id>", "its phone number ID on the WhatsApp Cloud API", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; phoneNumber: string; name: string; whatsappPhoneNumberId: string; json?: boolean }) => {
      const { sender } = await ctx.client(SenderService).createSender({
        workspaceId: o.workspace,
        phoneNumber: o.phoneNumber,
        name: o.name,
        whatsappPhoneNumberId: o.whatsappPhoneNumberId,
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
    .description("show one sender, archived ones included")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { sender } = await ctx.client(SenderService).getSender({ id });
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
