import type { StoredEvent } from "../src/events/event-bus.js";
import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { MessageService, MessageStatus } from "../gen/messaging/v1/messages_pb.js";
import { SimulatorService } from "../gen/messaging/console/v1/simulator_pb.js";
import { CreditService } from "../gen/messaging/console/v1/credits_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { MessageStatsService } from "../gen/messaging/console/v1/message_stats_pb.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";
import { fingerprintOf } from "../src/messages/idempotency.js";
import { newId } from "../src/shared/ids.js";

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let templateId: string;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", databaseCommandMetrics: true } });
  workspaceId = await t.createWorkspace("Messages", 100);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read", "senders:read", "templates:read"] });
  senderId = await createSender(t, workspaceId);
  templateId = await createTemplate(t, workspaceId, { examples: { name: "Ada" } });
});
afterAll(() => t.close());

const send = (to: string, variables: Record<string, string> = { name: "Ada", code: "123456" }, headers: Record<string, string> = {}, secret = key.secret) =>
  rest(t.publicUrl, "POST", "/v1/messages", { key: secret, body: { to, sender: senderId, template: { id: templateId, variables } }, headers });
const get = (id: string, secret = key.secret) => rest(t.publicUrl, "GET", `/v1/messages/${id}`, { key: secret });
const balance = async () => Number((await t.console(WorkspaceService).getWorkspace({ id: workspaceId })).workspace!.creditBalance);
const eventsOf = (messageId: string) => t.service.db.collection<StoredEvent>("events").find({ "data.message_id": messageId }).sort({ "data.occurred_at": 1 }).toArray();
/** Waits (polling the database, not spending the key's rate budget) until the message has `status`, then reads it over REST. */
const reach = async (id: string, status: string) => {
  await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: id as never, status })) ? true : undefined));
  return (await get(id)).json;
};

describe("senders and templates over the public API", () => {
  it("lists the workspace's senders and templates with the variables each needs", async () => {
    const senders = await rest(t.publicUrl, "GET", "/v1/senders", { key: key.secret });
    expect(senders.status).toBe(200);
    expect(senders.json).toMatchObject({ object: "list", total: 1, next_page_token: null });
    expect(senders.json.data[0]).toMatchObject({ id: senderId, object: "sender", phone_number: "4915100000001", name: "Support", status: "active" });
    const templates = await rest(t.publicUrl, "GET", "/v1/templates?page_size=1", { key: key.secret });
    expect(templates.json.data[0]).toMatchObject({
      id: templateId,
      object: "template",
      name: "verification_code",
      language: "en",
      status: "active",
      body: "Hello {{name}}, your code is {{code}}",
      variables: [
        { name: "name", required: true, example: "Ada" },
        { name: "code", required: true, example: "" },
      ],
      flow: null,
    });
  });
});

