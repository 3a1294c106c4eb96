import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema } from "../gen/google/rpc/error_details_pb.js";
import { CreditService } from "../gen/messaging/console/v1/credits_pb.js";
import { WebhookEndpointService } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { MessageService, MessageStatus } from "../gen/messaging/v1/messages_pb.js";
import type { StoredEvent } from "../src/events/event-bus.js";
import { SIMULATOR_TEST_NUMBERS } from "../src/network/simulator.js";
import { newId } from "../src/shared/ids.js";
import { clientFor, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { answerOk, startReceiver, type Receiver } from "./helpers/receivers.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

/*
 * Scheduled sends (send_at), cancellation (CancelMessage) and validity
 * (ttl_seconds, valid_until), end to end over REST, Connect and gRPC: README
 * "Scheduled sends, cancellation and validity".
 */

let t: TestService;
let receiver: Receiver;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let templateId: string;

beforeAll(async () => {
  t = await createTestService({
    config: {
      ...FAST_MESSAGING,
      logLevel: "error",
      webhookAllowHttpLoopback: true,
      webhookAllowPrivateTargets: true,
      // An outage's retry comes 3 s later: a message with a 1 s validity expires while it waits. The messages sweep
      // runs at start and then every 30 s (the default): within this suite, dispatch finds the message expired.
      dispatchRetryBaseMs: 3000,
      dispatchRetryMaxMs: 3000,
    },
  });
  receiver = await startReceiver(answerOk);
  workspaceId = await t.createWorkspace("Scheduled", 100);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
  senderId = await createSender(t, workspaceId, "4915100000301");
  templateId = await createTemplate(t, workspaceId);
  await t.console(WebhookEndpointService).createWebhookEndpoint({ workspaceId, name: "stops", url: receiver.url, events: ["message.canceled", "message.failed"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const template = { variables: { name: "Ada", code: "1" } };
const body = (to: string, extra: Record<string, unknown> = {}) => ({ to, sender: senderId, template: { id: templateId, variables: template.variables }, ...extra });
const send = (to: string, extra: Record<string, unknown> = {}, secret = key.secret) => rest(t.publicUrl, "POST", "/v1/messages", { key: secret, body: body(to, extra) });
const get = (id: string) => rest(t.publicUrl, "GET", `/v1/messages/${id}`, { key: key.secret });
const cancel = (id: string, secret = key.secret) => rest(t.publicUrl, "POST", `/v1/messages/${id}:cancel`, { key: secret, body: {} });
const balance = async () => Number((await t.console(WorkspaceService).getWorkspace({ id: workspaceId })).workspace!.creditBalance);
const inSeconds = (s: number) => new Date(Date.now() + s * 1000);
const stored = (id: string) => t.service.db.collection("messages").findOne({ _id: id as never });
/** Waits until the message has `status` in the database, then reads it over REST. */
const reach = async (id: string, status: string) => {
  await eventually(async () => ((await stored(id))?.status === status ? true : undefined));
  return (await get(id)).json;
};
/** Waits for the webhook delivery of the event `type` of message `id` to the receiver; its parsed body. */
const delivered = (type: string, id: string) =>
  eventually(async () => receiver.requests.map((r) => JSON.parse(r.body)).find((e) => e.type === type && e.data.message_id === id));
const refundEntry = (id: string) => t.service.db.collection("credit_ledger").findOne({ _id: `refund:${id}` as never });

describe("scheduled sends over REST", () => {
  it("stores a message with send_at as scheduled, not sent before send_at, and sends it within moments of it", async () => {
    const before = await balance();
    const sendAt = inSeconds(2);
    const res = await send("4915123460001", { send_at: sendAt.toISOString() });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: "scheduled", send_at: sendAt.toISOString(), wa_message_id: null, sent_at: null, canceled_at: null });
    // valid_until: send_at plus the default TTL (24 hours).
    expect(res.json.valid_until).toBe(new Date(sendAt.getTime() + 86_400_000).toISOString());
    expect(await balance()).toBe(before - 1);
    const id = res.json.message_id as string;
    expect((await get(id)).json).toMatchObject({ status: "scheduled", send_at: sendAt.toISOString(), valid_until: res.json.valid_until });
    expect(await stored(id)).toMatchObject({ status: "scheduled", due_at: sendAt, lease_owner: null, dispatch: { state: "pending", attempts: 0 } });
    const listed = await rest(t.publicUrl, "GET", "/v1/messages?status=scheduled&to=4915123460001", { key: key.secret });
    expect(listed.json.data.map((m: { message_id: string }) => m.message_id)).toEqual([id]);

    const sent = await reach(id, "read");
    // Handed to the network at send_at, not before, and soon after (a wake-up, not the next claim 5 s later).
    const sentAt = new Date(sent.sent_at).getTime();
    expect(sentAt).toBeGreaterThanOrEqual(sendAt.getTime());
    expect(sentAt - sendAt.getTime()).toBeLessThan(3000);
    expect(sent).toMatchObject({ send_at: sendAt.toISOString(), error: null });
    expect(sent.wa_message_id).toMatch(/^wamid\./);
    expect(await balance()).toBe(before - 1);
  });

  it("refuses a send_at in the past, beyond 30 days or malformed, and a ttl_seconds out of range, naming the field and the rule", async () => {
    const before = await balance();
    const past = await send("4915123460002", { send_at: new Date(Date.now() - 60_000).toISOString() });
    expect(past.status).toBe(400);
    expect(past.json.error).toMatchObject({ code: "invalid_argument", details: { field: "send_at", rule: "must be in the future" } });
    const far = await send("4915123460002", { send_at: inSeconds(31 * 86_400).toISOString() });
    expect(far.status).toBe(400);
    expect(far.json.error.details.field_violations).toEqual([{ field: "send_at", description: "must be at most 30 days (2592000 seconds) ahead" }]);
    const malformed = await send("4915123460002", { send_at: "tomorrow at noon" });
    expect(malformed.status).toBe(400);
    expect(malformed.json.error).toMatchObject({ code: "invalid_argument", details: { field: "send_at" } });
    // Every broken rule at once.
    const several = await send("12", { send_at: new Date(Date.now() - 1000).toISOString(), ttl_seconds: 0 });
    expect(several.status).toBe(400);
    expect(several.json.error.details.field_violations.map((v: { field: string }) => v.field).sort()).toEqual(["send_at", "to", "ttl_seconds"]);
    const tooLong = await send("4915123460002", { ttl_seconds: 2_592_001 });
    expect(tooLong.json.error).toMatchObject({ code: "invalid_argument", details: { field: "ttl_seconds" } });
    expect(await balance()).toBe(before);
  });

  it("cancels a scheduled message: canceled, refunded with a ledger entry, message.canceled delivered", async () => {
    const before = await balance();
    const res = await send("4915123460003", { send_at: inSeconds(600).toISOString() });
    const id = res.json.message_id as string;
    expect(await balance()).toBe(before - 1);
    const canceled = await cancel(id);
    expect(canceled.status).toBe(200);
    expect(canceled.json).toMatchObject({ message_id: id, status: "canceled", wa_message_id: null, sent_at: null });
    expect(canceled.json.canceled_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect((await get(id)).json).toMatchObject({ status: "canceled", canceled_at: canceled.json.canceled_at });
    expect(await balance()).toBe(before);
    expect(await eventually(() => refundEntry(id).then((e) => e ?? undefined))).toMatchObject({ amount: 1, kind: "refund" });
    const ledger = await t.console(CreditService).listCreditLedgerEntries({ workspaceId });
    expect(ledger.data.find((e) => e.id === `refund:${id}`)).toMatchObject({ amount: 1n, messageId: id });
    const event = await delivered("message.canceled", id);
    expect(event.data).toMatchObject({ message_id: id, status: "canceled", wa_message_id: "", error: null });
    // Out of dispatch's queue, and never sent.
    expect(await stored(id)).toMatchObject({ status: "canceled", refund_state: "done", dispatch: { state: "done", attempts: 0 } });
    expect((await stored(id))?.due_at).toBeUndefined();
    // A second cancellation: it is canceled already.
    const again = await cancel(id);
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ code: "failed_precondition" });
    expect(again.json.error.message).toContain("canceled already");
    expect(await balance()).toBe(before);
  });

  it("refuses to cancel a message handed to the network (failed_precondition) and an unknown or foreign one (not_found)", async () => {
    const sent = (await send("4915123460004")).json.message_id as string;
    await reach(sent, "read");
    const refused = await cancel(sent);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: "failed_precondition", details: { message_id: sent, status: "read" } });
    expect(refused.json.error.message).toContain("handed to the network already");
    expect((await stored(sent))?.status).toBe("read");

    const unknown = newId("msg");
    const missing = await cancel(unknown);
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatchObject({ code: "not_found" });

    const otherWorkspace = await t.createWorkspace("Other", 10);
    const otherKey = await t.createKey(otherWorkspace, { scopes: ["messages:send", "messages:read"] });
    const scheduled = (await send("4915123460005", { send_at: inSeconds(600).toISOString() })).json.message_id as string;
    expect((await cancel(scheduled, otherKey.secret)).json.error).toMatchObject({ code: "not_found" });
    expect((await stored(scheduled))?.status).toBe("scheduled");
    // A key without messages:send may not cancel.
    const reader = await t.createKey(workspaceId, { scopes: ["messages:read"] });
    expect((await cancel(scheduled, reader.secret)).status).toBe(403);
    expect((await cancel(scheduled)).json.status).toBe("canceled");
  });

  it("cancels or sends each message canceled at its send_at, never both", async () => {
    const before = await balance();
    const sendAt = inSeconds(1.5);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await send(`491512346101${i}`, { send_at: sendAt.toISOString() })).json.message_id as string);
    expect(await balance()).toBe(before - 8);
    // Cancellations spread around send_at, racing the claim that takes the messages.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, sendAt.getTime() - Date.now() - 40)));
    const answers = await Promise.all(ids.map((id, i) => new Promise((resolve) => setTimeout(resolve, i * 10)).then(() => cancel(id))));
    for (const [i, answer] of answers.entries()) expect([200, 409], `message ${i}: ${answer.text}`).toContain(answer.status);
    const canceled = ids.filter((_, i) => answers[i]!.status === 200);
    const sent = ids.filter((_, i) => answers[i]!.status === 409);
    for (const id of canceled) {
      const m = await stored(id);
      expect(m, id).toMatchObject({ status: "canceled", wa_message_id: null, reports: ["canceled"] });
      expect(m?.sent_at, id).toBeUndefined();
    }
    for (const id of sent) {
      const m = await eventually(async () => ((await stored(id))?.reports?.includes("sent") ? stored(id) : undefined));
      expect(m?.status, id).not.toBe("canceled");
      expect(m?.reports, id).not.toContain("canceled");
      expect(m?.wa_message_id, id).toMatch(/^wamid\./);
    }
    // Exactly the canceled ones are given back.
    await eventually(async () => ((await balance()) === before - sent.length ? true : undefined));
  });

  it("fails a message whose retry is due after its valid_until as expired when dispatch takes it, refunded, with message.failed", async () => {
    const before = await balance();
    // The simulator's outage number: the first attempt meets an outage, and the retry is due after the validity.
    const res = await send(`49151234${SIMULATOR_TEST_NUMBERS.outage}`, { ttl_seconds: 1 });
    expect(res.status).toBe(200);
    const id = res.json.message_id as string;
    expect(new Date(res.json.valid_until).getTime() - new Date(res.json.created_at).getTime()).toBe(1000);
    const failed = await reach(id, "failed");
    expect(failed).toMatchObject({ status: "failed", wa_message_id: null, sent_at: null, error: { code: 0, reason: "expired" } });
    expect(failed.error.title).toContain("valid_until");
    expect(new Date(failed.failed_at).getTime()).toBeGreaterThanOrEqual(new Date(failed.valid_until).getTime());
    await eventually(() => refundEntry(id).then((e) => e ?? undefined));
    expect(await balance()).toBe(before);
    const event = await delivered("message.failed", id);
    expect(event.data).toMatchObject({ message_id: id, status: "failed", error: { code: 0, reason: "expired" } });
    // Tried once, never again: dispatch took the retry, found it expired and did not call the network.
    expect(await stored(id)).toMatchObject({ dispatch: { state: "done", attempts: 1, last_error: { code: 0, reason: "expired" } } });
    expect((await stored(id))?.due_at).toBeUndefined();
  });

  it("the messages sweep fails a message waiting past its valid_until before dispatch takes it again", async () => {
    // Its own service: the sweep every 300 ms, an outage's retry 4 s later.
    const swept = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", dispatchRetryBaseMs: 4000, dispatchRetryMaxMs: 4000, messagesSweepIntervalMs: 300 } });
    try {
      const ws = await swept.createWorkspace("Swept", 5);
      const k = await swept.createKey(ws, { scopes: ["messages:send", "messages:read"] });
      const sender = await createSender(swept, ws, "4915100000302");
      const tpl = await createTemplate(swept, ws);
      const res = await rest(swept.publicUrl, "POST", "/v1/messages", {
        key: k.secret,
        body: { to: `49151234${SIMULATOR_TEST_NUMBERS.outage}`, sender, template: { id: tpl, variables: template.variables }, ttl_seconds: 1 },
      });
      const id = res.json.message_id as string;
      const messages = swept.service.db.collection("messages");
      const failed = await eventually(async () => {
        const m = await messages.findOne({ _id: id as never });
        return m?.status === "failed" ? m : undefined;
      });
      // Failed by the sweep: dispatch's last attempt met the outage and was never retried.
      expect(failed).toMatchObject({ error: { code: 0, reason: "expired" }, dispatch: { state: "done", attempts: 1, last_error: { code: 131016 } } });
      expect(failed.due_at).toBeUndefined();
      await eventually(async () => ((await messages.findOne({ _id: id as never }))?.refund_state === "done" ? true : undefined));
      expect(Number((await swept.console(WorkspaceService).getWorkspace({ id: ws })).workspace!.creditBalance)).toBe(5);
      expect(await swept.service.db.collection<StoredEvent>("events").findOne({ type: "message.failed", "data.message_id": id })).toBeTruthy();
    } finally {
      await swept.close();
    }
  });

  it("a batch item's send_at refuses the batch, naming the item; an item's ttl_seconds is taken", async () => {
    const res = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: key.secret, body: { messages: [body("4915123460006", { send_at: inSeconds(60).toISOString() })] } });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_argument", details: { field: "messages[0].send_at" } });
    const withTtl = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: key.secret, body: { messages: [body("4915123460006", { ttl_seconds: 60 })] } });
    expect(withTtl.json.accepted_count).toBe(1);
    const message = withTtl.json.results[0].message;
    expect(new Date(message.valid_until).getTime() - new Date(message.created_at).getTime()).toBe(60_000);
    expect(message).toMatchObject({ status: "accepted", send_at: null });
  });
});

