import type { StoredEvent } from "../src/events/event-bus.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uuidFromName } from "../src/shared/ids.js";
import { deliveryId } from "../src/webhooks/delivery-store.js";
import { createTestService, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Events");
});
afterAll(() => t.close());

describe("event publication (spec §Webhook event envelope)", () => {
  it("serializes the envelope once, with the event id, type, millisecond time and data", async () => {
    const event = await t.service.events.publish({ workspaceId, type: "message.sent", data: { message_id: "msg_1", error: null } });
    expect(event._id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(JSON.parse(event.body)).toEqual({
      id: event._id,
      type: "message.sent",
      created_at: event.created_at.toISOString(),
      data: { message_id: "msg_1", error: null },
    });
    const stored = await t.service.db.collection<StoredEvent>("events").findOne({ _id: event._id });
    expect(stored?.body).toBe(event.body);
  });

  it("publishes an occurrence named by a dedupe key once, however often it is retried", async () => {
    const first = await t.service.events.publish({ workspaceId, type: "message.delivered", data: { n: 1 }, dedupeKey: "report:wamid.X:delivered" });
    const again = await t.service.events.publish({ workspaceId, type: "message.delivered", data: { n: 2 }, dedupeKey: "report:wamid.X:delivered" });
    expect(again._id).toBe(first._id);
    expect(again.body).toBe(first.body);
    expect(await t.service.db.collection<StoredEvent>("events").countDocuments({ _id: first._id })).toBe(1);
    const other = await t.service.events.publish({ workspaceId, type: "message.read", data: {}, dedupeKey: "report:wamid.X:read" });
    expect(other._id).not.toBe(first._id);
  });

  it("an occurrence with its time gets an id that starts with that time: the same on every publish, sorting by it", async () => {
    const messageCreatedAt = new Date("2026-03-01T10:00:00.123Z");
    const publish = (n: number, key: string, at = messageCreatedAt) =>
      t.service.events.publish({ workspaceId, type: "message.sent", data: { n }, dedupeKey: key, dedupeAt: at });
    const first = await publish(1, "status:msg_a:sent");
    const again = await publish(2, "status:msg_a:sent");
    expect(again._id).toBe(first._id);
    expect(again.body).toBe(first.body);
    // Version 8: 48 bits of the time in ms, then bits of a hash of the name.
    expect(first._id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(first._id.replace("-", "").slice(0, 12)).toBe(messageCreatedAt.getTime().toString(16).padStart(12, "0"));
    const delivered = await publish(3, "status:msg_a:delivered");
    expect(delivered._id).not.toBe(first._id);
    expect(delivered._id.slice(0, 13)).toBe(first._id.slice(0, 13));
    const later = await publish(4, "status:msg_b:sent", new Date(messageCreatedAt.getTime() + 1));
    expect([later._id, first._id].sort()).toEqual([first._id, later._id]);
  });

  it("derives stable version-5 UUIDs from names", () => {
    expect(uuidFromName("a")).toBe(uuidFromName("a"));
    expect(uuidFromName("a")).not.toBe(uuidFromName("b"));
    expect(uuidFromName("a")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Stored events' ids derive from these: the namespace and the algorithm never change.
    expect(uuidFromName("a")).toBe("97c0887a-48d2-56de-afb6-3d4254b293e7");
  });

  it("gives new events version-7 ids: their creation time in ms first, so they sort as published, and so do their deliveries", async () => {
    const events = [];
    for (let i = 0; i < 5; i++) {
      events.push(await t.service.events.publish({ workspaceId, type: "message.sent", data: { n: i } }));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    for (const event of events) {
      expect(parseInt(event._id.replace(/-/g, "").slice(0, 12), 16)).toBe(event.created_at.getTime());
    }
    const ids = events.map((e) => e._id);
    expect([...ids].sort()).toEqual(ids);
    const deliveries = events.map((e) => deliveryId(e._id, "whk_1"));
    expect([...deliveries].sort()).toEqual(deliveries);
    expect(deliveries[0]!.slice("dlv_".length, "dlv_".length + 13)).toBe(ids[0]!.slice(0, 13));
    expect(deliveryId(ids[0]!, "whk_1")).toBe(deliveries[0]);
    expect(deliveryId(ids[0]!, "whk_2")).not.toBe(deliveries[0]);
  });
});
