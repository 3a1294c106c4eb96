import { Command } from "commander";
import { Code, ConnectError } from "@connectrpc/connect";
import { describeError } from "../shared/errors.js";
import { readFileSync } from "node:fs";
import path from "node:path";
import { projectRoot } from "../shared/project-root.js";
import { CommandFailure, createCliContext, UsageError, type CliContext } from "./context.js";

/** Version of the service and its CLI (package.json). */
const VERSION = (JSON.parse(readFileSync(path.join(projectRoot, "package.json"), "utf8")) as { version: string }).version;

/*
 * msgsvc: the console CLI. It calls the console API (messaging.console.v1)
 * over Connect at CONSOLE_URL with `Authorization: Bearer $CONSOLE_TOKEN`.
 * People get tables; scripts pass --json and get the REST JSON of the answer.
 * On failure it prints "error: <code>: <message>" to stderr and exits 1
 * (a refused call or a command that failed, such as a failed manual delivery
 * attempt; 2 for bad usage). `--version` prints the version.
 */

/** A group of commands: its module's factory. */
type Group = (ctx: CliContext, env: NodeJS.ProcessEnv) => Command;

/**
 * The command groups by name, in the order help lists them, each loaded from
 * its module under commands/ when needed: a call loads only the group it
 * names (and the protos that group's services need), which takes about a
 * fifth off a call's start (README "Console and CLI"); help and a call that
 * names no group load them all.
 */
const groups: Record<string, () => Promise<Group>> = {
  workspaces: async () => (await import("./commands/workspaces.js")).workspaceCommands,
  keys: async () => (await import("./commands/keys.js")).keyCommands,
  senders: async () => (await import("./commands/senders.js")).senderCommands,
  templates: async () => (await import("./commands/templates.js")).templateCommands,
  credits: async () => (await import("./commands/credits.js")).creditCommands,
  messages: async () => (await import("./commands/messages.js")).messageCommands,
  "opt-outs": async () => (await import("./commands/opt-outs.js")).optOutCommands,
  events: async () => (await import("./commands/messages.js")).eventCommands,
  simulate: async () => (await import("./commands/simulate.js")).simulateCommands,
  "flow-responses": async () => (await import("./commands/flow-responses.js")).flowResponseCommands,
  webhooks: async () => (await import("./commands/webhooks.js")).webhookCommands,
  deliveries: async () => (await import("./commands/deliveries.js")).deliveryCommands,
  attempts: async () => (await import("./commands/attempts.js")).attemptCommands,
  users: async () => (await import("./commands/users.js")).userCommands,
  requests: async () => (await import("./commands/requests.js")).requestCommands,
  audit: async () => (await import("./commands/audit.js")).auditCommands,
};

/**
 * Runs the CLI with `argv` (without node and script); resolves to the exit
 * code. Output goes to stdout, errors to stderr.
 */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const ctx = createCliContext(env, (text) => process.stdout.write(`${text}\n`));
  const program = new Command("msgsvc")
    .description("Console CLI of the messaging service (reads CONSOLE_URL and CONSOLE_TOKEN)")
    .version(VERSION, "-V, --version", "print the version")
    .addHelpText(
      "after",
      "\nEnvironment:\n  CONSOLE_URL    console API base URL (default http://127.0.0.1:8081)\n  CONSOLE_TOKEN  console token\n  API_URL        public API base URL, for messages send (default http://127.0.0.1:8080)\n  API_KEY        API key, for messages send",
    );
  const named = argv[0] !== undefined ? groups[argv[0]] : undefined;
  const version = argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V");
  for (const load of version ? [] : named ? [named] : Object.values(groups)) program.addCommand((await load())(ctx, env));
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
    if (err instanceof CommandFailure) {
      process.stderr.write(`error: ${err.code}: ${err.message}\n`);
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
