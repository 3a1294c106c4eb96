import type { StoredEvent } from "../src/events/event-bus.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConsoleRole, ConsoleUserService, SessionService } from "../gen/messaging/console/v1/console_users_pb.js";
import { SimulatorService } from "../gen/messaging/console/v1/simulator_pb.js";
import { FlowResponseService } from "../gen/messaging/v1/flow_responses_pb.js";
import { clientFor, grpcJsServerStream, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

/*
 * Refusals of the forms API and of the simulator's form methods: unknown and
 * foreign ids, indexes outside the files array, bad filters, another
 * workspace's key, a key without the scope, and simulated submissions that
 * could not happen.
 */

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };
let otherKey: { id: string; secret: string };
let formMessageId: string;
let plainMessageId: string;
let flowResponseId: string;

async function sendAndWait(to: string, template: string, sender: string): Promise<string> {
  const res = await rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, body: { to, sender, template: { id: template, variables: { name: "Ada" } } } });
  const id: string = res.json.message_id;
  await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: id as never, wa_message_id: { $ne: null } })) ? true : undefined));
  return id;
}

/** Uploads `bytes` for `messageId` through the client stream. */
async function upload(messageId: string, bytes: Buffer, fileName = "a.jpg", client = t.console(SimulatorService)) {
  async function* parts() {
    yield { messageId, fileName };
    yield { data: bytes };
  }
  return client.uploadSimulatorMedia(parts());
}

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
  workspaceId = await t.createWorkspace("Forms", 100);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "flow_responses:read"] });
  const other = await t.createWorkspace("Other", 0);
  otherKey = await t.createKey(other, { scopes: ["flow_responses:read"] });
  const sender = await createSender(t, workspaceId);
  const form = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}", flowId: "42" });
  const plain = await createTemplate(t, workspaceId, { name: "hello", body: "Hi {{name}}" });
  formMessageId = await sendAndWait("4915112340101", form, sender);
  plainMessageId = await sendAndWait("4915112340102", plain, sender);
  const medium = await upload(formMessageId, Buffer.from("jpeg bytes"));
  flowResponseId = (await t.console(SimulatorService).simulateFlowResponse({ messageId: formMessageId, response: { a: 1 }, files: [{ field: "photo", mediaId: medium.mediaId }] }))
    .flowResponseId;
  await eventually(async () => (await t.service.db.collection<StoredEvent>("events").findOne({ type: "flow.completed", "data.id": flowResponseId })) ?? undefined);
});
afterAll(() => t.close());

const get = (path: string, secret = key.secret) => rest(t.publicUrl, "GET", path, { key: secret });

