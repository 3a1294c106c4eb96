import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { MongoClient } from "mongodb";
import { Pool } from "undici";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { SendMessageRequestSchema } from "../../gen/messaging/v1/messages_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { loadTable, percentile, rssMiB, runLoad, table, type LoadResult } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/**
 * POST /v1/messages over REST and gRPC against the real service in its own
 * process (ROLE=all, simulator network, real database): validation, the
 * atomic credit reservation, the outbox insert, the ledger entry and the
 * dispatch job of every send, while the same process dispatches what was
 * accepted. Each worker has its own key (100 requests/min), making
 * `callsPerWorker` sends. Afterwards, how long dispatch took: acceptance to
 * the network's acceptance (sent_at − created_at) of every message.
 */
export async function runMessagesBench(options: { mongodbUri: string; concurrency: number; callsPerWorker: number }): Promise<string> {
  const database = `bench_messages_${Date.now()}`;
  const service = await startServiceProcess({
    MONGODB_URI: options.mongodbUri,
    MONGODB_DATABASE: database,
    PORT: "0",
    HOST: "127.0.0.1",
    CONSOLE_PORT: "0",
    CONSOLE_TOKEN,
    ROLE: "all",
  });
  const pid = service.child.pid as number;
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${CONSOLE_TOKEN}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${service.consolePort}`, httpVersion: "1.1", interceptors: [auth] });
  const client = <S extends Parameters<typeof createClient>[0]>(s: S) => createClient(s, transport);
  const totalSends = 2 * options.concurrency * options.callsPerWorker;
  const { workspace } = await client(WorkspaceService).createWorkspace({ name: "bench", credits: BigInt(totalSends) });
  const workspaceId = workspace!.id;
  const { sender } = await client(SenderService).createSender({ workspaceId, phoneNumber: "15550001234", name: "bench" });
  const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench", language: "en", body: "Hello {{name}}, your code is {{code}}" });
  const newKeys = () =>
    Promise.all(
      Array.from({ length: options.concurrency }, async (_, i) =>
        (await client(ApiKeyService).createApiKey({ workspaceId, name: `bench ${i}`, scopes: ["messages:send"], rateLimitPerMin: 100 })).secret,
      ),
    );
  const body = (i: number) => ({ to: `4915${String(100000000 + i)}`, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada", code: String(i) } } });

  const results: LoadResult[] = [];
  let n = 0;
  const mongo = new MongoClient(options.mongodbUri);
  try {
    const restKeys = await newKeys();
    const pool = new Pool(`http://127.0.0.1:${service.publicPort}`, { connections: options.concurrency });
    results.push(
      await runLoad({
        name: "REST POST /v1/messages",
        concurrency: options.concurrency,
        callsPerWorker: options.callsPerWorker,
        serverPid: pid,
        call: async (w) => {
          const res = await pool.request({
            path: "/v1/messages",
            method: "POST",
            headers: { authorization: `Bearer ${restKeys[w]}`, "content-type": "application/json" },
            body: JSON.stringify(body(n++)),
          });
          await res.body.dump();
          return String(res.statusCode);
        },
      }),
    );
    await pool.close();

    const grpcKeys = await newKeys();
    const grpcClient = new grpc.Client(`127.0.0.1:${service.publicPort}`, grpc.credentials.createInsecure());
    const identity = (b: Buffer) => b;
    results.push(
      await runLoad({
        name: "gRPC SendMessage (grpc-js)",
        concurrency: options.concurrency,
        callsPerWorker: options.callsPerWorker,
        serverPid: pid,
        call: (w) =>
          new Promise((resolve) => {
            const md = new grpc.Metadata();
            md.set("authorization", `Bearer ${grpcKeys[w]}`);
            const request = Buffer.from(toBinary(SendMessageRequestSchema, create(SendMessageRequestSchema, body(n++))));
            grpcClient.makeUnaryRequest("/messaging.v1.MessageService/SendMessage", identity, identity, request, md, (err) =>
              resolve(err ? (grpc.status[err.code] ?? "error") : "OK"),
            );
          }),
      }),
    );
    grpcClient.close();

    // Dispatch: wait until every accepted message reached the network, then measure acceptance → sent.
    const messages = mongo.db(database).collection<{ created_at: Date; sent_at: Date | null }>("messages");
    const started = performance.now();
    let peak = 0;
    for (;;) {
      peak = Math.max(peak, (await rssMiB(pid)) ?? 0);
      if ((await messages.countDocuments({ sent_at: null })) === 0) break;
      if (performance.now() - started > 300_000) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const rows = await messages.find({ sent_at: { $ne: null } }, { projection: { created_at: 1, sent_at: 1 } }).toArray();
    const lags = Float64Array.from(rows.map((m) => (m.sent_at as Date).getTime() - m.created_at.getTime())).sort();
    const first = Math.min(...rows.map((m) => m.created_at.getTime()));
    const last = Math.max(...rows.map((m) => (m.sent_at as Date).getTime()));
    const dispatchTable = table(
      ["run", "messages", "messages/s", "p50 ms", "p99 ms", "peak RSS MiB"],
      [[
        "dispatch: accepted → sent (simulator)",
        String(rows.length),
        (rows.length / ((last - first) / 1000)).toFixed(0),
        percentile(lags, 50).toFixed(0),
        percentile(lags, 99).toFixed(0),
        peak.toFixed(0),
      ]],
    );
    return [
      `POST /v1/messages, ${options.concurrency} concurrent clients, ${options.callsPerWorker} sends each, own key per client`,
      loadTable(results),
      "",
      "Dispatch of those messages by the same process (from the first acceptance to the last network acceptance)",
      dispatchTable,
    ].join("\n");
  } finally {
    await stopProcess(service.child);
    await mongo.db(database).dropDatabase().catch(() => undefined);
    await mongo.close();
  }
}
