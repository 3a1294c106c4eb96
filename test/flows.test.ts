import type { StoredEvent } from "../src/events/event-bus.js";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConsoleRole, ConsoleUserService } from "../gen/messaging/console/v1/console_users_pb.js";
import { FlowResponseService as ConsoleFlowResponseService } from "../gen/messaging/console/v1/flow_responses_pb.js";
import { SimulatorService } from "../gen/messaging/console/v1/simulator_pb.js";
import { FlowResponseService } from "../gen/messaging/v1/flow_responses_pb.js";
import { projectRoot } from "../src/shared/project-root.js";
import { verifyWebhookSignature } from "../src/webhooks/signature.js";
import { grpcJsServerStream, rest } from "./helpers/clients.js";
import { startReceiver, type Receiver } from "./helpers/receivers.js";
import { createSender, createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * Forms end to end on the simulated network: a form template is sent, its
 * recipient submits it with files through `msgsvc simulate flow` (uploaded
 * to the simulator's media store, submitted as WhatsApp's nfm_reply
 * response_json, fetched by the service into GridFS), flow.completed is
 * stored and delivered, signed, to a local webhook receiver, and the response
 * and its files are read over REST and gRPC.
 */

const FLOW_ID = "1234567890";
const MAX_BYTES = 5 * 1024 * 1024;

let t: TestService;
let dir: string;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let formTemplateId: string;
let photo: Buffer;
let contract: Buffer;
let receiver: Receiver;
let webhookSecret: string;

beforeAll(async () => {
  t = await createTestService({
    config: { ...FAST_MESSAGING, logLevel: "error", flowFileMaxBytes: MAX_BYTES, webhookAllowHttpLoopback: true, webhookAllowPrivateTargets: true },
  });
  workspaceId = await t.createWorkspace("Forms", 100);
  receiver = await startReceiver();
  const created = await rest(t.consoleUrl, "POST", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, {
    key: TEST_CONSOLE_TOKEN,
    body: { name: "forms receiver", url: receiver.url, events: ["flow.completed"] },
  });
  expect(created.status, created.text).toBe(200);
  webhookSecret = created.json.secret;
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "flow_responses:read"] });
  senderId = await createSender(t, workspaceId);
  formTemplateId = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}, please sign up", flowId: FLOW_ID });
  dir = await mkdtemp(path.join(tmpdir(), "flows-test-"));
  photo = randomBytes(3 * 1024 * 1024 + 17); // binary, a few MB, not a multiple of GridFS's chunk size
  contract = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");
  await writeFile(path.join(dir, "photo.jpg"), photo);
  await writeFile(path.join(dir, "contract.pdf"), contract);
  await writeFile(path.join(dir, "huge.png"), randomBytes(MAX_BYTES + 1));
  await writeFile(path.join(dir, "tool.exe"), Buffer.from("MZ not really"));
});
afterAll(async () => {
  await t.close();
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (b: Buffer | Uint8Array) => createHash("sha256").update(b).digest("hex");
const grpcAddress = () => `127.0.0.1:${t.service.publicPort}`;

/** Sends the form template to `to` and waits until the simulated network accepted it. */
async function sendForm(to: string, flowToken?: string): Promise<string> {
  const res = await rest(t.publicUrl, "POST", "/v1/messages", {
    key: key.secret,
    body: { to, sender: senderId, template: { id: formTemplateId, variables: { name: "Ada" }, ...(flowToken ? { flow: { token: flowToken } } : {}) } },
  });
  expect(res.status).toBe(200);
  const id: string = res.json.message_id;
  await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: id as never, wa_message_id: { $ne: null } })) ? true : undefined));
  return id;
}

/** Waits for the flow.completed event of flow response `id`. */
const completed = (id: string) => eventually(async () => (await t.service.db.collection<StoredEvent>("events").findOne({ type: "flow.completed", "data.id": id })) ?? undefined);

