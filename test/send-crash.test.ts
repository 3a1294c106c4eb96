import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { afterAll, describe, expect, inject, it } from "vitest";
import { MongoClient } from "mongodb";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { startFakeGraphApi } from "./helpers/fake-graph-api.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { eventually } from "./helpers/test-service.js";

/*
 * kill -9 of the API process and of the worker in the middle of 300 sends
 * (messages once stayed "accepted" for good after a crash). A new process
 * takes over what the dead ones left: every message answered 200 is stored
 * once, sent to the network at most once, and settles (sent, or failed and
 * refunded) within seconds; no credit change stays pending; balance + the
 * charges of unrefunded messages = the opening credits; and every status a
 * message reached has its event, none twice.
 */

const CONSOLE_TOKEN = "send-crash-console-token-0123456789";
const OPENING_CREDITS = 1000;
const SENDS = 300;
const database = `test_send_crash_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const mongoUri = inject("mongoUri");
const children: Parameters<typeof stopProcess>[0][] = [];

afterAll(async () => {
  for (const child of children) await stopProcess(child);
  const client = new MongoClient(mongoUri);
  await client.db(database).dropDatabase();
  await client.close();
});

describe("an API process and a worker killed with SIGKILL during sends", () => {
  it("leaves no message unsettled and no credit unaccounted once another process takes over", async () => {
    const graph = await startFakeGraphApi();
    const env = {
      MONGODB_URI: mongoUri,
      MONGODB_DATABASE: database,
      CONSOLE_TOKEN,
      NETWORK: "whatsapp",
      WHATSAPP_GRAPH_URL: graph.url,
      WHATSAPP_ACCESS_TOKEN: "EAAG-send-crash-token",
      WHATSAPP_APP_SECRET: "send-crash-app-secret",
      WHATSAPP_VERIFY_TOKEN: "send-crash-verify",
      MESSAGES_SWEEP_INTERVAL_MS: "1000",
      DISPATCH_CLAIM_TIMEOUT_MS: "3000",
      RECOVERY_AGE_MS: "2000",
      JOB_POLL_INTERVAL_MS: "200",
    };
    const first = await startServiceProcess({ ...env, ROLE: "api" });
    const worker = await startServiceProcess({ ...env, ROLE: "worker" });
    children.push(first.child, worker.child);
    const auth: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${CONSOLE_TOKEN}`);
      return next(req);
    };
    const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${first.consolePort}`, httpVersion: "1.1", interceptors: [auth] });
    const console = <S extends DescService>(s: S) => createClient(s, transport);
    const { workspace } = await console(WorkspaceService).createWorkspace({ name: "Send crash", credits: BigInt(OPENING_CREDITS) });
    const workspaceId = workspace!.id;
    // Four keys: 100 sends a minute each.
    const secrets = await Promise.all(
      [1, 2, 3, 4].map(async (i) => (await console(ApiKeyService).createApiKey({ workspaceId, name: `crash ${i}`, scopes: ["messages:send"], rateLimitPerMin: 100 })).secret),
    );
    const { sender } = await console(SenderService).createSender({ workspaceId, phoneNumber: "15550783882", name: "Crash", whatsappPhoneNumberId: "106540352242923" });
    const { template } = await console(TemplateService).createTemplate({ workspaceId, name: "crash_send", language: "en", body: "Hello {{name}}" });

    // 300 sends, 8 at a time; both processes are killed once 100 were answered.
    const answered: string[] = [];
    let next = 0;
    const killed = once(first.child, "exit");
    const send = async () => {
      while (next < SENDS) {
        const n = next++;
        const res = await fetch(`http://127.0.0.1:${first.publicPort}/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${secrets[n % secrets.length]}`, "content-type": "application/json" },
          body: JSON.stringify({ to: `1650555${String(n).padStart(4, "0")}`, sender: sender!.id, template: { id: template!.id, variables: { name: "Ada" } } }),
        }).catch(() => undefined);
        if (!res) return; // the process is gone
        if (res.status === 200) answered.push(((await res.json()) as { message_id: string }).message_id);
        if (answered.length === 100 && first.child.exitCode === null) {
          first.child.kill("SIGKILL");
          worker.child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, send));
    await killed;
    expect(answered.length).toBeGreaterThanOrEqual(100);

    const second = await startServiceProcess({ ...env, ROLE: "all" });
    children.push(second.child);
    const client = new MongoClient(mongoUri);
    try {
      const db = client.db(database);
      const messages = db.collection<{ _id: string; status: string; credits: number; refund_state: string }>("messages");
      const workspaces = db.collection<{ _id: string; credit_balance: number; credit_ops?: Record<string, unknown> }>("workspaces");
      // Sweep interval 1 s, claims and half-done steps taken over after 2-3 s: settled well within 20 s.
      await eventually(async () => {
        const open = await messages.countDocuments({ $or: [{ status: "accepted" }, { status: "failed", refund_state: { $ne: "done" } }] });
        const ws = await workspaces.findOne({ _id: workspaceId });
        return open === 0 && Object.keys(ws?.credit_ops ?? {}).length === 0 ? true : undefined;
      }, 20_000).catch(async (err: Error) => {
        const open = await messages.find({ $or: [{ status: "accepted" }, { status: "failed", refund_state: { $ne: "done" } }] }).toArray();
        const ws = await workspaces.findOne({ _id: workspaceId });
        const jobs = await db.collection("jobs").find({}).toArray();
        throw new Error(`${err.message}: unsettled ${JSON.stringify(open)}; credit_ops ${JSON.stringify(ws?.credit_ops)}; jobs ${JSON.stringify(jobs)}`);
      });

      const stored = await messages.find({ workspace_id: workspaceId } as never).toArray();
      const ids = new Set(stored.map((m) => m._id));
      for (const id of answered) expect(ids.has(id)).toBe(true);
      for (const m of stored) expect(["sent", "failed"]).toContain(m.status);
      for (const m of stored) expect(graph.requests.filter((r) => r.body?.biz_opaque_callback_data === m._id).length).toBeLessThanOrEqual(1);
      const charged = stored.filter((m) => m.refund_state !== "done").reduce((sum, m) => sum + m.credits, 0);
      const balance = (await workspaces.findOne({ _id: workspaceId }))!.credit_balance;
      expect(balance + charged).toBe(OPENING_CREDITS);
      // Every status reached has its event, exactly once (the sweep fires what a dead process left).
      await eventually(async () => ((await messages.countDocuments({ "events_pending.0": { $exists: true } } as never)) === 0 ? true : undefined), 20_000);
      const events = await db.collection<{ type: string; data: { message_id: string } }>("events").find({ workspace_id: workspaceId } as never).toArray();
      const seen = new Map<string, number>();
      for (const e of events) seen.set(`${e.data.message_id}:${e.type}`, (seen.get(`${e.data.message_id}:${e.type}`) ?? 0) + 1);
      for (const m of stored) expect(seen.get(`${m._id}:message.${m.status}`)).toBe(1);
      expect([...seen.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await client.close();
      await graph.close();
    }
  }, 120_000);
});
