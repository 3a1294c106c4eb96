import type { SignInLimits } from "./console/sign-in-limits.js";
import type { FlowFileStore } from "./flows/flow-files.js";
import type { FlowResponseStore } from "./flows/flow-response-store.js";
import type { IdempotencyStore } from "./messages/idempotency.js";
import type { MessageStore } from "./messages/message-store.js";
import type { ReportStore } from "./messages/report-store.js";
import type { SimulatorMediaStore } from "./network/simulator-media.js";
import type { SimulatorReportStore } from "./network/simulator-report-store.js";
import type { SenderStore } from "./senders/sender-store.js";
import type { TemplateStore } from "./templates/template-store.js";
import type { QueueClaims } from "./jobs/queue-claims.js";
import type { DeliveryStore } from "./webhooks/delivery-store.js";
import type { EndpointStore } from "./webhooks/endpoint-store.js";
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
import type { SimulatorLimits } from "./network/simulator-limits.js";
import type { Metrics } from "./metrics/metrics.js";
import type { RequestLog } from "./requestlog/request-log.js";
import type { CreditStore } from "./credits/credit-store.js";
import type { WorkspaceStore } from "./workspaces/workspace-store.js";
import type { AuditLog } from "./console/audit/audit-log.js";
import type { OptOutStore } from "./optouts/opt-out-store.js";
import type { MessagingLimitBudget } from "./messages/messaging-limit.js";

/**
 * The stores of the capabilities, each the one module that reads and writes
 * its collections (README "Design" §14): the composition root makes them
 * over the database, and the capabilities get them, never the database.
 */
export interface CapabilityStores {
  readonly senders: SenderStore;
  readonly templates: TemplateStore;
  readonly messages: MessageStore;
  readonly reports: ReportStore;
  readonly idempotency: IdempotencyStore;
  readonly flowResponses: FlowResponseStore;
  readonly flowFiles: FlowFileStore;
  /** The simulated network's media (used with NETWORK=simulator). */
  readonly simulatorMedia: SimulatorMediaStore;
  /** The simulated network's reports to make (used with NETWORK=simulator). */
  readonly simulatorReports: SimulatorReportStore;
  /** The simulated network's limits (used with NETWORK=simulator and SIMULATOR_LIMITS). */
  readonly simulatorLimits: SimulatorLimits;
  readonly webhookEndpoints: EndpointStore;
  readonly webhookDeliveries: DeliveryStore;
  /** The one-second rate windows of the shared throttles (src/ratelimit/throttle.ts): webhook endpoints' rate limits, sender numbers' throughput. */
  readonly throttleWindows: RateLimiter;
  /** The workspaces' opt-out lists. */
  readonly optOuts: OptOutStore;
  /** The workspaces' unique recipients in the moving 24 hours of their messaging limit. */
  readonly messagingLimit: MessagingLimitBudget;
}

/**
 * What every capability is built from: the shared parts the composition
 * root makes once (README "Design" §14: one composition root, no DI
 * container). No capability gets the database itself: it reads and writes
 * through its stores.
 */
export interface Platform {
  readonly config: Config & { mongodbUri: string };
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
  /** The audit log's record of changes the service makes itself (opt-outs by a reply or a network error). */
  readonly audit: Pick<AuditLog, "recordServiceChange">;
  /** Prometheus metrics of this process (GET /metrics on the console port). */
  readonly metrics: Metrics;
  readonly stores: CapabilityStores;
  /** The drains of this process's queues, run by one recurring claim job in worker processes. */
  readonly queueClaims: QueueClaims;
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