describe("POST /v1/messages over REST", () => {
  it("accepts a message, spends one credit, and its status moves to sent, delivered and read", async () => {
    const before = await balance();
    const res = await send("4915123450001");
    expect(res.status).toBe(200);
    const message = res.json;
    expect(message).toMatchObject({
      object: "message",
      to: "4915123450001",
      sender: senderId,
      template_id: templateId,
      flow_token: null,
      status: "accepted",
      wa_message_id: null,
      error: null,
      credits: 1,
      sent_at: null,
      delivered_at: null,
      read_at: null,
      failed_at: null,
    });
    expect(message.message_id).toMatch(/^msg_[0-9a-f-]{36}$/);
    expect(await balance()).toBe(before - 1);
    const read = await reach(message.message_id, "read");
    expect(read.wa_message_id).toMatch(/^wamid\./);
    for (const field of ["sent_at", "delivered_at", "read_at"]) expect(read[field]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const events = await eventually(async () => {
      const found = await eventsOf(message.message_id);
      return found.length === 3 ? found : undefined;
    });
    expect(events.map((e) => e.type).sort()).toEqual(["message.delivered", "message.read", "message.sent"]);
    // Read once every report is applied (on a busy machine read may be applied before delivered).
    const settled = (await get(message.message_id)).json;
    const delivered = events.find((e) => e.type === "message.delivered")!;
    expect(delivered.workspace_id).toBe(workspaceId);
    expect(JSON.parse(delivered.body)).toEqual({
      id: delivered._id,
      type: "message.delivered",
      created_at: delivered.created_at.toISOString(),
      data: {
        message_id: message.message_id,
        to: "4915123450001",
        status: "delivered",
        wa_message_id: read.wa_message_id,
        occurred_at: settled.delivered_at,
        error: null,
        from: null,
        text: null,
        reply_to_message_id: null,
      },
    });
    const ledger = await t.console(CreditService).listCreditLedgerEntries({ workspaceId });
    expect(ledger.data.find((e) => e.messageId === message.message_id)).toMatchObject({ id: `spend:${message.message_id}`, amount: -1n });
  });

  it("writes a send with 3 commands (debit, message, ledger entry); its pending spend is cleared by the next debit", async () => {
    await send("4915123450002"); // the key's rate window is leased
    await new Promise((resolve) => setTimeout(resolve, 1500)); // earlier sends' pending spends are cleared
    const commands: { name: string; collection: unknown; command: Record<string, unknown> }[] = [];
    const onCommand = (event: { commandName: string; command: Record<string, unknown> }) => {
      const collection = event.command[event.commandName];
      if (["workspaces", "messages", "credit_ledger"].includes(collection as string)) commands.push({ name: event.commandName, collection, command: event.command });
    };
    t.service.client.on("commandStarted", onCommand);
    try {
      const first = (await send("4915123450003")).json.message_id as string;
      await eventually(async () => ((await t.service.db.collection("credit_ledger").findOne({ _id: `spend:${first}` as never })) ? true : undefined));
      // Its writes (dispatch's updates of the message apart): no update of the workspace to clear the spend.
      const writes = commands.filter((c) => ["findAndModify", "insert", "update", "delete"].includes(c.name) && !(c.name === "update" && c.collection === "messages"));
      expect(writes.map((c) => `${c.name} ${c.collection}`)).toEqual(["findAndModify workspaces", "insert messages", "insert credit_ledger"]);
      commands.length = 0;
      const second = (await send("4915123450004")).json.message_id as string;
      const debit = commands.find((c) => c.name === "findAndModify" && c.collection === "workspaces");
      expect(debit?.command.update).toMatchObject({ $set: { [`credit_ops.spend:${second}`]: { kind: "spend", amount: -1 } }, $unset: { [`credit_ops.spend:${first}`]: "" } });
      // Nothing follows the second within a second: its clear is written alone then.
      await eventually(async () => {
        const ws = await t.service.db.collection("workspaces").findOne({ _id: workspaceId as never });
        return Object.keys(ws?.credit_ops ?? {}).length === 0 ? true : undefined;
      });
      expect(await t.service.db.collection("credit_ledger").countDocuments({ _id: { $in: [`spend:${first}`, `spend:${second}`] } as never })).toBe(2);
    } finally {
      t.service.client.off("commandStarted", onCommand);
    }
  });

  it("keeps read when a late delivered arrives, and ignores the simulator's repeated sent report", async () => {
    const res = await send("4915123459994"); // simulator: read reported before delivered
    await reach(res.json.message_id, "read");
    const events = await eventually(async () => {
      const found = await eventsOf(res.json.message_id);
      return found.length === 3 ? found : undefined;
    });
    // The late delivered still fires (receivers order by occurred_at) but never moves the status back.
    const read = (await get(res.json.message_id)).json;
    expect(read.status).toBe("read");
    expect(Date.parse(read.delivered_at)).toBeLessThan(Date.parse(read.read_at));
    expect(events.filter((e) => e.type === "message.sent")).toHaveLength(1);
    // Dispatch and the simulator both report "sent": applied once, the second counted as a duplicate.
    const stored = await eventually(async () => {
      const m = await t.service.db.collection("messages").findOne({ _id: res.json.message_id });
      return m?.duplicate_reports === 1 ? m : undefined;
    });
    expect([...stored.reports].sort()).toEqual(["delivered", "read", "sent"]);
    expect(stored.events_pending ?? []).toEqual([]);
    // Whichever "sent" came first, dispatch's outcome is recorded (else the sweep would fail it as interrupted).
    expect(stored.dispatch).toMatchObject({ state: "done", attempts: 1 });
    expect(stored.wa_message_id).toBe(read.wa_message_id);
  });

  it("writes a late report's update for that report only, not for the in-order reports applied with it", async () => {
    const updates: { q: Record<string, unknown>; u: Record<string, unknown> }[] = [];
    const onCommand = (event: { commandName: string; command: Record<string, unknown> }) => {
      if (event.commandName === "update" && event.command.update === "messages") updates.push(...(event.command.updates as typeof updates));
    };
    t.service.client.on("commandStarted", onCommand);
    // Sent together, their reports come together: the late delivered of the one whose read comes first (9994)
    // arrives with the others' reads.
    const sent = await Promise.all(["4915123459994", "4915123458101", "4915123458102", "4915123458103", "4915123458104"].map((to) => send(to)));
    const ids = sent.map((res) => res.json.message_id as string);
    for (const id of ids) await reach(id, "read");
    await eventually(async () => ((await eventsOf(ids[0]!)).length === 3 ? true : undefined));
    t.service.client.off("commandStarted", onCommand);
    // A late update: a status report's update without the status condition (times, the report, its event mark).
    const late = updates.filter((op) => ids.includes(op.q._id as string) && !("status" in op.q) && ["delivered", "read"].includes((op.q.reports as { $ne?: string })?.$ne ?? ""));
    expect(late.map((op) => [op.q._id, (op.q.reports as { $ne: string }).$ne])).toEqual([[ids[0], "delivered"]]);
    const stored = await t.service.db.collection("messages").findOne({ _id: ids[0] as never });
    expect([...stored!.reports].sort()).toEqual(["delivered", "read", "sent"]);
    expect(stored!.status).toBe("read");
    expect((stored!.delivered_at as Date).getTime()).toBeLessThan((stored!.read_at as Date).getTime());
  });

  it("ignores reports that arrive twice", async () => {
    // Every update of messages written meanwhile, to count the message's follow-ups (marks cleared, repeats counted).
    const updates: { q: Record<string, unknown>; u: Record<string, unknown> }[] = [];
    const onCommand = (event: { commandName: string; command: Record<string, unknown> }) => {
      if (event.commandName === "update" && event.command.update === "messages") updates.push(...(event.command.updates as typeof updates));
    };
    t.service.client.on("commandStarted", onCommand);
    const res = await send("4915123459995"); // simulator: every report twice
    await reach(res.json.message_id, "read");
    // Each of the three reports came twice, and "sent" a third time from dispatch itself: four duplicates.
    const stored = await eventually(async () => {
      const m = await t.service.db.collection("messages").findOne({ _id: res.json.message_id });
      return m?.duplicate_reports === 4 ? m : undefined;
    });
    expect([...stored.reports].sort()).toEqual(["delivered", "read", "sent"]);
    expect(stored.status).toBe("read");
    expect((await eventsOf(res.json.message_id)).map((e) => e.type).sort()).toEqual(["message.delivered", "message.read", "message.sent"]);
    await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: res.json.message_id }))?.events_pending?.length === 0 ? true : undefined));
    t.service.client.off("commandStarted", onCommand);
    // Three marks cleared and four repeats counted, all within a second (FOLLOW_UP_DELAY_MS): merged into one
    // update (two if the machine stalled across the second), not seven.
    const followUps = updates.filter((op) => op.q._id === res.json.message_id && Object.keys(op.q).length === 1);
    expect(followUps.length).toBeGreaterThanOrEqual(1);
    expect(followUps.length).toBeLessThanOrEqual(2);
    const cleared = followUps.flatMap((op) => (op.u as { $pull?: { events_pending: { $in: string[] } } }).$pull?.events_pending.$in ?? []);
    const counted = followUps.reduce((sum, op) => sum + ((op.u as { $inc?: { duplicate_reports: number } }).$inc?.duplicate_reports ?? 0), 0);
    expect(cleared.sort()).toEqual(["delivered", "read", "sent"]);
    expect(counted).toBe(4);
  });

  it("stops at delivered when the recipient has read receipts off", async () => {
    const res = await send("4915123459992");
    const delivered = await reach(res.json.message_id, "delivered");
    expect(delivered.read_at).toBeNull();
  });

  it("fails a message the network refuses, with its code and title, and refunds it", async () => {
    const before = await balance();
    const res = await send("4915123459990");
    expect(res.json.status).toBe("accepted");
    const failed = await reach(res.json.message_id, "failed");
    expect(failed.error).toEqual({ code: 131026, title: "Message undeliverable", reason: null });
    expect(failed.failed_at).not.toBeNull();
    expect(failed.wa_message_id).toBeNull();
    await eventually(async () => ((await balance()) === before ? true : undefined));
    const [event] = await eventually(async () => {
      const found = await eventsOf(res.json.message_id);
      return found.length > 0 ? found : undefined;
    });
    expect(event!.type).toBe("message.failed");
    expect(event!.data).toMatchObject({ status: "failed", error: { code: 131026, title: "Message undeliverable" } });
    const ledger = await t.console(CreditService).listCreditLedgerEntries({ workspaceId });
    expect(ledger.data.filter((e) => e.messageId === res.json.message_id).map((e) => [e.id.split(":")[0], e.amount])).toEqual([
      ["refund", 1n],
      ["spend", -1n],
    ]);
  });

  it("refunds a message that fails after it was sent", async () => {
    const before = await balance();
    const res = await send("4915123459991");
    const failed = await reach(res.json.message_id, "failed");
    expect(failed.error.code).toBe(131049);
    expect(failed.sent_at).not.toBeNull();
    await eventually(async () => ((await balance()) === before ? true : undefined));
  });

  it("retries a network outage with backoff, then sends", async () => {
    const res = await send("4915123459993"); // simulator: two outages first
    const read = await reach(res.json.message_id, "read");
    const stored = await t.service.db.collection("messages").findOne({ _id: res.json.message_id });
    expect(stored!.dispatch).toMatchObject({ state: "done", attempts: 3 });
    expect(read.error).toBeNull();
  });

  it("records a simulated reply as an inbound message and fires message.received", async () => {
    const res = await send("4915123450002");
    const sent = await reach(res.json.message_id, "read");
    const reply = await t.console(SimulatorService).simulateReply({ messageId: res.json.message_id, text: "Thanks!" });
    expect(reply.messageId).toMatch(/^msg_/);
    const [event] = await eventsOf(reply.messageId);
    expect(event!.type).toBe("message.received");
    expect(event!.data).toMatchObject({
      message_id: reply.messageId,
      to: "4915100000001",
      from: "4915123450002",
      status: "received",
      text: "Thanks!",
      wa_message_id: reply.waMessageId,
      reply_to_message_id: sent.message_id,
      error: null,
    });
    // Inbound messages are not listed as the key's messages.
    expect((await get(reply.messageId)).status).toBe(404);
  });
});

