import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { countsBetween, startCommandCounter, workCommands } from "./command-counter.js";
import { percentile, table, consoleClients, UPGRADED_NUMBER } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/** The application name of the connection that sends the stats' query of the release before (counted apart). */
const BEFORE_APP = "bench-stats-before";

/** Messages sent through the API, then copied in the database up to each size measured. */
const SENT = 1_000;

/**
 * The console's message stats (`GET /console/v1/workspaces/{id}/message_stats`)
 * of one workspace holding each of `sizes` messages, against the real service
 * in its own process: `SENT` messages sent through the API and settled by the
 * simulator, then copied in the database (new ids, created over the last 48
 * hours, statuses as the network left them) up to each size. For each size,
 * `calls` calls one after the other: their latency, and the database's time
 * and commands per call (counted by the embedded database; on the wire by a
 * relay elsewhere). Beside it, in the same run, the one aggregate over the
 * workspace's messages that answered the stats before they were counted from
 * indexes, sent straight to the database.
 */
export async function runStatsBench(options: { mongodbUri: string; sizes: number[]; calls: number }): Promise<string> {
  const database = `bench_stats_${Date.now()}`;
  const counter = await startCommandCounter(options.mongodbUri);
  const service = await startServiceProcess({ MONGODB_URI: counter.uri, MONGODB_DATABASE: database, CONSOLE_TOKEN, ROLE: "all", SIMULATOR_SENT_DELAY_MS: "0", SIMULATOR_DELIVERED_DELAY_MS: "50", SIMULATOR_READ_DELAY_MS: "100" });
  const consoleUrl = `http://127.0.0.1:${service.consolePort}`;
  const client = consoleClients(consoleUrl, CONSOLE_TOKEN);
  const mongo = await new MongoClient(options.mongodbUri).connect();
  const beforeDb = await new MongoClient(options.mongodbUri, { appName: BEFORE_APP }).connect();
  /** The commands of beforeDb as the embedded database counts them (none elsewhere). */
  const countsOfBefore = async () =>
    ((await beforeDb.db("admin").command({ embeddedCommandCounts: BEFORE_APP }).catch(() => ({ commands: [] }))) as { commands: { name: string; count: number; nanos: number }[] }).commands;
  try {
    const { workspace } = await client(WorkspaceService).createWorkspace({ name: "stats bench", credits: BigInt(SENT) });
    const workspaceId = workspace!.id;
    const { sender } = await client(SenderService).createSender({ workspaceId, phoneNumber: UPGRADED_NUMBER, name: "bench", throughputMps: 1000 });
    const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
    const keys = await Promise.all(
      Array.from({ length: 10 }, (_, i) => client(ApiKeyService).createApiKey({ workspaceId, name: `bench ${i}`, scopes: ["messages:send"], rateLimitPerMin: 100 })),
    );
    // 100 sends a key (its budget per minute); recipients ending in 9990 to 9999 fail, as some do on the network.
    await Promise.all(
      keys.map(async ({ secret }, k) => {
        for (let i = 0; i < SENT / keys.length; i++) {
          const n = k * (SENT / keys.length) + i;
          const res = await fetch(`http://127.0.0.1:${service.publicPort}/v1/messages`, {
            method: "POST",
            headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
            body: JSON.stringify({ to: n % 50 === 0 ? "4915123459990" : `4915${String(100000000 + n)}`, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada", code: String(n) } } }),
          });
          if (res.status !== 200) throw new Error(`stats bench: a send answered ${res.status}: ${await res.text()}`);
        }
      }),
    );
    const messages = mongo.db(database).collection<Record<string, unknown> & { _id: string }>("messages");
    for (const started = Date.now(); await messages.findOne({ workspace_id: workspaceId, status: { $in: ["accepted", "sent", "delivered"] } }); ) {
      if (Date.now() - started > 120_000) throw new Error("stats bench: the sends did not settle within 120 s");
      await new Promise((r) => setTimeout(r, 200));
    }
    const originals = await messages.find({ workspace_id: workspaceId, direction: "outbound" }).toArray();
    const rows: string[][] = [];
    let stored = originals.length;
    for (const size of options.sizes) {
      for (; stored < size; ) {
        const batch = Array.from({ length: Math.min(5_000, size - stored) }, (_, i) => {
          const original = originals[(stored + i) % originals.length]!;
          return { ...original, _id: randomUUID(), wa_message_id: `wamid.${randomUUID()}`, created_at: new Date(Date.now() - Math.random() * 48 * 3_600_000) };
        });
        await messages.insertMany(batch);
        stored += batch.length;
      }
      const measure = async (name: string, call: () => Promise<unknown>, timesOf: () => Promise<Map<string, number>>, countsOf: () => Promise<Map<string, number>>) => {
        for (let i = 0; i < 5; i++) await call(); // warm-up
        const [countsBefore, timesBefore] = [await countsOf(), await timesOf()];
        const latencies: number[] = [];
        for (let i = 0; i < options.calls; i++) {
          const started = performance.now();
          await call();
          latencies.push(performance.now() - started);
        }
        const commands = workCommands(countsBetween(countsBefore, await countsOf()));
        const timesAfter = await timesOf();
        const dbMs = [...timesAfter].reduce((sum, [key, ms]) => sum + ms - (timesBefore.get(key) ?? 0), 0) / options.calls;
        const sorted = Float64Array.from(latencies).sort();
        rows.push([
          String(size),
          name,
          percentile(sorted, 50).toFixed(2),
          percentile(sorted, 99).toFixed(2),
          dbMs.toFixed(2),
          commands.length ? (commands.reduce((sum, [, n]) => sum + n, 0) / options.calls).toFixed(1) : "-",
        ]);
      };
      await measure(
        "GET message_stats (counted from indexes)",
        async () => {
          const res = await fetch(`${consoleUrl}/console/v1/workspaces/${workspaceId}/message_stats`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
          const body = (await res.json()) as { total?: string | number };
          if (res.status !== 200 || Number(body.total) !== size) throw new Error(`stats bench: stats answered ${res.status} ${JSON.stringify(body)} for ${size} messages`);
        },
        () => counter.times(),
        () => counter.snapshot(),
      );
      // The query of the release before, straight to the database over a connection of its own, counted apart.
      const since = new Date(Date.now() - 86_400_000);
      const before = beforeDb.db(database).collection("messages");
      await measure(
        "the aggregate of the release before, sent directly",
        () =>
          before
            .aggregate([
              { $match: { workspace_id: workspaceId, direction: { $in: ["outbound", "inbound"] } } },
              { $group: { _id: { direction: "$direction", status: "$status", recent: { $gte: ["$created_at", since] } }, n: { $sum: 1 } } },
            ])
            .toArray(),
        async () => new Map((await countsOfBefore()).map((c) => [c.name, Number(c.nanos) / 1e6])),
        async () => new Map((await countsOfBefore()).map((c) => [c.name, Number(c.count)])),
      );
    }
    return `Console message stats: one workspace's messages (${options.calls} calls each, one at a time; the database's time ${counter.where})\n\n${table(
      ["messages", "call", "p50 ms", "p99 ms", "database ms/call", "commands/call"],
      rows,
    )}`;
  } finally {
    await mongo.close();
    await beforeDb.close();
    await stopProcess(service.child);
    await counter.close();
  }
}
