import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uuidFromName } from "../src/shared/ids.js";
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
    expect(event._id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(JSON.parse(event.body)).toEqual({
      id: event._id,
      type: "message.sent",
      created_at: event.created_at.toISOString(),
      data: { message_id: "msg_1", error: null },
    });
    const stored = await t.service.events.collection.findOne({ _id: event._id });
    expect(stored?.body).toBe(event.body);
  });

  it("publishes an occurrence named by a dedupe key once, however often it is retried", async () => {
    const first = await t.service.events.publish({ workspaceId, type: "message.delivered", data: { n: 1 }, dedupeKey: "report:wamid.X:delivered" });
    const again = await t.service.events.publish({ workspaceId, type: "message.delivered", data: { n: 2 }, dedupeKey: "report:wamid.X:delivered" });
    expect(again._id).toBe(first._id);
    expect(again.body).toBe(first.body);
    expect(await t.service.events.collection.countDocuments({ _id: first._id })).toBe(1);
    const other = await t.service.events.publish({ workspaceId, type: "message.read", data: {}, dedupeKey: "report:wamid.X:read" });
    expect(other._id).not.toBe(first._id);
  });

  it("derives stable version-5 UUIDs from names", () => {
    expect(uuidFromName("a")).toBe(uuidFromName("a"));
    expect(uuidFromName("a")).not.toBe(uuidFromName("b"));
    expect(uuidFromName("a")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
