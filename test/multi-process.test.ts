import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { Writable } from "node:stream";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createLogger } from "../src/shared/logger.js";
import { EVENTS_PENDING } from "../src/messages/message-store.js";
import { startEmbeddedMongo, type EmbeddedDatabase } from "../src/store/embedded-mongo.js";
import { rest } from "./helpers/clients.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { answerOk, startReceiver, type Receiver } from "./helpers/receivers.js";
import { eventually } from "./helpers/test-service.js";

/*
 * The service as an operator runs it (README "Running in production"):
 * ROLE=api and ROLE=worker processes of the build, each its own process, on
 * one database (an embedded one of this suite's own, whose log is read, unless
 * the run has MONGODB_URI).
 *
 * - Roles: an api process accepts and dispatches at once; what waits (the
 *   simulated network's reports among it) is run by workers.
 * - kill -9 of an API process and then of a worker while 200 sends go to two
 *   APIs (each with an Idempotency-Key, retried on the other API when its
 *   process is gone): every answered message reaches read or failed, every
 *   event reaches a real local HTTP receiver at least once, the credits are
 *   exact, and the database logged nothing at warn level or above.
 */

const CONSOLE_TOKEN = "multi-process-console-token-0123456789";
const OPENING_CREDITS = 1000;
const SENDS = 200;
const CLIENTS = 8;
const SWEEP_INTERVAL_MS = 2000;

let ownDatabase: EmbeddedDatabase | undefined;
/** The embedded database's log records at warn level or above (its own database only). */
const databaseComplaints: Record<string, unknown>[] = [];
let mongoUri: string;
const databases: string[] = [];
const children: ChildProcess[] = [];
let receiver: Receiver;

beforeAll(async () => {
  if (process.env.MONGODB_URI) {
    mongoUri = inject("mongoUri");
  } else {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString("utf8").split("\n")) {
          if (!line) continue;
          const record = JSON.parse(line) as Record<string, unknown>;
          if ((record.level as number) >= 40) databaseComplaints.push(record);
        }
        done();
      },
    });
    ownDatabase = await startEmbeddedMongo({ kind: "memory" }, createLogger("info", "embedded-database-test", sink));
    mongoUri = ownDatabase.uri;
  }
  receiver = await startReceiver(answerOk);
}, 120_000);

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  const client = new MongoClient(mongoUri);
  for (const name of databases) await client.db(name).dropDatabase();
  await client.close();
  await receiver.close();
  await ownDatabase?.stop();
}, 120_000);

/** The environment of every process of one test: one database, fast intervals. */
function environment(database: string): Record<string, string> {
  databases.push(database);
  return {
    MONGODB_URI: mongoUri,
    MONGODB_DATABASE: database,
    CONSOLE_TOKEN,
    SIMULATOR_SENT_DELAY_MS: "200",
    SIMULATOR_DELIVERED_DELAY_MS: "1000",
    SIMULATOR_READ_DELAY_MS: "2000",
    SIMULATOR_OUT_OF_ORDER_PERCENT: "10",
    MESSAGES_SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS),
    QUEUE_CLAIM_INTERVAL_MS: "1000",
    DISPATCH_CLAIM_TIMEOUT_MS: "3000",
    // A spend whose message is not stored after this long is given back: long enough for a live process on a loaded
    // machine to store its message (2 s gave one back before a slow insert landed, and the balance came out 1 high).
    RECOVERY_AGE_MS: "10000",
    JOB_POLL_INTERVAL_MS: "500",
    WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_SCHEDULE: "0ms,500ms,1s,1s,1s,1s,1s",
    WEBHOOK_ATTEMPT_TIMEOUT_MS: "2000",
    WEBHOOK_LEASE_MS: "4100",
    WEBHOOK_CLAIM_INTERVAL_MS: "250",
  };
}

type Started = Awaited<ReturnType<typeof startServiceProcess>>;

