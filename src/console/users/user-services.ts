import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ConsoleRole,
  type ConsoleUserSchema,
  type ConsoleUserService,
  type SessionService,
} from "../../../gen/messaging/console/v1/console_users_pb.js";
import { requestState } from "../../gateway/request-state.js";
import type { SignInLimits } from "../sign-in-limits.js";
import { apiError, isDuplicateKeyError, notFound, toConnectError } from "../../shared/errors.js";
import { isUuid } from "../../shared/validation.js";
import type { WorkspaceStore } from "../../workspaces/workspace-store.js";
import { consoleActorOf, recordWorkspace, requireOperator, requireWorkspaceAccess } from "../console-access.js";
import { requireWorkspace } from "../workspace-service.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import type { ConsoleUserRecord, ConsoleUserStore, Role } from "./user-store.js";


const roleToProto = (role: Role) => (role === "admin" ? ConsoleRole.ADMIN : ConsoleRole.VIEWER);

/** The console form of a user: never the password hash. */
export function consoleUserToProto(record: ConsoleUserRecord): MessageInitShape<typeof ConsoleUserSchema> {
  return {
    id: record._id,
    object: "console_user",
    email: record.email,
    operator: record.operator,
    roles: Object.entries(record.roles).map(([workspaceId, role]) => ({ workspaceId, role: roleToProto(role) })),
    createdAt: timestampFromDate(record.created_at),
  };
}

/** Options of the console user services. */
export interface ConsoleUserServicesOptions {
  users: ConsoleUserStore;
  workspaces: WorkspaceStore;
  signInLimits: SignInLimits;
  /** Session lifetime, in ms. */
  sessionTtlMs: number;
  /** The port the public API listens on once it does (undefined before, and in a process without one). */
  publicPort?: () => number | undefined;
}

function sessionTokenOf(context: HandlerContext): string | undefined {
  return /^Bearer\s+(cs_\S+)$/i.exec(context.requestHeader.get("authorization") ?? "")?.[1];
}

/**
 * Handlers of messaging.console.v1.SessionService: Login (email and password;
 * the same unauthenticated answer for an unknown email and a wrong
 * password; failures counted per email and per address by SignInLimits,
 * over whose limits every attempt, the right password included, is
 * rate_limited), Logout and GetCurrentUser.
 */
export function createSessionService(options: ConsoleUserServicesOptions): Partial<ServiceImpl<typeof SessionService>> {
  const { users, signInLimits } = options;
  return {
    async login(req, context) {
      const email = req.email.trim().toLowerCase();
      const state = requestState(context);
      const subjects = { address: state.clientAddress, account: email };
      const limited = await signInLimits.check(subjects);
      if (limited) {
        state.setHeader("retry-after", limited.details.retry_after_seconds as string);
        throw toConnectError(limited);
      }
      const user = await users.findByEmail(email);
      const ok = user !== null && (await verifyPassword(req.password, user.password_hash));
      if (!ok || !user) {
        await signInLimits.recordFailure(subjects);
        throw apiError("unauthenticated", "Wrong email or password");
      }
      const session = await users.openSession(user._id, options.sessionTtlMs);
      return { token: session.token, expiresAt: timestampFromDate(session.expiresAt), user: consoleUserToProto(user) };
    },
    async logout(_req, context) {
      const token = sessionTokenOf(context);
      if (token) await users.closeSession(token);
      return {};
    },
    async getCurrentUser(_req, context) {
      const actor = consoleActorOf(context);
      const publicPort = options.publicPort?.() ?? 0;
      if (actor?.kind !== "user") return { kind: "operator", publicPort };
      const user = await users.get(actor.userId);
      return { kind: "user", user: user ? consoleUserToProto(user) : undefined, publicPort };
    },
  };
}

/**
 * Handlers of messaging.console.v1.ConsoleUserService. Creating, listing
 * and deleting users is for the operator; a workspace admin may grant and
 * revoke roles in their own workspace (a viewer may not).
 */
export function createConsoleUserService(options: ConsoleUserServicesOptions): Partial<ServiceImpl<typeof ConsoleUserService>> {
  const { users, workspaces } = options;

  async function checkRoleChange(context: HandlerContext, userId: string, workspaceId: string): Promise<void> {
    await requireWorkspace(workspaces, workspaceId);
    requireWorkspaceAccess(context, workspaceId, "write");
    if (!isUuid(userId) || !(await users.get(userId))) throw notFound("console_user", userId);
  }

  return {
    async createConsoleUser(req, context) {
      // A user made with roles in one workspace is a change of that workspace's people: in its audit log.
      const granted = new Set(req.roles.map((r) => r.workspaceId));
      if (granted.size === 1) recordWorkspace(context, [...granted][0]!);
      requireOperator(context);
      const email = req.email.trim().toLowerCase();
      for (const r of req.roles) await requireWorkspace(workspaces, r.workspaceId);
      try {
        const record = await users.create({
          email,
          passwordHash: await hashPassword(req.password),
          operator: false,
          roles: Object.fromEntries(req.roles.map((r) => [r.workspaceId, r.role === ConsoleRole.ADMIN ? "admin" : "viewer"] as const)),
        });
        return { user: consoleUserToProto(record) };
      } catch (err) {
        if (isDuplicateKeyError(err)) throw apiError("conflict", `A console user with email ${email} exists`, { field: "email" });
        throw err;
      }
    },
    async listConsoleUsers(req, context) {
      requireOperator(context);
      const page = await users.list(req);
      return { object: "list", data: page.items.map(consoleUserToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getConsoleUser(req, context) {
      requireOperator(context);
      const record = isUuid(req.id) ? await users.get(req.id) : null;
      if (!record) throw notFound("console_user", req.id);
      return { user: consoleUserToProto(record) };
    },
    async grantRole(req, context) {
      await checkRoleChange(context, req.userId, req.workspaceId);
      const record = await users.grantRole(req.userId, req.workspaceId, req.role === ConsoleRole.ADMIN ? "admin" : "viewer");
      if (!record) throw notFound("console_user", req.userId);
      return { user: consoleUserToProto(record) };
    },
    async revokeRole(req, context) {
      await checkRoleChange(context, req.userId, req.workspaceId);
      const record = await users.revokeRole(req.userId, req.workspaceId);
      if (!record) throw notFound("console_user", req.userId);
      return { user: consoleUserToProto(record) };
    },
    async deleteConsoleUser(req, context) {
      requireOperator(context);
      const actor = consoleActorOf(context);
      if (actor?.kind === "user" && actor.userId === req.id) throw apiError("invalid_argument", "id: you cannot delete yourself", { field: "id", rule: "must not be the caller" });
      if (!isUuid(req.id) || !(await users.delete(req.id))) throw notFound("console_user", req.id);
      return {};
    },
  };
}
