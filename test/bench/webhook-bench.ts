import type { StoredEvent } from "../../src/events/event-bus.js";
import { randomUUID } from "node:crypto";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { WebhookEndpointService } from "../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { MongoClient, type Db } from "mongodb";
import { automaticAttemptId, deliveryId, type AttemptRecord, type DeliveryRecord } from "../../src/webhooks/delivery-store.js";
import { newId } from "../../src/shared/ids.js";
import { signWebhookPayload } from "../../src/webhooks/signature.js";
import { Pool } from "undici";
import { serviceProfileArgs, startProcess, stopProcess, TEST_WEBHOOK_SECRET_KEY } from "../helpers/processes.js";
import { commandCells, countsBetween, startCommandCounter } from "./command-counter.js";
import { benchProcessEntry, percentile, rssMiB, table } from "./harness.js";

/** Options of the webhook delivery benchmark. */
export interface WebhookBenchOptions {
  mongodbUri: string;
  /** Seconds of each run with new events. */
  seconds: number;
  /** Backlog sizes to drain, for example [10_000, 100_000]. */
  backlogs: number[];
}

const CONSOLE_TOKEN = "bench-console-token-0123456789";
const RECEIVERS = 4;
/** Deliveries of the warm-up's backlog (drained before any run is measured). */
const WARM_UP_BACKLOG = 5_000;

interface Stats {
  received: number;
  badSignatures: number;
  backlog: number;
  firstNs: string;
  lastNs: string;
  latenciesMs: number[];
}

interface Row {
  name: string;
  deliveries: number;
  seconds: number;
  latencies: number[];
  peakRssMiB: number;
  badSignatures: number;
  note: string;
  /** Database commands during the run, by "<command> <collection>" (none for the bare loop). */
  commands: Map<string, number>;
}

/**
 * Signed webhook deliveries sustained by one service process (API and
 * worker in one, on the real database; test/bench/webhook-service.ts, whose
 * memory is sampled) against local receivers in another process, which
 * check every signature:
 * - new events published at a steady rate (100, 250, 1,000/s), one endpoint each: the latency
 *   from publication (the event bus call in the service process, as the
 *   messaging capability makes it on a network report) to the receiver's arrival;
 * - new events from 32 publishers as fast as they go;
 * - a backlog of N deliveries (retries after an outage: the records the
 *   engine would have written, seeded directly): first pending (due in an
 *   hour) while new events arrive at 100 per second, then due at once and
 *   drained by the workers' claims while new events keep arriving at
 *   50 per second: deliveries/s (backlog and new events) from the instant
 *   the backlog fell due until it is drained, and the latency of the new
 *   events meanwhile;
 * - beside them, a bare loop that only signs and POSTs (undici, keep-alive,
 *   32 at once) to the same receivers: the ceiling without a database.
 *
 * The service's commands of each run are counted (by the embedded database,
 * or by a relay in front of another: test/bench/command-counter.ts) and
 * printed per delivery.
 */
