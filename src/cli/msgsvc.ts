import { Command } from "commander";
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescMessage, DescService, Message } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ApiKeyService, ApiKeySchema } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService, WorkspaceSchema } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { toRestJson } from "../gateway/rest-json.js";
import { describeError } from "../shared/errors.js";

/*
 * msgsvc: the console CLI. It calls the console API (messaging.console.v1)
 * over Connect at CONSOLE_URL with `Authorization: Bearer $CONSOLE_TOKEN`.
 * People get tables; scripts pass --json and get the REST JSON of the answer.
 * On failure it prints "error: <code>: <message>" to stderr and exits 1
 * (2 for bad usage).
 */

/** Everything a command needs: clients, output mode and printing. */
export interface CliContext {
  client<S extends DescService>(service: S): Client<S>;
  /** Prints a resource or list: JSON with --json, else `columns` as a table. */
  print(desc: DescMessage, value: Message | Message[], columns: string[], json: boolean): void;
  /** Prints a line for people (suppressed with --json). */
  say(text: string, json: boolean): void;
}

/** Formats rows of REST JSON objects as an aligned text table. */
export function formatTable(rows: Record<string, unknown>[], columns: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? "-" : Array.isArray(v) ? v.join(",") : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i] as number)).join("  ").trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join("\n");
}

function createContext(env: NodeJS.ProcessEnv, out: (text: string) => void): CliContext {
  const baseUrl = env.CONSOLE_URL || "http://127.0.0.1:8081";
  const token = env.CONSOLE_TOKEN ?? "";
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [auth] });
  return {
    client: (service) => createClient(service, transport),
    print(desc, value, columns, json) {
      const rows = (Array.isArray(value) ? value : [value]).map((m) => toRestJson(desc, m));
      if (json) out(JSON.stringify(Array.isArray(value) ? rows : rows[0], null, 2));
      else out(formatTable(rows, columns));
    },
    say(text, json) {
      if (!json) out(text);
    },
  };
}

const splitList = (value: string) => value.split(",").map((s) => s.trim()).filter((s) => s !== "");

function workspaceCommands(ctx: CliContext): Command {
  const columns = ["id", "name", "status", "credit_balance", "created_at"];
  const workspaces = new Command("workspaces").description("manage workspaces");
  workspaces
    .command("create")
    .description("create a workspace")
    .requiredOption("--name <name>", "name of the workspace")
    .option("--credits <n>", "opening credit balance", "0")
    .option("--json", "print JSON")
    .action(async (o: { name: string; credits: string; json?: boolean }) => {
      if (!/^-?\d+$/.test(o.credits)) throw new UsageError(`--credits: must be a whole number, got ${JSON.stringify(o.credits)}`);
      const { workspace } = await ctx.client(WorkspaceService).createWorkspace({ name: o.name, credits: BigInt(o.credits) });
      ctx.print(WorkspaceSchema, workspace!, columns, !!o.json);
    });
  workspaces
    .command("get <id>")
    .description("show a workspace")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { workspace } = await ctx.client(WorkspaceService).getWorkspace({ id });
      ctx.print(WorkspaceSchema, workspace!, columns, !!o.json);
    });
  workspaces
    .command("list")
    .description("list workspaces, newest first")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(WorkspaceService).listWorkspaces({ pageSize: Number(o.pageSize), pageToken: o.pageToken });
      ctx.print(WorkspaceSchema, res.data, columns, !!o.json);
      if (res.nextPageToken) ctx.say(`more: --page-token ${res.nextPageToken}`, !!o.json);
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
  return workspaces;
}

function keyCommands(ctx: CliContext): Command {
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
    .option("--rate-limit <n>", "requests per minute, 1 to 100 (default 30)", "0")
    .option("--json", "print JSON")
    .action(async (o: { workspace: string; name: string; scopes: string; expiresAt?: string; ipAllow: string; rateLimit: string; json?: boolean }) => {
      let expiresAt;
      if (o.expiresAt !== undefined) {
        const ms = Date.parse(o.expiresAt);
        if (Number.isNaN(ms)) throw new UsageError(`--expires-at: must be an ISO 8601 time, got ${JSON.stringify(o.expiresAt)}`);
        expiresAt = timestampFromDate(new Date(ms));
      }
      const rateLimitPerMin = Number(o.rateLimit);
      if (!Number.isInteger(rateLimitPerMin)) throw new UsageError(`--rate-limit: must be a whole number, got ${JSON.stringify(o.rateLimit)}`);
      const res = await ctx.client(ApiKeyService).createApiKey({
        workspaceId: o.workspace,
        name: o.name,
        scopes: splitList(o.scopes),
        expiresAt,
        ipAllowList: splitList(o.ipAllow),
        rateLimitPerMin,
      });
      if (o.json) {
        process.stdout.write(`${JSON.stringify({ api_key: toRestJson(ApiKeySchema, res.apiKey!), secret: res.secret }, null, 2)}\n`);
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
      const res = await ctx.client(ApiKeyService).listApiKeys({ workspaceId: o.workspace, pageSize: Number(o.pageSize), pageToken: o.pageToken });
      ctx.print(ApiKeySchema, res.data, columns, !!o.json);
      if (res.nextPageToken) ctx.say(`more: --page-token ${res.nextPageToken}`, !!o.json);
    });
  keys
    .command("revoke <id>")
    .description("revoke an API key (takes effect within 5 seconds)")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      const { apiKey } = await ctx.client(ApiKeyService).revokeApiKey({ id });
      ctx.print(ApiKeySchema, apiKey!, columns, !!o.json);
    });
  return keys;
}

/** A mistake in the command line, found before calling the console. */
class UsageError extends Error {}

/**
 * Runs the CLI with `argv` (without node and script); resolves to the exit
 * code. Output goes to stdout, errors to stderr.
 */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const ctx = createContext(env, (text) => process.stdout.write(`${text}\n`));
  const program = new Command("msgsvc")
    .description("Console CLI of the messaging service (reads CONSOLE_URL and CONSOLE_TOKEN)")
    .addHelpText("after", "\nEnvironment:\n  CONSOLE_URL    console API base URL (default http://127.0.0.1:8081)\n  CONSOLE_TOKEN  console token");
  program.addCommand(workspaceCommands(ctx));
  program.addCommand(keyCommands(ctx));
  // Throw instead of exiting, in every subcommand, so errors get one treatment below.
  const throwOnExit = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(throwOnExit);
  };
  throwOnExit(program);
  try {
    await program.parseAsync(argv, { from: "user" });
    return 0;
  } catch (err) {
    if (err instanceof ConnectError) {
      const { code, message, details } = describeError(err);
      const { field: _field, rule: _rule, ...rest } = details; // already in the message
      const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : "";
      const hint = err.code === Code.Unavailable ? ` (is the service running at ${env.CONSOLE_URL || "http://127.0.0.1:8081"}?)` : "";
      process.stderr.write(`error: ${code}: ${message}${extra}${hint}\n`);
      return 1;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return 2;
    }
    const commanderError = err as { code?: string; exitCode?: number };
    if (typeof commanderError.exitCode === "number") return commanderError.exitCode === 0 ? 0 : 2;
    throw err;
  }
}