describe("reading messages back", () => {
  it("shows a message only to the key that sent it", async () => {
    const res = await send("4915123450003");
    const other = await t.createKey(workspaceId, { scopes: ["messages:read"] });
    const refused = await get(res.json.message_id, other.secret);
    expect(refused.status).toBe(404);
    expect(refused.json.error.code).toBe("not_found");
    const err = await clientFor(MessageService, "grpc", t.publicUrl, other.secret)
      .getMessage({ id: res.json.message_id })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect((await rest(t.publicUrl, "GET", "/v1/messages", { key: other.secret })).json.total).toBe(0);
  });

  it("lists the key's messages newest first, filtered by status and recipient, with pagination", async () => {
    const lister = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
    const ids: string[] = [];
    for (const to of ["4915123451001", "4915123451002", "4915123451001"]) ids.push((await send(to, undefined, {}, lister.secret)).json.message_id);
    const all = await rest(t.publicUrl, "GET", "/v1/messages?page_size=2", { key: lister.secret });
    expect(all.json.total).toBe(3);
    expect(all.json.data.map((m: { message_id: string }) => m.message_id)).toEqual([ids[2], ids[1]]);
    const next = await rest(t.publicUrl, "GET", `/v1/messages?page_size=2&page_token=${all.json.next_page_token}`, { key: lister.secret });
    expect(next.json.data.map((m: { message_id: string }) => m.message_id)).toEqual([ids[0]]);
    expect(next.json.next_page_token).toBeNull();
    const byTo = await rest(t.publicUrl, "GET", "/v1/messages?to=4915123451001", { key: lister.secret });
    expect(byTo.json.data.map((m: { message_id: string }) => m.message_id)).toEqual([ids[2], ids[0]]);
    for (const id of ids) await reach(id, "read");
    const read = await rest(t.publicUrl, "GET", "/v1/messages?status=read", { key: lister.secret });
    expect(read.json.total).toBe(3);
    expect((await rest(t.publicUrl, "GET", "/v1/messages?status=failed", { key: lister.secret })).json.total).toBe(0);
    const bad = await rest(t.publicUrl, "GET", "/v1/messages?status=lost&to=12", { key: lister.secret });
    expect(bad.status).toBe(400);
  });
});

