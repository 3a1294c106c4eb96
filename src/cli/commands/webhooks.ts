import { Command, Option } from "commander";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WebhookEndpointSchema, ListWebhookEndpointsResponseSchema, WebhookEndpointService } from "../../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { overlapMs, since, splitList, UsageError, wholeNumber, type CliContext } from "../context.js";
import { DeliveryService, type RecoverDeliveriesResponse } from "../../../gen/messaging/console/v1/deliveries_pb.js";
import { showAttempt } from "./deliveries.js";
import { webhookListenCommand } from "./webhook-listen.js";

/** `msgsvc webhooks …`: create (prints the signing secret once), get, list, update, enable, disable, delete, rotate-secret, test, recover, listen. */
export function webhookCommands(ctx: CliContext): Command {
  const columns = ["id", "name", "url", "events", "enabled", "rate_limit", "consecutive_failures", "last_success_at", "disabled_reason"];
  /** A --rate-limit value: attempts per second, or "none" (no limit, null). */
  const rateLimit = (value: string) => (value === "none" ? null : wholeNumber("--rate-limit", value));
  const client = () => ctx.client(WebhookEndpointService);
  const webhooks = new Command("webhooks").description("manage webhook endpoints");
  webhooks
    .command("create")
    .description("create a webhook endpoint; prints its signing secret once")
    .requiredOption("--workspace <id>", "workspace of the endpoint")
    .requiredOption("--name <name>", "name of the endpoint")
    .requiredOption("--url <url>", "https URL the events are POSTed to")
    .requiredOption("--events <list>", "comma-separated event types, for example message.delivered,flow.completed")
    .option("--rate-limit <n>", "most attempts per second sent to it (default: no limit)")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; name: string; url: string; events: string; rateLimit?: string; json?: boolean }) => {
      const limit = o.rateLimit === undefined ? null : rateLimit(o.rateLimit);
      const res = await client().createWebhookEndpoint({ workspaceId: o.workspace, name: o.name, url: o.url, events: splitList(o.events), ...(limit !== null ? { rateLimit: limit } : {}) });
      if (o.json) {
        ctx.printJson({ webhook_endpoint: toRestJson(WebhookEndpointSchema, res.webhookEndpoint!), secret: res.secret });
        return;
      }
      ctx.print(WebhookEndpointSchema, res.webhookEndpoint!, columns, false);
      ctx.say(`\nSigning secret (shown once, store it now):\n${res.secret}`, false);
    });
  webhooks
    .command("get <id>")
    .description("show a webhook endpoint")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      ctx.print(WebhookEndpointSchema, (await client().getWebhookEndpoint({ id })).webhookEndpoint!, columns, !!o.json);
    });
  webhooks
    .command("list")
    .description("list a workspace's webhook endpoints, newest first")
    .requiredOption("--workspace <id>", "workspace of the endpoints")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await client().listWebhookEndpoints({ workspaceId: o.workspace, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListWebhookEndpointsResponseSchema, res, columns, !!o.json);
    });
  webhooks
    .command("update <id>")
    .description("change the URL, name, event types or rate limit of a webhook endpoint")
    .option("--url <url>", "new https URL")
    .option("--name <name>", "new name")
    .option("--events <list>", "new comma-separated event types")
    .option("--rate-limit <n>", "most attempts per second sent to it, or none")
    .option("--json", "print JSON")
    .action(async (id: string, o: { url?: string; name?: string; events?: string; rateLimit?: string; json?: boolean }) => {
      const given = { url: o.url, name: o.name, events: o.events, rate_limit: o.rateLimit };
      const paths = Object.keys(given).filter((path) => given[path as keyof typeof given] !== undefined);
      if (paths.length === 0) throw new UsageError("give at least one of --url, --name, --events, --rate-limit");
      const limit = o.rateLimit === undefined ? null : rateLimit(o.rateLimit);
      const res = await client().updateWebhookEndpoint({
        webhookEndpoint: { id, url: o.url ?? "", name: o.name ?? "", events: o.events === undefined ? [] : splitList(o.events), ...(limit !== null ? { rateLimit: limit } : {}) },
        updateMask: { paths },
      });
      ctx.print(WebhookEndpointSchema, res.webhookEndpoint!, columns, !!o.json);
    });
  webhooks
    .command("enable <id>")
    .description("enable a webhook endpoint; deliveries paused while it was disabled go out at once")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      ctx.print(WebhookEndpointSchema, (await client().enableWebhookEndpoint({ id })).webhookEndpoint!, columns, !!o.json);
    });
  webhooks
    .command("disable <id>")
    .description("disable a webhook endpoint: nothing is sent to it until it is enabled")
    .option("--reason <text>", "why (recorded as disabled_reason)", "")
    .option("--json", "print JSON")
    .action(async (id: string, o: { reason: string; json?: boolean }) => {
      ctx.print(WebhookEndpointSchema, (await client().disableWebhookEndpoint({ id, reason: o.reason })).webhookEndpoint!, columns, !!o.json);
    });
  webhooks
    .command("delete <id>")
    .description("delete a webhook endpoint; its pending deliveries are canceled")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      await client().deleteWebhookEndpoint({ id });
      if (o.json) ctx.printJson({ id, deleted: true });
      else ctx.say(`deleted ${id}`, false);
    });
  webhooks
    .command("rotate-secret <id>")
    .description("make a new signing secret for an endpoint; prints it once; the old one keeps verifying for a while")
    .addOption(new Option("--expire-old-in <duration>", "how long the current secret keeps verifying: 0, 30m, 24h, up to 7d").default("24h"))
    .option("--json", "print JSON")
    .action(async (id: string, o: { expireOldIn: string; json?: boolean }) => {
      const overlap = overlapMs(o.expireOldIn);
      const res = await client().rotateWebhookEndpointSecret({ id, previousSecretExpiresAt: timestampFromDate(new Date(Date.now() + overlap)) });
      const endpoint = toRestJson(WebhookEndpointSchema, res.webhookEndpoint!);
      if (o.json) return ctx.printJson({ webhook_endpoint: endpoint, secret: res.secret });
      ctx.print(WebhookEndpointSchema, res.webhookEndpoint!, [...columns, "secret_hint", "previous_secret_expires_at"], false);
      ctx.say(`\nSigning secret (shown once, store it now):\n${res.secret}`, false);
      ctx.say(
        endpoint.previous_secret_expires_at
          ? `Deliveries are signed with the old secret too until ${String(endpoint.previous_secret_expires_at)}.`
          : "The old secret no longer signs deliveries.",
        false,
      );
    });
  webhooks
    .command("test")
    .description("send a signed test event with sample data to an endpoint now, and show its attempt")
    .requiredOption("--endpoint <id>", "endpoint to send it to (whk_…)")
    .requiredOption("--type <type>", "event type, for example message.delivered")
    .option("--json", "print JSON")
    .action(async (o: { endpoint: string; type: string; json?: boolean }) => {
      showAttempt(ctx, await ctx.client(DeliveryService).sendTestEvent({ endpointId: o.endpoint, type: o.type }), "test attempt", !!o.json);
    });
  webhooks
    .command("recover")
    .description("queue again an endpoint's failed deliveries, and events that never reached it, created in a window of time")
    .requiredOption("--endpoint <id>", "endpoint whose deliveries to recover (whk_…)")
    .requiredOption("--since <time>", "events created since: a duration back from now (2h, 3d) or an ISO 8601 time")
    .option("--until <time>", "events created before: a duration back from now or an ISO 8601 time (default: now)")
    .option("--events <list>", "only these comma-separated event types (default: all the endpoint selects)")
    .option("--dry-run", "count what would be recovered; change nothing")
    .option("--json", "print JSON (the sums over every call made)")
    .action(async (o: { endpoint: string; since: string; until?: string; events?: string; dryRun?: boolean; json?: boolean }) => {
      const until = since(o.until, "--until") ?? timestampFromDate(new Date());
      const request = { endpointId: o.endpoint, until, eventTypes: o.events === undefined ? [] : splitList(o.events), dryRun: !!o.dryRun };
      // One call looks at 10,000 events at most: go on from next_since until the window is done.
      const sum = { recoveredCount: 0, failedCount: 0, unattemptedCount: 0, scannedCount: 0, calls: 0 };
      let res: RecoverDeliveriesResponse | undefined;
      for (let from = since(o.since); from !== undefined; from = res.nextSince) {
        res = await ctx.client(DeliveryService).recoverDeliveries({ ...request, since: from });
        sum.recoveredCount += res.recoveredCount;
        sum.failedCount += res.failedCount;
        sum.unattemptedCount += res.unattemptedCount;
        sum.scannedCount += res.scannedCount;
        sum.calls++;
      }
      if (o.json) {
        const { recoveredCount, failedCount, unattemptedCount, scannedCount, calls } = sum;
        return ctx.printJson({
          object: "delivery_recovery",
          recovered_count: recoveredCount,
          failed_count: failedCount,
          unattempted_count: unattemptedCount,
          scanned_count: scannedCount,
          dry_run: !!o.dryRun,
          calls,
        });
      }
      ctx.say(
        `${o.dryRun ? "Would recover" : "Recovered"} ${sum.recoveredCount} deliveries of ${o.endpoint}: ` +
          `${sum.failedCount} failed, ${sum.unattemptedCount} never attempted (${sum.scannedCount} events looked at).`,
        false,
      );
    });
  webhooks.addCommand(webhookListenCommand(ctx));
  return webhooks;
}
