import type { SignInLimits } from "./console/sign-in-limits.js";
import type { Db, MongoClient } from "mongodb";
import type { ApiKeyStore } from "./auth/api-key-store.js";
import type { Admission } from "./auth/admission.js";
import type { Config } from "./config.js";
import type { EventBus } from "./events/event-bus.js";
import type { HttpRoute } from "./gateway/node-http.js";
import type { ServiceRegistration } from "./gateway/services.js";
import type { JobSpec, Scheduler } from "./jobs/scheduler.js";
import type { Clock } from "./shared/clock.js";
import type { Logger } from "./shared/logger.js";
import type { ConsoleUserStore } from "./console/users/user-store.js";
import type { RateLimiter } from "./ratelimit/rate-limiter.js";
import type { Metrics } from "./metrics/metrics.js";
import type { RequestLog } from "./requestlog/request-log.js";
import type { CreditStore } from "./credits/credit-store.js";
import type { WorkspaceStore } from "./workspaces/workspace-store.js";

/**
 * What every capability is built from: the shared parts the composition
 * root makes once (STYLE.md: one composition root, no DI container).
 */
export interface Platform {
  readonly config: Config & { mongodbUri: string };
  readonly client: MongoClient;
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly scheduler: Scheduler;
  readonly events: EventBus;
  readonly workspaces: WorkspaceStore;
  /** Balances and the credit ledger (a workspace's opening balance included). */
  readonly credits: CreditStore;
  readonly keys: ApiKeyStore;
  readonly admission: Admission;
  readonly rateLimiter: RateLimiter;
  readonly requestLog: RequestLog;
  readonly consoleUsers: ConsoleUserStore;
  /** Failed console sign-ins per account and address. */
  readonly signInLimits: SignInLimits;
  /** Prometheus metrics of this process (GET /metrics on the console port). */
  readonly metrics: Metrics;
}

/**
 * A capability (messaging, webhooks, flows …) plugs into the service
 * through this shape; src/server.ts lists them. Handlers for a service may
 * come from several capabilities; methods nobody provides answer
 * `unimplemented`.
 */
export interface Capability {
  /** Short name, for logs. */
  readonly name: string;
  /** Handlers of public services (messaging.v1), partial where another capability adds the rest. */
  readonly publicServices?: readonly ServiceRegistration[];
  /** Handlers of console services (messaging.console.v1). */
  readonly consoleServices?: readonly ServiceRegistration[];
  /** Plain HTTP endpoints on the public port, outside API-key admission (for example network callbacks). */
  readonly httpRoutes?: readonly HttpRoute[];
  /** Plain HTTP endpoints on the console port, outside console admission (the web console's files). */
  readonly consoleHttpRoutes?: readonly HttpRoute[];
  /** Background jobs this capability defines. */
  readonly jobs?: readonly JobSpec<never>[];
  /** Jobs to run on a schedule by one worker, with their interval in ms. */
  readonly schedules?: readonly { job: string; everyMs: number }[];
  /** Creates the capability's indexes (at start-up, every role). */
  ensureIndexes?(): Promise<void>;
  /** Starts in-process work (for example the network simulator) once the service runs. */
  start?(): Promise<void>;
  /** Stops in-process work at shutdown, before the database closes. */
  stop?(): Promise<void>;
}
