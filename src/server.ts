import { MongoClient, type Db } from "mongodb";
import { Health } from "../gen/health/v1/health_pb.js";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { FlowResponseService } from "../gen/messaging/v1/flow_responses_pb.js";
import { MessageService } from "../gen/messaging/v1/messages_pb.js";
import { SenderService } from "../gen/messaging/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/v1/templates_pb.js";
import { WebhookService } from "../gen/messaging/v1/webhooks_pb.js";
import { createAccountCapability } from "./account/account-capability.js";
import { createAdmission } from "./auth/admission.js";
import { createApiKeyStore, type ApiKeyStore } from "./auth/api-key-store.js";
import type { Capability, CapabilityStores, Platform } from "./capability.js";
import { createFlowFileStore } from "./flows/flow-files.js";
import { createFlowResponseStore } from "./flows/flow-response-store.js";
import { createIdempotencyStore } from "./messages/idempotency.js";
import { createMessageStore } from "./messages/message-store.js";
import { createOptOutStore } from "./optouts/opt-out-store.js";
import { OptOutService } from "../gen/messaging/v1/opt_outs_pb.js";
import { createReportStore } from "./messages/report-store.js";
import { createSimulatorMediaStore } from "./network/simulator-media.js";
import { createSimulatorReportStore } from "./network/simulator-report-store.js";
import { createSenderStore } from "./senders/sender-store.js";
import { createTemplateStore } from "./templates/template-store.js";
import { createDeliveryStore } from "./webhooks/delivery-store.js";
import { createEndpointStore } from "./webhooks/endpoint-store.js";
import { THROTTLE_WINDOW_MS } from "./ratelimit/throttle.js";
import { requireWebhookSecretKey } from "./webhooks/webhooks-capability.js";
import type { Config } from "./config.js";
import { createAuditLog, type AuditLog } from "./console/audit/audit-log.js";
import { consoleRefusalInterceptor, createConsoleAdmission } from "./console/console-admission.js";
import { createSignInLimits } from "./console/sign-in-limits.js";
import { createConsoleCapability } from "./console/console-capability.js";
import { createConsoleUserStore } from "./console/users/user-store.js";
import { createTenancyCapability } from "./console/tenancy-capability.js";
import { createWebhooksCapability } from "./webhooks/webhooks-capability.js";
import { createEventBus, type EventBus } from "./events/event-bus.js";
import { createMessagingCapabilities } from "./messages/messaging-capability.js";
import { outcomeInterceptor, publicInterceptors } from "./gateway/interceptors.js";
import { createReflectionServices } from "./gateway/reflection-service.js";
import { createRpcServer, type RpcServer } from "./gateway/rpc-server.js";
import { mergeServices, registerService } from "./gateway/services.js";
import { createHealthService } from "./health/health-service.js";
import { createOpenApiCapability } from "./openapi/openapi-capability.js";
import { createPruneJob, PRUNE_JOB } from "./jobs/maintenance.js";
import { QueueClaims } from "./jobs/queue-claims.js";
import { newId } from "./shared/ids.js";
import { createScheduler, type Scheduler } from "./jobs/scheduler.js";
import { createRateLimiter } from "./ratelimit/rate-limiter.js";
import { createSimulatorLimits } from "./network/simulator-limits.js";
import { createRequestLog, type RequestLog } from "./requestlog/request-log.js";
import { systemClock, type Clock } from "./shared/clock.js";
import { createLogger, type Logger } from "./shared/logger.js";
import { createMetrics, metricsRoute, observeDatabaseCommands } from "./metrics/metrics.js";
import { tuneHeap } from "./shared/heap.js";
import { createCreditStore } from "./credits/credit-store.js";
import { createWorkspaceStore, type WorkspaceStore } from "./workspaces/workspace-store.js";
import { MessagingLimitBudget } from "./messages/messaging-limit.js";

/** What startService needs besides the configuration. */
export interface StartOptions {
  /** Configuration; mongodbUri must be set (the entry point starts the embedded database otherwise). */
  config: Config & { mongodbUri: string };
  logger?: Logger;
  clock?: Clock;
}