describe("scheduled sends over Connect and gRPC", () => {
  it("schedules and cancels over Connect; the message reads back with send_at and valid_until", async () => {
    const client = clientFor(MessageService, "connect-json", t.publicUrl, key.secret);
    const before = await balance();
    const sendAt = inSeconds(300);
    const { message } = await client.sendMessage({ to: "4915123460007", sender: senderId, template: { id: templateId, variables: template.variables }, sendAt: timestampFromDate(sendAt), ttlSeconds: 60 });
    expect(message?.status).toBe(MessageStatus.SCHEDULED);
    expect(timestampDate(message!.sendAt!)).toEqual(sendAt);
    expect(timestampDate(message!.validUntil!)).toEqual(new Date(sendAt.getTime() + 60_000));
    const read = await client.getMessage({ id: message!.messageId });
    expect(read.message?.status).toBe(MessageStatus.SCHEDULED);
    const canceled = await client.cancelMessage({ id: message!.messageId });
    expect(canceled.message?.status).toBe(MessageStatus.CANCELED);
    expect(canceled.message?.canceledAt).toBeDefined();
    expect(await balance()).toBe(before);
    await delivered("message.canceled", message!.messageId);
    const again = await client.cancelMessage({ id: message!.messageId }).catch((err: unknown) => err);
    expect(again).toBeInstanceOf(ConnectError);
    expect((again as ConnectError).code).toBe(Code.FailedPrecondition);
    const unknown = await client.cancelMessage({ id: newId("msg") }).catch((err: unknown) => err);
    expect((unknown as ConnectError).code).toBe(Code.NotFound);
  });

  it("refuses a past send_at over gRPC with a field violation of send_at", async () => {
    const client = clientFor(MessageService, "grpc", t.publicUrl, key.secret);
    const err = await client
      .sendMessage({ to: "4915123460008", sender: senderId, template: { id: templateId, variables: template.variables }, sendAt: timestampFromDate(new Date(Date.now() - 5000)) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    const [badRequest] = (err as ConnectError).findDetails(BadRequestSchema);
    expect(badRequest?.fieldViolations.map((v) => `${v.field}: ${v.description}`)).toEqual(["send_at: must be in the future"]);
  });

  it("counts scheduled and canceled messages in the console's stats", async () => {
    const events = await t.service.db.collection<StoredEvent>("events").countDocuments({ workspace_id: workspaceId, type: "message.canceled" });
    expect(events).toBeGreaterThanOrEqual(3);
    const stats = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/message_stats`, { key: "test-console-token-0123456789" });
    expect(stats.json.by_status.canceled).toBeGreaterThanOrEqual(3);
  });
});
