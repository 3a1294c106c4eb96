import { Command } from "commander";
import {
  GetRefusalTimelineResponseSchema,
  ListRefusedRequestGroupsResponseSchema,
  ListRequestsResponseSchema,
  LoggedRequestSchema,
  RefusedRequestGroupSchema,
  RequestLogService,
  RequestOutcome,
} from "../../../gen/messaging/console/v1/request_log_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { formatTable, since, UsageError, wholeNumber, type CliContext } from "../context.js";

/** `msgsvc requests …`: the request log of a workspace, refused requests grouped by error, and refusals over time. */
export function requestCommands(ctx: CliContext): Command {
  const requests = new Command("requests").description("read the request log of the public API");
  requests
    .command("list")
    .description("list logged requests, newest first")
    .requiredOption("--workspace <id>", "workspace (the operator may pass - for all)")
    .option("--key <id>", "only this API key", "")
    .option("--operation <rpc>", "only this operation, e.g. messaging.v1.AccountService/GetMe", "")
    .option("--outcome <ok|refused>", "only answered or only refused requests")
    .option("--error-code <code>", "only this error code", "")
    .option("--since <when>", "duration back from now (1h, 30m) or ISO time")
    .option("--until <when>", "duration back from now or ISO time")
    .option("--page-size <n>", "items per page (at most 100)", "50")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; key: string; operation: string; outcome?: string; errorCode: string; since?: string; until?: string; pageSize: string; pageToken: string; json?: boolean }) => {
      if (o.outcome !== undefined && o.outcome !== "ok" && o.outcome !== "refused") {
        throw new UsageError(`--outcome: must be ok or refused, got ${JSON.stringify(o.outcome)}`);
      }
      const res = await ctx.client(RequestLogService).listRequests({
        workspaceId: o.workspace,
        apiKeyId: o.key,
        operation: o.operation,
        outcome: o.outcome === "ok" ? RequestOutcome.OK : o.outcome === "refused" ? RequestOutcome.REFUSED : RequestOutcome.UNSPECIFIED,
        errorCode: o.errorCode,
        since: since(o.since),
        until: since(o.until, "--until"),
        pageSize: wholeNumber("--page-size", o.pageSize),
        pageToken: o.pageToken,
      });
      ctx.printList(ListRequestsResponseSchema, res, ["id", "at", "protocol", "http_method", "path", "http_status", "error_code", "api_key_id", "client_address"], !!o.json);
    });
  requests
    .command("get <id>")
    .description("show one logged request by its Request-Id (req_…)")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { request } = await ctx.client(RequestLogService).getLoggedRequest({ id });
      ctx.print(LoggedRequestSchema, request!, ["id", "at", "operation", "protocol", "http_method", "path", "http_status", "error_code", "accepted_count", "refused_count", "api_key_id", "client_address", "duration_ms"], !!o.json);
    });
  requests
    .command("refused")
    .description("refused requests grouped by error code: count, first and last seen, a sample")
    .requiredOption("--workspace <id>", "workspace (the operator may pass - for all)")
    .option("--since <when>", "duration back from now (1h, 30m) or ISO time; default 24h")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; since?: string; json?: boolean }) => {
      const res = await ctx.client(RequestLogService).listRefusedRequestGroups({ workspaceId: o.workspace, since: since(o.since) });
      if (o.json) return ctx.printJson(toRestJson(ListRefusedRequestGroupsResponseSchema, res));
      const rows = res.data.map((g) => {
        const json = toRestJson(RefusedRequestGroupSchema, g);
        const sample = json.sample as Record<string, unknown> | null;
        return {
          ...json,
          sample: sample ? `${sample.http_method} ${sample.path} ${sample.id}` : null,
        };
      });
      ctx.say(rows.length === 0 ? "no refused requests" : formatTable(rows, ["error_code", "count", "first_seen", "last_seen", "sample"]), false);
    });
  requests
    .command("timeline")
    .description("refused requests counted per time bucket")
    .requiredOption("--workspace <id>", "workspace (the operator may pass - for all)")
    .option("--since <when>", "duration back from now (1h, 30m) or ISO time; default 24h")
    .option("--buckets <n>", "equal buckets from --since to now, 1 to 96", "24")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; since?: string; buckets: string; json?: boolean }) => {
      const res = await ctx.client(RequestLogService).getRefusalTimeline({ workspaceId: o.workspace, since: since(o.since), buckets: wholeNumber("--buckets", o.buckets) });
      if (o.json) return ctx.printJson(toRestJson(GetRefusalTimelineResponseSchema, res));
      const json = toRestJson(GetRefusalTimelineResponseSchema, res) as { buckets: { start: string; count: number }[] };
      const max = Math.max(1, ...json.buckets.map((b) => b.count));
      const rows = json.buckets.map((b) => ({ start: b.start, count: b.count, bar: "#".repeat(Math.ceil((40 * b.count) / max)) }));
      ctx.say(formatTable(rows, ["start", "count", "bar"]), false);
    });
  return requests;
}