describe("gRPC", () => {
  it("sends and reads back over gRPC (Connect client and @grpc/grpc-js)", async () => {
    const client = clientFor(MessageService, "grpc", t.publicUrl, key.secret);
    const { message } = await client.sendMessage({ to: "4915123452001", sender: senderId, template: { id: templateId, variables: { name: "Bo", code: "42" } } });
    expect(message?.status).toBe(MessageStatus.ACCEPTED);
    await reach(message!.messageId, "read");
    const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, MessageService.method.getMessage, { id: message!.messageId }, {
      authorization: `Bearer ${key.secret}`,
    });
    expect(answer.response?.message?.status).toBe(MessageStatus.READ);
    expect(answer.response?.message?.readAt).toBeDefined();
  });
});

describe("Idempotency-Key", () => {
  it("returns the original message for a retry, without spending again, over REST and gRPC", async () => {
    const before = await balance();
    const first = await send("4915123453001", undefined, { "idempotency-key": "order-1" });
    const again = await send("4915123453001", undefined, { "idempotency-key": "order-1" });
    expect(again.status).toBe(200);
    expect(again.json.message_id).toBe(first.json.message_id);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const viaGrpc = await grpcJsCall(
      `127.0.0.1:${t.service.publicPort}`,
      MessageService.method.sendMessage,
      { to: "4915123453001", sender: senderId, template: { id: templateId, variables: { code: "123456", name: "Ada" } } },
      { authorization: `Bearer ${key.secret}`, "idempotency-key": "order-1" },
    );
    expect(viaGrpc.response?.message?.messageId).toBe(first.json.message_id);
    expect(await balance()).toBe(before - 1);
  });

  it("refuses the same key with another body with 409 conflict, and scopes keys to the API key", async () => {
    await send("4915123453002", undefined, { "idempotency-key": "order-2" });
    const conflict = await send("4915123453003", undefined, { "idempotency-key": "order-2" });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toMatchObject({ code: "conflict", message: "This Idempotency-Key was already used with a different request body" });
    const grpcConflict = await grpcJsCall(
      `127.0.0.1:${t.service.publicPort}`,
      MessageService.method.sendMessage,
      { to: "4915123453003", sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "1" } } },
      { authorization: `Bearer ${key.secret}`, "idempotency-key": "order-2" },
    );
    expect(grpcConflict.error?.code).toBe(6); // ALREADY_EXISTS
    const otherKey = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    const fresh = await send("4915123453003", undefined, { "idempotency-key": "order-2" }, otherKey.secret);
    expect(fresh.status).toBe(200);
  });
});

