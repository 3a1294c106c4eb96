import type { StoredEvent } from "../src/events/event-bus.js";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileErrors, validate } from "@readme/openapi-parser";
import { EVENT_TYPES } from "../src/events/event-bus.js";
import { OPENAPI_DOCUMENT } from "../src/openapi/openapi-capability.js";
import { rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createOpenApiChecker, type DocumentedAnswer, type OpenApiChecker } from "./helpers/openapi.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
let document: any;
let key: { id: string; secret: string };
let checker: OpenApiChecker;

beforeAll(async () => {
  t = await createTestService({ config: FAST_MESSAGING });
  const workspaceId = await t.createWorkspace("OpenAPI");
  key = await t.createKey(workspaceId, { name: "openapi key", scopes: ["templates:read"], rateLimitPerMin: 100 });
  const res = await rest(t.publicUrl, "GET", "/openapi.json");
  document = res.json;
  checker = createOpenApiChecker(document);
});
afterAll(() => t.close());

/** Asserts a REST answer against the document and that its body schema is `schema`. */
const expectDocumented = (res: DocumentedAnswer, path: string, method: string, schema: string) =>
  expect(checker.expectDocumented(res, path, method)).toBe(schema);

describe("GET /openapi.json", () => {
  it("serves the generated document without an API key", async () => {
    const res = await rest(t.publicUrl, "GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.text).toBe(await readFile(OPENAPI_DOCUMENT, "utf8"));
  });

  it("is a valid OpenAPI 3.1 document for a standard validator", async () => {
    expect(document.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(document));
    expect(result.valid, result.valid ? "" : compileErrors(result)).toBe(true);
  });

  it("describes exactly the REST routes the gateway serves, with their scopes", () => {
    const documented = Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, op]) => `${method.toUpperCase()} ${path} ${op["x-grpc-method"]}`),
    );
    const served = t.service.publicServer!.gateway.routes.map((r) => `${r.httpMethod} ${r.path} /${r.rpc}`);
    expect(documented.sort()).toEqual(served.sort());
    expect(document.paths["/v1/templates"].get.security).toEqual([{ apiKey: ["templates:read"] }]);
    expect(document.paths["/v1/me"].get.security).toEqual([{ apiKey: [] }]);
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.security).toEqual([{ apiKey: [] }]);
  });

  it("names where it is served and every error status each operation answers, with the error body", () => {
    expect(document.servers).toEqual([expect.objectContaining({ url: "{scheme}://{host}", variables: expect.objectContaining({ host: expect.objectContaining({ default: "localhost:8080" }) }) })]);
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        const statuses = Object.keys(op.responses);
        for (const status of ["400", "401", "403", "429", "500"]) expect(statuses, `${method} ${path}`).toContain(status);
        if (path.includes("{")) expect(statuses, `${method} ${path}`).toContain("404");
      }
    }
    for (const status of [400, 401, 402, 403, 404, 409, 429, 500]) {
      expect(document.components.responses[`Error${status}`].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
    }
  });

  it("writes the REST JSON conventions into the schemas", () => {
    const message = document.components.schemas.Message;
    expect(message.required).toEqual(Object.keys(message.properties));
    expect(message.properties.credits).toMatchObject({ type: "integer", format: "int64" });
    expect(message.properties.created_at).toMatchObject({ type: ["string", "null"], format: "date-time" });
    expect(message.properties.wa_message_id.type).toEqual(["string", "null"]);
    expect(message.properties.error.anyOf).toEqual([{ $ref: "#/components/schemas/MessageError" }, { type: "null" }]);
    expect(document.components.schemas.MessageStatus.enum).toEqual(["accepted", "sent", "delivered", "read", "failed", "scheduled", "canceled"]);
    expect(Object.keys(document.components.schemas.ListTemplatesResponse.properties)).toEqual(["object", "data", "total", "next_page_token"]);
    expect(document.components.schemas.SendMessageRequest.additionalProperties).toBe(false);
    expect(document.paths["/v1/messages"].get.parameters.map((p: any) => p.name)).toEqual(["page_size", "page_token", "status", "to"]);
  });

  it("documents the Idempotency-Key of POST /v1/messages and a webhook per event type", () => {
    const send = document.paths["/v1/messages"].post;
    expect(send.parameters).toEqual([expect.objectContaining({ name: "Idempotency-Key", in: "header", required: false })]);
    expect(send.responses[200].headers["Idempotent-Replayed"]).toEqual({ $ref: "#/components/headers/Idempotent-Replayed" });
    expect(send.responses[409]).toEqual({ $ref: "#/components/responses/Error409" });
    expect(send.responses[402]).toEqual({ $ref: "#/components/responses/Error402" });
    expect(document.components.responses.Error402.description).toContain("insufficient_credits");
    expect(Object.keys(document.webhooks)).toEqual([...EVENT_TYPES]);
    const delivered = document.webhooks["message.delivered"].post;
    expect(delivered.parameters).toEqual([
      { $ref: "#/components/parameters/Service-Signature" },
      expect.objectContaining({ name: "Service-Event", schema: { type: "string", const: "message.delivered" } }),
      { $ref: "#/components/parameters/Service-Delivery" },
      { $ref: "#/components/parameters/webhook-id" },
      { $ref: "#/components/parameters/webhook-timestamp" },
      { $ref: "#/components/parameters/webhook-signature" },
    ]);
    expect(document.components.parameters["webhook-signature"].description).toContain("Standard Webhooks");
    expect(delivered.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/MessageEvent" });
    expect(document.webhooks["flow.completed"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/FlowCompletedEvent",
    });
  });
});