describe("a simulated submission with two files", () => {
  let messageId: string;
  let flowResponseId: string;
  let event: Awaited<ReturnType<typeof completed>>;

  beforeAll(async () => {
    messageId = await sendForm("4915112340001", "signup-4711");
    const cli = await msgsvc(t, [
      "simulate",
      "flow",
      "--message",
      messageId,
      "--response",
      '{"name":"Ada","age":36,"newsletter":true}',
      "--file",
      `id_photo=${path.join(dir, "photo.jpg")}`,
      "--file",
      `contract=${path.join(dir, "contract.pdf")}`,
      "--json",
    ]);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    flowResponseId = JSON.parse(cli.stdout).flow_response_id;
    event = await completed(flowResponseId);
  });

  it("fires flow.completed with the spec's data, traced to the message, its template and flow", () => {
    const data = JSON.parse(event.body).data;
    expect(event.workspace_id).toBe(workspaceId);
    expect(data).toMatchObject({
      id: flowResponseId,
      object: "flow_response",
      from: "4915112340001",
      flow_token: "signup-4711",
      flow_id: FLOW_ID,
      source_message_id: messageId,
      template_id: formTemplateId,
      response: { name: "Ada", age: 36, newsletter: true },
      files: [
        { field: "id_photo", index: 0, file_name: "photo.jpg", mime_type: "image/jpeg", size_bytes: photo.length, sha256: sha256(photo), error: null },
        { field: "contract", index: 1, file_name: "contract.pdf", mime_type: "application/pdf", size_bytes: contract.length, sha256: sha256(contract), error: null },
      ],
    });
    expect(flowResponseId).toMatch(/^frs_[0-9a-f-]{36}$/);
    expect(data.message_id).toMatch(/^msg_[0-9a-f-]{36}$/);
    expect(data.message_id).not.toBe(messageId);
    expect(data.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(JSON.parse(event.body).type).toBe("flow.completed");
  });

  it("delivers flow.completed to the workspace's endpoint, signed, with the stored bytes", async () => {
    const got = await eventually(async () => receiver.requests.find((r) => r.headers["service-delivery"] === event._id));
    expect(got.headers["service-event"]).toBe("flow.completed");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.body).toBe(event.body);
    expect(verifyWebhookSignature(got.body, String(got.headers["service-signature"]), webhookSecret)).toBe(true);
    expect(() => verifyWebhookSignature(got.body, String(got.headers["service-signature"]), `${webhookSecret}x`)).toThrow("No v1 signature matches");
    expect(JSON.parse(got.body)).toMatchObject({ id: event._id, type: "flow.completed", data: { id: flowResponseId, source_message_id: messageId } });
  });

  it("fires no message.received for the submission", async () => {
    const data = JSON.parse(event.body).data;
    expect(await t.service.db.collection<StoredEvent>("events").countDocuments({ type: "message.received", "data.message_id": data.message_id })).toBe(0);
  });

  it("lists and gets the response over REST like the event's data", async () => {
    const data = JSON.parse(event.body).data;
    const got = await rest(t.publicUrl, "GET", `/v1/flow_responses/${flowResponseId}`, { key: key.secret });
    expect(got.status).toBe(200);
    expect(got.json).toEqual(data);
    const list = await rest(t.publicUrl, "GET", `/v1/flow_responses?message_id=${messageId}`, { key: key.secret });
    expect(list.json).toEqual({ object: "list", data: [data], total: 1, next_page_token: null });
    const byOwnMessage = await rest(t.publicUrl, "GET", `/v1/flow_responses?message_id=${data.message_id}&flow_id=${FLOW_ID}&flow_token=signup-4711`, { key: key.secret });
    expect(byOwnMessage.json.data.map((r: { id: string }) => r.id)).toEqual([flowResponseId]);
    const later = await rest(t.publicUrl, "GET", `/v1/flow_responses?flow_token=signup-4711&received_after=${new Date(Date.parse(data.received_at) + 1).toISOString()}`, { key: key.secret });
    expect(later.json.total).toBe(0);
  });

  it("downloads each file over REST byte for byte, with its type, length and file name", async () => {
    for (const [index, bytes, type, name] of [
      [0, photo, "image/jpeg", "photo.jpg"],
      [1, contract, "application/pdf", "contract.pdf"],
    ] as const) {
      const res = await fetch(`${t.publicUrl}/v1/flow_responses/${flowResponseId}/files/${index}`, { headers: { authorization: `Bearer ${key.secret}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("content-length")).toBe(String(bytes.length));
      expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${name}"`);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      const body = Buffer.from(await res.arrayBuffer());
      expect(sha256(body)).toBe(sha256(bytes));
      expect(body.equals(bytes)).toBe(true);
    }
  });

  it("downloads each file over gRPC as google.api.HttpBody chunks, the first with the type", async () => {
    for (const [index, bytes, type] of [
      [0, photo, "image/jpeg"],
      [1, contract, "application/pdf"],
    ] as const) {
      const answer = await grpcJsServerStream(grpcAddress(), FlowResponseService.method.getFlowResponseFile, { id: flowResponseId, index }, { authorization: `Bearer ${key.secret}` });
      expect(answer.error).toBeUndefined();
      expect(answer.messages[0]!.contentType).toBe(type);
      expect(answer.headers.get("content-length")).toEqual([]);
      const body = Buffer.concat(answer.messages.map((m) => m.data));
      expect(sha256(body)).toBe(sha256(bytes));
      expect(body.equals(bytes)).toBe(true);
    }
    const big = await grpcJsServerStream(grpcAddress(), FlowResponseService.method.getFlowResponseFile, { id: flowResponseId, index: 0 }, { authorization: `Bearer ${key.secret}` });
    expect(big.messages.length).toBeGreaterThan(1); // streamed in chunks, not one message
  });

  it("shows the workspace's people the response and its files through the console: REST, Connect, msgsvc", async () => {
    const data = JSON.parse(event.body).data;
    const list = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/flow_responses?message_id=${messageId}`, { key: TEST_CONSOLE_TOKEN });
    expect(list.json).toEqual({ object: "list", data: [data], total: 1, next_page_token: null });
    expect((await rest(t.consoleUrl, "GET", `/console/v1/flow_responses/${flowResponseId}`, { key: TEST_CONSOLE_TOKEN })).json).toEqual(data);
    const file = await fetch(`${t.consoleUrl}/console/v1/flow_responses/${flowResponseId}/files/1`, { headers: { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` } });
    expect(file.headers.get("content-disposition")).toBe('attachment; filename="contract.pdf"');
    expect(Buffer.from(await file.arrayBuffer()).equals(contract)).toBe(true);
    const chunks: Uint8Array[] = [];
    for await (const body of t.console(ConsoleFlowResponseService).getFlowResponseFile({ id: flowResponseId, index: 0 })) chunks.push(body.data);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(photo));

    const table = await msgsvc(t, ["flow-responses", "list", "--workspace", workspaceId, "--flow-token", "signup-4711"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID +RECEIVED_AT +FROM/);
    expect(table.stdout.split("\n")[1]?.split(/ +/)[0]).toBe(flowResponseId);
    const output = path.join(dir, "downloaded.jpg");
    const saved = await msgsvc(t, ["flow-responses", "file", flowResponseId, "0", "--output", output]);
    expect(saved).toMatchObject({ code: 0, stdout: `Saved ${output} (${photo.length} bytes)\n` });
    expect(sha256(await readFile(output))).toBe(sha256(photo));

    // Someone without a role in the workspace learns nothing, not even that it exists.
    const other = await t.createWorkspace("Other forms");
    await t.console(ConsoleUserService).createConsoleUser({ email: "forms-outsider@example.com", password: "a-good-password-123", roles: [{ workspaceId: other, role: ConsoleRole.ADMIN }] });
    const token = (await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email: "forms-outsider@example.com", password: "a-good-password-123" } })).json.token as string;
    expect((await rest(t.consoleUrl, "GET", `/console/v1/flow_responses/${flowResponseId}`, { key: token })).json.error.code).toBe("not_found");
    expect((await rest(t.consoleUrl, "GET", `/console/v1/flow_responses/${flowResponseId}/files/0`, { key: token })).status).toBe(404);
    expect((await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/flow_responses`, { key: token })).json.error.code).toBe("permission_denied");
    expect((await rest(t.consoleUrl, "GET", `/console/v1/flow_responses/${flowResponseId}/files/7`, { key: TEST_CONSOLE_TOKEN })).json.error.code).toBe("not_found");
  });

  it("simulate flow --wait answers once the response is readable, its files stored", async () => {
    const next = await sendForm("4915112340009", "signup-wait");
    const cli = await msgsvc(t, ["simulate", "flow", "--message", next, "--file", `id_photo=${path.join(dir, "contract.pdf")}`, "--wait", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const answer = JSON.parse(cli.stdout);
    expect(answer).toMatchObject({ completed: true, flow_response_id: expect.stringMatching(/^frs_/) });
    const got = await rest(t.publicUrl, "GET", `/v1/flow_responses/${answer.flow_response_id}`, { key: key.secret });
    expect(got.status).toBe(200);
    expect(got.json.files[0]).toMatchObject({ file_name: "contract.pdf", error: null, sha256: sha256(contract) });
  });

  it("stored the files in GridFS and kept no network reference on them", async () => {
    const stored = await t.service.db.collection("flow_responses").findOne({ _id: flowResponseId as never });
    expect(stored!.files.map((f: { media: unknown }) => f.media)).toEqual([null, null]);
    expect(await t.service.db.collection("flow_files.files").countDocuments({ "metadata.flow_response_id": flowResponseId })).toBe(2);
  });
});

describe("tracing submissions", () => {
  it("a token that matches no message: no source_message_id; template and flow from the answered message", async () => {
    const messageId = await sendForm("4915112340002");
    const res = await t.console(SimulatorService).simulateFlowResponse({ messageId, response: { name: "Bo" }, flowToken: "no-such-token" });
    const data = JSON.parse((await completed(res.flowResponseId)).body).data;
    expect(data).toMatchObject({ flow_token: "no-such-token", source_message_id: null, template_id: formTemplateId, flow_id: FLOW_ID, response: { name: "Bo" }, files: [] });
  });

  it("a token sent to several recipients traces each submission to the submitter's message", async () => {
    const first = await sendForm("4915112340003", "campaign-7");
    const second = await sendForm("4915112340004", "campaign-7");
    const a = await t.console(SimulatorService).simulateFlowResponse({ messageId: second, response: {} });
    const b = await t.console(SimulatorService).simulateFlowResponse({ messageId: first, response: {} });
    expect(JSON.parse((await completed(a.flowResponseId)).body).data.source_message_id).toBe(second);
    expect(JSON.parse((await completed(b.flowResponseId)).body).data.source_message_id).toBe(first);
  });

  it("a generated token is the one the submission carries", async () => {
    const messageId = await sendForm("4915112340005");
    const message = await t.service.db.collection("messages").findOne({ _id: messageId as never });
    const res = await t.console(SimulatorService).simulateFlowResponse({ messageId, response: {} });
    const data = JSON.parse((await completed(res.flowResponseId)).body).data;
    expect(data.flow_token).toBe(message!.flow_token);
    expect(data.source_message_id).toBe(messageId);
  });
});

describe("files that cannot be stored", () => {
  it("records an oversized file and a refused type with their errors; the submission and the other file are kept", async () => {
    const messageId = await sendForm("4915112340006");
    const cli = await msgsvc(t, [
      "simulate",
      "flow",
      "--message",
      messageId,
      "--file",
      `scan=${path.join(dir, "huge.png")}`,
      "--file",
      `tool=${path.join(dir, "tool.exe")}`,
      "--file",
      `contract=${path.join(dir, "contract.pdf")}`,
      "--json",
    ]);
    expect(cli.code).toBe(0);
    const id = JSON.parse(cli.stdout).flow_response_id;
    const data = JSON.parse((await completed(id)).body).data;
    expect(data.files[0]).toMatchObject({ field: "scan", file_name: "huge.png", mime_type: "image/png", size_bytes: null, sha256: null });
    expect(data.files[0].error).toMatch(/^file_too_large: .*5242880 bytes/);
    expect(data.files[1]).toMatchObject({ field: "tool", size_bytes: null });
    expect(data.files[1].error).toMatch(/^type_not_allowed: application\/.* is not among the allowed types/);
    expect(data.files[2]).toMatchObject({ field: "contract", size_bytes: contract.length, error: null });
    const refused = await rest(t.publicUrl, "GET", `/v1/flow_responses/${id}/files/0`, { key: key.secret });
    expect(refused.status).toBe(404);
    expect(refused.json.error.code).toBe("not_found");
    expect(refused.json.error.message).toContain("file_too_large");
    expect(await t.service.db.collection("flow_files.files").countDocuments({ "metadata.flow_response_id": id })).toBe(1);
  });
});

describe("the README's simulate flow example", () => {
  it("runs as written with the sample files shipped in test/fixtures", async () => {
    const readme = await readFile(path.join(projectRoot, "README.md"), "utf8");
    const example = "--file id_photo=./test/fixtures/photo.jpg --file contract=./test/fixtures/contract.pdf";
    expect(readme).toContain(example);
    const messageId = await sendForm("4915112340077", "readme-example");
    // The CLI runs from the project root, as the README's commands do.
    const cli = await msgsvc(t, ["simulate", "flow", "--message", messageId, "--response", '{"name":"Ada"}', ...example.split(" "), "--json"]);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    const event = await completed(JSON.parse(cli.stdout).flow_response_id);
    const photo = await readFile(path.join(projectRoot, "test", "fixtures", "photo.jpg"));
    expect(JSON.parse(event.body).data.files).toEqual([
      expect.objectContaining({ field: "id_photo", file_name: "photo.jpg", mime_type: "image/jpeg", size_bytes: photo.length, error: null }),
      expect.objectContaining({ field: "contract", file_name: "contract.pdf", mime_type: "application/pdf", error: null }),
    ]);
  });
});