describe("the console's message stats", () => {
  it("count every message once, in one status, while their statuses change", async () => {
    const ws = await t.createWorkspace("Stats", 100);
    const wsKey = await t.createKey(ws, { scopes: ["messages:send"] });
    const wsSender = await createSender(t, ws);
    const wsTemplate = await createTemplate(t, ws);
    const sends = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        rest(t.publicUrl, "POST", "/v1/messages", { key: wsKey.secret, body: { to: `49151234${String(6000 + i)}`, sender: wsSender, template: { id: wsTemplate, variables: { name: "Ada", code: "1" } } } }),
      ),
    );
    expect(sends.every((r) => r.status === 200)).toBe(true);
    // Reports arrive meanwhile (sent, delivered, read within 80 ms of each send): each answer adds up to 30.
    for (let i = 0; i < 15; i++) {
      const stats = await t.console(MessageStatsService).getMessageStats({ workspaceId: ws });
      expect(stats.total).toBe(30);
      expect(Object.values(stats.byStatus).reduce((a, b) => a + b, 0)).toBe(30);
      expect(stats.recent).toBe(30);
    }
    await eventually(async () => ((await t.console(MessageStatsService).getMessageStats({ workspaceId: ws })).byStatus.read === 30 ? true : undefined));
  });
});

