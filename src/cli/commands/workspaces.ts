import { Command, Option } from "commander";
import {
  MessagingLimit,
  WorkspaceService,
  WorkspaceSchema,
  ListWorkspacesResponseSchema,
} from "../../../gen/messaging/console/v1/workspaces_pb.js";
import { GetMessageStatsResponseSchema, MessageStatsService } from "../../../gen/messaging/console/v1/message_stats_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, since, wholeNumber, type CliContext } from "../context.js";

/** The messaging limit tiers as the CLI takes them (the JSON form of the proto enum MessagingLimit). */
const LIMITS: Record<string, MessagingLimit> = {
  tier_250: MessagingLimit.TIER_250,
  tier_2k: MessagingLimit.TIER_2K,
  tier_10k: MessagingLimit.TIER_10K,
  tier_100k: MessagingLimit.TIER_100K,
  unlimited: MessagingLimit.UNLIMITED,
};
const limitOption = () =>
  new Option("--messaging-limit <tier>", "unique recipients in a moving 24 hours (the portfolio's WhatsApp messaging limit)").choices(Object.keys(LIMITS));

/** `msgsvc workspaces …`: create, get, list, update, suspend, resume, stats. */
export function workspaceCommands(ctx: CliContext): Command {
  const columns = ["id", "name", "status", "credit_balance", "messaging_limit", "created_at"];
  const detail = [...columns.slice(0, -1), "messaging_limit_used", "created_at"];
  const workspaces = new Command("workspaces").description("manage workspaces");
  workspaces
    .command("create")
    .description("create a workspace")
    .requiredOption("--name <name>", "name of the workspace")
    .option("--credits <n>", "opening credit balance", "0")
    .addOption(limitOption())
    .option("--json", "print JSON")
    .action(async (o: { name: string; credits: string; messagingLimit?: string; json?: boolean }) => {
      const credits = BigInt(wholeNumber("--credits", o.credits));
      const messagingLimit = o.messagingLimit ? LIMITS[o.messagingLimit] : undefined;
      const { workspace } = await ctx.client(WorkspaceService).createWorkspace({ name: o.name, credits, messagingLimit });
      ctx.print(WorkspaceSchema, workspace!, columns, !!o.json);
    });
  workspaces
    .command("get <id>")
    .description("show a workspace")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { workspace } = await ctx.client(WorkspaceService).getWorkspace({ id });
      ctx.print(WorkspaceSchema, workspace!, detail, !!o.json);
    });
  workspaces
    .command("update <id>")
    .description("change a workspace's messaging limit (messages waiting for it go when it is raised)")
    .addOption(limitOption().makeOptionMandatory())
    .option("--json", "print JSON")
    .action(async (id: string, o: { messagingLimit: string; json?: boolean }) => {
      const { workspace } = await ctx
        .client(WorkspaceService)
        .updateWorkspace({ workspace: { id, messagingLimit: LIMITS[o.messagingLimit] }, updateMask: { paths: ["messaging_limit"] } });
      ctx.print(WorkspaceSchema, workspace!, detail, !!o.json);
    });
  workspaces
    .command("list")
    .description("list workspaces, newest first")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(WorkspaceService).listWorkspaces({ pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListWorkspacesResponseSchema, res, columns, !!o.json);
    });
  for (const [name, verb] of [["suspend", "suspendWorkspace"], ["resume", "resumeWorkspace"]] as const) {
    workspaces
      .command(`${name} <id>`)
      .description(`${name} a workspace`)
      .option("--json", "print JSON")
      .action(async (id: string, o: { json?: boolean }) => {
        const { workspace } = await ctx.client(WorkspaceService)[verb]({ id });
        ctx.print(WorkspaceSchema, workspace!, columns, !!o.json);
      });
  }
  workspaces
    .command("stats <id>")
    .description("messages of a workspace by status, and sends and replies since a time")
    .option("--since <when>", "duration back from now (1h, 30m) or ISO time; default 24h")
    .option("--json", "print JSON")
    .action(async (id: string, o: { since?: string; json?: boolean }) => {
      const json = toRestJson(GetMessageStatsResponseSchema, await ctx.client(MessageStatsService).getMessageStats({ workspaceId: id, since: since(o.since) }));
      if (o.json) return ctx.printJson(json);
      const byStatus = json.by_status as Record<string, number>;
      ctx.say(formatTable(["accepted", "sent", "delivered", "read", "failed", "scheduled", "canceled"].map((status) => ({ status, messages: byStatus[status] ?? 0 })), ["status", "messages"]), false);
      ctx.say(`\nAll time: ${json.total} messages. Since ${json.since}: ${json.recent} sent, ${json.recent_replies} replies.`, false);
    });
  return workspaces;
}
