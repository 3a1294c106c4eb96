import { DeliveryService } from "../../gen/messaging/console/v1/deliveries_pb.js";
import { WebhookEndpointService } from "../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WebhookService } from "../../gen/messaging/v1/webhooks_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createDeliveryService } from "./delivery-service.js";
import { Dispatcher } from "./dispatcher.js";
import { createEndpointService } from "./endpoint-service.js";
import { countedAttempts, createWebhookSender } from "./http-sender.js";
import { createWebhookService } from "./webhook-service.js";

/**
 * Signed webhook delivery (spec §Webhook endpoint, §Events, §Delivery
 * rules, §Webhook signature): endpoints in the console, GET /v1/webhook,
 * and the engine that turns every published event into signed deliveries
 * (Dispatcher).
 *
 * @throws Error when WEBHOOK_SECRET_KEY is missing (the entry point supplies one for the embedded database).
 */
export function createWebhooksCapability(platform: Platform): Capability {
  const { config, clock, logger, events, workspaces } = platform;
  const { webhookEndpoints: endpoints, webhookDeliveries: store } = platform.stores;
  const secretKey = requireWebhookSecretKey(config.webhookSecretKey);
  const policy = { allowPrivateTargets: config.webhookAllowPrivateTargets, allowHttpLoopback: config.webhookAllowHttpLoopback };
  const sender = countedAttempts(createWebhookSender({ timeoutMs: config.webhookAttemptTimeoutMs, policy, clock }), platform.metrics);
  platform.metrics.gauge("msgsvc_webhook_endpoints_disabled", "Webhook endpoints disabled (by hand or after 20 failures in a row).", () =>
    endpoints.countDisabled(),
  );
  // Deliveries due and not yet claimed (deliveries waiting for a disabled endpoint are not due).
  platform.metrics.gauge("msgsvc_webhook_backlog", "Webhook delivery attempts due and not yet made.", () =>
    store.countDue(clock.now()),
  );
  const dispatcher = new Dispatcher({
    events,
    endpoints,
    store,
    sender,
    clock,
    logger,
    scheduler: platform.scheduler,
    secretKey,
    schedule: config.webhookRetrySchedule,
    timeoutMs: config.webhookAttemptTimeoutMs,
    leaseMs: config.webhookLeaseMs,
    claimIntervalMs: config.webhookClaimIntervalMs,
    claims: config.role !== "api",
    // The endpoints' rate limits: one-second windows of the shared counters (subjects webhook:<endpoint>).
    throttleLimiter: platform.stores.throttleWindows,
  });
  return {
    name: "webhooks",
    publicServices: [registerService(WebhookService, createWebhookService(endpoints))],
    consoleServices: [
      registerService(WebhookEndpointService, createEndpointService({ endpoints, workspaces, dispatcher, policy, clock })),
      registerService(DeliveryService, createDeliveryService({ store, endpoints, events, dispatcher })),
    ],
    async ensureIndexes() {
      await endpoints.ensureIndexes();
      await store.ensureIndexes();
    },
    start: () => dispatcher.start(),
    stop: () => dispatcher.stop(),
  };
}

/**
 * The key that encrypts the webhook signing secrets (WEBHOOK_SECRET_KEY).
 *
 * @throws Error when it is missing (the entry point supplies one for the embedded database).
 */
export function requireWebhookSecretKey(key: Buffer | undefined): Buffer {
  if (!key) throw new Error("WEBHOOK_SECRET_KEY must be set: it encrypts the webhook signing secrets (32 bytes, hex or base64)");
  return key;
}
