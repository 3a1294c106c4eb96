import { parseArgs } from "node:util";
import { MongoClient } from "mongodb";
import { buildService } from "../../src/codegen/build-service.js";
import { startEmbeddedMongo } from "../../src/store/embedded-mongo.js";
import { rest } from "../helpers/clients.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { answerOk, startReceiver } from "../helpers/receivers.js";
import { cpuSeconds } from "./harness.js";

/*
 * `npx tsx test/bench/roles-cpu.ts [--messages 600 --rate 60]`: the CPU time
 * an api process and a worker process spend per message (README "Running in
 * production", sizing). One ROLE=api and one ROLE=worker process of the build
 * on a fresh embedded database (memory backend; or MONGODB_URI), the
 * simulator, a webhook endpoint for every message event to a local receiver.
 * It sends `messages` messages at `rate` a second over REST (one message a
 * request, several keys so that no key's rate limit is met), waits until each
 * is read and every event was delivered, and prints each process's CPU time
 * (user + system, /proc) from before the first send to then, per message, and
 * the database's.
 */

const { values } = parseArgs({ options: { messages: { type: "string", default: "600" }, rate: { type: "string", default: "60" } } });
const total = Number(values.messages);
const rate = Number(values.rate);
const CONSOLE_TOKEN = "roles-bench-console-token-0123456789";

await buildService(["test/bench/*.ts"]);
const embedded = process.env.MONGODB_URI ? undefined : await startEmbeddedMongo({ kind: "memory" });
const mongodbUri = process.env.MONGODB_URI ?? (embedded?.uri as string);
const database = `bench_roles_${process.pid}`;
const env = {
  MONGODB_URI: mongodbUri,
  MONGODB_DATABASE: database,
  CONSOLE_TOKEN,
  WEBHOOK_ALLOW_HTTP_LOOPBACK: "true",
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  SIMULATOR_OUT_OF_ORDER_PERCENT: "0",
};
const receiver = await startReceiver(answerOk);
const api = await startServiceProcess({ ...env, ROLE: "api" });
const worker = await startServiceProcess({ ...env, ROLE: "worker" });
const mongo = new MongoClient(mongodbUri);
try {
  const consoleRest = async (path: string, body: unknown) => {
    const res = await rest(`http://127.0.0.1:${api.consolePort}`, "POST", path, { key: CONSOLE_TOKEN, body });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.json as Record<string, unknown>;
  };
  const workspaceId = (await consoleRest("/console/v1/workspaces", { name: "Roles bench", credits: total })).id as string;
  const keys: string[] = [];
  for (let i = 0; i < Math.ceil(total / 90); i++) keys.push((await consoleRest(`/console/v1/workspaces/${workspaceId}/api_keys`, { name: `k${i}`, scopes: ["messages:send"], rate_limit_per_min: 100 })).secret as string);
  const senderId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "4915100000099", name: "Bench" })).id as string;
  const templateId = (await consoleRest(`/console/v1/workspaces/${workspaceId}/templates`, { name: "bench", language: "en", body: "Hi {{name}}" })).id as string;
  await consoleRest(`/console/v1/workspaces/${workspaceId}/webhook_endpoints`, { name: "r", url: receiver.url, events: ["message.sent", "message.delivered", "message.read", "message.failed"] });

  const pids = { api: api.child.pid!, worker: worker.child.pid!, database: embedded?.pid };
  const before = { api: await cpuSeconds(pids.api), worker: await cpuSeconds(pids.worker), database: pids.database ? await cpuSeconds(pids.database) : undefined };
  const started = Date.now();
  const sends: Promise<void>[] = [];
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / rate;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    sends.push(
      rest(`http://127.0.0.1:${api.publicPort}`, "POST", "/v1/messages", {
        key: keys[n % keys.length],
        body: { to: `4915123${String(n).padStart(6, "0")}`, sender: senderId, template: { id: templateId, variables: { name: "Ada" } } },
      }).then((res) => {
        if (res.status !== 200) throw new Error(`send ${n}: ${res.status} ${res.text}`);
      }),
    );
  }
  await Promise.all(sends);
  const db = mongo.db(database);
  for (;;) {
    const unread = await db.collection("messages").countDocuments({ workspace_id: workspaceId, status: { $ne: "read" } } as never);
    const events = await db.collection("events").countDocuments({ workspace_id: workspaceId } as never);
    if (unread === 0 && events === total * 3 && receiver.requests.length >= events) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const seconds = (Date.now() - started) / 1000;
  const after = { api: await cpuSeconds(pids.api), worker: await cpuSeconds(pids.worker), database: pids.database ? await cpuSeconds(pids.database) : undefined };
  const perMessage = (name: "api" | "worker" | "database") => {
    const a = after[name];
    const b = before[name];
    return a === undefined || b === undefined ? "n/a" : `${(((a - b) * 1000) / total).toFixed(2)} ms`;
  };
  process.stdout.write(
    `${total} messages at ${rate}/s over REST, each read and its 3 events delivered, in ${seconds.toFixed(1)} s\n` +
      `CPU per message: api ${perMessage("api")}, worker ${perMessage("worker")}, database ${perMessage("database")}\n`,
  );
} finally {
  await mongo.db(database).dropDatabase().catch(() => undefined);
  await mongo.close();
  await stopProcess(api.child);
  await stopProcess(worker.child);
  await receiver.close();
  await embedded?.stop();
}
