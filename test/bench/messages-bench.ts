import http2 from "node:http2";
import { availableParallelism } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { MongoClient } from "mongodb";
import { Pool } from "undici";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { SendMessageRequestSchema } from "../../gen/messaging/v1/messages_pb.js";
import { startProcess, startServiceProcess, stopProcess } from "../helpers/processes.js";
import { countsBetween, networkCommands, startCommandCounter, workCommands, type CommandCounter, type CommandCounts } from "./command-counter.js";
import { benchProcessEntry, cpuSeconds, grpcUnary, jitCompilerCpuSeconds, loadTable, percentile, rssMiB, runLoad, table, type LoadResult, consoleClients, UPGRADED_NUMBER } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/**
 * The warm-up ends once the embedded database's JIT compiler threads took less than this share of its CPU over
 * a warm-up round (after two rounds at least, one per protocol), or after MAX_WARMUP_ROUNDS rounds.
 */
const SETTLED_COMPILER_SHARE = 0.05;
const MAX_WARMUP_ROUNDS = 8;

/** The rate of the paced round, whose dispatch latency the design bounds (p99 of acceptance → sent ≤ 250 ms). */
const PACED_SENDS_PER_SECOND = 500;

/** Commands of the accepting request (admission, the opt-out look-up, the send itself, its ledger entry); the rest is the message's later life. */
const ACCEPTING = /^((find|findAndModify|insert|update) (api_keys|workspaces|rate_windows|request_log|senders|templates|credit_ledger|idempotency_keys|opt_outs)|insert messages)$/;

/**
 * POST /v1/messages over REST and gRPC against the real service in its own
 * process (ROLE=all, simulator network, real database), while the same
 * process dispatches what was accepted, next to a trivial Connect handler
 * measured in the same run. Each worker has its own key (100 requests/min),
 * making `callsPerWorker` sends. Afterwards: how long dispatch took
 * (acceptance to the network's acceptance, sent_at − created_at), and the
 * database commands per message (counted by the embedded database, or on
 * the wire by a relay: startCommandCounter): on the accepting request, and over the whole life of the
 * message until the simulator reported it read (no webhook endpoint), and
 * the CPU time the service and the embedded database (`databasePid`) spent
 * per message over that time, and the bench's own per send. Before the
 * measured rounds: warm-up rounds until the database's JIT compiler has
 * settled (SETTLED_COMPILER_SHARE); after them, a REST round paced at
 * PACED_SENDS_PER_SECOND, with its dispatch latency and commands per message.
 * The gRPC warm-up rounds call through @grpc/grpc-js, the measured gRPC round
 * through a plain HTTP/2 client (grpcUnary) whose own CPU per call is a third
 * of grpc-js's: on this machine's 2 cores the clients' CPU is the service's loss.
 */
