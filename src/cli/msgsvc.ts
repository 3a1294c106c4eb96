import { Command } from "commander";
import { Code, ConnectError } from "@connectrpc/connect";
import { describeError } from "../shared/errors.js";
import { attemptCommands } from "./commands/attempts.js";
import { auditCommands } from "./commands/audit.js";
import { creditCommands } from "./commands/credits.js";
import { deliveryCommands } from "./commands/deliveries.js";
import { keyCommands } from "./commands/keys.js";
import { optOutCommands } from "./commands/opt-outs.js";
import { eventCommands, messageCommands } from "./commands/messages.js";
import { requestCommands } from "./commands/requests.js";
import { senderCommands } from "./commands/senders.js";
import { simulateCommands } from "./commands/simulate.js";
import { templateCommands } from "./commands/templates.js";
import { userCommands } from "./commands/users.js";
import { webhookCommands } from "./commands/webhooks.js";
import { workspaceCommands } from "./commands/workspaces.js";
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

/** The command groups, one module each under commands/. */
const groups: ((ctx: CliContext, env: NodeJS.ProcessEnv) => Command)[] = [
  workspaceCommands,
  keyCommands,
  senderCommands,
  templateCommands,
  creditCommands,
  messageCommands,
  optOutCommands,
  eventCommands,
  simulateCommands,
  webhookCommands,
  deliveryCommands,
  attemptCommands,
  userCommands,
  requestCommands,
  auditCommands,
];

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
  for (const group of groups) program.addCommand(group(ctx, env));
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