describe("a refund left pending by a crash after the message recorded it", () => {
  it("is cleared by the sweep without paying it again, its ledger entry written once", async () => {
    const swept = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", messagesSweepIntervalMs: 300, recoveryAgeMs: 1000 } });
    try {
      const ws = await swept.createWorkspace("Refund crash", 5);
      const key = await swept.createKey(ws, { scopes: ["messages:send"] });
      const sender = await createSender(swept, ws);
      const template = await createTemplate(swept, ws);
      // 9990: the network refuses the send, the message fails and is refunded.
      const sent = await rest(swept.publicUrl, "POST", "/v1/messages", { key: key.secret, body: { to: "4915123459990", sender, template: { id: template, variables: { name: "Ada", code: "1" } } } });
      expect(sent.status).toBe(200);
      const id = sent.json.message_id as string;
      const messages = swept.service.db.collection<{ _id: string; refund_state: string }>("messages");
      await eventually(async () => ((await messages.findOne({ _id: id, refund_state: "done" })) ? true : undefined));
      const workspaces = swept.service.db.collection<{ _id: string; credit_balance: number; credit_ops?: Record<string, unknown> }>("workspaces");
      await eventually(async () => (Object.keys((await workspaces.findOne({ _id: ws }))?.credit_ops ?? {}).length === 0 ? true : undefined));
      const balance = (await workspaces.findOne({ _id: ws }))!.credit_balance;
      expect(balance).toBe(5);
      // What a process killed between recording the refund on the message and clearing its mark leaves behind.
      await workspaces.updateOne({ _id: ws }, { $set: { [`credit_ops.refund:${id}`]: { kind: "refund", amount: 1, message_id: id, note: null, at: new Date(Date.now() - 60_000) } } });
      await eventually(async () => (Object.keys((await workspaces.findOne({ _id: ws }))?.credit_ops ?? {}).length === 0 ? true : undefined), 15_000);
      expect((await workspaces.findOne({ _id: ws }))!.credit_balance).toBe(balance);
      expect(await swept.service.db.collection("credit_ledger").countDocuments({ _id: `refund:${id}` as never })).toBe(1);
    } finally {
      await swept.close();
    }
  });
});

