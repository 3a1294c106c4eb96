import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../gen/google/rpc/error_details_pb.js";
import { SenderService, ThroughputSource } from "../gen/messaging/console/v1/senders_pb.js";
import { QueuedReason } from "../gen/messaging/v1/messages_pb.js";
import { clientFor, rest } from "./helpers/clients.js";
import { createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * A sender's queue seen from outside (README "Pacing", "A sender's queue"): GetSender over REST, Connect and gRPC,
 * the per-sender gauges of GET /metrics, `msgsvc senders get`, and UpdateSender (AIP-134) over REST and Connect,
 * against the simulator enforcing WhatsApp's limits. Nothing here asserts timing: what is asserted holds however
 * slow the machine is (a sender at 1 message a second keeps most of a batch queued for seconds).
 */

let t: TestService;
let workspace: string;
let template: string;
let key: string;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
  workspace = await t.createWorkspace("Sender queues", 10_000);
  template = await createTemplate(t, workspace);
  key = (await t.createKey(workspace, { scopes: ["messages:send", "messages:read"], rateLimitPerMin: 100 })).secret;
});
afterAll(() => t?.close());

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });

async function createSender(phoneNumber: string, throughputMps: number): Promise<string> {
  const { sender } = await t.console(SenderService).createSender({ workspaceId: workspace, phoneNumber, name: `Sender ${phoneNumber}`, throughputMps });
  return sender!.id;
}

/** Sends one batch from `from`, a message to each of `recipients`; resolves to the message ids. */
async function sendBatch(from: string, recipients: string[]): Promise<string[]> {
  const items = recipients.map((to, i) => ({ to, sender: from, template: { id: template, variables: { name: "Ada", code: String(i) } } }));
  const res = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key, body: { messages: items } });
  expect(res.status).toBe(200);
  return (res.json as { results: { message: { message_id: string } }[] }).results.map((r) => r.message.message_id);
}