describe("real answers match the document", () => {
  it("GET /v1/me", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(res.status).toBe(200);
    expectDocumented(res, "/v1/me", "get", "GetMeResponse");
  });

  it("401 invalid_key", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: `sk_${"A".repeat(43)}` });
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe("invalid_key");
    expectDocumented(res, "/v1/me", "get", "Error");
  });

  it("403 insufficient_scope", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/senders", { key: key.secret });
    expect(res.status).toBe(403);
    expect(res.json.error.details).toEqual({ required_scope: "senders:read", held_scopes: "templates:read" });
    expectDocumented(res, "/v1/senders", "get", "Error");
  });

  it("400 invalid_argument with field violations", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/templates?page_size=many&colour=red", { key: key.secret });
    expect(res.status).toBe(400);
    expect(res.json.error.details.field_violations).toHaveLength(2);
    expectDocumented(res, "/v1/templates", "get", "Error");
  });

  it("the webhook events of a sent message", async () => {
    const workspace = await t.createWorkspace("Events", 1);
    const sender = await createSender(t, workspace);
    const template = await createTemplate(t, workspace);
    const sendKey = await t.createKey(workspace, { scopes: ["messages:send"] });
    const body = { to: "4915123459992", sender, template: { id: template, variables: { name: "Ada", code: "1" } } };
    const sent = await rest(t.publicUrl, "POST", "/v1/messages", { key: sendKey.secret, body });
    expectDocumented(sent, "/v1/messages", "post", "Message");
    // The simulator's ...9992 is delivered and never read.
    const events = await eventually(async () => {
      const found = await t.service.db.collection<StoredEvent>("events").find({ "data.message_id": sent.json.message_id }).toArray();
      return found.length === 2 ? found : undefined;
    });
    for (const event of events) expect(checker.expectDocumentedEvent(event.type, JSON.parse(event.body))).toBe("MessageEvent");
  });

  it("402 insufficient_credits and 409 conflict of POST /v1/messages", async () => {
    const workspace = await t.createWorkspace("Broke", 0);
    const sender = await createSender(t, workspace);
    const template = await createTemplate(t, workspace);
    const sendKey = await t.createKey(workspace, { scopes: ["messages:send"] });
    const body = { to: "4915123450001", sender, template: { id: template, variables: { name: "Ada", code: "1" } } };
    const broke = await rest(t.publicUrl, "POST", "/v1/messages", { key: sendKey.secret, body });
    expect(broke.status).toBe(402);
    expect(broke.json.error.code).toBe("insufficient_credits");
    expectDocumented(broke, "/v1/messages", "post", "Error");
    await rest(t.consoleUrl, "POST", `/console/v1/workspaces/${workspace}/credits:add`, { key: TEST_CONSOLE_TOKEN, body: { amount: 1 } });
    const headers = { "Idempotency-Key": "openapi-409" };
    expect((await rest(t.publicUrl, "POST", "/v1/messages", { key: sendKey.secret, body, headers })).status).toBe(200);
    const conflict = await rest(t.publicUrl, "POST", "/v1/messages", { key: sendKey.secret, body: { ...body, to: "4915123450002" }, headers });
    expect(conflict.status).toBe(409);
    expectDocumented(conflict, "/v1/messages", "post", "Error");
  });

  it("413 payload_too_large of a body over 1 MiB", async () => {
    const sendKey = await t.createKey(await t.createWorkspace("Large"), { scopes: ["messages:send"] });
    const res = await rest(t.publicUrl, "POST", "/v1/messages", { key: sendKey.secret, body: { to: "1".repeat(1024 * 1024) } });
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe("payload_too_large");
    expectDocumented(res, "/v1/messages", "post", "Error");
    expect(document.paths["/v1/messages"].post.responses[413]).toEqual({ $ref: "#/components/responses/Error413" });
  });

  it("404 not_found", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/messages/msg_00000000-0000-4000-8000-000000000000", { key: (await t.createKey(await t.createWorkspace("404"), { scopes: ["messages:read"] })).secret });
    expect(res.status).toBe(404);
    expectDocumented(res, "/v1/messages/{id}", "get", "Error");
  });

  it("429 with Retry-After", async () => {
    const limited = await t.createKey(await t.createWorkspace("Limited"), { rateLimitPerMin: 1 });
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: limited.secret })).status).toBe(200);
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: limited.secret });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe(res.headers.get("ratelimit-reset"));
    expectDocumented(res, "/v1/me", "get", "Error");
  });
});
