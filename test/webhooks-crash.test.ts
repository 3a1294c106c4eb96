import { randomUUID } from "node:crypto";
import { once } from "node:events";
import type { ChildProcess } from "node:child_process";
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, inject, it } from "vitest";
import { verifyWebhookSignature } from "../src/webhooks/signature.js";
import { rest } from "./helpers/clients.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { startReceiver } from "./helpers/receivers.js";
import { eventually } from "./helpers/test-service.js";

/*
 * kill -9 of worker and API processes, seven times in turn, while messages
 * are sent and their events published (issue: the delivery engine must
 * lose nothing). API processes publish events and make first attempts; the
 * workers claim retries and what dead processes left leased. In the end
 * every stored event of the workspace reached the receiver, every request
 * carried a valid signature, and a request seen twice (the at-least-once
 * duplicate of an attempt cut by a kill) carried the same event id and body.
 */

const CONSOLE_TOKEN = "webhooks-crash-console-token-0123456789";
const KILLS = 7;
const CLIENTS = 12;
/** Answered sends between two kills. */
const SENDS_PER_KILL = 20;
const database = `test_webhooks_crash_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const mongoUri = inject("mongoUri");
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  const client = new MongoClient(mongoUri);
  await client.db(database).dropDatabase();
  await client.close();
});

const env = {
  MONGODB_URI: mongoUri,
  MONGODB_DATABASE: database,
  CONSOLE_TOKEN,
  SIMULATOR_SENT_DELAY_MS: "5",
  SIMULATOR_DELIVERED_DELAY_MS: "40",
  SIMULATOR_READ_DELAY_MS: "80",
  SIMULATOR_OUT_OF_ORDER_PERCENT: "0",
  MESSAGES_SWEEP_INTERVAL_MS: "1000",
  DISPATCH_CLAIM_TIMEOUT_MS: "3000",
  RECOVERY_AGE_MS: "2000",
  JOB_POLL_INTERVAL_MS: "200",
  // Workers make the simulated network's reports (README "Design" §10): they claim them every half second.
  QUEUE_CLAIM_INTERVAL_MS: "500",
  WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_SCHEDULE: "0ms,300ms,300ms,300ms,300ms,300ms,300ms",
  WEBHOOK_ATTEMPT_TIMEOUT_MS: "1000",
  WEBHOOK_LEASE_MS: "2100",
  WEBHOOK_CLAIM_INTERVAL_MS: "200",
};

async function start(role: "api" | "worker") {
  const started = await startServiceProcess({ ...env, ROLE: role });
  children.push(started.child);
  return started;
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

describe("worker and API processes killed with SIGKILL while events are published", () => {
  it("loses no event: each reaches the receiver, every request is signed, a duplicate repeats the same event", async () => {
    // A short wait before answering keeps attempts in flight when a process is killed.
    const receiver = await startReceiver((_req, res) => setTimeout(() => res.writeHead(200).end("ok"), 15));
    let api = await start("api");
    let worker = await start("worker");
    const consoleRest = async (path: string, body: unknown) => {
      const res = await rest(`http://127.0.0.1:${api.consolePort}`, "POST", path, { key: CONSOLE_TOKEN, body });
      expect(res.status, res.text).toBe(200);
      return res.json;
    };
    const workspaceId = (await consoleRest("/console/v1/workspaces", { name: "Webhooks crash", credits: 100_000 })).id;
    // One key per client: at most 100 sends a minute each (spec §Rate limits).
    const keys: string[] = [];
    for (let i = 0; i < CLIENTS; i++) keys.push((await consoleRest(`/console/v1/workspaces/${workspaceId}/api_keys`, { name: `load ${i}`, scopes: ["messages:send"], rate_limit_per_min: 100 })).secret);
    const senderId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "4915100000077", name: "Crash" })).id;
    const templateId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/templates`, { name: "crash_hook", language: "en", body: "Hi {{name}}" })).id;
    const created = await consoleRest(`/console/v1/workspaces/${workspaceId}/webhook_endpoints`, {
      name: "crash",
      url: receiver.url,
      events: ["message.sent", "message.delivered", "message.read", "message.failed"],
    });
    const secret = created.secret as string;

    // Sends from twelve clients to whichever API process runs (one every 0.7 s each), until the kills are over.
    let answered = 0;
    let loading = true;
    const load = async (key: string) => {
      while (loading) {
        const port = api.child.exitCode === null && api.child.signalCode === null ? api.publicPort : undefined;
        const res = port
          ? await fetch(`http://127.0.0.1:${port}/v1/messages`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
              body: JSON.stringify({ to: `4917000${String(answered).padStart(5, "0")}`, sender: senderId, template: { id: templateId, variables: { name: "Ada" } } }),
            }).catch(() => undefined)
          : undefined;
        if (res?.status === 200) answered++;
        await res?.arrayBuffer();
        // Within the key's rate limit, however long the kills take.
        await new Promise((resolve) => setTimeout(resolve, 700));
      }
    };
    const clients = Promise.all(keys.map(load));

    // Seven kills, worker and API in turn, each after 20 more answered sends; a new process replaces the killed one.
    for (let k = 0; k < KILLS; k++) {
      const target = answered + SENDS_PER_KILL;
      await eventually(async () => (answered >= target ? true : undefined), 30_000);
      if (k % 2 === 0) {
        await kill(worker.child);
        worker = await start("worker");
      } else {
        await kill(api.child);
        api = await start("api");
      }
    }
    loading = false;
    await clients;

    const client = new MongoClient(mongoUri);
    try {
      const db = client.db(database);
      const events = db.collection<{ _id: string; type: string }>("events");
      // Leases of 2.1 s end, claims every 200 ms, retries 300 ms apart: everything delivered well within 60 s on a busy machine.
      const stored = await eventually(async () => {
        // The simulated network's reports are all made (by the workers) first: no event is still to come.
        if ((await db.collection("simulator_reports").countDocuments({})) > 0) return undefined;
        if ((await db.collection("messages").countDocuments({ "events_pending.0": { $exists: true } })) > 0) return undefined;
        const all = await events.find({ workspace_id: workspaceId } as never).toArray();
        const seen = new Set(receiver.requests.map((r) => r.headers["service-delivery"]));
        return all.length > 0 && all.every((e) => seen.has(e._id)) ? all : undefined;
      }, 60_000).catch(async (err: Error) => {
        const seen = new Set(receiver.requests.map((r) => r.headers["service-delivery"]));
        const missing = (await events.find({ workspace_id: workspaceId } as never).toArray()).filter((e) => !seen.has(e._id));
        const deliveries = await db.collection("webhook_deliveries").find({ event_id: { $in: missing.slice(0, 5).map((e) => e._id) } } as never).toArray();
        throw new Error(`${err.message}: ${missing.length} events not received, e.g. ${JSON.stringify(missing.slice(0, 5))}; their deliveries ${JSON.stringify(deliveries)}`);
      });
      expect(answered).toBeGreaterThanOrEqual(KILLS * SENDS_PER_KILL);
      expect([...new Set(stored.map((e) => e.type))]).toEqual(expect.arrayContaining(["message.sent", "message.delivered", "message.read"]));
      const deliveries = db.collection<{ event_id: string; status: string }>("webhook_deliveries");
      await eventually(async () => ((await deliveries.countDocuments({ status: { $ne: "succeeded" } })) === 0 ? true : undefined), 30_000);
      expect(await deliveries.countDocuments({})).toBe(await events.countDocuments({ workspace_id: workspaceId } as never));

      // Every request verifies with the endpoint's secret; its id header names the event of its body.
      const bodies = new Map<string, string>();
      for (const request of receiver.requests) {
        const id = request.headers["service-delivery"] as string;
        expect(verifyWebhookSignature(request.body, request.headers["service-signature"] as string, secret)).toBe(true);
        expect((JSON.parse(request.body) as { id: string }).id).toBe(id);
        // A duplicate carries the same bytes as the first request for its event.
        expect(bodies.get(id) ?? request.body).toBe(request.body);
        bodies.set(id, request.body);
      }
      const stray = [...bodies.keys()].filter((id) => !stored.some((e) => e._id === id));
      expect(stray).toEqual([]);
    } finally {
      await client.close();
      await receiver.close();
    }
  }, 180_000);
});
