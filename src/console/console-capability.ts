import { AuditLogService } from "../../gen/messaging/console/v1/audit_log_pb.js";
import { ConsoleUserService, SessionService } from "../../gen/messaging/console/v1/console_users_pb.js";
import { RequestLogService } from "../../gen/messaging/console/v1/request_log_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import type { JobSpec } from "../jobs/scheduler.js";
import { createRequestLogService } from "../requestlog/request-log-service.js";
import type { AuditLog } from "./audit/audit-log.js";
import { hashPassword } from "./users/passwords.js";
import { createConsoleUserService, createSessionService } from "./users/user-services.js";
import { webConsoleRoutes } from "./web/web-console.js";

const PRUNE_SESSIONS_JOB = "console.prune-sessions";

/**
 * The console's own parts: users and sessions (with the bootstrap admin
 * from CONSOLE_ADMIN_EMAIL / CONSOLE_ADMIN_PASSWORD, set at every start),
 * the audit log, the request-log views and the web console page.
 * `publicPort` tells the web console the public API's port once it listens.
 */
export function createConsoleCapability(platform: Platform, auditLog: AuditLog, publicPort: () => number | undefined): Capability {
  const { config, consoleUsers, workspaces, signInLimits, requestLog, clock } = platform;
  const options = { users: consoleUsers, workspaces, signInLimits, sessionTtlMs: config.consoleSessionTtlHours * 3_600_000, publicPort };
  const pruneSessions: JobSpec = {
    name: PRUNE_SESSIONS_JOB,
    concurrency: 1,
    async run() {
      await consoleUsers.sessions.deleteMany({ expires_at: { $lte: clock.now() } });
    },
  };
  return {
    name: "console",
    consoleServices: [
      registerService(SessionService, createSessionService(options)),
      registerService(ConsoleUserService, createConsoleUserService(options)),
      registerService(AuditLogService, auditLog.service),
      registerService(RequestLogService, createRequestLogService({ requestLog, workspaces, clock })),
    ],
    consoleHttpRoutes: webConsoleRoutes(),
    jobs: [pruneSessions as JobSpec<never>],
    schedules: [{ job: PRUNE_SESSIONS_JOB, everyMs: 3_600_000 }],
    async ensureIndexes() {
      await consoleUsers.ensureIndexes();
      await auditLog.ensureIndexes();
    },
    async start() {
      if (config.consoleAdminEmail && config.consoleAdminPassword) {
        await consoleUsers.upsertBootstrapAdmin(config.consoleAdminEmail, await hashPassword(config.consoleAdminPassword));
      }
    },
  };
}
