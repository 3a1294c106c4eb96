import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { afterAll, describe, expect, inject, it } from "vitest";
import { MongoClient, type Db } from "mongodb";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { rest } from "./helpers/clients.js";
import { consoleClients, expectSettled, sendsOf, startSlowNetwork } from "./helpers/crash-checks.js";
import { startFakeGraphApi } from "./helpers/fake-graph-api.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { eventually } from "./helpers/test-service.js";

/*
 * kill -9 of the processes that hold messages waiting for their turn under
 * the network's limits (README "Pacing") and scheduled messages (README
 * "Scheduled sends, cancellation and validity"): an API process accepts them
 * and a worker takes what waits; both are killed mid-way and another worker
 * takes over. Every accepted message ends sent exactly once (counted at a
 * local Graph API stand-in, by our message id), or failed (interrupted: at
 * most once at the network; expired or canceled: never) with its credits
 * given back; none stays waiting; every final status has its event; the
 * balance and the ledger add up to the opening credits less what was sent.
 */

const CONSOLE_TOKEN = "queue-crash-console-token-0123456789";
const OPENING_CREDITS = 1000;
const mongoUri = inject("mongoUri");
const children: Parameters<typeof stopProcess>[0][] = [];
const databases: string[] = [];

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  const client = new MongoClient(mongoUri);
  for (const database of databases) await client.db(database).dropDatabase();
  await client.close();
});

/**
 * The filter of the messages a live process holds under a lease not yet lapsed whose name matches `lease`
 * (`<owner>:new` for a message its accepting process holds, `<owner>:<round>` for one a worker's claim took): waiting
 * for their turn (README "Pacing"; `pending`), or in the middle of their network call (`claimed`).
 */
function heldBy(lease: RegExp, state: "pending" | "claimed" = "pending") {
  return { status: { $in: ["scheduled", "accepted"] }, "dispatch.state": state, lease_owner: lease, due_at: { $gt: new Date() } } as never;
}

/** Whether the process named by `lease` (see heldBy) holds messages both waiting for their turn and being handed to the network. */
async function holdsBoth(db: Db, lease: RegExp): Promise<boolean> {
  const messages = db.collection("messages");
  return (await messages.countDocuments(heldBy(lease))) > 0 && (await messages.countDocuments(heldBy(lease, "claimed"))) > 0;
}

