import { DeliveryService } from "../../gen/messaging/console/v1/deliveries_pb.js";
import { WebhookEndpointService } from "../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WebhookService } from "../../gen/messaging/v1/webhooks_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createDeliveryService } from "./delivery-service.js";
import { createDeliveryStore } from "./delivery-store.js";
import { Dispatcher } from "./dispatcher.js";
import { SWEEP_JOB } from "./webhook-sweep.js";
import { createEndpointService } from "./endpoint-service.js";
import { createEndpointStore } from "./endpoint-store.js";
import { countedAttempts, createWebhookSender } from "./http-sender.js";
import { createWebhookService } from "./webhook-service.js";

/**
 * Signed webhook delivery (spec §Webhook endpoint, §Events, §Delivery
 * rules, §Webhook signature): endpoints in the console, GET /v1/webhook,
 * and the engine that turns every published event into signed deliveries
 * (Dispatcher), with its Agenda jobs.
 *
 * @throws Error when WEBHOOK_SECRET_KEY is missing (the entry point supplies one for the embedded database).
 */
export function createWebhooksCapability(platform: Platform): Capability {
  const { config, db, clock, logger, scheduler, events, workspaces } = platform;
  const secretKey = config.webhookSecretKey;
  if (!secretKey) {
    throw new Error("WEBHOOK_SECRET_KEY must be set: it encrypts the webhook signing secrets (32 bytes, hex or base64)");
  }
  const policy = { allowPrivateTargets: config.webhookAllowPrivateTargets, allowHttpLoopback: config.webhookAllowHttpLoopback };
  const endpoints = createEndpointStore(db, clock, secretKey);
  const store = createDeliveryStore(db);
  const sender = countedAttempts(createWebhookSender({ timeoutMs: config.webhookAttemptTimeoutMs, policy, clock }), platform.metrics);
  platform.metrics.gauge("msgsvc_webhook_endpoints_disabled", "Webhook endpoints disabled (by hand or after 20 failures in a row).", () =>
    endpoints.collection.countDocuments({ enabled: false }),
  );
  // Deliveries due and not yet attempted: retries whose batch is due, and events not yet fanned out
  // (their first attempts). Paused batches (disabled endpoints) are not due.
  platform.metrics.gauge("msgsvc_webhook_backlog", "Webhook delivery attempts due and not yet made.", async () => {
    const [due] = await store.batches
      .aggregate<{ n: number }>([{ $match: { due_at: { $lte: clock.now() } } }, { $group: { _id: null, n: { $sum: "$size" } } }])
      .toArray();
    const unfanned = await events.collection.countDocuments({ fanned_out_at: null });
    return (due?.n ?? 0) + unfanned;
  });
  const dispatcher = new Dispatcher({
    db,
    events,
    endpoints,
    store,
    sender,
    scheduler,
    clock,
    logger,
    secretKey,
    schedule: config.webhookRetrySchedule,
    timeoutMs: config.webhookAttemptTimeoutMs,
    leaseMs: config.webhookLeaseMs,
    role: config.role,
  });
  events.onPublished(dispatcher.onEvent, dispatcher.wants);
  return {
    name: "webhooks",
    publicServices: [registerService(WebhookService, createWebhookService(endpoints))],
    consoleServices: [
      registerService(WebhookEndpointService, createEndpointService({ endpoints, workspaces, dispatcher, policy })),
      registerService(DeliveryService, createDeliveryService({ store, endpoints, events, dispatcher })),
    ],
    jobs: dispatcher.jobs,
    schedules: [{ job: SWEEP_JOB, everyMs: config.webhookSweepIntervalMs }],
    async ensureIndexes() {
      await endpoints.ensureIndexes();
      await store.ensureIndexes();
      await dispatcher.ensureIndexes();
      // Registered here, before any port opens or capability starts, so that no
      // event is published by this process before a crash of it can be noticed.
      await dispatcher.start();
    },
    stop: () => dispatcher.stop(),
  };
}
