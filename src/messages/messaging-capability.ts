import { MessageStatsService } from "../../gen/messaging/console/v1/message_stats_pb.js";
import { MessageLogService } from "../../gen/messaging/console/v1/messages_pb.js";
import { SimulatorService } from "../../gen/messaging/console/v1/simulator_pb.js";
import { MessageService } from "../../gen/messaging/v1/messages_pb.js";
import type { Capability, Platform } from "../capability.js";
import { createCreditsCapability } from "../credits/credits-capability.js";
import { createFlowsCapability } from "../flows/flows-capability.js";
import { registerService } from "../gateway/services.js";
import { createNetwork } from "../network/create-network.js";
import { createSimulatorService } from "../network/simulator-service.js";
import { createSendersCapability } from "../senders/senders-capability.js";
import { createTemplatesCapability } from "../templates/templates-capability.js";
import { createDispatcher } from "./dispatch.js";
import { createInbound } from "./inbound.js";
import { createMessageService } from "./message-service.js";
import { createMessageLogService } from "./message-log-service.js";
import { createMessageStatsService } from "./message-stats-service.js";
import { newId } from "../shared/ids.js";
import { createOptOuts } from "../optouts/opt-outs.js";
import { createOptOutsCapability } from "../optouts/opt-outs-capability.js";

/** Name of the recovery sweep job. */
export const MESSAGES_SWEEP_JOB = "messages.sweep";



/**
 * Sending messages: the senders, templates and credits capabilities, and
 * the messages capability built on their stores: POST/GET /v1/messages with
 * idempotency, durable dispatch to the network chosen by NETWORK, the
 * network's callbacks, reconciliation of reports and the message.* events,
 * and the simulator's console service. Three queues (src/jobs/leased-queue.ts)
 * hold what waits: messages under dispatch, reports not applied yet and the
 * reports the simulated network will make (src/network/simulator.ts); each
 * worker claims them (the process's queue claims, every
 * QUEUE_CLAIM_INTERVAL_MS, and wake-ups), which also takes over what a
 * stopped process left. The recovery sweep (MESSAGES_SWEEP_INTERVAL_MS, and
 * once when a worker starts) completes the follow-ups: events whose status
 * change was stored, due refunds, half-done credit changes, and
 * Idempotency-Keys older than 24 h. The opt-out lists (src/optouts/) are
 * changed by the inbound path and consulted by every send. The flows capability (forms,
 * src/flows/) comes last: it is built on the message store, the inbound path
 * and the network.
 */
export function createMessagingCapabilities(platform: Platform): Capability[] {
  const { clock, logger, config, events, credits } = platform;
  const { senders, templates, messages, idempotency, reports } = platform.stores;
  const owner = newId();
  const optOuts = createOptOuts({
    store: platform.stores.optOuts,
    workspaces: platform.workspaces,
    events,
    audit: platform.audit,
    defaults: { optOut: config.optOutKeywords, optIn: config.optInKeywords },
    clock,
    logger,
  });
  const inbound = createInbound({
    reports,
    messages,
    senders,
    credits,
    events,
    clock,
    logger,
    claimTimeoutMs: config.recoveryAgeMs,
    owner,
    claimIntervalMs: config.queueClaimIntervalMs,
    optOuts,
  });
  const { network, simulator } = createNetwork(platform, (report) => inbound.handle(report), owner);
  const dispatcher = createDispatcher({
    messages,
    network,
    inbound,
    clock,
    logger,
    senders,
    pacing: { pairIntervalMs: config.pairRateIntervalMs, pairBurst: config.pairRateBurst },
    throttleWindows: platform.stores.throttleWindows,
    workspaces: platform.workspaces,
    messagingLimit: platform.stores.messagingLimit,
    options: {
      maxAttempts: config.dispatchMaxAttempts,
      retryBaseMs: config.dispatchRetryBaseMs,
      retryMaxMs: config.dispatchRetryMaxMs,
      claimTimeoutMs: config.dispatchClaimTimeoutMs,
      claimIntervalMs: config.queueClaimIntervalMs,
    },
    metrics: platform.metrics,
  });
  const sweep = async () => {
    const followUps = await inbound.recover(config.recoveryAgeMs);
    const creditOps = await credits.recover(config.recoveryAgeMs, messages.exists, messages.isRefunded);
    const idempotencyKeys = await idempotency.prune();
    if (followUps + creditOps + idempotencyKeys > 0) {
      logger.info({ followUps, creditOps, idempotencyKeys }, "messages sweep: recovered work");
    }
  };
  const isWorker = config.role !== "api";
  // What waits for a worker, read from the database at each scrape (the same in every process): a value that stays
  // above 0 means no worker keeps up, or none runs (README "Running in production").
  platform.metrics.gauge("msgsvc_dispatch_backlog", "Messages whose dispatch (a retry, or a lapsed lease) is due and not yet claimed.", () =>
    messages.countDispatchDue(clock.now()),
  );
  if (simulator) {
    platform.metrics.gauge("msgsvc_simulator_reports_backlog", "Reports of the simulated network due and not yet made.", () =>
      platform.stores.simulatorReports.countDue(clock.now()),
    );
  }

  const messagesCapability: Capability = {
    name: "messages",
    publicServices: [
      registerService(
        MessageService,
        createMessageService({
          messages,
          senders,
          templates,
          credits,
          idempotency,
          clock,
          logger,
          priceCredits: config.messagePriceCredits,
          requirePhoneNumberId: config.network === "whatsapp",
          dispatcher,
          inbound,
          metrics: platform.metrics,
          optOuts: platform.stores.optOuts,
        }),
      ),
    ],
    consoleServices: [
      registerService(SimulatorService, createSimulatorService({ simulator, messages })),
      registerService(MessageStatsService, createMessageStatsService({ messages, workspaces: platform.workspaces, clock })),
      registerService(MessageLogService, createMessageLogService({ messages, credits, events, workspaces: platform.workspaces })),
    ],
    httpRoutes: network.httpRoutes,
    // One sweep across the workers (an Agenda job): a worker killed while it held the run's lock leaves it to another
    // after two intervals (at least 5 s), not Agenda's default of 10 minutes; two sweeps at once do no harm, since
    // every step of one is a conditional write (README "Running in production").
    jobs: [{ name: MESSAGES_SWEEP_JOB, concurrency: 1, run: sweep, lockLifetimeMs: Math.max(2 * config.messagesSweepIntervalMs, 5_000) }],
    schedules: [{ job: MESSAGES_SWEEP_JOB, everyMs: config.messagesSweepIntervalMs }],
    async ensureIndexes() {
      for (const store of [messages, idempotency, inbound]) await store.ensureIndexes();
      if (simulator) await platform.stores.simulatorReports.ensureIndexes();
    },
    async start() {
      if (!isWorker) return;
      await sweep().catch((err: unknown) => logger.error({ err }, "messages sweep at start failed"));
      platform.queueClaims.add(() => dispatcher.drain());
      platform.queueClaims.add(() => inbound.drain());
      if (simulator) platform.queueClaims.add(() => simulator.drain());
      dispatcher.start();
      inbound.start();
      simulator?.start();
    },
    async stop() {
      await dispatcher.stop();
      // The simulator's reports being made go through the inbound path: they finish before it closes.
      await network.stop?.();
      await inbound.close();
    },
  };
  return [
    createSendersCapability(platform, senders, network),
    createTemplatesCapability(platform, templates),
    createCreditsCapability(platform, credits),
    messagesCapability,
    createOptOutsCapability(platform, optOuts),
    createFlowsCapability(platform, { messages, inbound, network, simulator }),
  ];
}
