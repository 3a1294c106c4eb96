import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { MessageService } from "../gen/messaging/v1/messages_pb.js";
import { OptOutService } from "../gen/messaging/console/v1/opt_outs_pb.js";
import { RequestLogService } from "../gen/messaging/console/v1/request_log_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import type { StoredEvent } from "../src/events/event-bus.js";
import { fingerprintOf } from "../src/messages/idempotency.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

/**
 * Batch sends (POST /v1/messages:batch, BatchSendMessages; README "Sending
 * messages", Batch sends) through REST, Connect and gRPC against a real
 * server and database: items checked and charged on their own, results in
 * order, credits exact under concurrency, the Idempotency-Key covering the
 * batch, the request log's counts, and every accepted item dispatched with
 * its events.
 */

let t: TestService;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", databaseCommandMetrics: true } });
});
afterAll(() => t.close());

/** A workspace with `credits`, a key that may send and read, a sender and a template (variables name and code). */
async function setUp(credits: number, phone = "4915100000101") {
  const workspaceId = await t.createWorkspace("Batch", credits);
  const key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
  const senderId = await createSender(t, workspaceId, phone);
  const templateId = await createTemplate(t, workspaceId);
  const item = (to: string, variables: Record<string, string> = { name: "Ada", code: "1" }) => ({ to, sender: senderId, template: { id: templateId, variables } });
  const batch = (messages: unknown[], headers: Record<string, string> = {}) => rest(t.publicUrl, "POST", "/v1/messages:batch", { key: key.secret, body: { messages }, headers });
  const balance = async () => Number((await t.console(WorkspaceService).getWorkspace({ id: workspaceId })).workspace!.creditBalance);
  return { workspaceId, key, senderId, templateId, item, batch, balance };
}

