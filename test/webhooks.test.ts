import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryService } from "../gen/messaging/console/v1/deliveries_pb.js";
import { WebhookEndpointService } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { verifyWebhookSignature } from "../src/webhooks/signature.js";
import { rest } from "./helpers/clients.js";
import { startReceiver, type Receiver } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await createTestService({
    config: {
      webhookAllowHttpLoopback: true,
      webhookAllowPrivateTargets: true,
      webhookRetrySchedule: [0, 100, 100, 100, 100, 100, 100],
      webhookAttemptTimeoutMs: 1000,
      webhookLeaseMs: 3000,
      jobPollIntervalMs: 100,
      webhookSweepIntervalMs: 200,
    },
  });
});
afterAll(async () => {
  await t.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

const messageData = (n: number) => ({
  message_id: `msg_00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  to: "4915112345678",
  status: "delivered",
  wa_message_id: `wamid.${n}`,
  occurred_at: "2026-01-31T12:00:00.000Z",
  error: null,
});

describe("signed deliveries", () => {
  it("delivers an event to a selecting endpoint, signed as the spec says", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const { webhookEndpoint, secret } = await t.console(WebhookEndpointService).createWebhookEndpoint({
      workspaceId: ws,
      name: "orders",
      url: rcv.url,
      events: ["message.delivered"],
    });
    const event = await t.service.events.publish({ workspaceId: ws, type: "message.delivered", data: messageData(1) });
    const got = await eventually(async () => rcv.requests[0]);
    expect(got.body).toBe(event.body);
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["service-event"]).toBe("message.delivered");
    expect(got.headers["service-delivery"]).toBe(event._id);
    expect(got.headers["user-agent"]).toMatch(/^messaging-service-webhooks\//);
    const header = got.headers["service-signature"] as string;
    expect(verifyWebhookSignature(got.body, header, secret)).toBe(true);
    const [, t0, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
    expect(v1).toBe(createHmac("sha256", secret).update(`${t0}.${got.body}`).digest("hex"));

    const deliveries = await eventually(async () => {
      const res = await t.console(DeliveryService).listDeliveries({ endpointId: webhookEndpoint!.id });
      return res.data[0]?.attemptCount === 1 ? res : undefined;
    });
    expect(deliveries.total).toBe(1);
    console.log(JSON.stringify(deliveries.data[0]));
  });
});
