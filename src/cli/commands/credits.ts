import { Command } from "commander";
import { CreditLedgerEntrySchema, ListCreditLedgerEntriesResponseSchema, CreditService } from "../../../gen/messaging/console/v1/credits_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { wholeNumber, type CliContext } from "../context.js";

/** `msgsvc credits …`: add (top up), ledger, entry (one ledger entry). */
export function creditCommands(ctx: CliContext): Command {
  const columns = ["id", "kind", "amount", "balance_after", "message_id", "note", "created_at"];
  const credits = new Command("credits").description("top up credits and read the credit ledger");
  credits
    .command("add")
    .description("add credits to a workspace's balance")
    .requiredOption("--workspace <id>", "workspace to top up")
    .requiredOption("--amount <n>", "credits to add, 1 to 1000000000")
    .option("--note <text>", "why, for the ledger", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; amount: string; note: string; json?: boolean }) => {
      const res = await ctx.client(CreditService).addCredits({ workspaceId: o.workspace, amount: BigInt(wholeNumber("--amount", o.amount)), note: o.note });
      if (o.json) {
        ctx.printJson({ entry: toRestJson(CreditLedgerEntrySchema, res.entry!), credit_balance: Number(res.creditBalance) });
        return;
      }
      ctx.print(CreditLedgerEntrySchema, res.entry!, columns, false);
      ctx.say(`\nBalance: ${res.creditBalance} credits`, false);
    });
  credits
    .command("ledger")
    .description("list a workspace's top-ups, spends and refunds, newest first")
    .requiredOption("--workspace <id>", "workspace of the ledger")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(CreditService).listCreditLedgerEntries({ workspaceId: o.workspace, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListCreditLedgerEntriesResponseSchema, res, columns, !!o.json);
    });
  credits
    .command("entry <id>")
    .description("show one ledger entry (top_up:<uuid>, spend:<message id> or refund:<message id>)")
    .requiredOption("--workspace <id>", "workspace of the ledger")
    .option("--json", "print JSON")
    .action(async (id: string, o: { workspace: string; json?: boolean }) => {
      const { entry } = await ctx.client(CreditService).getCreditLedgerEntry({ workspaceId: o.workspace, id });
      ctx.print(CreditLedgerEntrySchema, entry!, columns, !!o.json);
    });
  return credits;
}
