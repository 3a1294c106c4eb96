import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MongoClient, type Db } from "mongodb";
import { createRateLimiter } from "../src/ratelimit/rate-limiter.js";
import { Throttle } from "../src/ratelimit/throttle.js";
import { systemClock } from "../src/shared/clock.js";
import { createLogger } from "../src/shared/logger.js";
import { Attempts } from "../src/webhooks/attempt.js";
import { createDeliveryStore, deliveryId, type DeliveryRecord, type DeliveryStore } from "../src/webhooks/delivery-store.js";
import { EndpointCache } from "../src/webhooks/endpoint-cache.js";
import { createEndpointStore, type EndpointStore } from "../src/webhooks/endpoint-store.js";
import { createWebhookSender } from "../src/webhooks/http-sender.js";
import { RetrySchedule } from "../src/webhooks/schedule.js";

/*
 * An endpoint enabled or deleted while one of its deliveries is being
 * released as `disabled` (spec §States and transitions: a disabled
 * endpoint's deliveries wait and go out when it is enabled; a deleted one's
 * end). Enabling writes `enabled` and then resumes the endpoint's `disabled`
 * deliveries; an attempt that read the endpoint disabled just before may
 * write its delivery `disabled` just after that resume (the same with a
 * delete and its cancel). The interleaving is forced here: the real stores on
 * the run's database, the console's change run right before the release's
 * write.
 */

const logger = createLogger("silent");
const secretKey = randomBytes(32);
let client: MongoClient;
let db: Db;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(`test_enable_race_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

/**
 * An attempt of a delivery held by a lease, to an endpoint disabled before it began, run over the real stores with
 * `before` (the console's change, handed the endpoint's id and the stores) right before the release's write; the
 * delivery as stored after, and the times the claims were woken for.
 */
async function releaseRacing(before: (endpointId: string, store: DeliveryStore, endpoints: EndpointStore) => Promise<void>): Promise<{ stored: DeliveryRecord | null; woken: Date[] }> {
  const endpoints = createEndpointStore(db, systemClock, secretKey);
  const store = createDeliveryStore(db);
  const { record: endpoint } = await endpoints.create({ workspaceId: "ws_race", name: "race", url: "http://127.0.0.1:9/", events: ["message.delivered"], rateLimit: null });
  await endpoints.disable(endpoint._id, "by hand");
  const lease = `process-a:${randomUUID()}`;
  const delivery = leasedDelivery(endpoint._id, lease);
  await store.insert([delivery]);
  const woken: Date[] = [];
  const racing: DeliveryStore = {
    ...store,
    async endWithoutAttempt(id, lease, status, now) {
      await before(endpoint._id, store, endpoints);
      return store.endWithoutAttempt(id, lease, status, now);
    },
  };
  const attempts = new Attempts({
    store: racing,
    endpoints,
    cache: new EndpointCache(endpoints, secretKey),
    sender: createWebhookSender({ timeoutMs: 1000, policy: { allowPrivateTargets: true, allowHttpLoopback: true }, clock: systemClock }),
    schedule: new RetrySchedule([0, 100]),
    throttle: new Throttle({ limiter: createRateLimiter(db, systemClock), clock: systemClock, holdMs: 500 }),
    clock: systemClock,
    logger,
    leaseMs: 3000,
    dueAt: (at) => woken.push(at),
  });
  await attempts.run({ delivery, body: "{}", number: 1, lease });
  return { stored: await store.get(delivery._id), woken };
}

/** A delivery of a new event to `endpointId`, pending and held by `lease` (its first attempt begins). */
function leasedDelivery(endpointId: string, lease: string): DeliveryRecord {
  const now = new Date();
  const eventId = `evt_${randomUUID()}`;
  return {
    _id: deliveryId(eventId, endpointId),
    workspace_id: "ws_race",
    endpoint_id: endpointId,
    event_id: eventId,
    event_type: "message.delivered",
    created_at: now,
    status: "pending",
    automatic_attempts: 0,
    attempt_count: 0,
    manual_attempts: 0,
    last_attempt_at: null,
    last_http_status: null,
    last_error_kind: null,
    updated_at: now,
    due_at: new Date(now.getTime() + 3000),
    lease_owner: lease,
    leased_at: now,
  };
}

describe("a delivery released as disabled while its endpoint is enabled", () => {
  it("is pending and due again, not left waiting for an endpoint that is already enabled", async () => {
    // What the console's enable does (src/webhooks/endpoint-service.ts, Dispatcher.resume), between the attempt's read and its write.
    let enabledAt: Date | undefined;
    const { stored, woken } = await releaseRacing(async (endpointId, store, endpoints) => {
      await endpoints.enable(endpointId);
      enabledAt = new Date();
      await store.resumeEndpoint(endpointId, enabledAt);
    });

    expect(enabledAt).toBeDefined();
    expect(stored).toMatchObject({ status: "pending", lease_owner: null });
    expect(stored?.due_at?.getTime()).toBeGreaterThanOrEqual((enabledAt as Date).getTime());
    expect(stored?.due_at?.getTime()).toBeLessThanOrEqual(Date.now());
    // The claims are woken for it at once.
    expect(woken).toHaveLength(1);
  });

  it("is canceled when its endpoint is deleted meanwhile, not left waiting for an endpoint that is gone", async () => {
    // What the console's delete does (Dispatcher.cancel), between the attempt's read and its write: the cancel ends
    // the lease too, so the release's write finds nothing to change.
    const { stored, woken } = await releaseRacing(async (endpointId, store, endpoints) => {
      await endpoints.delete(endpointId);
      await store.cancelEndpoint(endpointId, new Date());
    });
    expect(stored).toMatchObject({ status: "canceled", lease_owner: null });
    expect(stored?.due_at).toBeUndefined();
    expect(woken).toHaveLength(0);
  });

  it("stays disabled, and nothing is woken, while its endpoint stays disabled", async () => {
    const { stored, woken } = await releaseRacing(async () => {});
    expect(stored).toMatchObject({ status: "disabled", lease_owner: null });
    expect(stored?.due_at).toBeUndefined();
    expect(woken).toHaveLength(0);
  });
});
