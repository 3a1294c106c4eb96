import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, inject, it } from "vitest";
import { MongoClient } from "mongodb";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { rest } from "./helpers/clients.js";
import { startFakeGraphApi } from "./helpers/fake-graph-api.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { eventually } from "./helpers/test-service.js";

/*
 * Durable dispatch across a crash: an API process accepts messages and
 * dispatches them at once, but the network (a local Graph API stand-in
 * counting requests) is down, so they wait for a retry, leased to that
 * process; then it is killed. A worker started later takes them over once the
 * lease expired, sends each exactly once, and a restarted worker does not
 * send them again.
 */

const CONSOLE_TOKEN = "crash-console-token-0123456789";
const database = `test_crash_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const mongoUri = inject("mongoUri");
const children: Parameters<typeof stopProcess>[0][] = [];

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  const client = new MongoClient(mongoUri);
  await client.db(database).dropDatabase();
  await client.close();
});

describe("a service killed between acceptance and dispatch", () => {
  it("delivers each accepted message once after a worker takes it over, and not again after a restart", async () => {
    let outage = true;
    const graph = await startFakeGraphApi(() => (outage ? { status: 503, body: { error: { message: "(#131016) Service unavailable", code: 131016 } } } : undefined));
    const env = {
      MONGODB_URI: mongoUri,
      MONGODB_DATABASE: database,
      CONSOLE_TOKEN,
      LOG_LEVEL: "info",
      NETWORK: "whatsapp",
      WHATSAPP_GRAPH_URL: graph.url,
      WHATSAPP_ACCESS_TOKEN: "EAAG-crash-token",
      WHATSAPP_APP_SECRET: "crash-app-secret",
      WHATSAPP_VERIFY_TOKEN: "crash-verify",
    };
    const api = await startServiceProcess({ ...env, ROLE: "api" });
    children.push(api.child);
    const auth: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${CONSOLE_TOKEN}`);
      return next(req);
    };
    const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${api.consolePort}`, httpVersion: "1.1", interceptors: [auth] });
    const console = <S extends DescService>(s: S) => createClient(s, transport);
    const { workspace } = await console(WorkspaceService).createWorkspace({ name: "Crash", credits: 10n });
    const { secret } = await console(ApiKeyService).createApiKey({ workspaceId: workspace!.id, name: "crash", scopes: ["messages:send", "messages:read"] });
    const { sender } = await console(SenderService).createSender({ workspaceId: workspace!.id, phoneNumber: "15550783881", name: "Crash", whatsappPhoneNumberId: "106540352242922" });
    const { template } = await console(TemplateService).createTemplate({ workspaceId: workspace!.id, name: "crash_test", language: "en", body: "Hello {{name}}" });
    const ids: string[] = [];
    for (const to of ["16505550001", "16505550002"]) {
      const res = await rest(`http://127.0.0.1:${api.publicPort}`, "POST", "/v1/messages", {
        key: secret,
        body: { to, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada" } } },
      });
      expect(res.status).toBe(200);
      ids.push(res.json.message_id);
    }
    const client = new MongoClient(mongoUri);
    try {
      const db = client.db(database);
      // Killed once the API has recorded each refusal (pending again, retry due): killed between the network's
      // answer and that write, a message stays claimed, and is failed, never sent again (dispatch.ts).
      await eventually(async () => (ids.every((id) => graph.requests.some((r) => r.body?.biz_opaque_callback_data === id)) ? true : undefined));
      const retryRecorded = { _id: { $in: ids } as never, "dispatch.state": "pending", "dispatch.last_error": { $ne: null } };
      await eventually(async () => ((await db.collection("messages").countDocuments(retryRecorded)) === 2 ? true : undefined));
      api.child.kill("SIGKILL");
      await new Promise((resolve) => api.child.once("exit", resolve));
      const refused = graph.requests.length;
      outage = false;

      const worker = await startServiceProcess({ ...env, ROLE: "worker", MESSAGES_SWEEP_INTERVAL_MS: "200" });
      children.push(worker.child);
      // The API's lease (10 s after the retry was due) has to run out first.
      await eventually(async () => ((await db.collection("messages").countDocuments({ _id: { $in: ids } as never, status: "sent" })) === 2 ? true : undefined), 40_000);
      await stopProcess(worker.child);

      const restarted = await startServiceProcess({ ...env, ROLE: "worker" });
      children.push(restarted.child);
      await stopProcess(restarted.child);
      // One refused attempt each by the API, then exactly one accepted send each by the worker.
      const accepted = graph.requests.slice(refused);
      for (const id of ids) expect(accepted.filter((r) => r.body.biz_opaque_callback_data === id)).toHaveLength(1);
      const messages = await db.collection("messages").find({ _id: { $in: ids } as never }).toArray();
      expect(messages.map((m) => m.dispatch.attempts)).toEqual([2, 2]);
    } finally {
      await client.close();
      await graph.close();
    }
  }, 90_000);
});
