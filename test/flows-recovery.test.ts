import type { StoredEvent } from "../src/events/event-bus.js";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Binary, ObjectId } from "mongodb";
import { FETCH_LEASE_MS } from "../src/flows/file-fetch.js";
import { SimulatorService } from "../gen/messaging/console/v1/simulator_pb.js";
import { rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestClock, createTestService, eventually, type TestService } from "./helpers/test-service.js";

/*
 * A process that stopped while fetching a submission's files (its lease left
 * behind, a half-written GridFS file) loses nothing: once the lease lapses a
 * worker's claim takes the fetch over, the broken upload is deleted, the file
 * is fetched again and flow.completed fires.
 */

const clock = createTestClock();
let t: TestService;
let key: { id: string; secret: string };
let workspaceId: string;
let messageId: string;

beforeAll(async () => {
  t = await createTestService({ clock, config: { ...FAST_MESSAGING, logLevel: "error" } });
  workspaceId = await t.createWorkspace("Recovery", 10);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "flow_responses:read"] });
  const sender = await createSender(t, workspaceId);
  const form = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}", flowId: "42" });
  const res = await rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, body: { to: "4915112340201", sender, template: { id: form, variables: { name: "Ada" } } } });
  messageId = res.json.message_id;
  await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: messageId as never, wa_message_id: { $ne: null } })) ? true : undefined));
});
afterAll(() => t.close());

it("a fetch whose process stopped is taken over once its lease lapses, and completes", async () => {
  const bytes = Buffer.from("the scan of an id card");
  async function* parts() {
    yield { messageId, fileName: "scan.png", data: bytes };
  }
  const medium = await t.console(SimulatorService).uploadSimulatorMedia(parts());
  const broken = new ObjectId();
  await t.service.db.collection("flow_files.chunks").insertOne({ files_id: broken, n: 0, data: new Binary(Buffer.from("half")) });
  const now = clock.now();
  const id = "frs_00000000-0000-4000-8000-000000000201";
  await t.service.db.collection("flow_responses").insertOne({
    _id: id as never,
    workspace_id: workspaceId,
    message_id: "msg_00000000-0000-4000-8000-000000000201",
    from: "4915112340201",
    flow_token: "t",
    flow_id: "42",
    source_message_id: messageId,
    template_id: null,
    response_json: "{}",
    files: [
      { field: "scan", index: 0, file_name: "scan.png", mime_type: "image/png", state: "pending", media: { id: medium.mediaId }, stated_sha256: null, gridfs_id: broken, size_bytes: null, sha256: null, error: null },
    ],
    received_at: now,
    created_at: now,
    fetch: { state: "pending", attempts: 1, last_error: null },
    // Held by a process that stopped: due (taken again) once its lease lapses.
    due_at: new Date(now.getTime() + FETCH_LEASE_MS),
    lease_owner: "stopped-process:1",
    leased_at: now,
    ready_at: null,
    published_at: null,
  });

  // A live lease is left alone: the claims (every QUEUE_CLAIM_INTERVAL_MS) do not take it.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await t.service.db.collection("flow_responses").findOne({ _id: id as never }))).toMatchObject({ lease_owner: "stopped-process:1", fetch: { state: "pending" } });
  expect((await rest(t.publicUrl, "GET", `/v1/flow_responses/${id}`, { key: key.secret })).status).toBe(404); // not ready yet

  clock.advance(FETCH_LEASE_MS + 60_000);
  const event = await eventually(async () => (await t.service.db.collection<StoredEvent>("events").findOne({ type: "flow.completed", "data.id": id })) ?? undefined);
  expect(JSON.parse(event.body).data.files[0]).toMatchObject({ size_bytes: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), error: null });
  expect(await t.service.db.collection("flow_files.chunks").countDocuments({ files_id: broken })).toBe(0);
  const file = await fetch(`${t.publicUrl}/v1/flow_responses/${id}/files/0`, { headers: { authorization: `Bearer ${key.secret}` } });
  expect(Buffer.from(await file.arrayBuffer()).equals(bytes)).toBe(true);
  await eventually(async () => ((await t.service.db.collection("flow_responses").findOne({ _id: id as never, "fetch.state": "done" })) ? true : undefined));
});