async function start(env: Record<string, string>, role: "api" | "worker"): Promise<Started> {
  const started = await startServiceProcess({ ...env, ROLE: role });
  children.push(started.child);
  return started;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

const alive = (p: Started) => p.child.exitCode === null && p.child.signalCode === null;

/** A workspace with `keys` API keys, a sender, a template and a webhook endpoint to the receiver, through the console of `api`. */
async function setUp(api: Started, keys: number) {
  const consoleRest = async (path: string, body: unknown) => {
    const res = await rest(`http://127.0.0.1:${api.consolePort}`, "POST", path, { key: CONSOLE_TOKEN, body });
    expect(res.status, res.text).toBe(200);
    return res.json as Record<string, unknown>;
  };
  const workspaceId = (await consoleRest("/console/v1/workspaces", { name: "Several processes", credits: OPENING_CREDITS })).id as string;
  const secrets: string[] = [];
  for (let i = 0; i < keys; i++) {
    secrets.push((await consoleRest(`/console/v1/workspaces/${workspaceId}/api_keys`, { name: `client ${i}`, scopes: ["messages:send"], rate_limit_per_min: 100 })).secret as string);
  }
  const senderId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "4915100000088", name: "Processes" })).id as string;
  const templateId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/templates`, { name: "processes", language: "en", body: "Hi {{name}}" })).id as string;
  await consoleRest(`/console/v1/workspaces/${workspaceId}/webhook_endpoints`, {
    name: "receiver",
    url: receiver.url,
    events: ["message.sent", "message.delivered", "message.read", "message.failed"],
  });
  return { workspaceId, secrets, senderId, templateId };
}

describe("roles", () => {
  it("an api process accepts and dispatches at once; the simulated network's reports wait in the database for a worker", async () => {
    const env = environment(`test_roles_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
    const api = await start(env, "api");
    const { secrets, senderId, templateId } = await setUp(api, 1);
    const res = await rest(`http://127.0.0.1:${api.publicPort}`, "POST", "/v1/messages", {
      key: secrets[0],
      body: { to: "4915123450001", sender: senderId, template: { id: templateId, variables: { name: "Ada" } } },
    });
    expect(res.status, res.text).toBe(200);
    const id = res.json.message_id as string;
    const client = new MongoClient(mongoUri);
    try {
      const db = client.db(env.MONGODB_DATABASE);
      const messages = db.collection<{ _id: string; status: string }>("messages");
      const reports = db.collection<{ message_id: string; status: string }>("simulator_reports");
      // Dispatched by the api process itself: sent, with the network's reports stored, not made (no worker runs).
      await eventually(async () => ((await messages.findOne({ _id: id }))?.status === "sent" ? true : undefined), 30_000);
      const waiting = await eventually(async () => {
        const found = await reports.find({ message_id: id }).toArray();
        return found.length === 3 ? found : undefined;
      }, 30_000);
      expect(waiting.map((r) => r.status).sort()).toEqual(["delivered", "read", "sent"]);
      // Well past the read delay (2 s), still sent: an api process makes no report.
      const past = Date.now() + 3000;
      await eventually(async () => (Date.now() > past ? true : undefined), 10_000, 200);
      expect((await messages.findOne({ _id: id }))?.status).toBe("sent");
      // A worker makes them (they were due long ago): read, and the queue empty.
      await start(env, "worker");
      await eventually(async () => ((await messages.findOne({ _id: id }))?.status === "read" ? true : undefined), 30_000);
      await eventually(async () => ((await reports.countDocuments({ message_id: id })) === 0 ? true : undefined), 30_000);
    } finally {
      await client.close();
    }
  }, 120_000);
});