const count = (collection: string, filter: object) => t.service.db.collection(collection).countDocuments(filter);
const numbers = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, "0")}`);

describe("POST /v1/messages:batch", () => {
  it("answers one result per item in order: accepted messages, and each refused item's own error; spends for the accepted only", async () => {
    const w = await setUp(100);
    await t.console(OptOutService).createOptOut({ workspaceId: w.workspaceId, phoneNumber: "4915122220003" });
    const before = await w.balance();
    const res = await w.batch([
      w.item("4915122220001"),
      w.item("12"), // malformed recipient: the contract's rule
      w.item("4915122220002", { name: "Ada" }), // a required variable missing: the template's rule
      w.item("4915122220003"), // on the opt-out list
      { ...w.item("4915122220004"), template: { id: "tpl_nope", variables: {} } }, // malformed template id
      w.item("4915122220005"),
    ]);
    expect(res.status).toBe(200);
    expect(res.json.accepted_count).toBe(2);
    expect(res.json.refused_count).toBe(4);
    const results = res.json.results as { index: number; message: any; error: any }[];
    expect(results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(results[0]).toMatchObject({ error: null, message: { object: "message", to: "4915122220001", status: "accepted", credits: 1, sender: w.senderId, template_id: w.templateId } });
    expect(results[5]!.message.to).toBe("4915122220005");
    expect(results[1]).toEqual({
      index: 1,
      message: null,
      error: {
        code: "invalid_argument",
        message: "to: must be 8 to 15 digits with country code, without '+', spaces or a leading 0",
        details: {
          field: "to",
          rule: "must be 8 to 15 digits with country code, without '+', spaces or a leading 0",
          field_violations: [{ field: "to", description: "must be 8 to 15 digits with country code, without '+', spaces or a leading 0" }],
        },
      },
    });
    expect(results[2]!.error).toMatchObject({ code: "invalid_argument", details: { field: "template.variables.code", rule: "is required by the template" } });
    expect(results[3]!.error).toEqual({
      code: "recipient_opted_out",
      message: "The recipient 4915122220003 is on the workspace's opt-out list (it asked not to be contacted); nothing was spent",
      details: { phone_number: "4915122220003" },
    });
    expect(results[4]!.error).toMatchObject({ code: "invalid_argument", details: { field: "template.id", rule: "must be an id such as tpl_<uuid>" } });
    expect(await w.balance()).toBe(before - 2);
    expect(await count("messages", { workspace_id: w.workspaceId })).toBe(2);
    // The items' error bodies are those of single sends of the same bodies.
    const single = await rest(t.publicUrl, "POST", "/v1/messages", { key: w.key.secret, body: w.item("4915122220003") });
    expect(single.status).toBe(400);
    const { request_id: _requestId, ...singleError } = single.json.error;
    expect(singleError).toEqual(results[3]!.error);
    // Every accepted item is dispatched, its events fired, and read back by the key that sent it.
    for (const r of [results[0]!, results[5]!]) {
      const id = r.message.message_id as string;
      await eventually(async () => ((await t.service.db.collection<StoredEvent>("events").countDocuments({ "data.message_id": id })) === 3 ? true : undefined));
      expect((await rest(t.publicUrl, "GET", `/v1/messages/${id}`, { key: w.key.secret })).json.status).toBe("read");
      expect(await count("credit_ledger", { _id: `spend:${id}` })).toBe(1);
    }
  });

  it("refuses a request that is wrong as a whole with one invalid_argument, creating nothing", async () => {
    const w = await setUp(10);
    const empty = await w.batch([]);
    expect(empty.status).toBe(400);
    expect(empty.json.error).toMatchObject({ code: "invalid_argument", details: { field: "messages", rule: "must not be empty" } });
    const tooMany = await w.batch(Array.from({ length: 1001 }, () => ({ to: "491512", sender: "x", template: { id: "y" } })));
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error.details.field_violations).toEqual([{ field: "messages", description: "must contain no more than 1000 item(s)" }]);
    const badKey = await w.batch([w.item("4915122221001")], { "idempotency-key": "bad key with spaces" });
    expect(badKey.json.error).toMatchObject({ code: "invalid_argument", details: { field: "Idempotency-Key" } });
    const unknownField = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: w.key.secret, body: { messages: [w.item("4915122221001")], send_at: "2030-01-01T00:00:00Z" } });
    expect(unknownField.json.error).toMatchObject({ code: "invalid_argument", details: { field: "send_at" } });
    // Scheduled sends are single sends: an item's send_at refuses the batch, named with its item.
    const itemSendAt = await w.batch([{ ...w.item("4915122221002"), send_at: "2030-01-01T00:00:00Z" }]);
    expect(itemSendAt.status).toBe(400);
    expect(itemSendAt.json.error).toMatchObject({ code: "invalid_argument", details: { field: "messages[0].send_at" } });
    const huge = await w.batch(Array.from({ length: 1000 }, (_, i) => w.item(`49151222${String(i).padStart(5, "0")}`, { name: "x".repeat(1000), code: "1" })));
    expect(huge.status).toBe(413);
    expect(huge.json.error.code).toBe("payload_too_large");
    expect(await count("messages", { workspace_id: w.workspaceId })).toBe(0);
    expect(await w.balance()).toBe(10);
  });

  it("accepts as many items as the balance pays for, in order; the rest get insufficient_credits", async () => {
    const w = await setUp(5);
    const res = await w.batch(numbers("4915122230", 8).map((to) => w.item(to)));
    expect(res.json.accepted_count).toBe(5);
    expect(res.json.results.map((r: any) => r.error?.code ?? "ok")).toEqual(["ok", "ok", "ok", "ok", "ok", "insufficient_credits", "insufficient_credits", "insufficient_credits"]);
    expect(res.json.results[5].error).toEqual({
      code: "insufficient_credits",
      message: "The workspace's credit balance cannot pay for this message, which costs 1 credits",
      details: { price_credits: "1" },
    });
    expect(await w.balance()).toBe(0);
    const spends = await t.service.db.collection("credit_ledger").find({ workspace_id: w.workspaceId, kind: "spend" }).toArray();
    expect(spends.map((e) => e.balance_after as number).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4]);
  });

  it("spends exactly the balance when a batch races single sends and another batch", async () => {
    const w = await setUp(25);
    const single = (to: string) =>
      clientFor(MessageService, "grpc", t.publicUrl, w.key.secret)
        .sendMessage(w.item(to))
        .then(() => 1, (e: unknown) => (ConnectError.from(e).code === Code.FailedPrecondition ? 0 : Promise.reject(e)));
    const [batchA, batchB, ...singles] = await Promise.all([
      w.batch(numbers("4915122240", 20).map((to) => w.item(to))),
      w.batch(numbers("4915122241", 10).map((to) => w.item(to))),
      ...numbers("4915122242", 15).map(single),
    ]);
    for (const b of [batchA!, batchB!]) {
      expect(b.status).toBe(200);
      // Accepted items come first: a batch's items beyond the balance are refused, never those before them.
      const codes = b.json.results.map((r: any) => r.error?.code ?? "ok");
      expect(codes).toEqual([...codes].sort((a: string, c: string) => (a === "ok" ? 0 : 1) - (c === "ok" ? 0 : 1)));
    }
    const accepted = batchA!.json.accepted_count + batchB!.json.accepted_count + (singles as number[]).reduce((a, b) => a + b, 0);
    expect(accepted).toBe(25);
    expect(await w.balance()).toBe(0);
    expect(await count("messages", { workspace_id: w.workspaceId })).toBe(25);
    await eventually(async () => ((await count("credit_ledger", { workspace_id: w.workspaceId, kind: "spend" })) === 25 ? true : undefined));
    const ledger = await t.service.db.collection("credit_ledger").find({ workspace_id: w.workspaceId }).toArray();
    expect(ledger.reduce((sum, e) => sum + (e.amount as number), 0)).toBe(0);
    await eventually(async () => ((await count("messages", { workspace_id: w.workspaceId, wa_message_id: { $ne: null } })) === 25 ? true : undefined));
  });

  it("with an Idempotency-Key answers the same results again without spending; another body is a conflict", async () => {
    const w = await setUp(3);
    const body = [w.item("4915122250001"), w.item("1"), w.item("4915122250002"), w.item("4915122250003"), w.item("4915122250004")];
    const first = await w.batch(body, { "idempotency-key": "campaign-7" });
    expect(first.json.accepted_count).toBe(3);
    const again = await w.batch(body, { "idempotency-key": "campaign-7" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const ids = (res: typeof first) => res.json.results.map((r: any) => r.message?.message_id ?? r.error.code);
    expect(ids(again)).toEqual(ids(first));
    expect(await w.balance()).toBe(0);
    expect(await count("messages", { workspace_id: w.workspaceId })).toBe(3);
    // Over gRPC, the same key answers the same results.
    const viaGrpc = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, MessageService.method.batchSendMessages, { messages: body }, {
      authorization: `Bearer ${w.key.secret}`,
      "idempotency-key": "campaign-7",
    });
    expect(viaGrpc.response?.results.map((r) => r.message?.messageId ?? r.error?.code)).toEqual(ids(first));
    const conflict = await w.batch(body.slice(1), { "idempotency-key": "campaign-7" });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toBe("conflict");
    // A single send may not reuse a batch's key either.
    const singleReuse = await rest(t.publicUrl, "POST", "/v1/messages", { key: w.key.secret, body: body[0], headers: { "idempotency-key": "campaign-7" } });
    expect(singleReuse.status).toBe(409);
  });

  it("holds its Idempotency-Key by the accepting process's lease: a conflict while it runs, taken over with its message ids once it lapsed", async () => {
    const w = await setUp(10);
    const body = [w.item("4915122270001"), w.item("4915122270002")];
    // What a process killed mid-batch leaves: the key held by its lease, with the ids its items were to create.
    const messageIds = [`msg_${randomUUID()}`, `msg_${randomUUID()}`];
    const canonical = body.map((m) => ({ to: m.to, sender: m.sender, template: { id: m.template.id, variables: m.template.variables, flow_token: "" } }));
    const now = new Date();
    await t.service.db.collection("idempotency_keys").insertOne({
      _id: `${w.key.id}:campaign-crashed` as never,
      fingerprint: fingerprintOf({ batch: canonical }),
      message_id: "",
      batch: { message_ids: messageIds },
      created_at: now,
      lease_owner: "dead-process:request",
      leased_until: new Date(now.getTime() + 1500),
      expires_at: new Date(now.getTime() + 86_400_000),
    });
    const during = await w.batch(body, { "idempotency-key": "campaign-crashed" });
    expect(during.status).toBe(409);
    expect(during.json.error.message).toBe("A request with this Idempotency-Key is still in progress; retry shortly");
    const retried = await eventually(async () => {
      const res = await w.batch(body, { "idempotency-key": "campaign-crashed" });
      return res.status === 200 ? res : undefined;
    }, 20_000, 300);
    expect(retried.json.results.map((r: any) => r.message?.message_id)).toEqual(messageIds);
    const replay = await w.batch(body, { "idempotency-key": "campaign-crashed" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(await w.balance()).toBe(8);
  });

  it("writes a batch with one debit, one insert of its messages and one of its ledger entries", async () => {
    const w = await setUp(100);
    await w.batch([w.item("4915122260000")]); // the key's rate window is leased, the workspace's clears settle
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const commands: string[] = [];
    const onCommand = (event: { commandName: string; command: Record<string, unknown> }) => {
      const collection = event.command[event.commandName];
      if (["workspaces", "messages", "credit_ledger", "idempotency_keys", "opt_outs"].includes(collection as string)) commands.push(`${event.commandName} ${collection}`);
    };
    t.service.client.on("commandStarted", onCommand);
    try {
      const res = await w.batch(numbers("4915122261", 50).map((to) => w.item(to)));
      expect(res.json.accepted_count).toBe(50);
      await eventually(async () => ((await count("credit_ledger", { workspace_id: w.workspaceId, kind: "spend" })) === 51 ? true : undefined));
      // Its writes and its look-up of the opt-out list (the key's look-up, dispatch's updates and this test's counts apart).
      const writes = commands.filter((c) => (/^(findAndModify|insert|update|delete) /.test(c) ? !["update messages", "update workspaces"].includes(c) : c === "find opt_outs"));
      expect(writes).toEqual(["find opt_outs", "findAndModify workspaces", "insert messages", "insert credit_ledger"]);
    } finally {
      t.service.client.off("commandStarted", onCommand);
    }
  });

  it("works over Connect and gRPC, items' errors carrying their details", async () => {
    const w = await setUp(10);
    for (const protocol of ["connect-json", "connect-binary", "grpc"] as const) {
      const res = await clientFor(MessageService, protocol, t.publicUrl, w.key.secret).batchSendMessages({
        messages: [w.item(`491512227${protocol.length}01`), w.item("0123")],
      });
      expect(res.acceptedCount).toBe(1);
      expect(res.refusedCount).toBe(1);
      expect(res.results[0]!.message?.status).toBe(1); // accepted
      expect(res.results[1]!.index).toBe(1);
      expect(res.results[1]!.error).toMatchObject({ code: "invalid_argument", details: { field: "to", field_violations: [{ field: "to" }] } });
    }
    const refused = await clientFor(MessageService, "grpc", t.publicUrl, w.key.secret)
      .batchSendMessages({ messages: [] })
      .catch((e: unknown) => ConnectError.from(e));
    expect((refused as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("logs one request per batch with its accepted and refused counts", async () => {
    const w = await setUp(2);
    const res = await w.batch([w.item("4915122280001"), w.item("4915122280002"), w.item("4915122280003"), w.item("9")]);
    const requestId = res.headers.get("request-id")!;
    await t.flushRequestLog();
    const { request } = await t.console(RequestLogService).getLoggedRequest({ id: requestId });
    expect(request).toMatchObject({ operation: "messaging.v1.MessageService/BatchSendMessages", httpStatus: 200, acceptedCount: 2, refusedCount: 2 });
    const rows = await t.console(RequestLogService).listRequests({ workspaceId: w.workspaceId, operation: "messaging.v1.MessageService/BatchSendMessages" });
    expect(rows.data).toHaveLength(1);
    // A batch refused as a whole has no counts.
    const whole = await w.batch([]);
    await t.flushRequestLog();
    const refused = await t.console(RequestLogService).getLoggedRequest({ id: whole.headers.get("request-id")! });
    expect(refused.request).toMatchObject({ errorCode: "invalid_argument" });
    expect(refused.request!.acceptedCount).toBeUndefined();
  });
});
