import { Command, Option } from "commander";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ApiKeyService, ApiKeySchema, ListApiKeysResponseSchema } from "../../../gen/messaging/console/v1/api_keys_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { overlapMs, splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

/** `msgsvc keys …`: create (prints the secret once), list, update, revoke. */
export function keyCommands(ctx: CliContext): Command {
  const columns = ["id", "name", "status", "scopes", "rate_limit_per_min", "ip_allow_list", "expires_at", "last_used_at"];
  const keys = new Command("keys").description("manage API keys");
  keys
    .command("create")
    .description("create an API key; prints its secret once")
    .requiredOption("--workspace <id>", "workspace of the key")
    .requiredOption("--name <name>", "name of the key")
    .option("--scopes <list>", "comma-separated scopes, for example messages:send,messages:read", "")
    .option("--expires-at <iso8601>", "expiry, for example 2027-01-31T00:00:00Z")
    .option("--ip-allow <list>", "comma-separated addresses or CIDR ranges (IPv4 or IPv6)", "")
    .addOption(new Option("--rate-limit <n>", "requests per minute, 1 to 100").default("0", "30"))
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; name: string; scopes: string; expiresAt?: string; ipAllow: string; rateLimit: string; json?: boolean }) => {
      let expiresAt;
      if (o.expiresAt !== undefined) {
        const ms = Date.parse(o.expiresAt);
        if (Number.isNaN(ms)) throw new UsageError(`--expires-at: must be an ISO 8601 time, got ${JSON.stringify(o.expiresAt)}`);
        expiresAt = timestampFromDate(new Date(ms));
      }
      const rateLimitPerMin = wholeNumber("--rate-limit", o.rateLimit);
      const res = await ctx.client(ApiKeyService).createApiKey({
        workspaceId: o.workspace,
        name: o.name,
        scopes: splitList(o.scopes),
        expiresAt,
        ipAllowList: splitList(o.ipAllow),
        rateLimitPerMin,
      });
      if (o.json) {
        ctx.printJson({ api_key: toRestJson(ApiKeySchema, res.apiKey!), secret: res.secret });
        return;
      }
      ctx.print(ApiKeySchema, res.apiKey!, columns, false);
      ctx.say(`\nSecret (shown once, store it now):\n${res.secret}`, false);
    });
  keys
    .command("list")
    .description("list a workspace's API keys, newest first")
    .requiredOption("--workspace <id>", "workspace of the keys")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(ApiKeyService).listApiKeys({ workspaceId: o.workspace, pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListApiKeysResponseSchema, res, columns, !!o.json);
    });
  keys
    .command("get <id>")
    .description("show one API key (never its secret), revoked and expired ones included")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { apiKey } = await ctx.client(ApiKeyService).getApiKey({ id });
      ctx.print(ApiKeySchema, apiKey!, columns, !!o.json);
    });
  keys
    .command("update <id>")
    .description("change a key's name, IP allow-list or rate budget (takes effect within a second)")
    .option("--name <name>", "new name")
    .option("--ip-allow <list>", "new comma-separated allow-list; \"\" for any address")
    .option("--rate-limit <n>", "new budget, 1 to 100 requests per minute")
    .option("--json", "print JSON")
    .action(async (id: string, o: { name?: string; ipAllow?: string; rateLimit?: string; json?: boolean }) => {
      const paths: string[] = [];
      if (o.name !== undefined) paths.push("name");
      if (o.ipAllow !== undefined) paths.push("ip_allow_list");
      if (o.rateLimit !== undefined) paths.push("rate_limit_per_min");
      if (paths.length === 0) throw new UsageError("give at least one of --name, --ip-allow, --rate-limit");
      const { apiKey } = await ctx.client(ApiKeyService).updateApiKey({
        apiKey: {
          id,
          name: o.name ?? "",
          ipAllowList: o.ipAllow === undefined ? [] : splitList(o.ipAllow),
          rateLimitPerMin: o.rateLimit === undefined ? 0 : wholeNumber("--rate-limit", o.rateLimit),
        },
        updateMask: { paths },
      });
      ctx.print(ApiKeySchema, apiKey!, columns, !!o.json);
    });
  keys
    .command("revoke <id>")
    .description("revoke an API key (takes effect within a second)")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { apiKey } = await ctx.client(ApiKeyService).revokeApiKey({ id });
      ctx.print(ApiKeySchema, apiKey!, columns, !!o.json);
    });
  keys
    .command("roll <id>")
    .description("make a new secret for a key (same id, scopes and limits); prints it once")
    .addOption(new Option("--expire-old-in <duration>", "how long the current secret keeps working: 0, 30m, 24h, up to 7d").default("0", "0: it stops at once"))
    .option("--json", "print JSON")
    .action(async (id: string, o: { expireOldIn: string; json?: boolean }) => {
      const overlap = overlapMs(o.expireOldIn);
      const res = await ctx.client(ApiKeyService).rollApiKey({
        id,
        previousSecretExpiresAt: overlap > 0 ? timestampFromDate(new Date(Date.now() + overlap)) : undefined,
      });
      const apiKey = toRestJson(ApiKeySchema, res.apiKey!);
      if (o.json) return ctx.printJson({ api_key: apiKey, secret: res.secret });
      ctx.print(ApiKeySchema, res.apiKey!, [...columns, "previous_secret_prefix", "previous_secret_expires_at"], false);
      ctx.say(`\nNew secret (shown once): ${res.secret}`, false);
      ctx.say(apiKey.previous_secret_expires_at ? `The old secret works until ${String(apiKey.previous_secret_expires_at)}.` : "The old secret stopped working.", false);
    });
  return keys;
}
