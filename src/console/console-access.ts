import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { apiError } from "../shared/errors.js";
import { requestState } from "../gateway/request-state.js";

/** What a console operation does to a workspace's things. */
export type ConsoleAccess = "read" | "write";

/**
 * Who called the console: the operator (CONSOLE_TOKEN, for the CLI and
 * automation, may do everything) or a signed-in console user with a role
 * per workspace; a user marked `operator` (the bootstrap admin) may do all
 * the operator may.
 */
export type ConsoleActor =
  | { kind: "operator" }
  | { kind: "user"; userId: string; email: string; operator: boolean; roles: ReadonlyMap<string, "admin" | "viewer"> };

/** Context value holding the console caller of a console request, once admitted (console-admission.ts sets it). */
export const consoleActorKey = createContextKey<ConsoleActor | undefined>(undefined, { description: "console caller" });

/** The console caller of a handler's call, or undefined before admission (never on a handler of the console port). */
export function consoleActorOf(context: Pick<HandlerContext, "values">): ConsoleActor | undefined {
  return context.values.get(consoleActorKey);
}

/** True when the actor may do what the operator may. */
export function actsAsOperator(actor: ConsoleActor | undefined): boolean {
  return actor?.kind === "operator" || (actor?.kind === "user" && actor.operator);
}

/**
 * True when `actor` may read a record of `workspaceId`: the operator always,
 * a user with a role in that workspace; a record of no workspace (null) only
 * the operator. For Gets, which answer not_found rather than say it exists.
 */
export function mayRead(actor: ConsoleActor | undefined, workspaceId: string | null): boolean {
  return actsAsOperator(actor) || (workspaceId !== null && actor?.kind === "user" && actor.roles.has(workspaceId));
}

/**
 * Checks that the console caller may `access` the things of `workspaceId`;
 * every console handler calls it once it knows the workspace concerned (it
 * also records the workspace for the audit log).
 * The operator may do everything; a viewer may read; an admin may read and
 * write; anyone else is refused with permission_denied (naming the role
 * needed).
 *
 * @throws ConnectError permission_denied
 */
export function requireWorkspaceAccess(context: Pick<HandlerContext, "values">, workspaceId: string, access: ConsoleAccess): void {
  requestState(context).workspaceId = workspaceId; // for the audit log
  const actor = consoleActorOf(context);
  if (!actor) throw apiError("permission_denied", "No console caller on this request");
  if (actor.kind === "operator" || actor.operator) return;
  const role = actor.roles.get(workspaceId);
  if (role === "admin" || (role === "viewer" && access === "read")) return;
  throw apiError(
    "permission_denied",
    access === "write"
      ? `This change needs the admin role in workspace ${workspaceId}`
      : `Reading this needs a role in workspace ${workspaceId}`,
    { workspace_id: workspaceId, required_role: access === "write" ? "admin" : "viewer", role: role ?? "none" },
  );
}

/**
 * Names `workspaceId` as the workspace a console call acts on, for the audit
 * log, where a handler checks no role in it (an operator's change of the
 * workspace itself: create, suspend, resume). A call refused on the way is
 * in that workspace's log too.
 */
export function recordWorkspace(context: Pick<HandlerContext, "values">, workspaceId: string): void {
  requestState(context).workspaceId = workspaceId;
}

/**
 * Checks that the console caller is the operator (workspace creation and
 * other operations that span workspaces).
 *
 * @throws ConnectError permission_denied
 */
export function requireOperator(context: Pick<HandlerContext, "values">): void {
  if (!actsAsOperator(consoleActorOf(context))) {
    throw apiError("permission_denied", "Only the operator (console token or bootstrap admin) may do this");
  }
}