export async function runMessagesBench(options: { mongodbUri: string; databasePid?: number; concurrency: number; callsPerWorker: number }): Promise<string> {
  const database = `bench_messages_${Date.now()}`;
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
  const trivial = await startProcess(benchProcessEntry("trivial-servers"), {}, (line) =>
    typeof line.trivialPort === "number" ? (line as { trivialPort: number }) : undefined,
  );
  const pid = service.child.pid as number;
  const client = consoleClients(`http://127.0.0.1:${service.consolePort}`, CONSOLE_TOKEN);
  // Warm-up rounds (at most MAX_WARMUP_ROUNDS), the measured REST and gRPC rounds, then a paced REST round.
  const totalSends = (MAX_WARMUP_ROUNDS + 3) * options.concurrency * options.callsPerWorker;
  const { workspace } = await client(WorkspaceService).createWorkspace({ name: "bench", credits: BigInt(totalSends) });
  const workspaceId = workspace!.id;
  const { sender } = await client(SenderService).createSender({ workspaceId, phoneNumber: UPGRADED_NUMBER, name: "bench", throughputMps: 1000 });
  const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
  /** A key per client, new for each round: their secrets and ids. */
  const newKeys = async () => {
    const created = await Promise.all(
      Array.from({ length: options.concurrency }, (_, i) =>
        client(ApiKeyService).createApiKey({ workspaceId, name: `bench ${i}`, scopes: ["messages:send"], rateLimitPerMin: 100 }),
      ),
    );
    return { secrets: created.map((k) => k.secret), ids: created.map((k) => k.apiKey!.id) };
  };
  // Ordinary recipients only: the simulator's test numbers (failures, no read receipts) end in 9990 to 9999.
  const body = (i: number) => ({ to: `4915${String(100000000 + (i % 9000))}`, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada", code: String(i) } } });

  /** CPU seconds used so far by the service and by the embedded database (undefined where not known). */
  const cpuOfServiceAndDatabase = () =>
    Promise.all([
      cpuSeconds(pid),
      options.databasePid ? cpuSeconds(options.databasePid) : undefined,
      options.databasePid ? jitCompilerCpuSeconds(options.databasePid) : undefined,
    ]);
  const results: LoadResult[] = [];
  let n = 0;
  const mongo = new MongoClient(options.mongodbUri);
  const messages = mongo.db(database).collection<{ api_key_id: string; created_at: Date; sent_at: Date | null; status: string }>("messages");
  /**
   * Waits until every message sent with the keys `keyIds` was reported read; resolves to the service's peak RSS
   * meanwhile, in MiB. It asks for one such message not read yet, by the messages' index of keys, so that its
   * own reads cost the database little however many messages earlier rounds stored.
   */
  const settle = async (keyIds: string[]): Promise<number> => {
    const unread = { api_key_id: { $in: keyIds }, status: { $ne: "read" } };
    const started = performance.now();
    let peak = 0;
    for (;;) {
      peak = Math.max(peak, (await rssMiB(pid)) ?? 0);
      if ((await messages.findOne(unread, { projection: { _id: 1 } })) === null) break;
      if (performance.now() - started > 300_000) {
        const stuck = await messages.find(unread).limit(5).toArray();
        console.error(`messages bench: not every message was read after 300 s, for example ${JSON.stringify(stuck)}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    // Let batched writes (ledger clears, event marks, the request log) finish.
    await new Promise((r) => setTimeout(r, 1500));
    return peak;
  };
  /**
   * Dispatch of the messages sent with the keys `keyIds`: how many were sent, at what rate (from the first
   * acceptance to the last network acceptance, per second) and the p50 and p99 of acceptance → sent, in ms.
   */
  const dispatchOf = async (keyIds: string[]) => {
    const rows = await messages.find({ api_key_id: { $in: keyIds }, sent_at: { $ne: null } }, { projection: { created_at: 1, sent_at: 1 } }).toArray();
    const lags = Float64Array.from(rows.map((m) => (m.sent_at as Date).getTime() - m.created_at.getTime())).sort();
    const first = Math.min(...rows.map((m) => m.created_at.getTime()));
    const last = Math.max(...rows.map((m) => (m.sent_at as Date).getTime()));
    return { messages: rows.length, perSecond: rows.length / ((last - first) / 1000), p50: percentile(lags, 50), p99: percentile(lags, 99) };
  };
  const restLoad = async (name: string, keys: { secrets: string[] }, perSecond?: number): Promise<LoadResult> => {
    const pool = new Pool(`http://127.0.0.1:${service.publicPort}`, { connections: options.concurrency });
    try {
      return await runLoad({
        name,
        concurrency: options.concurrency,
        callsPerWorker: options.callsPerWorker,
        perSecond,
        serverPid: pid,
        call: async (w) => {
          const res = await pool.request({
            path: "/v1/messages",
            method: "POST",
            headers: { authorization: `Bearer ${keys.secrets[w]}`, "content-type": "application/json" },
            body: JSON.stringify(body(n++)),
          });
          await res.body.dump();
          return String(res.statusCode);
        },
      });
    } finally {
      await pool.close();
    }
  };
  /** A gRPC client of the bench's workers: SendMessage with a key (resolves to the status's name), and its close. */
  interface GrpcSender {
    send(secret: string, request: Uint8Array): Promise<string>;
    close(): void;
  }
  const SEND_MESSAGE = "/messaging.v1.MessageService/SendMessage";
  /** @grpc/grpc-js, one channel for all workers. */
  const grpcJs = (): GrpcSender => {
    const client = new grpc.Client(`127.0.0.1:${service.publicPort}`, grpc.credentials.createInsecure());
    const identity = (b: Buffer) => b;
    return {
      send: (secret, request) =>
        new Promise((resolve) => {
          const md = new grpc.Metadata();
          md.set("authorization", `Bearer ${secret}`);
          client.makeUnaryRequest(SEND_MESSAGE, identity, identity, Buffer.from(request), md, (err) => resolve(err ? (grpc.status[err.code] ?? "error") : "OK"));
        }),
      close: () => client.close(),
    };
  };
  /** The bench's plain HTTP/2 client (grpcUnary), one session for all workers. */
  const plainHttp2 = (): GrpcSender => {
    const session = http2.connect(`http://127.0.0.1:${service.publicPort}`);
    session.on("error", () => undefined); // its streams answer "error"
    return { send: (secret, request) => grpcUnary(session, SEND_MESSAGE, request, { authorization: `Bearer ${secret}` }), close: () => session.close() };
  };
  const grpcLoad = async (name: string, keys: { secrets: string[] }, sender: GrpcSender): Promise<LoadResult> => {
    try {
      return await runLoad({
        name,
        concurrency: options.concurrency,
        callsPerWorker: options.callsPerWorker,
        serverPid: pid,
        call: (w) => sender.send(keys.secrets[w] as string, toBinary(SendMessageRequestSchema, create(SendMessageRequestSchema, body(n++)))),
      });
    } finally {
      sender.close();
    }
  };
  try {
    // Warm-up of both paths, not measured: the JIT of the service and of the database's JVM (which compiles for
    // half a minute and more, taking as much CPU as the commands meanwhile), the connections and the caches.
    // Rounds alternate REST and gRPC until the database's compiler took under SETTLED_COMPILER_SHARE of its
    // CPU over a round (two rounds where that is not known: another database).
    for (let round = 1; round <= MAX_WARMUP_ROUNDS; round++) {
      const [, databaseBefore, compilerBefore] = await cpuOfServiceAndDatabase();
      const keys = await newKeys();
      const result =
        round % 2 === 1
          ? await restLoad("REST POST /v1/messages, warm-up round (not in the ratios)", keys)
          : await grpcLoad("gRPC SendMessage (grpc-js), warm-up round (not in the ratios)", keys, grpcJs());
      await settle(keys.ids);
      const [, databaseAfter, compilerAfter] = await cpuOfServiceAndDatabase();
      const share =
        databaseBefore === undefined || databaseAfter === undefined || compilerBefore === undefined || compilerAfter === undefined
          ? undefined
          : (compilerAfter - compilerBefore) / (databaseAfter - databaseBefore);
      if (share !== undefined) result.name += `, database's JIT compiler ${(share * 100).toFixed(0)}% of its CPU`;
      results.push(result);
      if (round >= 2 && (share ?? 0) < SETTLED_COMPILER_SHARE) break;
    }
    const restKeys = await newKeys();
    const grpcKeys = await newKeys();
    const before = await counter.snapshot();
    const cpuBefore = await cpuOfServiceAndDatabase();
    const timesBefore = await counter.times();
    const measured = [await restLoad("REST POST /v1/messages", restKeys), await grpcLoad("gRPC SendMessage (plain HTTP/2 client)", grpcKeys, plainHttp2())];
    results.push(...measured);
    const benchCpuPerSend = measured.reduce((sum, r) => sum + r.benchCpuMs * r.requests, 0) / measured.reduce((sum, r) => sum + r.requests, 0);

    const trivialPool = new Pool(`http://127.0.0.1:${trivial.value.trivialPort}`, { connections: options.concurrency });
    results.push(
      await runLoad({
        name: "trivial Connect handler (no DB)",
        concurrency: options.concurrency,
        seconds: 3,
        serverPid: trivial.child.pid,
        call: async () => {
          const res = await trivialPool.request({ path: "/messaging.v1.AccountService/GetMe", method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
          await res.body.dump();
          return String(res.statusCode);
        },
      }),
    );
    await trivialPool.close();

    // Dispatch: wait until every accepted message was reported read, then measure acceptance → sent.
    const peak = await settle([...restKeys.ids, ...grpcKeys.ids]);
    const cpuAfter = await cpuOfServiceAndDatabase();
    const life = countsBetween(before, await counter.snapshot());
    const times = countsBetween(timesBefore, await counter.times());
    const measuredDispatch = await dispatchOf([...restKeys.ids, ...grpcKeys.ids]);
    const sends = measuredDispatch.messages;

    // At a steady 500 sends/s (REST), after the rest has settled: how long a message waits to be sent when the
    // service is not at its limit.
    const pacedKeys = await newKeys();
    const pacedBefore = await counter.snapshot();
    results.push(await restLoad(`REST POST /v1/messages, ${PACED_SENDS_PER_SECOND}/s (paced)`, pacedKeys, PACED_SENDS_PER_SECOND));
    const pacedPeak = await settle(pacedKeys.ids);
    const pacedDispatch = await dispatchOf(pacedKeys.ids);
    const pacedCommands = commandsPerMessage(countsBetween(pacedBefore, await counter.snapshot()), pacedDispatch.messages);
    const dispatchTable = table(
      ["run", "messages", "messages/s", "p50 ms", "p99 ms", "peak RSS MiB"],
      [
        ["dispatch: accepted → sent (simulator), the two measured rounds", measuredDispatch, peak] as const,
        [`dispatch: accepted → sent (simulator), ${PACED_SENDS_PER_SECOND} sends/s`, pacedDispatch, pacedPeak] as const,
      ].map(([name, d, rss]) => [name, String(d.messages), d.perSecond.toFixed(0), d.p50.toFixed(0), d.p99.toFixed(0), rss.toFixed(0)]),
    );
    const ratio = (name: string) => {
      const rate = (r: LoadResult | undefined) => (r ? r.requests / r.seconds : NaN);
      const measured = results.filter((r) => !r.name.includes("warm-up") && !r.name.includes("paced"));
      return (rate(measured.find((r) => r.name.startsWith(name))) / rate(measured.find((r) => r.name.startsWith("trivial")))).toFixed(2);
    };
    const cpuMs = (i: 0 | 1 | 2) => {
      const [was, is] = [cpuBefore[i], cpuAfter[i]];
      return was === undefined || is === undefined ? undefined : ((is - was) * 1000) / sends;
    };
    const [serviceMs, databaseMs, compilerMs] = [cpuMs(0), cpuMs(1), cpuMs(2)];
    const cores = availableParallelism();
    const cpuLine =
      serviceMs === undefined
        ? "CPU per message: not measured (no /proc)"
        : `CPU per message, from the first measured send until the last was read: service ${serviceMs.toFixed(2)} ms` +
          (databaseMs === undefined
            ? " (the database is not the embedded one: not measured)"
            : `, embedded database ${databaseMs.toFixed(2)} ms` +
              (compilerMs === undefined ? "" : ` (${compilerMs.toFixed(2)} ms of it its JIT compiler, ${(databaseMs - compilerMs).toFixed(2)} ms the rest)`) +
              `; together ${(serviceMs + databaseMs).toFixed(2)} ms, so ${cores} cores ` +
              `carry at most ${((cores * 1000) / (serviceMs + databaseMs)).toFixed(0)} messages/s through their whole life, clients aside`);
    return [
      `POST /v1/messages, ${options.concurrency} concurrent clients, ${options.callsPerWorker} sends each, own key per client (after warm-up rounds of as many sends, REST and gRPC (grpc-js) in turn until the database's JIT compiler took under ${SETTLED_COMPILER_SHARE * 100}% of its CPU over a round, ${MAX_WARMUP_ROUNDS} at most; shown first, left out of the ratios and the command counts; the measured gRPC round by a plain HTTP/2 client, a third of grpc-js's CPU per call)`,
      loadTable(results),
      `REST / trivial Connect handler: ${ratio("REST")}; gRPC / trivial Connect handler: ${ratio("gRPC")}`,
      "",
      commandTable(life, times, sends, counter),
      `At ${PACED_SENDS_PER_SECOND} sends/s (the paced round, until its last message was read): accepting request ${pacedCommands.accepting.toFixed(3)} per message; whole life ${pacedCommands.total.toFixed(3)} per message`,
      "",
      "Dispatch by the same process (messages/s: from the first acceptance to the last network acceptance; latency: acceptance → sent)",
      dispatchTable,
      cpuLine,
      `CPU of the bench's own process (its clients; the command relay, where one counts) over the two measured rounds: ${benchCpuPerSend.toFixed(2)} ms per send`,
    ].join("\n");
  } finally {
    await Promise.all([stopProcess(service.child), stopProcess(trivial.child)]);
    await counter.close();
    await mongo.db(database).dropDatabase().catch(() => undefined);
    await mongo.close();
  }
}

/** Database commands per message on the accepting request and over the whole life, from the counts of `sends` messages. */
function commandsPerMessage(counts: CommandCounts, sends: number): { accepting: number; total: number } {
  const rows = workCommands(counts);
  const accepting = rows.filter(([key]) => ACCEPTING.test(key)).reduce((sum, [, n]) => sum + n, 0);
  const total = rows.reduce((sum, [, n]) => sum + n, 0);
  return { accepting: accepting / sends, total: total / sends };
}

/** Database commands per message, by command and collection: the accepting request's and the whole life's. */
function commandTable(counts: CommandCounts, times: CommandCounts, sends: number, counter: CommandCounter): string {
  const rows = workCommands(counts);
  const { accepting, total } = commandsPerMessage(counts, sends);
  return [
    `Database commands per message, counted ${counter.where} over ${sends} messages from acceptance to "read" (no webhook endpoint):`,
    table(
      ["command and collection", "commands", "per message", counter.timeHeader],
      rows.map(([key, n]) => [key, String(n), (n / sends).toFixed(3), ((times.get(key) ?? 0) / n).toFixed(2)]),
    ),
    `accepting request: ${accepting.toFixed(3)} per message; whole life: ${total.toFixed(3)} per message`,
    `the simulated network's own records (simulator_reports, left out above): ${(networkCommands(counts) / sends).toFixed(3)} commands per message`,
  ].join("\n");
}
