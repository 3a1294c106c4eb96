import { Command } from "commander";
import {
  ListOptOutsResponseSchema,
  OptOutSchema,
  OptOutService,
  OptOutSettingsSchema,
  OptOutStatus,
} from "../../../gen/messaging/console/v1/opt_outs_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

const columns = ["phone_number", "status", "source", "keyword", "error_code", "message_id", "changed_by", "updated_at"];

/** The --number option, required for add and remove. */
function requireNumber(command: string, number: string | undefined): string {
  if (!number) throw new UsageError(`opt-outs ${command}: --number is required (digits with country code, for example 4915112345678)`);
  return number;
}

/**
 * `msgsvc opt-outs …`: a workspace's opt-out list (messaging.console.v1.OptOutService): `list` the numbers on it
 * (or with `--status opted_in` those taken off), `add` and `remove` a number, and `keywords` to show or change the
 * reply keywords that put a number on the list or take it off.
 */
export function optOutCommands(ctx: CliContext): Command {
  const client = () => ctx.client(OptOutService);
  const optOuts = new Command("opt-outs").description("a workspace's opt-out list: numbers that asked not to be contacted");
  optOuts
    .command("list")
    .description("list the numbers on the list, most recently changed first")
    .requiredOption("--workspace <id>", "workspace of the list")
    .option("--number <digits>", "only this number", "")
    .option("--status <status>", "opted_out (on the list, the default) or opted_in (taken off)", "opted_out")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; number: string; status: string; pageSize: string; pageToken: string; json?: boolean }) => {
      if (o.status !== "opted_out" && o.status !== "opted_in") throw new UsageError(`--status: must be opted_out or opted_in, got ${JSON.stringify(o.status)}`);
      const res = await client().listOptOuts({
        workspaceId: o.workspace,
        phoneNumber: o.number,
        status: o.status === "opted_in" ? OptOutStatus.OPTED_IN : OptOutStatus.OPTED_OUT,
        pageSize: wholeNumber("--page-size", o.pageSize),
        pageToken: o.pageToken,
      });
      ctx.printList(ListOptOutsResponseSchema, res, columns, !!o.json);
    });
  optOuts
    .command("add")
    .description("put a number on the list: sends to it are refused with recipient_opted_out (fires contact.opted_out)")
    .requiredOption("--workspace <id>", "workspace of the list")
    .option("--number <digits>", "the number, digits with country code")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; number?: string; json?: boolean }) => {
      const { optOut } = await client().createOptOut({ workspaceId: o.workspace, phoneNumber: requireNumber("add", o.number) });
      ctx.print(OptOutSchema, optOut!, columns, !!o.json);
    });
  optOuts
    .command("remove")
    .description("take a number off the list: sends to it are accepted again (fires contact.opted_in)")
    .requiredOption("--workspace <id>", "workspace of the list")
    .option("--number <digits>", "the number, digits with country code")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; number?: string; json?: boolean }) => {
      const { optOut } = await client().deleteOptOut({ workspaceId: o.workspace, phoneNumber: requireNumber("remove", o.number) });
      ctx.print(OptOutSchema, optOut!, columns, !!o.json);
    });
  optOuts
    .command("keywords")
    .description("show the reply keywords of the workspace, or change them with --opt-out and --opt-in")
    .requiredOption("--workspace <id>", "workspace of the list")
    .option("--opt-out <words>", 'comma-separated keywords that put the writer on the list, for example "STOP,END"')
    .option("--opt-in <words>", 'comma-separated keywords that take the writer off it, for example "START"')
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; optOut?: string; optIn?: string; json?: boolean }) => {
      const paths = [...(o.optOut !== undefined ? ["opt_out_keywords"] : []), ...(o.optIn !== undefined ? ["opt_in_keywords"] : [])];
      const res =
        paths.length === 0
          ? await client().getOptOutSettings({ workspaceId: o.workspace })
          : await client().updateOptOutSettings({
              optOutSettings: { workspaceId: o.workspace, optOutKeywords: splitList(o.optOut ?? ""), optInKeywords: splitList(o.optIn ?? "") },
              updateMask: { paths },
            });
      const settings = toRestJson(OptOutSettingsSchema, res.optOutSettings!);
      if (o.json) return ctx.printJson(settings);
      ctx.say(formatTable([settings], ["opt_out_keywords", "opt_in_keywords", "defaults"]), false);
    });
  return optOuts;
}
