import { Command } from "commander";
import {
  ConsoleRole,
  ConsoleUserSchema,
  ConsoleUserService,
  ListConsoleUsersResponseSchema,
} from "../../../gen/messaging/console/v1/console_users_pb.js";
import { splitList, UsageError, wholeNumber, type CliContext } from "../context.js";

const columns = ["id", "email", "operator", "roles", "created_at"];

/** Parses "WORKSPACE:admin" or "WORKSPACE:viewer". */
function parseRole(text: string): { workspaceId: string; role: ConsoleRole } {
  const [workspaceId, role] = text.split(":");
  if (!workspaceId || (role !== "admin" && role !== "viewer")) {
    throw new UsageError(`--role: must be WORKSPACE_ID:admin or WORKSPACE_ID:viewer, got ${JSON.stringify(text)}`);
  }
  return { workspaceId, role: role === "admin" ? ConsoleRole.ADMIN : ConsoleRole.VIEWER };
}

/** `msgsvc users …`: console users and their roles per workspace. */
export function userCommands(ctx: CliContext): Command {
  const users = new Command("users").description("manage console users and their roles");
  const print = (value: Parameters<CliContext["print"]>[1], json: boolean) =>
    ctx.print(ConsoleUserSchema, value, columns, json);
  users
    .command("create")
    .description("create a console user")
    .requiredOption("--email <email>", "sign-in email")
    .requiredOption("--password <password>", "password, 12 to 200 characters")
    .option("--roles <list>", "comma-separated WORKSPACE_ID:admin|viewer", "")
    .option("--json", "print JSON")
    .action(async (o: { email: string; password: string; roles: string; json?: boolean }) => {
      const { user } = await ctx.client(ConsoleUserService).createConsoleUser({
        email: o.email,
        password: o.password,
        roles: splitList(o.roles).map(parseRole),
      });
      print(user!, !!o.json);
    });
  users
    .command("list")
    .description("list console users")
    .option("--page-size <n>", "items per page (at most 100)", "100")
    .option("--page-token <token>", "token of the page to show", "")
    .option("--json", "print JSON")
    .action(async (o: { pageSize: string; pageToken: string; json?: boolean }) => {
      const res = await ctx.client(ConsoleUserService).listConsoleUsers({ pageSize: wholeNumber("--page-size", o.pageSize), pageToken: o.pageToken });
      ctx.printList(ListConsoleUsersResponseSchema, res, columns, !!o.json);
    });
  users
    .command("get <userId>")
    .description("show one console user with their roles")
    .option("--json", "print JSON")
    .action(async (userId: string, o: { json?: boolean }) => {
      const { user } = await ctx.client(ConsoleUserService).getConsoleUser({ id: userId });
      print(user!, !!o.json);
    });
  users
    .command("grant <userId>")
    .description("give a user a role in a workspace")
    .requiredOption("--role <WORKSPACE_ID:role>", "for example 3f0c…:viewer")
    .option("--json", "print JSON")
    .action(async (userId: string, o: { role: string; json?: boolean }) => {
      const { workspaceId, role } = parseRole(o.role);
      const { user } = await ctx.client(ConsoleUserService).grantRole({ userId, workspaceId, role });
      print(user!, !!o.json);
    });
  users
    .command("revoke <userId>")
    .description("take a user's role in a workspace away")
    .requiredOption("--workspace <id>", "workspace")
    .option("--json", "print JSON")
    .action(async (userId: string, o: { workspace: string; json?: boolean }) => {
      const { user } = await ctx.client(ConsoleUserService).revokeRole({ userId, workspaceId: o.workspace });
      print(user!, !!o.json);
    });
  users
    .command("delete <userId>")
    .description("delete a console user and end their sessions")
    .action(async (userId: string) => {
      await ctx.client(ConsoleUserService).deleteConsoleUser({ id: userId });
      ctx.say(`deleted ${userId}`, false);
    });
  return users;
}