export async function runWebhookBench(options: WebhookBenchOptions): Promise<string> {
  const receivers = await startProcess(benchProcessEntry("webhook-receivers"), { RECEIVERS: String(RECEIVERS) }, (line) =>
    Array.isArray(line.receiverPorts) ? (line.receiverPorts as number[]) : undefined,
  );
  const control = async (path: string, body?: unknown): Promise<Stats> => {
    const res = await fetch(`http://127.0.0.1:${receivers.value[0]}/control/${path}`, { method: body ? "POST" : "GET", body: body ? JSON.stringify(body) : undefined });
    return (await res.json()) as Stats;
  };
  const counter = await startCommandCounter(options.mongodbUri);
  const database = `bench_webhooks_${Date.now()}`;
  const service = await startProcess(
    benchProcessEntry("webhook-service"),
    {
      MONGODB_URI: counter.uri,
      MONGODB_DATABASE: database,
      HOST: "127.0.0.1",
      PORT: "0",
      CONSOLE_PORT: "0",
      CONSOLE_TOKEN,
      LOG_LEVEL: "warn",
      WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY,
      WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    },
    (line) => (typeof line.controlPort === "number" ? { controlPort: line.controlPort, consolePort: line.consolePort as number } : undefined),
    serviceProfileArgs(),
  );
  const publish = async (body: { perSecond?: number; publishers?: number; seconds?: number }): Promise<number> => {
    const res = await fetch(`http://127.0.0.1:${service.value.controlPort}/publish`, { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`publishing failed: ${await res.text()}`);
    return ((await res.json()) as { sent: number }).sent;
  };
  const stopPublishing = () => fetch(`http://127.0.0.1:${service.value.controlPort}/stop`, { method: "POST" });
  // Seeds and makes due the backlog directly (neither counted nor in the service process).
  const direct = await new MongoClient(options.mongodbUri).connect();
  const db = direct.db(database);
  const rows: Row[] = [];
  try {
    const endpoints = await createEndpoints(service.value.consolePort, receivers.value, control);
    await fetch(`http://127.0.0.1:${service.value.controlPort}/endpoints`, { method: "POST", body: JSON.stringify(endpoints) });
    let peak = 0;
    const sampler = setInterval(() => void rssMiB(service.child.pid!).then((mib) => (peak = Math.max(peak, mib ?? 0))), 100);
    const measure = async (name: string, run: () => Promise<{ deliveries: number; seconds: number; latencies: number[]; bad: number; note: string }>) => {
      peak = 0;
      const before = await counter.snapshot();
      const r = await run();
      const commands = countsBetween(before, await counter.snapshot());
      rows.push({ name, deliveries: r.deliveries, seconds: r.seconds, latencies: r.latencies, peakRssMiB: peak, badSignatures: r.bad, note: r.note, commands });
    };
    const collect = async (expected: number, field: "received" | "backlog") => {
      const all: Stats = { received: 0, badSignatures: 0, backlog: 0, firstNs: "0", lastNs: "0", latenciesMs: [] };
      const deadline = Date.now() + 600_000;
      while (all[field] < expected && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const s = await control("stats");
        all.received += s.received;
        all.backlog += s.backlog;
        all.badSignatures += s.badSignatures;
        for (const ms of s.latenciesMs) all.latenciesMs.push(ms);
        if (all.firstNs === "0") all.firstNs = s.firstNs;
        if (s.lastNs !== "0") all.lastNs = s.lastNs;
      }
      return all;
    };

    // Warm-up, not measured: connections, caches, and the JIT of both processes (the database's JVM compiles
    // for a minute and more, half of its CPU while a path is new) on new events' path and the claims' path.
    /**
     * Makes the waiting backlog due at one instant: the update (of `size` deliveries) sets a time far enough
     * ahead to finish before it (the embedded database updates about 10,000 a second), then this waits for
     * it; the update's own work is thus not counted in the drain. Resolves to that instant on the monotonic
     * clock the receivers stamp with (process.hrtime, in ns) and whether the update ran late.
     */
    const makeDue = async (size: number): Promise<{ dueNs: bigint; late: boolean }> => {
      const dueAt = new Date(Date.now() + Math.max(2_000, size / 4));
      const dueNs = process.hrtime.bigint() + BigInt(dueAt.getTime() - Date.now()) * 1_000_000n;
      await db.collection("webhook_deliveries").updateMany({ due_at: { $gt: dueAt } }, { $set: { due_at: dueAt } });
      const wait = dueAt.getTime() - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      return { dueNs, late: wait <= 0 };
    };
    await collect(await publish({ perSecond: 100, seconds: 3 }), "received");
    await seedBacklog(db, endpoints, WARM_UP_BACKLOG);
    await makeDue(WARM_UP_BACKLOG);
    await control("stats");
    await collect(WARM_UP_BACKLOG, "backlog");
    const atRate = (rate: number, label: string) =>
      measure(`new events, ${rate}/s for ${options.seconds} s${label}`, async () => {
        const sent = await publish({ perSecond: rate, seconds: options.seconds });
        const s = await collect(sent, "received");
        return { deliveries: s.received, seconds: options.seconds, latencies: s.latenciesMs, bad: s.badSignatures, note: `${sent} published` };
      });
    for (const rate of [100, 250, 1000]) await atRate(rate, "");
    await measure(`new events, 32 publishers as fast as they go, ${options.seconds} s`, async () => {
      const sent = await publish({ publishers: 32, seconds: options.seconds });
      const s = await collect(sent, "received");
      const seconds = Number(BigInt(s.lastNs) - BigInt(s.firstNs)) / 1e9;
      return { deliveries: s.received, seconds, latencies: s.latenciesMs, bad: s.badSignatures, note: `${sent} published` };
    });
    await measure(`bare sign-and-POST loop, 32 at once, ${options.seconds} s (no database)`, async () => {
      const stopAt = performance.now() + options.seconds * 1000;
      const pools = receivers.value.map((port) => new Pool(`http://127.0.0.1:${port}`, { connections: 64 }));
      let sent = 0;
      await Promise.all(
        Array.from({ length: 32 }, async (_, w) => {
          while (performance.now() < stopAt) {
            const i = (sent++ + w) % pools.length;
            const body = JSON.stringify({ id: randomUUID(), type: "message.delivered", created_at: new Date().toISOString(), data: { sent_ns: String(process.hrtime.bigint()) } });
            const res = await pools[i]!.request({
              path: "/hook",
              method: "POST",
              headers: { "content-type": "application/json", "service-signature": signWebhookPayload(endpoints[i]!.secret, body, Math.floor(Date.now() / 1000)) },
              body,
            });
            await res.body.dump();
          }
        }),
      );
      await Promise.all(pools.map((pool) => pool.close()));
      const s = await collect(sent, "received");
      const seconds = Number(BigInt(s.lastNs) - BigInt(s.firstNs)) / 1e9;
      return { deliveries: s.received, seconds, latencies: s.latenciesMs, bad: s.badSignatures, note: `${sent} posted` };
    });
    for (const size of options.backlogs) {
      const seeded = await seedBacklog(db, endpoints, size);
      // The backlog waits (due in an hour): new events must not notice it.
      await atRate(100, `, ${size.toLocaleString("en")} deliveries pending`);
      await measure(`backlog of ${size.toLocaleString("en")} due at once, plus new events at 50/s`, async () => {
        const { dueNs, late } = await makeDue(size);
        await control("stats");
        const publishing = publish({ perSecond: 50 });
        const s = await collect(size, "backlog");
        await stopPublishing();
        await publishing;
        // From the instant the backlog fell due (the wait for a worker to notice it counts) to the last delivery.
        const seconds = Number(BigInt(s.lastNs) - dueNs) / 1e9;
        return {
          deliveries: s.received,
          seconds,
          latencies: s.latenciesMs,
          bad: s.badSignatures,
          note: `${(s.backlog / seconds).toFixed(0)}/s of them from the backlog; seeded in ${seeded.toFixed(0)} s${late ? " (made due late: the update overlapped the drain)" : ""}; latency: new events`,
        };
      });
    }
    clearInterval(sampler);
  } finally {
    await stopProcess(service.child);
    await direct.close();
    await stopProcess(receivers.child);
    await counter.close();
  }
  const rate = (prefix: string) => {
    const row = rows.find((r) => r.name.startsWith(prefix));
    return row ? row.deliveries / row.seconds : NaN;
  };
  return [
    `Webhook deliveries: one service process (ROLE=all), ${RECEIVERS} receivers in another process (signatures checked), one endpoint per event`,
    table(
      ["run", "deliveries/s", "p50 ms", "p99 ms", "peak RSS MiB", "bad signatures", "notes"],
      rows.map((r) => {
        const sorted = Float64Array.from(r.latencies).sort();
        return [
          r.name,
          (r.deliveries / r.seconds).toFixed(0),
          sorted.length ? percentile(sorted, 50).toFixed(1) : "-",
          sorted.length ? percentile(sorted, 99).toFixed(1) : "-",
          r.peakRssMiB.toFixed(0),
          String(r.badSignatures),
          r.note,
        ];
      }),
    ),
    "Latency: from the publishing call to the receiver's arrival (same machine, monotonic clock).",
    `32 publishers / bare sign-and-POST loop: ${(rate("new events, 32 publishers") / rate("bare sign-and-POST")).toFixed(2)}`,
    "",
    `Database commands per delivery, counted ${counter.where} (heartbeats left out), by run:`,
    table(
      ["run", "per delivery", "commands"],
      rows
        .filter((r) => !r.name.startsWith("bare"))
        .map((r) => [r.name, ...commandCells(r.commands, r.deliveries)]),
    ),
  ].join("\n");
}

/** One workspace and endpoint per receiver, through the console API; gives the receivers the secrets. */
async function createEndpoints(consolePort: number, ports: number[], control: (path: string, body: unknown) => Promise<unknown>) {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${CONSOLE_TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${consolePort}`, httpVersion: "1.1", interceptors: [auth] });
  const secrets: Record<string, string> = {};
  const endpoints = [];
  for (const port of ports) {
    const { workspace } = await createClient(WorkspaceService, transport).createWorkspace({ name: `bench ${port}` });
    const res = await createClient(WebhookEndpointService, transport).createWebhookEndpoint({
      workspaceId: workspace!.id,
      name: "bench",
      url: `http://127.0.0.1:${port}/hook`,
      events: ["message.delivered"],
    });
    secrets[port] = res.secret;
    endpoints.push({ workspaceId: workspace!.id, endpointId: res.webhookEndpoint!.id, secret: res.secret });
  }
  await control("secrets", secrets);
  return endpoints;
}

