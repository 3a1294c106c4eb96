import * as grpc from "@grpc/grpc-js";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { MongoClient } from "mongodb";
import { request } from "undici";
import { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { SimulatorService } from "../../gen/messaging/console/v1/simulator_pb.js";
import { TemplateService } from "../../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { GetFlowResponseFileRequestSchema } from "../../gen/messaging/v1/flow_responses_pb.js";
import { startServiceProcess, stopProcess } from "../helpers/processes.js";
import { rssMiB, table, consoleClients, UPGRADED_NUMBER } from "./harness.js";

const CONSOLE_TOKEN = "bench-console-token-0123456789";

/**
 * A form file of `sizeMiB` MiB through the whole path, against the real
 * service in its own process (ROLE=all, simulator, real database): the
 * client-stream upload into the simulator's media store, the fetch into
 * GridFS (submission → flow.completed), and the download over REST and over
 * gRPC (grpc-js), each hashed and compared. For each phase: throughput and
 * the server's resident memory before and at its peak (sampled every 20 ms),
 * which shows that files are streamed, not buffered whole.
 */
export async function runFilesBench(options: { mongodbUri: string; sizeMiB: number }): Promise<string> {
  const database = `bench_files_${Date.now()}`;
  const size = options.sizeMiB * 1024 * 1024;
  const service = await startServiceProcess({
    MONGODB_URI: options.mongodbUri,
    MONGODB_DATABASE: database,
    CONSOLE_TOKEN,
    ROLE: "all",
    FLOW_FILE_MAX_BYTES: String(size),
  });
  const pid = service.child.pid as number;
  const client = consoleClients(`http://127.0.0.1:${service.consolePort}`, CONSOLE_TOKEN);
  const mongo = new MongoClient(options.mongodbUri);
  const dir = await mkdtemp(path.join(tmpdir(), "files-bench-"));
  const rows: string[][] = [];
  /** Runs `work`, sampling the server's RSS, and adds a row. */
  async function phase(name: string, work: () => Promise<void>) {
    const before = (await rssMiB(pid)) ?? 0;
    let peak = before;
    let running = true;
    const sampler = (async () => {
      while (running) {
        peak = Math.max(peak, (await rssMiB(pid)) ?? 0);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const began = performance.now();
    await work();
    const seconds = (performance.now() - began) / 1000;
    running = false;
    await sampler;
    rows.push([name, options.sizeMiB.toFixed(0), seconds.toFixed(2), (options.sizeMiB / seconds).toFixed(1), before.toFixed(0), peak.toFixed(0)]);
  }
  try {
    const file = path.join(dir, "scan.bin");
    const bytes = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
    await writeFile(file, bytes);
    const expected = createHash("sha256").update(bytes).digest("hex");

    const { workspace } = await client(WorkspaceService).createWorkspace({ name: "bench", credits: 10n });
    const workspaceId = workspace!.id;
    const { sender } = await client(SenderService).createSender({ workspaceId, phoneNumber: UPGRADED_NUMBER, name: "bench", throughputMps: 1000 });
    const { template } = await client(TemplateService).createTemplate({ workspaceId, name: "bench_form", language: "en", body: "Hi {{name}}", flowId: "42" });
    const key = (await client(ApiKeyService).createApiKey({ workspaceId, name: "bench", scopes: ["messages:send", "flow_responses:read"], rateLimitPerMin: 100 })).secret;
    const sent = await request(`http://127.0.0.1:${service.publicPort}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ to: "4915100000001", sender: sender!.id, template: { id: template!.id, variables: { name: "Ada" } } }),
    });
    const messageId = ((await sent.body.json()) as { message_id: string }).message_id;
    const messages = mongo.db(database).collection<{ _id: string; wa_message_id: string | null }>("messages");
    while (!(await messages.findOne({ _id: messageId, wa_message_id: { $ne: null } }))) await new Promise((r) => setTimeout(r, 50));

    let mediaId = "";
    await phase("upload to the simulator (Connect client stream)", async () => {
      async function* parts() {
        yield { messageId, fileName: "scan.bin", mimeType: "application/zip" };
        for await (const chunk of createReadStream(file, { highWaterMark: 64 * 1024 })) yield { data: chunk as Buffer };
      }
      mediaId = (await client(SimulatorService).uploadSimulatorMedia(parts())).mediaId;
    });
    let flowResponseId = "";
    await phase("fetch into GridFS (submission → flow.completed)", async () => {
      flowResponseId = (await client(SimulatorService).simulateFlowResponse({ messageId, files: [{ field: "scan", mediaId }] })).flowResponseId;
      const events = mongo.db(database).collection("events");
      while (!(await events.findOne({ type: "flow.completed", "data.id": flowResponseId }))) await new Promise((r) => setTimeout(r, 20));
    });
    await phase("download over REST", async () => {
      const res = await request(`http://127.0.0.1:${service.publicPort}/v1/flow_responses/${flowResponseId}/files/0`, { headers: { authorization: `Bearer ${key}` } });
      const hash = createHash("sha256");
      for await (const chunk of res.body) hash.update(chunk as Buffer);
      if (hash.digest("hex") !== expected) throw new Error("REST download differs");
    });
    await phase("download over gRPC (grpc-js)", async () => {
      const grpcClient = new grpc.Client(`127.0.0.1:${service.publicPort}`, grpc.credentials.createInsecure());
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${key}`);
      const hash = createHash("sha256");
      await new Promise<void>((resolve, reject) => {
        const call = grpcClient.makeServerStreamRequest(
          "/messaging.v1.FlowResponseService/GetFlowResponseFile",
          (v: Uint8Array) => Buffer.from(v),
          (b: Buffer) => fromBinary(HttpBodySchema, b),
          toBinary(GetFlowResponseFileRequestSchema, create(GetFlowResponseFileRequestSchema, { id: flowResponseId, index: 0 })),
          md,
        );
        call.on("data", (m: { data: Uint8Array }) => hash.update(m.data));
        call.on("error", reject);
        call.on("end", () => resolve());
      });
      grpcClient.close();
      if (hash.digest("hex") !== expected) throw new Error("gRPC download differs");
    });
    return [
      `A ${options.sizeMiB} MiB form file end to end (bytes hashed and compared after each download); server RSS sampled every 20 ms`,
      table(["phase", "MiB", "seconds", "MiB/s", "RSS before MiB", "peak RSS MiB"], rows),
    ].join("\n");
  } finally {
    await stopProcess(service.child);
    await mongo.db(database).dropDatabase().catch(() => undefined);
    await mongo.close();
    await rm(dir, { recursive: true, force: true });
  }
}