/** A fresh database, a Graph API stand-in that notes when each message first reached it, and the processes' settings. */
async function setUp(name: string) {
  const database = `test_queue_crash_${name}_${randomUUID().replaceAll("-", "").slice(0, 8)}`;
  databases.push(database);
  const firstSeen = new Map<string, number>();
  const graph = await startFakeGraphApi((req) => {
    const id = req.body?.biz_opaque_callback_data;
    if (typeof id === "string" && !firstSeen.has(id)) firstSeen.set(id, Date.now());
    return undefined;
  });
  // Every network call takes 400 ms: a process killed while it sends is in the middle of one.
  const network = await startSlowNetwork(graph.url, 400);
  const env = {
    MONGODB_URI: mongoUri,
    MONGODB_DATABASE: database,
    CONSOLE_TOKEN,
    NETWORK: "whatsapp",
    WHATSAPP_GRAPH_URL: network.url,
    WHATSAPP_ACCESS_TOKEN: "EAAG-queue-crash-token",
    WHATSAPP_APP_SECRET: "queue-crash-app-secret",
    WHATSAPP_VERIFY_TOKEN: "queue-crash-verify",
    MESSAGES_SWEEP_INTERVAL_MS: "1000",
    DISPATCH_CLAIM_TIMEOUT_MS: "3000",
    RECOVERY_AGE_MS: "2000",
    JOB_POLL_INTERVAL_MS: "200",
    QUEUE_CLAIM_INTERVAL_MS: "1000",
    // One message to a recipient at once, then one every 3 s: a few to one recipient wait for the pair rate.
    PAIR_RATE_BURST: "2",
    PAIR_RATE_INTERVAL_MS: "3000",
  };
  const api = await startServiceProcess({ ...env, ROLE: "api" });
  const worker = await startServiceProcess({ ...env, ROLE: "worker" });
  children.push(api.child, worker.child);
  const console = consoleClients(api.consolePort, CONSOLE_TOKEN);
  const { workspace } = await console(WorkspaceService).createWorkspace({ name: `Queue crash ${name}`, credits: BigInt(OPENING_CREDITS) });
  const workspaceId = workspace!.id;
  const { secret } = await console(ApiKeyService).createApiKey({ workspaceId, name: "queue crash", scopes: ["messages:send"], rateLimitPerMin: 100 });
  // 5 messages a second: paced at 95% of it, a few dozen messages wait seconds for their turn.
  const { sender } = await console(SenderService).createSender({ workspaceId, phoneNumber: "15550783883", name: "Slow", whatsappPhoneNumberId: "106540352242924", throughputMps: 5 });
  const { template } = await console(TemplateService).createTemplate({ workspaceId, name: "queue_crash", language: "en", body: "Hello {{name}}" });
  const client = new MongoClient(mongoUri);
  const db: Db = client.db(database);
  const base = `http://127.0.0.1:${api.publicPort}`;
  /** Sends one message over REST; resolves to its id. */
  const send = async (to: string, extra: Record<string, unknown> = {}) => {
    const res = await rest(base, "POST", "/v1/messages", { key: secret, body: { to, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada" } }, ...extra } });
    expect(res.status, res.text).toBe(200);
    return (res.json as { message_id: string }).message_id;
  };
  /** Sends a batch over REST (items: `to` and further fields of each message); resolves to the ids, every item accepted. */
  const sendBatch = async (batch: Record<string, unknown>[]) => {
    const body = { messages: batch.map((item) => ({ sender: sender!.id, template: { id: template!.id, variables: { name: "Ada" } }, ...item })) };
    const res = await rest(base, "POST", "/v1/messages:batch", { key: secret, body });
    expect(res.status, res.text).toBe(200);
    const answer = res.json as { accepted_count: number; results: { message: { message_id: string } | null }[] };
    expect(answer.accepted_count, res.text).toBe(batch.length);
    return answer.results.map((r) => r.message!.message_id);
  };
  /** Cancels a message over REST; resolves to whether it was canceled (409: it was held for dispatch). */
  const cancel = async (id: string, through = base) => {
    const res = await rest(through, "POST", `/v1/messages/${id}:cancel`, { key: secret, body: {} });
    expect([200, 409], res.text).toContain(res.status);
    return res.status === 200;
  };
  /** Kills a process with SIGKILL and waits for it to be gone. */
  const kill = async (child: typeof api.child) => {
    const exited = once(child, "exit");
    child.kill("SIGKILL");
    await exited;
  };
  /** Starts another worker. */
  /** Starts another API process; resolves to its public base URL. */
  const startApi = async () => {
    const next = await startServiceProcess({ ...env, ROLE: "api" });
    children.push(next.child);
    return `http://127.0.0.1:${next.publicPort}`;
  };
  const startWorker = async () => {
    const next = await startServiceProcess({ ...env, ROLE: "worker" });
    children.push(next.child);
    return next;
  };
  const close = async () => {
    await client.close();
    await network.close();
    await graph.close();
  };
  return { api, worker, graph, firstSeen, db, workspaceId, send, sendBatch, cancel, kill, startApi, startWorker, close };
}

describe("processes killed with SIGKILL while messages wait in their sender's queue", () => {
  it("sends every queued message once or fails it refunded, cancels and expires exactly, after another worker takes over", async () => {
    const s = await setUp("queued");
    try {
      const messages = s.db.collection<{ _id: string; status: string; dispatch?: { queued_reason?: string | null }; error?: { reason?: string | null } | null }>("messages");
      // One batch, so the queue is as deep at once however fast requests are served here: six to one recipient
      // first (the pair rate), then 50 to others (the sender's rate), then eight that may wait 3 s at most
      // (ttl_seconds), standing behind 50 messages at under 5 a second.
      const pair = "16505559000";
      const items = [
        ...Array.from({ length: 6 }, () => ({ to: pair })),
        ...Array.from({ length: 50 }, (_, i) => ({ to: `1650556${String(i).padStart(4, "0")}` })),
        ...Array.from({ length: 8 }, (_, i) => ({ to: `1650557${String(i).padStart(4, "0")}`, ttl_seconds: 3 })),
      ];
      const answered = await s.sendBatch(items);
      const shortLived = answered.slice(-8);

      // Cancel the six last due of those sent back to wait in the database for the sender's rate (each canceled,
      // unless a worker's claim took it meanwhile: 409), and one the API process holds for its turn (409 while it
      // holds it; 200 when it was sent back to the database just before).
      const postponed = { _id: { $nin: shortLived }, status: "accepted", "dispatch.state": "pending", "dispatch.queued_reason": "sender_rate", lease_owner: null } as never;
      await eventually(async () => ((await messages.countDocuments(postponed)) >= 6 ? true : undefined), 30_000);
      const toCancel = (await messages.find(postponed).sort({ "dispatch.estimated_send_at": -1 }).limit(6).toArray()).map((m) => m._id);
      const canceled: string[] = [];
      for (const id of toCancel) if (await s.cancel(id)) canceled.push(id);
      expect(canceled.length).toBeGreaterThan(0);
      const held = await messages.findOne(heldBy(/:new$/));
      if (held && (await s.cancel(held._id))) canceled.push(held._id);

      // Once some were sent and others wait in the database with either reason (the worker takes them when due),
      // 20 more: the API process holds them for their turn; killed while it holds some waiting and some being
      // handed to the network.
      await eventually(async () => {
        const waiting = await messages.distinct("dispatch.queued_reason", { status: "accepted", "dispatch.queued_reason": { $ne: null }, lease_owner: null } as never);
        return s.graph.requests.length >= 8 && waiting.includes("sender_rate") && waiting.includes("recipient_pair_rate") ? true : undefined;
      }, 30_000);
      answered.push(...(await s.sendBatch(Array.from({ length: 20 }, (_, i) => ({ to: `1650556${String(50 + i).padStart(4, "0")}` })))));
      await eventually(async () => ((await holdsBoth(s.db, /:new$/)) ? true : undefined), 30_000);
      await s.kill(s.api.child);
      const sentBeforeApiKill = s.graph.requests.length;
      expect(sentBeforeApiKill).toBeLessThan(answered.length - canceled.length);

      // What the dead API process held waiting for its turn is canceled through another API process as soon as its
      // lease lapsed, racing the worker's claim that takes it over (the worker, woken at that instant, mostly
      // wins): each either canceled (200) or taken (409), never both (checked below: a canceled message never
      // reaches the network).
      const orphans = await messages.find(heldBy(/:new$/)).project<{ _id: string; due_at: Date }>({ due_at: 1 }).toArray();
      expect(orphans.length).toBeGreaterThan(0);
      const otherApi = await s.startApi();
      const lapsed = Math.max(...orphans.map((m) => new Date(m.due_at).getTime()));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lapsed - Date.now()) + 50));
      const outcomes = await Promise.all(orphans.map((m) => s.cancel(m._id, otherApi)));
      canceled.push(...orphans.filter((_, i) => outcomes[i]).map((m) => m._id));

      // The worker takes what waits in the database when due; killed while it holds some in its own pacing wait.
      await eventually(async () => (s.graph.requests.length >= sentBeforeApiKill + 5 && (await holdsBoth(s.db, /:\d+$/)) ? true : undefined), 40_000);
      await s.kill(s.worker.child);
      const unsentAtKill = shortLived.filter((id) => sendsOf(s.graph.requests, id) === 0);
      expect(unsentAtKill.length).toBeGreaterThan(0);
      const heldByWorker = (await messages.find(heldBy(/:\d+$/)).project<{ _id: string; due_at: Date }>({ due_at: 1 }).toArray());
      const callingByWorker = (await messages.find(heldBy(/:\d+$/, "claimed")).project<{ _id: string; due_at: Date }>({ due_at: 1 }).toArray());
      expect(heldByWorker.length).toBeGreaterThan(0);

      // No worker runs until the short-lived ones are past their validity (those not sent fail as expired) and the
      // dead worker's leases lapsed: what it held waiting for its turn is then canceled (no process can take it),
      // what it was handing to the network is not (409: the network may have it).
      const validUntil = await messages.find({ _id: { $in: shortLived } } as never).toArray();
      const lastValid = Math.max(...validUntil.map((m) => new Date((m as unknown as { valid_until: Date }).valid_until).getTime()));
      const lastLease = Math.max(...[...heldByWorker, ...callingByWorker].map((m) => new Date(m.due_at).getTime()));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, lastValid - Date.now(), lastLease - Date.now()) + 200));
      for (const m of heldByWorker) expect(await s.cancel(m._id, otherApi), `${m._id} canceled once its holder's lease lapsed`).toBe(true);
      canceled.push(...heldByWorker.map((m) => m._id));
      for (const m of callingByWorker) expect(await s.cancel(m._id, otherApi), `${m._id} not canceled while its network call may have reached the network`).toBe(false);

      await s.startWorker();
      const stored = await expectSettled({ db: s.db, workspaceId: s.workspaceId, openingCredits: OPENING_CREDITS, answered, requests: s.graph.requests, timeoutMs: 90_000 });
      expect(stored).toHaveLength(answered.length);
      const byId = new Map(stored.map((m) => [m._id, m]));
      for (const id of canceled) expect(byId.get(id)!.status).toBe("canceled");
      // A short-lived message not sent before the kills is never sent: failed, as expired (or interrupted, when it
      // was being handed to the network at the kill).
      for (const id of unsentAtKill) {
        const m = byId.get(id)!;
        expect(m.status).toBe("failed");
        if (m.error?.reason !== "expired") expect(m.error?.title).toMatch(/interrupted/);
      }
      expect(unsentAtKill.some((id) => byId.get(id)!.error?.reason === "expired")).toBe(true);
      // Everything else went: sent, or failed as interrupted.
      for (const m of stored) {
        if (m.status === "failed" && m.error?.reason !== "expired") expect(m.error?.title).toMatch(/interrupted/);
        if (m.status === "failed" && m.error?.reason === "expired") expect(shortLived).toContain(m._id);
      }
      expect(stored.filter((m) => m.status === "sent").length).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  }, 180_000);
});

