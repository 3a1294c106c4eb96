import { Command } from "commander";
import { AuditEntrySchema, ListAuditEntriesResponseSchema, AuditLogService } from "../../../gen/messaging/console/v1/audit_log_pb.js";
import { wholeNumber, type CliContext } from "../context.js";

/** `msgsvc audit list|get`: the console's audit log, newest first, and one entry with its request. */
export function auditCommands(ctx: CliContext): Command {
  const audit = new Command("audit").description("read the console audit log");
  audit
    .command("list")
    .description("list console changes, newest first")
    .option("--workspace <id>", "only this workspace", "")
    .option("--page-size <n>", "items per page (at most 100)", "50")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(AuditLogService).listAuditEntries({
        workspaceId: o.workspace,
        pageSize: wholeNumber("--page-size", o.pageSize),
        pageToken: o.pageToken,
      });
      ctx.printList(ListAuditEntriesResponseSchema, res, ["id", "at", "actor", "operation", "workspace_id", "outcome"], !!o.json);
    });
  audit
    .command("get <id>")
    .description("show one audit entry (its id is the console request id, req_…), with the request as sent, secrets redacted")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { auditEntry } = await ctx.client(AuditLogService).getAuditEntry({ id });
      ctx.print(AuditEntrySchema, auditEntry!, ["id", "at", "actor", "operation", "workspace_id", "outcome", "request"], !!o.json);
    });
  return audit;
}