/** The value of `metric{sender_id="id"}` in GET /metrics, or undefined when the series is not there. */
async function gauge(metric: string, senderId: string): Promise<number | undefined> {
  const text = await (await fetch(`${t.consoleUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${metric}{sender_id="${senderId}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

/** The network's refusals so far with `code`, from GET /metrics. */
async function refusals(code: number): Promise<number> {
  const text = await (await fetch(`${t.consoleUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`msgsvc_network_refusals_total{code="${code}"}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

/** Waits in the database until none of `ids` is still waiting to be handed to the network. */
async function untilLeft(ids: string[]): Promise<void> {
  const messages = t.service.db.collection<{ _id: string; status: string }>("messages");
  await eventually(async () => ((await messages.countDocuments({ _id: { $in: ids }, status: { $in: ["accepted", "scheduled"] } })) === 0 ? true : undefined), 90_000, 200);
}

interface QueueJson {
  message_count: number;
  oldest_queued_at: string | null;
  oldest_wait_seconds: number;
  reasons: { reason: string; message_count: number }[];
  scheduled_count: number;
  sent_last_minute_count: number;
  sent_last_minute_mps: number;
  network_refusals: { code: number; count: number; last_refused_at: string }[];
}

describe("a sender's queue", () => {
  it("GetSender shows the messages queued behind a slow number, why they wait, since when, what it sent in the last minute; a scheduled send not yet due apart", async () => {
    const from = await createSender("4915100060001", 1);
    const ids = await sendBatch(from, Array.from({ length: 8 }, (_, i) => `49151600${String(i).padStart(5, "0")}`));
    const scheduled = await rest(t.publicUrl, "POST", "/v1/messages", {
      key,
      body: { to: "4915160099999", sender: from, template: { id: template, variables: { name: "Ada", code: "1" } }, send_at: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(scheduled.status).toBe(200);
    // At 1 a second, the messages whose turn is seconds away wait in the database with their reason.
    const messages = t.service.db.collection<{ _id: string; dispatch?: { queued_reason?: string } }>("messages");
    await eventually(async () => ((await messages.countDocuments({ _id: { $in: ids }, "dispatch.queued_reason": "sender_rate" })) >= 3 ? true : undefined), 20_000, 100);
    // …and the first has left.
    await eventually(async () => ((await messages.countDocuments({ _id: { $in: ids }, status: { $nin: ["accepted"] } })) >= 1 ? true : undefined), 20_000, 100);

    const overRest = await consoleRest("GET", `/console/v1/senders/${from}`);
    expect(overRest.status).toBe(200);
    expect(overRest.json.throughput_mps).toBe(1);
    const queue = overRest.json.queue as QueueJson;
    const waiting = await messages.countDocuments({ _id: { $in: ids }, status: "accepted" });
    expect(queue.message_count).toBeGreaterThanOrEqual(3);
    expect(queue.message_count).toBeLessThanOrEqual(7);
    expect(queue.scheduled_count).toBe(1); // not queued before its send_at
    const senderRate = queue.reasons.find((r) => r.reason === "sender_rate");
    expect(senderRate?.message_count).toBeGreaterThanOrEqual(3);
    expect(queue.reasons.every((r) => r.reason === "sender_rate")).toBe(true);
    expect(Date.parse(queue.oldest_queued_at!)).toBeLessThanOrEqual(Date.now());
    expect(queue.oldest_wait_seconds).toBeGreaterThan(0);
    expect(queue.sent_last_minute_count).toBeGreaterThanOrEqual(1);
    expect(queue.sent_last_minute_mps).toBeCloseTo(queue.sent_last_minute_count / 60, 6);
    expect(queue.network_refusals).toEqual([]);
    // Read while the queue drains: between what the database held just before and what it held at the first read.
    expect(queue.message_count).toBeLessThanOrEqual(waiting + 1);

    // The same over Connect and gRPC.
    for (const protocol of ["connect-json", "grpc"] as const) {
      const { sender } = await clientFor(SenderService, protocol, t.consoleUrl, TEST_CONSOLE_TOKEN).getSender({ id: from });
      expect(sender!.throughputMps).toBe(1);
      expect(sender!.queue!.scheduledCount).toBe(1);
      expect(sender!.queue!.messageCount).toBeGreaterThanOrEqual(1);
      expect(sender!.queue!.messageCount).toBeLessThanOrEqual(queue.message_count);
      expect(sender!.queue!.reasons.every((r) => r.reason === QueuedReason.SENDER_RATE)).toBe(true);
    }
    // Listed, a sender carries no queue (read by GetSender only).
    const listed = await consoleRest("GET", `/console/v1/workspaces/${workspace}/senders`);
    expect(listed.json.data.find((s: { id: string }) => s.id === from).queue).toBeNull();

    // The gauges per sender, read from the database at each scrape.
    const depth = await gauge("msgsvc_sender_queue_depth", from);
    expect(depth).toBeGreaterThanOrEqual(1);
    expect(depth).toBeLessThanOrEqual(queue.message_count);
    expect(await gauge("msgsvc_sender_queue_oldest_wait_seconds", from)).toBeGreaterThan(0);

    // `msgsvc senders get`: the queue for people, the whole answer with --json.
    const human = await msgsvc(t, ["senders", "get", from]);
    expect(human.stderr).toBe("");
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("Queue");
    expect(human.stdout).toMatch(/queued\s+\d+/);
    expect(human.stdout).toMatch(/scheduled_not_due\s+1/);
    expect(human.stdout).toMatch(/sent_last_minute\s+\d+ \([\d.]+\/s of 1\/s\)/);
    expect(human.stdout).toMatch(/sender_rate\s+\d+/);
    expect(human.stdout).toContain("Network refusals");
    const json = await msgsvc(t, ["senders", "get", from, "--json"]);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { id: string; queue: QueueJson };
    expect(parsed.id).toBe(from);
    expect(parsed.queue.scheduled_count).toBe(1);
    expect(parsed.queue.message_count).toBeLessThanOrEqual(queue.message_count);

    // Once the queue is empty: the gauge reports 0 once, then the series ends.
    await untilLeft(ids);
    expect(await gauge("msgsvc_sender_queue_depth", from)).toBe(0);
    expect(await gauge("msgsvc_sender_queue_depth", from)).toBeUndefined();
    const drained = (await consoleRest("GET", `/console/v1/senders/${from}`)).json.queue as QueueJson;
    expect(drained.message_count).toBe(0);
    expect(drained.oldest_queued_at).toBeNull();
    expect(drained.oldest_wait_seconds).toBe(0);
    expect(drained.scheduled_count).toBe(1);
    expect(drained.sent_last_minute_count).toBe(8);
  });

  it("counts the network's refusals of a number's sends by code, shared by every process through the sender: as many as the process's counter", async () => {
    // The simulator holds numbers ending in 0020 at 20 a second; this one says 80, so the network refuses some.
    const from = await createSender("4915100070020", 80);
    const before = await refusals(130429);
    const ids = await sendBatch(from, Array.from({ length: 100 }, (_, i) => `49151700${String(i).padStart(5, "0")}`));
    await untilLeft(ids);
    const refused = (await refusals(130429)) - before;
    expect(refused).toBeGreaterThan(0);
    const { sender } = await t.console(SenderService).getSender({ id: from });
    expect(sender!.queue!.networkRefusals.map((r) => ({ code: r.code, count: r.count }))).toEqual([{ code: 130429, count: refused }]);
    expect(sender!.queue!.networkRefusals[0]!.lastRefusedAt).toBeDefined();
    const overRest = (await consoleRest("GET", `/console/v1/senders/${from}`)).json.queue as QueueJson;
    expect(overRest.network_refusals).toEqual([{ code: 130429, count: refused, last_refused_at: expect.any(String) }]);
    const human = await msgsvc(t, ["senders", "get", from]);
    expect(human.stdout).toMatch(new RegExp(`130429\\s+${refused}\\s`));
  });
});

describe("a sender's queue counted from the index", () => {
  it("answers what a count of every message says, whether send_at and queued_reason are absent, null or set, whatever the dispatch state", async () => {
    // Records written straight to the database in every shape (no due_at: no worker takes them), next to nothing else of this sender.
    const { sender } = await t.console(SenderService).createSender({ workspaceId: workspace, phoneNumber: "4915100090001", name: "Shapes" });
    const id = sender!.id;
    const now = Date.now();
    type Doc = { _id: string; workspace_id: string; direction: "outbound"; sender_id: string; created_at: Date; send_at?: Date | null; dispatch: { state: string; queued_reason?: string | null } };
    const docs: Doc[] = [];
    let i = 0;
    for (const sendAt of ["absent", "null", "past", "future"])
      for (const reason of ["absent", "null", "sender_rate", "recipient_pair_rate"])
        for (const state of ["pending", "claimed", "done"])
          for (let k = 0; k < 3; k++) {
            i++;
            const d: Doc = { _id: `msg_shape_${i}`, workspace_id: workspace, direction: "outbound", sender_id: id, created_at: new Date(now - 100_000 + ((i * 37) % 5000)), dispatch: { state } };
            if (sendAt === "null") d.send_at = null;
            if (sendAt === "past") d.send_at = new Date(now - 1000 * ((i * 13) % 50));
            if (sendAt === "future") d.send_at = new Date(now + 3_600_000);
            if (reason === "null") d.dispatch.queued_reason = null;
            if (reason === "sender_rate" || reason === "recipient_pair_rate") d.dispatch.queued_reason = reason;
            docs.push(d);
          }
    await t.service.db.collection<Doc>("messages").insertMany(docs);
    const pending = docs.filter((d) => d.dispatch.state === "pending");
    const queued = pending.filter((d) => !(d.send_at && d.send_at.getTime() > now));
    const oldest = Math.min(...queued.map((d) => (d.send_at ?? d.created_at).getTime()));
    const reasonCount = (reason: string) => queued.filter((d) => d.dispatch.queued_reason === reason).length;

    const overRest = (await consoleRest("GET", `/console/v1/senders/${id}`)).json.queue as QueueJson;
    expect(overRest.message_count).toBe(queued.length);
    expect(overRest.scheduled_count).toBe(pending.length - queued.length);
    expect(Date.parse(overRest.oldest_queued_at!)).toBe(oldest);
    expect(Object.fromEntries(overRest.reasons.map((r) => [r.reason, r.message_count]))).toEqual({ sender_rate: reasonCount("sender_rate"), recipient_pair_rate: reasonCount("recipient_pair_rate") });
    const { sender: overGrpc } = await clientFor(SenderService, "grpc", t.consoleUrl, TEST_CONSOLE_TOKEN).getSender({ id });
    expect(overGrpc!.queue!.messageCount).toBe(queued.length);
    expect(await gauge("msgsvc_sender_queue_depth", id)).toBe(queued.length);
    expect(await gauge("msgsvc_sender_queue_oldest_wait_seconds", id)).toBeGreaterThanOrEqual((Date.now() - oldest) / 1000 - 5);
    await t.service.db.collection<Doc>("messages").deleteMany({ sender_id: id });
  });
});

describe("UpdateSender", () => {
  it("changes the throughput and the name over REST (PATCH with update_mask) and Connect; the CLI too", async () => {
    const id = await createSender("4915100080001", 20);
    const patched = await consoleRest("PATCH", `/console/v1/senders/${id}?update_mask=throughput_mps`, { throughput_mps: 1000, name: "ignored: not in the mask" });
    expect(patched.status).toBe(200);
    expect(patched.json).toMatchObject({ id, throughput_mps: 1000, name: "Sender 4915100080001", queue: null });
    // Without a mask: the fields given.
    const renamed = await consoleRest("PATCH", `/console/v1/senders/${id}`, { name: "  Campaigns  " });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toMatchObject({ name: "Campaigns", throughput_mps: 1000 });
    const { sender } = await t.console(SenderService).updateSender({ sender: { id, throughputMps: 250 }, updateMask: { paths: ["throughput_mps"] } });
    expect(sender).toMatchObject({ throughputMps: 250, name: "Campaigns" });
    expect((await consoleRest("GET", `/console/v1/senders/${id}`)).json.throughput_mps).toBe(250);
    const cli = await msgsvc(t, ["senders", "update", id, "--throughput-mps", "80", "--name", "Support", "--json"]);
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ id, throughput_mps: 80, name: "Support" });
    // The change is audited as every console change is.
    const audit = await consoleRest("GET", `/console/v1/audit_entries?workspace_id=${workspace}`);
    expect(JSON.stringify(audit.json)).toContain("UpdateSender");
  });

  it("a raised throughput: the messages waiting for a turn under the old rate are due again within a second instead of at their old turn, and leave", async () => {
    const from = await createSender("4915100080004", 1);
    const ids = await sendBatch(from, Array.from({ length: 10 }, (_, i) => `49151800${String(i).padStart(5, "0")}`));
    type Row = { _id: string; due_at?: Date; lease_owner?: string | null; dispatch?: { state: string; queued_reason?: string } };
    const messages = t.service.db.collection<Row>("messages");
    const waitingFor = () => messages.find({ _id: { $in: ids }, "dispatch.state": "pending", lease_owner: null, "dispatch.queued_reason": "sender_rate" }).toArray();
    // At 1 a second, the last of ten waits in the database for a turn seconds away.
    const before = await eventually(async () => {
      const rows = await waitingFor();
      return rows.length >= 4 ? rows : undefined;
    }, 20_000, 100);
    expect(Math.max(...before.map((r) => r.due_at!.getTime()))).toBeGreaterThan(Date.now() + 3000);

    const patched = await consoleRest("PATCH", `/console/v1/senders/${from}?update_mask=throughput_mps`, { throughput_mps: 1000 });
    expect(patched.status).toBe(200);
    const answeredAt = Date.now();
    // None waits for its old turn any more: due within the senders' cache's bound (1 s) of the change.
    for (const row of await waitingFor()) expect(row.due_at!.getTime()).toBeLessThanOrEqual(answeredAt + 1000);
    await untilLeft(ids);
    const { sender } = await t.console(SenderService).getSender({ id: from });
    expect(sender!.queue!.messageCount).toBe(0);
    expect(sender!.queue!.sentLastMinuteCount).toBe(10);
  });

  it("refuses a throughput out of 1..1000, a blank name and a path it cannot change, naming the field, over REST and Connect; the CLI exits 1", async () => {
    const id = await createSender("4915100080002", 20);
    const tooFast = await consoleRest("PATCH", `/console/v1/senders/${id}?update_mask=throughput_mps`, { throughput_mps: 1001 });
    expect(tooFast.status).toBe(400);
    expect(tooFast.json.error.code).toBe("invalid_argument");
    expect(tooFast.json.error.details.field_violations.map((v: { field: string }) => v.field)).toEqual(["sender.throughput_mps"]);
    const blank = await consoleRest("PATCH", `/console/v1/senders/${id}?update_mask=name`, { name: "   " });
    expect(blank.status).toBe(400);
    expect(blank.json.error.details.field_violations.map((v: { field: string }) => v.field)).toEqual(["sender.name"]);
    const immutable = await consoleRest("PATCH", `/console/v1/senders/${id}?update_mask=phone_number`, { phone_number: "4915100080003" });
    expect(immutable.status).toBe(400);
    expect(immutable.json.error.details.field_violations.map((v: { field: string }) => v.field)).toEqual(["update_mask[0]"]);

    for (const [input, paths, field] of [
      [{ id, throughputMps: 0 }, ["throughput_mps"], "sender.throughput_mps"],
      [{ id, throughputMps: 5 }, ["throughput_mps", "status"], "update_mask[1]"],
    ] as const) {
      const err = await t
        .console(SenderService)
        .updateSender({ sender: input, updateMask: { paths: [...paths] } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual([field]);
    }
    // Nothing changed.
    expect((await consoleRest("GET", `/console/v1/senders/${id}`)).json.throughput_mps).toBe(20);
    const cli = await msgsvc(t, ["senders", "update", id, "--throughput-mps", "0"]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/^error: invalid_argument: /);
    const unknown = await consoleRest("PATCH", `/console/v1/senders/snd_nope?update_mask=name`, { name: "x" });
    expect(unknown.status).toBe(404);
  });
});

describe("CreateSender without a throughput, on the simulator", () => {
  it("starts the sender at what the simulated network holds its number at: 20 for one ending in 0020, 1,000 for 1000, else 80; a throughput given wins", async () => {
    const created = async (phoneNumber: string, throughputMps = 0) =>
      (await t.console(SenderService).createSender({ workspaceId: workspace, phoneNumber, name: `Sender ${phoneNumber}`, throughputMps })).sender!;
    expect(await created("4915100110020")).toMatchObject({ throughputMps: 20, throughputSource: ThroughputSource.NETWORK });
    expect(await created("4915100111000")).toMatchObject({ throughputMps: 1000, throughputSource: ThroughputSource.NETWORK });
    expect(await created("4915100110001")).toMatchObject({ throughputMps: 80, throughputSource: ThroughputSource.NETWORK });
    expect(await created("4915100112000", 250)).toMatchObject({ throughputMps: 250, throughputSource: ThroughputSource.GIVEN });
    const overRest = await consoleRest("POST", `/console/v1/workspaces/${workspace}/senders`, { phone_number: "4915100130020", name: "Shared" });
    expect(overRest.json).toMatchObject({ throughput_mps: 20, throughput_source: "network" });
  });
});
