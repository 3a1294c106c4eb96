import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { MessagingLimit, WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { MessageService, MessageStatus, QueuedReason } from "../gen/messaging/v1/messages_pb.js";
import { grpcJsCall, rest } from "./helpers/clients.js";
import { createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * Dispatch paced against the network's limits (README "Pacing"), against the
 * simulator enforcing WhatsApp's limits as the Cloud API does (130429 for a
 * number's throughput, 131056 for the pair rate), over REST; the network's
 * refusals read from /metrics as an operator would.
 */

let t: TestService;
let workspace: string;
let template: string;
/** The key of the test running: each test sends and reads with its own (each has its own budget per minute). */
let key: string;

beforeAll(async () => {
  t = await createTestService({
    config: { ...FAST_MESSAGING, logLevel: "error", pairRateIntervalMs: 1000, pairRateBurst: 2, simulatorPairIntervalMs: 1000, simulatorPairBurst: 2 },
  });
  workspace = await t.createWorkspace("Pacing", 10_000);
  template = await createTemplate(t, workspace);
});
beforeEach(async () => {
  key = (await t.createKey(workspace, { scopes: ["messages:send", "messages:read"], rateLimitPerMin: 100 })).secret;
});
afterAll(() => t?.close());

/** The network's refusals so far with `code`, from GET /metrics (msgsvc_network_refusals_total). */
async function refusals(code: number): Promise<number> {
  const text = await (await fetch(`${t.consoleUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`msgsvc_network_refusals_total{code="${code}"}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

async function sender(phoneNumber: string, throughputMps?: number): Promise<string> {
  const { sender } = await t.console(SenderService).createSender({ workspaceId: workspace, phoneNumber, name: `Sender ${phoneNumber}`, throughputMps });
  return sender!.id;
}

/** Sends a batch of one message to each of `recipients`; resolves to the message ids in order. */
async function sendBatch(from: string, recipients: string[]): Promise<string[]> {
  const items = recipients.map((to, i) => ({ to, sender: from, template: { id: template, variables: { name: "Ada", code: String(i) } } }));
  const res = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key, body: { messages: items } });
  expect(res.status).toBe(200);
  const results = (res.json as { results: { message: { message_id: string } | null }[] }).results;
  return results.map((r) => r.message!.message_id);
}

/**
 * The messages once each has left (its status past accepted: waited for in the database), as the sending key reads
 * them back (one list request), in the order of `ids`.
 */
async function whenSent(ids: string[], secret = key): Promise<{ id: string; status: string; sentAt: number }[]> {
  const messages = t.service.db.collection<{ _id: string; status: string }>("messages");
  await eventually(async () => ((await messages.countDocuments({ _id: { $in: ids }, status: "accepted" })) === 0 ? true : undefined), 60_000, 200);
  const listed = await rest(t.publicUrl, "GET", "/v1/messages?page_size=100", { key: secret });
  expect(listed.status).toBe(200);
  const byId = new Map((listed.json as { data: { message_id: string; status: string; sent_at?: string }[] }).data.map((m) => [m.message_id, m]));
  return ids.map((id) => ({ id, status: byId.get(id)!.status, sentAt: Date.parse(byId.get(id)!.sent_at ?? "") }));
}

describe("pacing against the network's limits", () => {
  it("sends a number's messages at its throughput: the network refuses none, and they are spread over the seconds the rate needs", async () => {
    // The simulator holds numbers ending in 0020 at 20 messages per second; the sender says so.
    const from = await sender("4915100010020", 20);
    const before = await refusals(130429);
    const ids = await sendBatch(from, Array.from({ length: 60 }, (_, i) => `49151200${String(i).padStart(5, "0")}`));
    const sent = await whenSent(ids);
    expect(sent.every((m) => m.status !== "failed")).toBe(true);
    // None, or one on a machine loaded enough to delay a message between its turn and the network's count of it
    // (the bench's campaigns measure the share: README "Pacing"); without pacing, most of the 60 are refused.
    expect(await refusals(130429)).toBeLessThanOrEqual(before + 1);
    // 60 messages at 20 a second: at least two seconds from the first to the last, however fast the machine.
    const times = sent.map((m) => m.sentAt).sort((a, b) => a - b);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(2000);
  });

  it("converges on a number the network holds lower than configured: refused for throughput, every message sent in the end, its attempts not used up", async () => {
    const from = await sender("4915100020020", 80); // configured at 80, held at 20 by the network
    const before = await refusals(130429);
    const ids = await sendBatch(from, Array.from({ length: 100 }, (_, i) => `49151300${String(i).padStart(5, "0")}`));
    const sent = await whenSent(ids);
    // A refusal for throughput is not an attempt: more refusals than DISPATCH_MAX_ATTEMPTS (8) fail no message.
    expect(sent.filter((m) => m.status === "failed")).toEqual([]);
    expect((await refusals(130429)) - before).toBeGreaterThan(0);
  });

  it("spaces the messages to one recipient by the pair rate after its burst, while other recipients go on", async () => {
    const from = await sender("4915100030001");
    const before = await refusals(131056);
    const ids = await sendBatch(from, [...Array.from({ length: 6 }, () => "4915140000001"), "4915140000002"]);
    // The sixth message to the recipient (its turn 5 s on: a burst of 2, one of them kept in reserve, then one a
    // second) waits in the database, its reason and expected time shown.
    const waiting = await eventually(async () => {
      const m = (await rest(t.publicUrl, "GET", `/v1/messages/${ids[5]}`, { key })).json as { status: string; queued_reason?: string; estimated_send_at?: string };
      return m.queued_reason ? m : undefined;
    }, 3_000, 100);
    expect(waiting.status).toBe("accepted");
    expect(waiting.queued_reason).toBe("recipient_pair_rate");
    expect(Date.parse(waiting.estimated_send_at ?? "")).toBeGreaterThan(Date.now());
    const sent = await whenSent(ids);
    expect(sent.every((m) => m.status !== "failed")).toBe(true);
    expect(await refusals(131056)).toBe(before);
    const toFirst = sent.slice(0, 6).map((m) => m.sentAt).sort((a, b) => a - b);
    // One a second: at least about five seconds from the first to the sixth.
    expect(toFirst[5]! - toFirst[0]!).toBeGreaterThanOrEqual(4900);
    // The other recipient did not wait for them.
    expect(sent[6]!.sentAt).toBeLessThan(toFirst[3]!);
  });
});

describe("a pair refusal from the network", () => {
  let u: TestService;
  beforeAll(async () => {
    // Dispatch without a pair rate of its own: the network's refusals pace the recipient.
    u = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", pairRateIntervalMs: 0, simulatorPairIntervalMs: 1000, simulatorPairBurst: 1 } });
  });
  afterAll(() => u?.close());

  it("makes only that recipient wait its backoff (1 s first), and the message is sent, its attempts not used up", async () => {
    const ws = await u.createWorkspace("Pair refusals", 100);
    const k = (await u.createKey(ws, { scopes: ["messages:send", "messages:read"] })).secret;
    const { sender } = await u.console(SenderService).createSender({ workspaceId: ws, phoneNumber: "4915100040001", name: "Support" });
    const tpl = await createTemplate(u, ws);
    const send = (to: string) =>
      rest(u.publicUrl, "POST", "/v1/messages", { key: k, body: { to, sender: sender!.id, template: { id: tpl, variables: { name: "Ada", code: "1" } } } });
    const first = await send("4915150000001");
    const second = await send("4915150000001");
    const other = await send("4915150000002");
    for (const r of [first, second, other]) expect(r.status).toBe(200);
    const ids = [first, second, other].map((r) => (r.json as { message_id: string }).message_id);
    // Waited for in the database (the key's budget is 30 requests a minute), then read back as the key sees them.
    const stored = u.service.db.collection<{ _id: string; status: string }>("messages");
    await eventually(async () => ((await stored.countDocuments({ _id: { $in: ids }, status: "accepted" })) === 0 ? true : undefined), 30_000, 100);
    const settled = await Promise.all(ids.map(async (id) => (await rest(u.publicUrl, "GET", `/v1/messages/${id}`, { key: k })).json as { status: string; sent_at?: string }));
    expect(settled.map((m) => m.status === "failed")).toEqual([false, false, false]);
    const text = await (await fetch(`${u.consoleUrl}/metrics`)).text();
    expect(text).toMatch(/msgsvc_network_refusals_total\{code="131056"\} [1-9]/);
    // The other recipient went at once; the second message to the first recipient a second or more after the first.
    const [a, b, c] = settled.map((m) => Date.parse(m.sent_at ?? ""));
    expect(b! - a!).toBeGreaterThanOrEqual(900);
    expect(c!).toBeLessThan(b!);
  });
});

describe("the messaging limit of a workspace (unique recipients in a moving 24 hours)", () => {
  it("holds messages to new recipients past it with queued_reason daily_limit, lets repeat recipients through, and releases them when it is raised", async () => {
    const ws = await t.createWorkspace("Portfolio", 1_000);
    const k = (await t.createKey(ws, { scopes: ["messages:send", "messages:read"], rateLimitPerMin: 100 })).secret;
    // Set over the console's REST API, with the field's errors named; its form read back over Connect.
    const patch = (body: unknown, mask = "messaging_limit") =>
      rest(t.consoleUrl, "PATCH", `/console/v1/workspaces/${ws}?update_mask=${mask}`, { key: TEST_CONSOLE_TOKEN, body });
    const wrongMask = await patch({ name: "Other" }, "name");
    expect(wrongMask.status).toBe(400);
    expect(JSON.stringify(wrongMask.json)).toContain("update_mask[0]");
    const wrongTier = await patch({ messaging_limit: "tier_3k" });
    expect(wrongTier.status).toBe(400);
    const set = await patch({ messaging_limit: "tier_250" });
    expect(set.status).toBe(200);
    expect((set.json as { messaging_limit: string }).messaging_limit).toBe("tier_250");
    const read = await t.console(WorkspaceService).getWorkspace({ id: ws });
    expect(read.workspace!.messagingLimit).toBe(MessagingLimit.TIER_250);

    const from = (await t.console(SenderService).createSender({ workspaceId: ws, phoneNumber: "4915100050001", name: "Campaign" })).sender!.id;
    const tpl = await createTemplate(t, ws);
    // 255 recipients, and 3 of them twice: 250 go, the 3 repeats go too, 5 new ones wait.
    const recipients = Array.from({ length: 255 }, (_, i) => `4915160${String(i).padStart(5, "0")}`);
    const items = [...recipients, ...recipients.slice(0, 3)].map((to) => ({ to, sender: from, template: { id: tpl, variables: { name: "Ada", code: "1" } } }));
    const batch = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: k, body: { messages: items } });
    expect(batch.status).toBe(200);
    const ids = (batch.json as { results: { message: { message_id: string } }[] }).results.map((r) => r.message.message_id);
    const stored = t.service.db.collection<{ _id: string; status: string; dispatch?: { queued_reason?: string } }>("messages");
    const waitingIds = await eventually(async () => {
      const left = await stored.find({ _id: { $in: ids }, status: "accepted" }).toArray();
      return left.length === 5 && left.every((m) => m.dispatch?.queued_reason === "daily_limit") ? left.map((m) => m._id) : undefined;
    }, 60_000, 200);
    expect(await stored.countDocuments({ _id: { $in: ids }, status: { $nin: ["accepted", "failed"] } })).toBe(253);
    expect(new Set(waitingIds.map((id) => items[ids.indexOf(id)]!.to)).size).toBe(5);

    // Read back while they wait: over REST and over gRPC, with the reason and when the window frees room (within 25 h).
    const now = Date.now();
    const overRest = (await rest(t.publicUrl, "GET", `/v1/messages/${waitingIds[0]}`, { key: k })).json as { status: string; queued_reason: string; estimated_send_at: string };
    expect(overRest.status).toBe("accepted");
    expect(overRest.queued_reason).toBe("daily_limit");
    expect(Date.parse(overRest.estimated_send_at) - now).toBeGreaterThan(23 * 3_600_000);
    expect(Date.parse(overRest.estimated_send_at) - now).toBeLessThanOrEqual(25 * 3_600_000);
    const overGrpc = await grpcJsCall(t.publicUrl.replace("http://", ""), MessageService.method.getMessage, { id: waitingIds[1]! }, { authorization: `Bearer ${k}` });
    expect(overGrpc.error).toBeUndefined();
    expect(overGrpc.response!.message!.queuedReason).toBe(QueuedReason.DAILY_LIMIT);
    expect(overGrpc.response!.message!.status).toBe(MessageStatus.ACCEPTED);

    // The console shows how much of the limit is used: over REST and in the CLI (which refuses a value outside the tiers).
    const got = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${ws}`, { key: TEST_CONSOLE_TOKEN });
    expect(got.json).toMatchObject({ messaging_limit: "tier_250", messaging_limit_used: 250 });
    const shown = await msgsvc(t, ["workspaces", "get", ws]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/tier_250/);
    expect(shown.stdout).toMatch(/\b250\b/);
    const wrongCli = await msgsvc(t, ["workspaces", "update", ws, "--messaging-limit", "tier_3k"]);
    expect(wrongCli.code).not.toBe(0);
    expect(wrongCli.stderr).toMatch(/--messaging-limit.*tier_2k/s);

    // A value outside the tiers is refused, naming the field; the next tier releases the five at once.
    await expect(t.console(WorkspaceService).updateWorkspace({ workspace: { id: ws, messagingLimit: 99 as MessagingLimit }, updateMask: { paths: ["messaging_limit"] } })).rejects.toSatisfy(
      (err: unknown) => err instanceof ConnectError && err.code === Code.InvalidArgument && err.rawMessage.includes("workspace.messaging_limit"),
    );
    const raised = await t.console(WorkspaceService).updateWorkspace({ workspace: { id: ws, messagingLimit: MessagingLimit.TIER_2K }, updateMask: { paths: ["messaging_limit"] } });
    expect(raised.workspace!.messagingLimit).toBe(MessagingLimit.TIER_2K);
    await eventually(async () => ((await stored.countDocuments({ _id: { $in: waitingIds }, status: "accepted" })) === 0 ? true : undefined), 60_000, 200);
    expect(await stored.countDocuments({ _id: { $in: ids }, status: "failed" })).toBe(0);
  }, 120_000);
});
