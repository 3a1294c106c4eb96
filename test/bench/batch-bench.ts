import { MongoClient } from "mongodb";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { CreditService } from "../../gen/messaging/console/v1/credits_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { countsBetween, startCommandCounter, workCommands, type CommandCounts } from "./command-counter.js";
import { cpuSeconds, table, consoleClients, UPGRADED_NUMBER } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/** Items of a batch (the most one request may carry). */
const BATCH = 1000;
/** Unmeasured batches first: the service's and the database's JIT compilers, connections, caches. */
const WARMUP_BATCHES = 8;
/** Measured batches of each kind. */
const MEASURED_BATCHES = 8;

/**
 * The commands of a send's accepting request: the key's look-ups and rate window, the opt-out list, the
 * Idempotency-Key, the debit, the messages, their ledger entries (and its clears) and the request log. Dispatch's
 * updates and reads of the messages and its events are the messages' later life, left out (they are the same per
 * message for a batch's as for single sends': `npm run bench -- --only messages`); so is a replay's one read of its
 * messages.
 */
const ACCEPTING = /^((find|findAndModify|insert|update) (api_keys|workspaces|rate_windows|request_log|senders|templates|credit_ledger|idempotency_keys|opt_outs)|insert messages)$/;

/** A run's accepting-request commands per accepted item, and the list of them. */
function accepting(counts: CommandCounts, accepted: number): [string, string] {
  const rows = workCommands(counts).filter(([key]) => ACCEPTING.test(key));
  const total = rows.reduce((sum, [, n]) => sum + n, 0);
  return [(total / Math.max(1, accepted)).toFixed(4), rows.map(([key, n]) => `${key} ${n}`).join(", ")];
}

/**
 * POST /v1/messages:batch against the real service in its own process
 * (ROLE=all, simulator network, real database): batches of 1,000 items, one
 * at a time (how long a batch takes to be answered: the aim is ≤ 1 s on
 * this machine), with an Idempotency-Key, against a balance that pays for
 * only part of a batch, and replayed; beside them 1,000 single sends from 32
 * clients, for the commands of the accepting request per accepted message
 * (the aim: a batch's at most a single send's). Commands are
 * counted by the embedded database (or on the wire: startCommandCounter).
 * Timings are printed, never asserted.
 */