describe("Idempotency-Key after a crash", () => {
  it("is held by the accepting process's lease: a conflict while it runs, taken over with its message id once the lease lapsed", async () => {
    // What a process killed mid-send leaves: the key held by its lease, its message never stored.
    const variables = { name: "Ada", code: "123456" };
    const to = "4915123453010";
    const messageId = newId("msg");
    const now = new Date();
    await t.service.db.collection("idempotency_keys").insertOne({
      _id: `${key.id}:order-crashed` as never,
      fingerprint: fingerprintOf({ to, sender: senderId, template: { id: templateId, variables, flow_token: "" } }),
      message_id: messageId,
      created_at: now,
      lease_owner: "dead-process:request",
      leased_until: new Date(now.getTime() + 1500),
      expires_at: new Date(now.getTime() + 86_400_000),
    });
    const during = await send(to, variables, { "idempotency-key": "order-crashed" });
    expect(during.status).toBe(409);
    expect(during.json.error.message).toBe("A request with this Idempotency-Key is still in progress; retry shortly");
    // The lease lapses (1.5 s here; at most 5 s after a crash, IDEMPOTENCY_HOLD_MS at most): the retry creates that message.
    const retried = await eventually(async () => {
      const res = await send(to, variables, { "idempotency-key": "order-crashed" });
      return res.status === 200 ? res : undefined;
    }, 20_000, 300);
    expect(retried.json.message_id).toBe(messageId);
    const replay = await send(to, variables, { "idempotency-key": "order-crashed" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.json.message_id).toBe(messageId);
  });
});

describe("the messages' indexes and the records of earlier releases", () => {
  it("keeps the sweeps' indexes partial and dispatch's queue sparse, drops those of earlier releases, and queues the messages they left under dispatch", async () => {
    const client = await new MongoClient(inject("mongoUri")).connect();
    const name = `test_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const db = client.db(name);
    const messages = db.collection("messages");
    // A workspace, sender and template (made through this release, stopped at once).
    const seed = await createTestService({ config: { mongodbDatabase: name, logLevel: "error", ...FAST_MESSAGING } });
    const ws = await seed.createWorkspace("Earlier release", 5);
    const sender = await createSender(seed, ws);
    const template = await createTemplate(seed, ws);
    await seed.service.close();
    // What the releases before left: whole-collection indexes, partial ones of dispatch's states, and a message the
    // last release accepted and never dispatched (its process stopped), held by that process.
    await messages.createIndex({ "dispatch.state": 1, "dispatch.lease_until": 1 });
    await messages.createIndex({ "dispatch.state": 1, "dispatch.claimed_at": 1 });
    await messages.createIndex({ refund_state: 1 });
    await messages.createIndex({ events_pending: 1, updated_at: 1 });
    await messages.createIndex({ "dispatch.lease_until": 1 }, { name: "dispatch_pending_by_lease", partialFilterExpression: { "dispatch.state": "pending" } });
    await messages.createIndex({ "dispatch.claimed_at": 1 }, { name: "dispatch_claimed_by_claim", partialFilterExpression: { "dispatch.state": "claimed" } });
    const then = new Date(Date.now() - 60_000);
    await messages.insertOne({
      _id: "msg_00000000-0000-4000-8000-00000000e001" as never,
      workspace_id: ws, direction: "outbound", api_key_id: null, to: "4915123459992", from: "4915100000001", sender_id: sender, template_id: template,
      flow_token: null, status: "accepted", wa_message_id: null, error: null, credits: 1, created_at: then, refund_state: "none",
      send: { from_phone_number: "4915100000001", from_phone_number_id: null, template_name: "verification_code", language: "en", parameters: [], flow: null, text: "Hello" },
      dispatch: { state: "pending", attempts: 0, next_attempt_at: then, owner: "dsp_gone", lease_until: then, claimed_at: null, last_error: null },
    });
    const upgraded = await createTestService({ config: { mongodbDatabase: name, logLevel: "error", ...FAST_MESSAGING } });
    try {
      const indexes = await messages.listIndexes().toArray();
      const retired = ["dispatch.state_1_dispatch.lease_until_1", "dispatch.state_1_dispatch.claimed_at_1", "refund_state_1", "events_pending_1_updated_at_1", "dispatch_pending_by_lease", "dispatch_claimed_by_claim"];
      expect(indexes.map((i) => i.name).filter((n) => retired.includes(n))).toEqual([]);
      const partial = Object.fromEntries(indexes.filter((i) => i.partialFilterExpression).map((i) => [i.name, { key: i.key, filter: i.partialFilterExpression }]));
      expect(partial).toEqual({
        refund_due_by_failure: { key: { failed_at: 1 }, filter: { refund_state: "due" } },
        refund_due_by_cancel: { key: { canceled_at: 1 }, filter: { refund_state: "due" } },
        dispatch_pending_by_validity: { key: { valid_until: 1 }, filter: { "dispatch.state": "pending" } },
        events_pending_by_update: { key: { updated_at: 1 }, filter: { "events_pending.0": { $exists: true } } },
        queue_by_sender: { key: { sender_id: 1, "dispatch.queued_reason": 1, send_at: 1, created_at: 1 }, filter: { "dispatch.state": "pending" } },
        sent_by_sender: { key: { sender_id: 1, sent_at: 1 }, filter: { "dispatch.state": "done" } },
      });
      expect(indexes.find((i) => i.name === "queue_due_at")).toMatchObject({ key: { due_at: 1 }, sparse: true });
      // The message left under dispatch is queued, taken by a worker's claim and dispatched, then leaves the queue.
      const sent = await eventually(async () => {
        const m = await messages.findOne({ _id: "msg_00000000-0000-4000-8000-00000000e001" as never });
        return m && m.status !== "accepted" && m.due_at === undefined ? m : undefined;
      });
      expect(sent).toMatchObject({ dispatch: { state: "done", attempts: 1 }, lease_owner: null });
      expect(sent!.dispatch).not.toHaveProperty("lease_until");
      expect(sent!.wa_message_id).toEqual(expect.any(String));
    } finally {
      await upgraded.close();
      await db.dropDatabase();
      await client.close();
    }
  });
});