describe("not_found", () => {
  it("answers 404 not_found for an unknown id, over REST and Connect", async () => {
    for (const path of ["/v1/flow_responses/frs_00000000-0000-4000-8000-000000000000", "/v1/flow_responses/frs_00000000-0000-4000-8000-000000000000/files/0", "/v1/flow_responses/nonsense"]) {
      const res = await get(path);
      expect(res.status).toBe(404);
      expect(res.json.error).toMatchObject({ code: "not_found" });
    }
    const client = clientFor(FlowResponseService, "connect-json", t.publicUrl, key.secret);
    await expect(client.getFlowResponse({ id: "frs_unknown" })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it("answers 404 for an index outside the files array, over REST and gRPC", async () => {
    for (const index of [1, 7, -1]) {
      const res = await get(`/v1/flow_responses/${flowResponseId}/files/${index}`);
      expect(res.status).toBe(404);
      expect(res.json.error.code).toBe("not_found");
      expect(res.json.error.message).toContain("has no file at index");
    }
    const answer = await grpcJsServerStream(`127.0.0.1:${t.service.publicPort}`, FlowResponseService.method.getFlowResponseFile, { id: flowResponseId, index: 1 }, { authorization: `Bearer ${key.secret}` });
    expect(answer.error?.code).toBe(Code.NotFound);
    expect(answer.messages).toEqual([]);
  });

  it("another workspace's key finds nothing: 404 for the response and its files, an empty list", async () => {
    expect((await get(`/v1/flow_responses/${flowResponseId}`)).status).toBe(200);
    expect((await get(`/v1/flow_responses/${flowResponseId}/files/0`)).status).toBe(200);
    expect((await get(`/v1/flow_responses/${flowResponseId}`, otherKey.secret)).status).toBe(404);
    const file = await get(`/v1/flow_responses/${flowResponseId}/files/0`, otherKey.secret);
    expect(file.status).toBe(404);
    expect(file.text).not.toContain("jpeg bytes");
    expect((await get("/v1/flow_responses", otherKey.secret)).json).toMatchObject({ data: [], total: 0 });
  });
});

describe("refusals", () => {
  it("a key without flow_responses:read is refused with insufficient_scope", async () => {
    const noScope = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    for (const path of ["/v1/flow_responses", `/v1/flow_responses/${flowResponseId}`, `/v1/flow_responses/${flowResponseId}/files/0`]) {
      const res = await get(path, noScope.secret);
      expect(res.status).toBe(403);
      expect(res.json.error).toMatchObject({ code: "insufficient_scope", details: { required_scope: "flow_responses:read" } });
    }
  });

  it("bad filters are invalid_argument naming each field", async () => {
    const res = await get("/v1/flow_responses?flow_id=abc&received_after=2026-01-02T00:00:00Z&received_before=2026-01-01T00:00:00Z&page_size=-1");
    expect(res.status).toBe(400);
    expect(res.json.error.details.field_violations.map((v: { field: string }) => v.field)).toEqual(["page_size", "flow_id", "received_before"]);
    expect((await get("/v1/flow_responses?page_token=garbage")).json.error.details.field).toBe("page_token");
    expect((await get("/v1/flow_responses?received_after=yesterday")).status).toBe(400);
  });
});

describe("simulated submissions that could not happen", () => {
  const simulator = () => t.console(SimulatorService);
  const refusal = async (p: Promise<unknown>) => {
    const err = ConnectError.from(await p.then(() => undefined, (e: unknown) => e));
    return { code: err.code, message: err.rawMessage };
  };

  it("refuses a message without a form, unknown messages, foreign or unknown media and bad fields", async () => {
    expect(await refusal(simulator().simulateFlowResponse({ messageId: plainMessageId }))).toMatchObject({ code: Code.InvalidArgument, message: expect.stringContaining("carries a form") });
    expect((await refusal(simulator().simulateFlowResponse({ messageId: "msg_nope" }))).code).toBe(Code.NotFound);
    const otherMedium = await upload(plainMessageId, Buffer.from("x"));
    const bad = await refusal(
      simulator().simulateFlowResponse({
        messageId: formMessageId,
        response: { flow_token: "x", photo: 1 },
        files: [
          { field: "photo", mediaId: otherMedium.mediaId },
          { field: "bad field", mediaId: "000000000000000000000000" },
        ],
        flowToken: "\u0001",
      }),
    );
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.message).toBe("files[1].field: must be 1 to 80 letters, digits or _; flow_token: must be printable ASCII");
    const clash = await refusal(
      simulator().simulateFlowResponse({ messageId: formMessageId, response: { flow_token: "x", photo: 1 }, files: [{ field: "photo", mediaId: otherMedium.mediaId }] }),
    );
    expect(clash.message).toBe("response.flow_token: is not a form field; set flow_token instead; files[0].field: is also a key of response");
    const media = await refusal(simulator().simulateFlowResponse({ messageId: formMessageId, files: [{ field: "photo", mediaId: otherMedium.mediaId }, { field: "doc", mediaId: "nope" }] }));
    expect(media.message).toContain(`files[0].media_id: is not a medium uploaded for message ${formMessageId}`);
    expect(media.message).toContain("files[1].media_id");
  });

  it("refuses uploads without a message or with a bad file name", async () => {
    async function* none() {}
    expect((await refusal(simulator().uploadSimulatorMedia(none()))).message).toContain("message_id: is required");
    for (const name of ["../etc/passwd", "..\\windows\\system.ini", "photo\u0000.jpg", "x".repeat(256)]) {
      expect((await refusal(upload(formMessageId, Buffer.from("x"), name))).message, name).toMatch(/^file_name: must (not contain|be at most 255)/);
    }
    expect((await refusal(upload("msg_nope", Buffer.from("x")))).code).toBe(Code.NotFound);
  });

  it("a console viewer may not upload or submit for the workspace", async () => {
    const users = t.console(ConsoleUserService);
    await users.createConsoleUser({ email: "viewer@example.com", password: "viewer-password-123", roles: [{ workspaceId, role: ConsoleRole.VIEWER }] });
    const transport = createConnectTransport({ baseUrl: t.consoleUrl, httpVersion: "1.1" });
    const { token } = await createClient(SessionService, transport).login({ email: "viewer@example.com", password: "viewer-password-123" });
    const asViewer = createClient(
      SimulatorService,
      createConnectTransport({
        baseUrl: t.consoleUrl,
        httpVersion: "1.1",
        interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))],
      }),
    );
    expect((await refusal(asViewer.simulateFlowResponse({ messageId: formMessageId }))).code).toBe(Code.PermissionDenied);
    expect((await refusal(upload(formMessageId, Buffer.from("x"), "a.jpg", asViewer))).code).toBe(Code.PermissionDenied);
  });
});