describe("processes killed with SIGKILL before and around the send_at of scheduled messages", () => {
  it("sends each scheduled message not canceled once, never before its send_at, and refunds the canceled ones", async () => {
    const s = await setUp("scheduled");
    try {
      const messages = s.db.collection<{ _id: string; status: string }>("messages");
      // Two groups of 12, due 6 s and 10 s ahead; at 5 a second each group waits for its turn after its send_at.
      const now = Date.now();
      const groups = [new Date(now + 6000), new Date(now + 10_000)].map((at) => ({ at, ids: [] as string[] }));
      for (const group of groups) {
        for (let i = 0; i < 12; i += 4) {
          group.ids.push(
            ...(await Promise.all(
              [0, 1, 2, 3].map((j) => s.send(`1650558${String(group.ids.length + j).padStart(2, "0")}${groups.indexOf(group)}0`, { send_at: group.at.toISOString() })),
            )),
          );
        }
      }
      const answered = groups.flatMap((g) => g.ids);
      const sendAt = new Map(groups.flatMap((g) => g.ids.map((id) => [id, g.at.getTime()] as const)));
      // Three of each group canceled: scheduled, held by no process, so each cancellation matches.
      const canceled = groups.flatMap((g) => g.ids.slice(0, 3));
      for (const id of canceled) expect(await s.cancel(id)).toBe(true);

      // Before send_at (seconds ahead): the API process goes.
      await s.kill(s.api.child);
      // Around the first send_at: the worker goes once it handed some of the first group to the network.
      await eventually(async () => (groups[0]!.ids.filter((id) => sendsOf(s.graph.requests, id) > 0).length >= 2 && (await holdsBoth(s.db, /:\d+$/)) ? true : undefined), 30_000);
      await s.kill(s.worker.child);
      // Another worker; killed around the second send_at.
      const second = await s.startWorker();
      await eventually(async () => (groups[1]!.ids.filter((id) => sendsOf(s.graph.requests, id) > 0).length >= 2 && (await holdsBoth(s.db, /:\d+$/)) ? true : undefined), 40_000);
      await s.kill(second.child);
      expect(await messages.countDocuments({ _id: { $in: answered }, status: { $in: ["scheduled", "accepted"] } } as never)).toBeGreaterThan(0);

      await s.startWorker();
      const stored = await expectSettled({ db: s.db, workspaceId: s.workspaceId, openingCredits: OPENING_CREDITS, answered, requests: s.graph.requests, timeoutMs: 90_000 });
      expect(stored).toHaveLength(answered.length);
      for (const m of stored) {
        if (canceled.includes(m._id)) {
          expect(m.status).toBe("canceled");
          continue;
        }
        // Sent once (the helper counts it), or failed as interrupted when a kill met its network call.
        if (m.status === "failed") expect(m.error?.title).toMatch(/interrupted/);
        else expect(m.status).toBe("sent");
        const seen = s.firstSeen.get(m._id);
        if (seen !== undefined) expect(seen).toBeGreaterThanOrEqual(sendAt.get(m._id)!);
        if (m.sent_at) expect(new Date(m.sent_at).getTime()).toBeGreaterThanOrEqual(sendAt.get(m._id)!);
      }
      expect(stored.filter((m) => m.status === "sent").length).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  }, 180_000);
});