export async function runBatchBench(options: { mongodbUri: string }): Promise<string> {
  const database = `bench_batch_${Date.now()}`;
  const counter = await startCommandCounter(options.mongodbUri);
  const service = await startServiceProcess({
    MONGODB_URI: counter.uri,
    MONGODB_DATABASE: database,
    CONSOLE_TOKEN,
    ROLE: "all",
    SIMULATOR_SENT_DELAY_MS: "0",
    SIMULATOR_DELIVERED_DELAY_MS: "200",
    SIMULATOR_READ_DELAY_MS: "400",
  });
  const pid = service.child.pid as number;
  const client = consoleClients(`http://127.0.0.1:${service.consolePort}`, CONSOLE_TOKEN);
  const mongo = new MongoClient(options.mongodbUri);
  const messages = mongo.db(database).collection<{ status: string }>("messages");
  /** Waits until every message stored so far was reported read (dispatch and the simulator's reports done). */
  const idle = async () => {
    const started = performance.now();
    while ((await messages.findOne({ status: { $ne: "read" } }, { projection: { _id: 1 } })) !== null) {
      if (performance.now() - started > 300_000) throw new Error("batch bench: messages not read after 300 s");
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  try {
    const { workspace } = await client(WorkspaceService).createWorkspace({ name: "bench", credits: 1_000_000n });
    const workspaceId = workspace!.id;
    const { sender } = await client(SenderService).createSender({ workspaceId, phoneNumber: UPGRADED_NUMBER, name: "bench", throughputMps: 1000 });
    const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
    const newKey = async (name: string) =>
      (await client(ApiKeyService).createApiKey({ workspaceId, name, scopes: ["messages:send"], rateLimitPerMin: 100 })).secret;
    const base = `http://127.0.0.1:${service.publicPort}`;
    let n = 0;
    // Ordinary recipients only: the simulator's test numbers end in 9990 to 9999.
    const item = () => ({ to: `4915${String(100000000 + (n++ % 9000))}`, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada", code: String(n) } } });
    const post = async (key: string, path: string, body: unknown, headers: Record<string, string> = {}) => {
      const started = performance.now();
      const res = await fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
      const json = (await res.json()) as { accepted_count?: number; refused_count?: number };
      return { status: res.status, json, ms: performance.now() - started };
    };
    const batchKey = await newKey("batch");
    const sendBatch = (headers: Record<string, string> = {}, key = batchKey) => post(key, "/v1/messages:batch", { messages: Array.from({ length: BATCH }, item) }, headers);

    for (let i = 0; i < WARMUP_BATCHES; i++) await sendBatch();
    const rows: string[][] = [];
    /** Runs `batches` batches one after the other (each `run`), and adds their row. */
    const measure = async (name: string, batches: number, run: (i: number) => Promise<{ status: number; json: { accepted_count?: number }; ms: number; items?: number }>) => {
      const before = await counter.snapshot();
      const cpuBefore = await cpuSeconds(pid);
      const times: number[] = [];
      let accepted = 0;
      let items = 0;
      for (let i = 0; i < batches; i++) {
        const res = await run(i);
        if (res.status !== 200) throw new Error(`${name}: answered ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
        times.push(res.ms);
        accepted += res.json.accepted_count ?? 0;
        items += res.items ?? BATCH;
      }
      await new Promise((resolve) => setTimeout(resolve, 1500)); // the ledger's pending marks are cleared within a second
      const cpuAfter = await cpuSeconds(pid);
      const [perItem, list] = accepting(countsBetween(before, await counter.snapshot()), accepted);
      times.sort((a, b) => a - b);
      const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? (((cpuAfter - cpuBefore) * 1000) / batches).toFixed(0) : "-";
      rows.push([name, String(batches), String(items), String(accepted), times[Math.floor(times.length / 2)]!.toFixed(0), times[times.length - 1]!.toFixed(0), cpu, perItem, list]);
    };
    await idle();
    await measure(`batch of ${BATCH} (REST), each when the service is idle (the last one's messages read)`, MEASURED_BATCHES, async () => {
      await idle();
      return sendBatch();
    });
    await measure(`batch of ${BATCH} (REST), back to back (the earlier ones' dispatch under way)`, MEASURED_BATCHES, () => sendBatch());
    await idle();
    await measure(`batch of ${BATCH} with an Idempotency-Key, idle`, MEASURED_BATCHES, async (i) => {
      await idle();
      return sendBatch({ "idempotency-key": `bench-${Date.now()}-${i}` });
    });
    // A balance that pays for 600 of the batch's 1,000: the first 600 accepted, the rest insufficient_credits.
    const poor = await client(WorkspaceService).createWorkspace({ name: "poor", credits: 0n });
    const { sender: poorSender } = await client(SenderService).createSender({ workspaceId: poor.workspace!.id, phoneNumber: "15550011000", name: "bench", throughputMps: 1000 });
    const { template: poorTemplate } = await client(TemplateService).createTemplate({ workspaceId: poor.workspace!.id, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
    const poorKey = (await client(ApiKeyService).createApiKey({ workspaceId: poor.workspace!.id, name: "poor", scopes: ["messages:send"], rateLimitPerMin: 100 })).secret;
    await measure(`batch of ${BATCH} against a balance of 600, idle`, 3, async () => {
      await idle();
      await client(CreditService).addCredits({ workspaceId: poor.workspace!.id, amount: 600n });
      const messages = Array.from({ length: BATCH }, () => ({ ...item(), sender: poorSender!.id, template: { ...item().template, id: poorTemplate!.id } }));
      return post(poorKey, "/v1/messages:batch", { messages });
    });
    const replayKey = `bench-replay-${Date.now()}`;
    await sendBatch({ "idempotency-key": replayKey });
    n -= BATCH; // the same body again
    await measure(`the same batch replayed (Idempotency-Key)`, 1, () => sendBatch({ "idempotency-key": replayKey }));
    await idle();
    // Single sends for comparison: 32 clients, their own keys, 32 sends each (1,024 messages).
    const keys = await Promise.all(Array.from({ length: 32 }, (_, i) => newKey(`single ${i}`)));
    await measure("1,024 single sends, 32 concurrent clients (REST)", 1, async () => {
      const started = performance.now();
      let accepted = 0;
      await Promise.all(
        keys.map(async (key) => {
          for (let i = 0; i < 32; i++) if ((await post(key, "/v1/messages", item())).status === 200) accepted++;
        }),
      );
      return { status: 200, json: { accepted_count: accepted }, ms: performance.now() - started, items: keys.length * 32 };
    });
    await idle();
    return [
      `POST /v1/messages:batch, ${BATCH} items a batch, one batch at a time after ${WARMUP_BATCHES} unmeasured batches; commands of the accepting requests (counted ${counter.where}; dispatch's later updates and events left out, the same per message as for single sends)`,
      table(["run", "requests", "items", "accepted", "p50 ms", "max ms", "service CPU ms per request (dispatch meanwhile included)", "commands per accepted item", "commands"], rows),
    ].join("\n");
  } finally {
    await mongo.close();
    await stopProcess(service.child);
    await counter.close();
  }
}