/**
 * Writes what the engine would hold after an outage: `size` events, their
 * deliveries with a failed first attempt each, the retry due in an hour
 * (the run makes them due). Returns the seconds it took.
 */
async function seedBacklog(db: Db, endpoints: { workspaceId: string; endpointId: string }[], size: number): Promise<number> {
  const began = performance.now();
  const now = new Date();
  for (let start = 0; start < size; start += 500) {
    const events = [];
    const deliveries: DeliveryRecord[] = [];
    const attempts: AttemptRecord[] = [];
    for (let i = start; i < Math.min(size, start + 500); i++) {
      const ep = endpoints[i % endpoints.length]!;
      const id = newId();
      const data = { message_id: newId("msg"), to: "4915112345678", status: "delivered", wa_message_id: `wamid.b${i}`, occurred_at: now.toISOString(), error: null, backlog: true };
      const body = JSON.stringify({ id, type: "message.delivered", created_at: now.toISOString(), data });
      const dlv = deliveryId(id, ep.endpointId);
      events.push({ _id: id, workspace_id: ep.workspaceId, type: "message.delivered", created_at: now, data, body });
      deliveries.push({
        _id: dlv,
        workspace_id: ep.workspaceId,
        endpoint_id: ep.endpointId,
        event_id: id,
        event_type: "message.delivered",
        created_at: now,
        status: "pending",
        automatic_attempts: 1,
        attempt_count: 1,
        manual_attempts: 0,
        due_at: new Date(now.getTime() + 3_600_000),
        lease_owner: null,
        leased_at: null,
        last_attempt_at: now,
        last_http_status: null,
        last_error_kind: "connection_refused",
        updated_at: now,
      });
      attempts.push({
        _id: automaticAttemptId(dlv, 1),
        delivery_id: dlv,
        workspace_id: ep.workspaceId,
        endpoint_id: ep.endpointId,
        event_id: id,
        number: 1,
        trigger: "automatic",
        url: "http://127.0.0.1:1/down",
        started_at: now,
        duration_ms: 1,
        http_status: null,
        response_body: null,
        succeeded: false,
        error_kind: "connection_refused",
        error_message: "connect ECONNREFUSED",
        disabled_endpoint: false,
        next_attempt_at: now,
      });
    }
    await db.collection<StoredEvent>("events").insertMany(events as never[]);
    await db.collection("webhook_deliveries").insertMany(deliveries as never[]);
    await db.collection("webhook_attempts").insertMany(attempts as never[]);
  }
  return (performance.now() - began) / 1000;
}