/** A running service: its ports, stores and a way to stop it. */
export interface RunningService {
  /** Public port (role all or api), else undefined. */
  readonly publicPort: number | undefined;
  /** Console port (role all or api), else undefined. */
  readonly consolePort: number | undefined;
  readonly client: MongoClient;
  readonly db: Db;
  readonly workspaces: WorkspaceStore;
  readonly keys: ApiKeyStore;
  readonly requestLog: RequestLog;
  readonly scheduler: Scheduler;
  readonly events: EventBus;
  readonly publicServer: RpcServer | undefined;
  /** The capabilities' stores (the entry point seeds the demo workspace through them). */
  readonly stores: CapabilityStores;
  /** Writes the buffered last-use times of API keys now (otherwise every 5 s). */
  flushKeyUsage(): Promise<void>;
  /**
   * Graceful shutdown: stops accepting, waits for requests in flight (up to
   * SHUTDOWN_TIMEOUT_MS), stops the job worker, writes buffered request-log
   * rows and key use, and closes the database connection.
   */
  close(): Promise<void>;
}

/** Public services served whether or not a capability provides their methods yet. */
const PUBLIC_SERVICES = [AccountService, SenderService, TemplateService, MessageService, OptOutService, WebhookService, FlowResponseService];

/**
 * The capabilities of the service, in the order they start. Each plugs its
 * handlers, HTTP routes, jobs and indexes in through the Capability shape.
 */
function createCapabilities(platform: Platform, auditLog: AuditLog, publicPort: () => number | undefined): Capability[] {
  return [
    createAccountCapability(),
    createTenancyCapability(platform),
    createConsoleCapability(platform, auditLog, publicPort),
    createOpenApiCapability(),
    ...createMessagingCapabilities(platform),
    createWebhooksCapability(platform),
  ];
}

/**
 * The capabilities' stores over `db` (README "Design" §14): each the one
 * module of its collections.
 *
 * @throws Error when WEBHOOK_SECRET_KEY is missing (the webhook endpoints' signing secrets need it).
 */
function createCapabilityStores(db: Db, clock: Clock, config: Config): CapabilityStores {
  return {
    senders: createSenderStore(db, clock),
    templates: createTemplateStore(db, clock),
    messages: createMessageStore(db),
    reports: createReportStore(db),
    idempotency: createIdempotencyStore(db, clock, config.idempotencyHoldMs),
    flowResponses: createFlowResponseStore(db),
    flowFiles: createFlowFileStore(db),
    simulatorMedia: createSimulatorMediaStore(db, clock),
    simulatorReports: createSimulatorReportStore(db),
    simulatorLimits: createSimulatorLimits(db, clock, { throughputMps: config.simulatorThroughputMps, pairIntervalMs: config.simulatorPairIntervalMs, pairBurst: config.simulatorPairBurst }),
    webhookEndpoints: createEndpointStore(db, clock, requireWebhookSecretKey(config.webhookSecretKey)),
    webhookDeliveries: createDeliveryStore(db),
    throttleWindows: createRateLimiter(db, clock, THROTTLE_WINDOW_MS),
    optOuts: createOptOutStore(db),
    messagingLimit: new MessagingLimitBudget(db, clock),
  };
}

/** The application name the service gives the database in its connections' handshake (MongoDB's `appName`). */
export const DATABASE_APP_NAME = "messaging-service";

/**
 * The composition root (README "Design" §14): builds the MongoDB client, stores, Agenda,
 * admission, the capabilities, interceptors and both ports, as production
 * and tests alike run it. ROLE decides what runs: "all" (ports and jobs),
 * "api" (ports) or "worker" (jobs).
 *
 * @throws Error when the database cannot be reached or a port cannot be bound.
 */