describe("2 api + 2 worker processes on one database, kill -9 of an api process and of a worker mid-run", () => {
  it("brings every accepted message to read or failed, delivers every event at least once, keeps the credits exact", async () => {
    const env = environment(`test_processes_${randomUUID().replaceAll("-", "").slice(0, 12)}`);
    const apis = [await start(env, "api"), await start(env, "api")];
    const workers = [await start(env, "worker"), await start(env, "worker")];
    const { workspaceId, secrets, senderId, templateId } = await setUp(apis[0]!, CLIENTS);

    // Recipients: ordinary ones, and the simulator's refusal (9990), failure after sent (9991), read before delivered
    // (9994) and every report twice (9995).
    const suffixes = ["0001", "0002", "0003", "9990", "9991", "9994", "9995"];
    const answered = new Map<number, string>();
    let next = 0;
    let lastAnswerAt = 0;
    /** Sends message n with its own Idempotency-Key until a process answers it: on the other API when one is gone, again after a 409 while a dead process's hold lapses. */
    const sendOne = async (n: number, secret: string) => {
      const body = JSON.stringify({ to: `491512${String(n).padStart(4, "0")}${suffixes[n % suffixes.length]}`, sender: senderId, template: { id: templateId, variables: { name: "Ada" } } });
      const deadline = Date.now() + 90_000;
      for (let tries = 0; Date.now() < deadline; tries++) {
        const api = alive(apis[(n + tries) % 2]!) ? apis[(n + tries) % 2]! : apis.find(alive)!;
        const res = await fetch(`http://127.0.0.1:${api.publicPort}/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json", "idempotency-key": `send-${n}` },
          body,
        }).catch(() => undefined);
        if (res?.status === 200) {
          answered.set(n, ((await res.json()) as { message_id: string }).message_id);
          lastAnswerAt = Date.now();
          return;
        }
        const text = await res?.text();
        if (res && res.status !== 409 && res.status !== 429 && res.status < 500) throw new Error(`send ${n}: ${res.status} ${text}`);
        await new Promise((resolve) => setTimeout(resolve, res?.status === 429 ? 2000 : 300));
      }
      throw new Error(`send ${n} was never answered`);
    };
    const client = async (c: number) => {
      while (next < SENDS) await sendOne(next++, secrets[c]!);
    };
    const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    await eventually(async () => (answered.size >= 60 ? true : undefined), 120_000, 20);
    await kill(apis[0]!.child);
    await eventually(async () => (answered.size >= 120 ? true : undefined), 120_000, 20);
    await kill(workers[0]!.child);
    await load;
    expect(answered.size).toBe(SENDS);
    const accepted = new Set(answered.values());

    const mongo = new MongoClient(mongoUri);
    try {
      const db = mongo.db(env.MONGODB_DATABASE);
      const messages = db.collection<{ _id: string; status: string; credits: number; refund_state: string; workspace_id: string }>("messages");
      const workspaces = db.collection<{ _id: string; credit_balance: number; credit_ops?: Record<string, unknown> }>("workspaces");
      // Settled: a dead process's claims lapse after 3 s, its reports, leases and credit changes after 10 s, the sweep
      // runs every 2 s; a generous deadline for a loaded machine, polled.
      const settleBy = lastAnswerAt + 60_000;
      // Settled also means no status change waits for its event: a process killed between a message's status and its
      // event leaves the mark (events_pending), and the sweep fires that event once the change is RECOVERY_AGE_MS old.
      const marked = { workspace_id: workspaceId, ...EVENTS_PENDING };
      /** Messages not final yet: neither read nor failed, or failed and not refunded. */
      const notFinal = { workspace_id: workspaceId, $or: [{ status: { $nin: ["read", "failed"] } }, { status: "failed", refund_state: { $ne: "done" } }] };
      await eventually(async () => {
        const open = await messages.countDocuments(notFinal);
        const ws = await workspaces.findOne({ _id: workspaceId });
        const eventsPending = await messages.countDocuments(marked);
        return open === 0 && eventsPending === 0 && Object.keys(ws?.credit_ops ?? {}).length === 0 ? true : undefined;
      }, Math.max(1000, settleBy - Date.now()), 250).catch(async (err: Error) => {
        const open = await messages.find(notFinal).toArray();
        const pendingCredits = (await workspaces.findOne({ _id: workspaceId }))?.credit_ops ?? {};
        const pendingEvents = await messages.find(marked).toArray();
        throw new Error(
          `${err.message}: not final ${JSON.stringify(open.map((m) => [m._id, m.status, m.refund_state]))}; credit operations pending ${JSON.stringify(pendingCredits)}; events pending ${JSON.stringify(pendingEvents.map((m) => [m._id, m.status, (m as { events_pending?: string[] }).events_pending]))}`,
        );
      });
      const stored = await messages.find({ workspace_id: workspaceId, direction: "outbound" } as never).toArray();
      // Every answered message stored once, no other message stored.
      expect(new Set(stored.map((m) => m._id))).toEqual(accepted);
      expect(stored.length).toBe(SENDS);
      for (const m of stored) expect(["read", "failed"]).toContain(m.status);
      // Credits exact: what is charged is what the balance lost.
      const charged = stored.filter((m) => m.refund_state !== "done").reduce((sum, m) => sum + m.credits, 0);
      expect((await workspaces.findOne({ _id: workspaceId }))!.credit_balance + charged).toBe(OPENING_CREDITS);
      // Every status reached has its event, and every event of the workspace reached the receiver at least once.
      const events = await eventually(async () => {
        const all = await db.collection<{ _id: string; type: string; data: { message_id: string } }>("events").find({ workspace_id: workspaceId } as never).toArray();
        const seen = new Set(receiver.requests.map((r) => r.headers["service-delivery"]));
        return all.length > 0 && all.every((e) => seen.has(e._id)) ? all : undefined;
      }, 60_000, 250);
      const fired = new Set(events.map((e) => `${e.data.message_id}:${e.type}`));
      for (const m of stored) expect(fired.has(`${m._id}:message.${m.status}`), `${m._id} ${m.status}`).toBe(true);
      // The simulator's queue is empty: every report was made.
      await eventually(async () => ((await db.collection("simulator_reports").countDocuments({})) === 0 ? true : undefined), 30_000, 250);
    } finally {
      await mongo.close();
    }
    // The database's expected conditions (duplicate keys the code handles, the killed processes' connections) are not
    // complaints.
    expect(databaseComplaints).toEqual([]);
  }, 300_000);
});