export async function startService(options: StartOptions): Promise<RunningService> {
  const { config } = options;
  tuneHeap(config.heapGrowingPercent);
  const logger = options.logger ?? createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  /** Names this process's recurring jobs. */
  const processId = newId();
  // Money and state are written with w: "majority" and read from the primary (README "Design" §5), stated here
  // rather than left to the server's defaults.
  const client = new MongoClient(config.mongodbUri, {
    // The name MongoDB's logs and currentOp show for these connections, unless the URI gives one
    // (the embedded database counts commands by it: src/store/embedded-mongo/CommandCounts.java).
    ...(/[?&]appName=/i.test(config.mongodbUri) ? {} : { appName: DATABASE_APP_NAME }),
    ignoreUndefined: true,
    serverSelectionTimeoutMS: 10_000,
    writeConcern: { w: "majority" },
    readPreference: "primary",
    monitorCommands: config.databaseCommandMetrics,
  });
  const metrics = createMetrics(logger);
  if (config.databaseCommandMetrics) observeDatabaseCommands(client, metrics);
  await client.connect().catch((err: Error) => {
    const where = config.mongodbUri.replace(/\/\/[^@/]*@/, "//***@");
    throw new Error(`the database at ${where} cannot be reached (MONGODB_URI): ${err.message}`);
  });
  const db = client.db(config.mongodbDatabase);

  const credits = createCreditStore(db, clock);
  const workspaces = createWorkspaceStore(db, clock, credits);
  const keys = createApiKeyStore(db, clock);
  const rateLimiter = createRateLimiter(db, clock);
  const requestLog = createRequestLog(db, { flushMs: config.requestLogFlushMs, retentionMs: config.requestLogRetentionDays * 86_400_000, logger });
  const events = createEventBus(db, clock, logger);
  for (const store of [workspaces, keys, rateLimiter, requestLog, events]) await store.ensureIndexes();

  // Agenda runs a recurring job no more often than it scans: as often as the webhook claim job runs, at least.
  const scheduler = createScheduler(db, logger, Math.min(config.jobPollIntervalMs, config.webhookClaimIntervalMs));
  scheduler.define(
    createPruneJob({ requestLog, rateLimiter, clock, logger }),
  );

  const admission = createAdmission({
    keys,
    workspaces,
    rateLimiter,
    clock,
    logger,
    keyCacheTtlMs: config.keyCacheTtlMs,
    unauthenticatedRateLimitPerMin: config.unauthenticatedRateLimitPerMin,
  });

  let shuttingDown = false;
  let lastPing = { at: 0, ok: false };
  const probe = async () => {
    if (shuttingDown) return false;
    if (Date.now() - lastPing.at > 1000) {
      const ok = await db.command({ ping: 1 }).then(() => true, () => false);
      lastPing = { at: Date.now(), ok };
    }
    return lastPing.ok;
  };

  const consoleUsers = createConsoleUserStore(db, clock);
  const signInLimits = createSignInLimits(db, clock, { perAccount: config.consoleSignInFailuresPerAccount, perAddress: config.consoleSignInFailuresPerAddress });
  await signInLimits.ensureIndexes();
  const auditLog = createAuditLog(db, logger);
  const platform: Platform = {
    config,
    clock,
    logger,
    scheduler,
    events,
    workspaces,
    credits,
    keys,
    admission,
    rateLimiter,
    requestLog,
    consoleUsers,
    signInLimits,
    audit: auditLog,
    metrics,
    stores: createCapabilityStores(db, clock, config),
    queueClaims: new QueueClaims(),
  };
  let publicPort: number | undefined;
  const capabilities = createCapabilities(platform, auditLog, () => publicPort);
  for (const capability of capabilities) {
    await capability.ensureIndexes?.();
    for (const job of capability.jobs ?? []) scheduler.define(job);
  }
  const publicServices = mergeServices(capabilities.flatMap((c) => c.publicServices ?? []), PUBLIC_SERVICES);
  const consoleServices = mergeServices(capabilities.flatMap((c) => c.consoleServices ?? []));

  let publicServer: RpcServer | undefined;
  let consoleServer: RpcServer | undefined;
  let consolePort: number | undefined;
  let usageTimer: NodeJS.Timeout | undefined;

  if (config.role !== "worker") {
    if (!config.consoleToken) throw new Error("CONSOLE_TOKEN must be set for the console port");
    publicServer = createRpcServer({
      services: publicServices,
      openServices: [
        registerService(Health, createHealthService(publicServices.map((s) => s.service.typeName), probe)),
        ...createReflectionServices([...publicServices.map((s) => s.service), Health]),
      ],
      httpRoutes: capabilities.flatMap((c) => c.httpRoutes ?? []),
      interceptors: publicInterceptors(logger),
      admit: admission.admit,
      healthy: probe,
      onFinished: (state, outcome) => {
        const durationMs = Number(process.hrtime.bigint() - state.startedAt) / 1e6;
        const operation = state.operation ?? null;
        requestLog.record({
          _id: state.requestId,
          at: state.receivedAt,
          workspace_id: state.workspaceId ?? null,
          api_key_id: state.apiKeyId ?? null,
          operation,
          protocol: state.protocol,
          http_method: state.httpMethod,
          path: state.path,
          http_status: outcome.httpStatus,
          error_code: outcome.errorCode ?? null,
          client_address: state.clientAddress,
          duration_ms: durationMs,
          ...(state.batchCounts ? { accepted_count: state.batchCounts.accepted, refused_count: state.batchCounts.refused } : {}),
        });
        metrics.requests.inc({ operation: operation ?? "none", protocol: state.protocol, code: outcome.errorCode ?? "ok" });
        metrics.requestDuration.observe({ operation: operation ?? "none", protocol: state.protocol }, durationMs / 1000);
        // The access log: one line per public request, never a secret (the key by its id only, no query string, no body).
        logger.info(
          {
            requestId: state.requestId,
            operation,
            protocol: state.protocol,
            method: state.httpMethod,
            path: state.path,
            keyId: state.apiKeyId ?? null,
            status: outcome.httpStatus,
            code: outcome.errorCode ?? null,
            durationMs: Math.round(durationMs * 10) / 10,
            clientAddress: state.clientAddress,
          },
          "request",
        );
      },
      trustForwardedFor: config.trustXForwardedFor,
      limits: config,
      logger,
    });
    consoleServer = createRpcServer({
      services: consoleServices,
      httpRoutes: [...capabilities.flatMap((c) => c.consoleHttpRoutes ?? []), metricsRoute(metrics)],
      interceptors: [outcomeInterceptor(logger), auditLog.interceptor, consoleRefusalInterceptor],
      admit: createConsoleAdmission(config.consoleToken, consoleUsers, signInLimits),
      onFinished: (state, outcome) =>
        logger.info(
          { requestId: state.requestId, operation: state.operation, status: outcome.httpStatus, errorCode: outcome.errorCode },
          "console request",
        ),
      trustForwardedFor: false,
      limits: config,
      logger,
    });
    publicPort = await publicServer.listen(config.port, config.host);
    consolePort = await consoleServer.listen(config.consolePort, config.consoleHost);
    usageTimer = setInterval(() => {
      admission.flushUsage().catch((err: unknown) => logger.warn({ err }, "recording key use failed"));
    }, 5000);
    usageTimer.unref();
  }
  if (config.role !== "api") {
    await scheduler.start();
    await scheduler.every(600_000, PRUNE_JOB);
    for (const { job, everyMs } of capabilities.flatMap((c) => c.schedules ?? [])) await scheduler.every(everyMs, job);
  }
  for (const capability of capabilities) await capability.start?.();
  const removeQueueClaims =
    config.role === "api" ? undefined : await scheduler.everyInThisProcess(QueueClaims.JOB, processId, config.queueClaimIntervalMs, () => platform.queueClaims.drainAll());
  logger.info({ role: config.role, publicPort, consolePort }, "service started");

  return {
    publicPort,
    consolePort,
    client,
    db,
    workspaces,
    keys,
    requestLog,
    scheduler,
    events,
    publicServer,
    stores: platform.stores,
    flushKeyUsage: () => admission.flushUsage(),
    async close() {
      shuttingDown = true;
      await Promise.all([publicServer?.close(config.shutdownTimeoutMs), consoleServer?.close(config.shutdownTimeoutMs)]);
      if (usageTimer) clearInterval(usageTimer);
      await removeQueueClaims?.().catch((err: unknown) => logger.warn({ err }, "removing this process's queue claim job failed"));
      for (const capability of [...capabilities].reverse()) await capability.stop?.();
      await scheduler.stop();
      await admission.flushUsage().catch((err: unknown) => logger.warn({ err }, "recording key use failed"));
      await requestLog.close();
      await client.close();
      logger.info("service stopped");
    },
  };
}
