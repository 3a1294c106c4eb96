import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ensurePythonVenv, missingToolchain, mustRun } from "../src/codegen/toolchain.js";
import { OPENAPI_DOCUMENT } from "../src/openapi/openapi-capability.js";
import { projectRoot } from "../src/shared/project-root.js";
import { rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createOpenApiChecker, type OpenApiChecker } from "./helpers/openapi.js";
import { createTestService, type TestService } from "./helpers/test-service.js";

/*
 * Client checks from outside TypeScript, against a real service: a Go program
 * (gRPC, gen/go) and a Python program (gRPC with gen/python/messaging, and
 * REST with the client generated from the OpenAPI document into
 * gen/python/messaging_rest). Each runs the same plan of steps with a key of
 * its own and prints what it read, one JSON line per step; this file asserts
 * them field by field, and every REST answer against the OpenAPI document. A
 * language whose toolchain is missing is skipped with the reason printed.
 *
 * To check another operation: add its call to test/clients/go/main.go and
 * test/clients/python/client_check.py, a step to plan(), and its
 * expectations below.
 */

const goMissing = await missingToolchain("go");
const pythonMissing = await missingToolchain("python3-venv");
if (goMissing) console.warn(`Skipping the Go client checks: ${goMissing}`);
if (pythonMissing) console.warn(`Skipping the Python client checks: ${pythonMissing}`);

const CLIENTS = path.join(projectRoot, "test", "clients");
const UNKNOWN_KEY = `sk_${"A".repeat(43)}`;
const SCOPES = ["templates:read", "messages:send", "messages:read"];
/** The simulator's test number whose messages are delivered and never read (README "The network: simulator"). */
const RECIPIENT = "4915123459992";
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MESSAGE_ID = /^msg_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** One step's report, as the programs print it. */
interface Report {
  id: string;
  call: string;
  ok: boolean;
  attempts: number;
  /** REST only: the HTTP status. */
  status?: number;
  /** REST only: the class of the generated client's model the answer was parsed into. */
  parsed?: string;
  headers: Record<string, string>;
  response?: any;
  error?: Record<string, unknown>;
}

/** A program's run: its own key (so budgets and Idempotency-Keys are its own) and its reports by step id. */
interface Run {
  key: { id: string; secret: string };
  reports: Map<string, Report>;
}

/** How a transport writes enum values: gRPC programs report proto names, REST has the JSON names. */
interface EnumStyle {
  messageStatus(json: string): string;
  templateStatus(json: string): string;
  templateCategory(json: string): string;
}
const GRPC_ENUMS: EnumStyle = {
  messageStatus: (json) => `MESSAGE_STATUS_${json.toUpperCase()}`,
  templateStatus: (json) => `TEMPLATE_STATUS_${json.toUpperCase()}`,
  templateCategory: (json) => `TEMPLATE_CATEGORY_${json.toUpperCase()}`,
};
const REST_ENUMS: EnumStyle = { messageStatus: (json) => json, templateStatus: (json) => json, templateCategory: (json) => json };

let t: TestService;
let workspaceId: string;
let senderId: string;
let templateId: string;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
  workspaceId = await t.createWorkspace("Clients", 100);
  senderId = await createSender(t, workspaceId);
  templateId = await createTemplate(t, workspaceId, { examples: { name: "Ada" } });
});
afterAll(() => t?.close());

const sendRequest = (variables: Record<string, string>) => ({ to: RECIPIENT, sender: senderId, template: { id: templateId, variables } });

function plan(target: string, key: string, enums: EnumStyle) {
  const send = { call: "send_message", key, request: sendRequest({ name: "Ada", code: "123456" }), idempotency_key: "order-4711" };
  return {
    target,
    steps: [
      { id: "me", call: "get_me", key },
      { id: "unknown_key", call: "get_me", key: UNKNOWN_KEY },
      { id: "templates", call: "list_templates", key, request: { page_size: 10 } },
      { id: "send", ...send },
      { id: "send_retry", ...send },
      {
        id: "delivered",
        call: "get_message",
        key,
        with: { id: "send.message_id" },
        until: { status: enums.messageStatus("delivered") },
      },
      { id: "missing_variable", call: "send_message", key, request: sendRequest({ name: "Ada" }) },
    ],
  };
}

/** Makes a key for one program, runs it with the plan on standard input; returns the key and its reports by step id. */
async function runPlan(target: string, enums: EnumStyle, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  const key = await t.createKey(workspaceId, { name: "client check key", scopes: SCOPES, rateLimitPerMin: 100 });
  const stdout = await mustRun(command, args, { cwd: CLIENTS, input: JSON.stringify(plan(target, key.secret, enums)), env });
  const reports = stdout
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Report);
  return { key, reports: new Map(reports.map((r) => [r.id, r])) };
}

/** Request-Id and the rate-limit headers, on answers and refusals alike (README "Headers"). */
function expectStandardHeaders(headers: Record<string, string>, limit: string | RegExp) {
  expect(headers["request-id"]).toMatch(/^req_[0-9a-f]{24}$/);
  expect(headers["ratelimit-limit"]).toMatch(limit);
  expect(headers["ratelimit-remaining"]).toMatch(/^\d+$/);
  expect(headers["ratelimit-reset"]).toMatch(/^\d+$/);
}

const expectedMe = (run: Run) => ({
  account_id: workspaceId,
  key: { id: run.key.id, name: "client check key", scopes: SCOPES },
  rate_limit_per_min: 100,
});

const expectedTemplates = (enums: EnumStyle) => ({
  object: "list",
  data: [
    {
      id: templateId,
      object: "template",
      name: "verification_code",
      language: "en",
      status: enums.templateStatus("active"),
      body: "Hello {{name}}, your code is {{code}}",
      variables: [
        { name: "name", required: true, example: "Ada" },
        { name: "code", required: true, example: "" },
      ],
      flow: null,
      created_at: expect.stringMatching(ISO_MS),
      category: enums.templateCategory("utility"),
    },
  ],
  total: 1,
  next_page_token: null,
});

/** The message as answered right after the send: accepted, nothing from the network yet. */
const expectedAccepted = (enums: EnumStyle) => ({
  message_id: expect.stringMatching(MESSAGE_ID),
  object: "message",
  to: RECIPIENT,
  sender: senderId,
  template_id: templateId,
  flow_token: null,
  status: enums.messageStatus("accepted"),
  wa_message_id: null,
  error: null,
  credits: 1,
  created_at: expect.stringMatching(ISO_MS),
  sent_at: null,
  delivered_at: null,
  read_at: null,
  failed_at: null,
  send_at: null,
  valid_until: expect.stringMatching(ISO_MS),
  canceled_at: null,
  queued_reason: null,
  estimated_send_at: null,
});

/** Fields of a message that the network's reports change. */
const PROGRESS = ["status", "wa_message_id", "sent_at", "delivered_at"];
const withoutProgress = (message: Record<string, unknown>) => Object.fromEntries(Object.entries(message).filter(([k]) => !PROGRESS.includes(k)));

/** The message step by step, the same for every transport but for `enums`. */
function messageChecks(run: () => Run, enums: EnumStyle) {
  it("SendMessage (POST /v1/messages): the accepted message, field by field", () => {
    const send = run().reports.get("send")!;
    expect(send).toMatchObject({ call: "send_message", ok: true });
    expect(send.response).toEqual(expectedAccepted(enums));
    expect(send.headers["idempotent-replayed"]).toBeUndefined();
    expectStandardHeaders(send.headers, /^100$/);
  });

  it("a retry with the same Idempotency-Key answers the same message, marked Idempotent-Replayed", () => {
    const send = run().reports.get("send")!;
    const retry = run().reports.get("send_retry")!;
    expect(retry).toMatchObject({ call: "send_message", ok: true });
    expect(withoutProgress(retry.response)).toEqual(withoutProgress(send.response));
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    expectStandardHeaders(retry.headers, /^100$/);
  });

  it("GetMessage (GET /v1/messages/{id}) until the simulator reports it delivered", () => {
    const send = run().reports.get("send")!;
    const delivered = run().reports.get("delivered")!;
    expect(delivered).toMatchObject({ call: "get_message", ok: true });
    expect(delivered.response).toEqual({
      ...send.response,
      status: enums.messageStatus("delivered"),
      wa_message_id: expect.stringMatching(/^wamid\./),
      sent_at: expect.stringMatching(ISO_MS),
      delivered_at: expect.stringMatching(ISO_MS),
    });
    expect(Date.parse(delivered.response.sent_at)).toBeGreaterThanOrEqual(Date.parse(send.response.created_at));
    expect(Date.parse(delivered.response.delivered_at)).toBeGreaterThanOrEqual(Date.parse(delivered.response.sent_at));
    expectStandardHeaders(delivered.headers, /^100$/);
  });
}

const MISSING_CODE = { field: "template.variables.code", description: "is required by the template" };

/** The gRPC checks are the same in every language. */
function grpcChecks(run: () => Run) {
  it("GetMe (GET /v1/me): every field of the typed response, and the headers", () => {
    const me = run().reports.get("me");
    expect(me).toMatchObject({ call: "get_me", ok: true });
    expect(me?.response).toEqual(expectedMe(run()));
    expectStandardHeaders(me!.headers, /^100$/);
  });

  it("an unknown key: UNAUTHENTICATED with the ErrorInfo invalid_key", () => {
    const refused = run().reports.get("unknown_key");
    expect(refused).toMatchObject({ call: "get_me", ok: false });
    expect(refused?.error).toEqual({
      code: Code.Unauthenticated,
      message: "The API key is not recognised",
      reason: "invalid_key",
      domain: "messaging-service",
      metadata: {},
    });
    expectStandardHeaders(refused!.headers, /^\d+$/);
  });

  it("ListTemplates (GET /v1/templates): the template with its variables, enums by name", () => {
    const templates = run().reports.get("templates");
    expect(templates).toMatchObject({ call: "list_templates", ok: true });
    expect(templates?.response).toEqual(expectedTemplates(GRPC_ENUMS));
    expectStandardHeaders(templates!.headers, /^100$/);
  });

  messageChecks(run, GRPC_ENUMS);

  it("the Timestamps read over gRPC are the times REST shows for the same message", async () => {
    const delivered = run().reports.get("delivered")!.response;
    const overRest = await rest(t.publicUrl, "GET", `/v1/messages/${delivered.message_id}`, { key: run().key.secret });
    expect(overRest.json).toEqual({ ...delivered, status: "delivered" });
  });

  it("a send without a required variable: INVALID_ARGUMENT naming the field in ErrorInfo and BadRequest", () => {
    const refused = run().reports.get("missing_variable");
    expect(refused).toMatchObject({ call: "send_message", ok: false });
    expect(refused?.error).toEqual({
      code: Code.InvalidArgument,
      message: "template.variables.code: is required by the template",
      reason: "invalid_argument",
      domain: "messaging-service",
      metadata: { field: MISSING_CODE.field, rule: MISSING_CODE.description },
      field_violations: [MISSING_CODE],
    });
    expectStandardHeaders(refused!.headers, /^100$/);
  });
}

describe.skipIf(goMissing)("Go over gRPC (gen/go, test/clients/go)", () => {
  let run: Run;
  beforeAll(async () => {
    const binary = path.join(projectRoot, ".cache", "clients", "go-clientcheck");
    await mustRun("go", ["build", "-o", binary, "."], { cwd: path.join(CLIENTS, "go") });
    run = await runPlan(`127.0.0.1:${t.service.publicPort}`, GRPC_ENUMS, binary, []);
  }, 300_000);
  grpcChecks(() => run);
});

describe.skipIf(pythonMissing)("Python (gen/python, test/clients/python)", () => {
  let python = "";
  let env: NodeJS.ProcessEnv = {};
  beforeAll(async () => {
    python = await ensurePythonVenv();
    env = { ...process.env, PYTHONPATH: path.join(projectRoot, "gen", "python"), PYTHONDONTWRITEBYTECODE: "1" };
  }, 300_000);

  describe("over gRPC", () => {
    let run: Run;
    beforeAll(async () => {
      run = await runPlan(`127.0.0.1:${t.service.publicPort}`, GRPC_ENUMS, python, [path.join("python", "client_check.py"), "grpc"], env);
    }, 60_000);
    grpcChecks(() => run);
  });

  describe("over REST (the client generated from the OpenAPI document)", () => {
    let run: Run;
    let openapi: OpenApiChecker;
    beforeAll(async () => {
      openapi = createOpenApiChecker(JSON.parse(await readFile(OPENAPI_DOCUMENT, "utf8")));
      run = await runPlan(t.publicUrl, REST_ENUMS, python, [path.join("python", "client_check.py"), "rest"], env);
    }, 60_000);

    it("every answer is documented: its status, headers and body schema, for the operation called", () => {
      const schemas = [...run.reports.values()].map((report) => {
        // The calls are the operationIds in snake_case.
        const { path: route, method } = openapi.operation(report.call.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()));
        const json = report.ok ? report.response : { error: report.error };
        return [report.id, openapi.expectDocumented({ status: report.status!, headers: new Headers(report.headers), json }, route, method)];
      });
      expect(Object.fromEntries(schemas)).toEqual({
        me: "GetMeResponse",
        unknown_key: "Error",
        templates: "ListTemplatesResponse",
        send: "Message",
        send_retry: "Message",
        delivered: "Message",
        missing_variable: "Error",
      });
      // The generated client parsed each answer into the model of that schema.
      expect(Object.fromEntries([...run.reports.values()].map((r) => [r.id, r.parsed]))).toEqual(Object.fromEntries(schemas));
    });

    it("GET /v1/me: the whole JSON body, and the headers", () => {
      const me = run.reports.get("me");
      expect(me).toMatchObject({ call: "get_me", ok: true, status: 200 });
      expect(me?.response).toEqual(expectedMe(run));
      expect(me?.headers["content-type"]).toBe("application/json; charset=utf-8");
      expectStandardHeaders(me!.headers, /^100$/);
    });

    it("an unknown key: 401 with the error body", () => {
      const refused = run.reports.get("unknown_key");
      expect(refused).toMatchObject({ call: "get_me", ok: false, status: 401 });
      expect(refused?.error).toEqual({
        code: "invalid_key",
        message: "The API key is not recognised",
        details: {},
        request_id: refused?.headers["request-id"],
      });
      expectStandardHeaders(refused!.headers, /^\d+$/);
    });

    it("GET /v1/templates: the list envelope with snake_case fields and lower-case enums", () => {
      const templates = run.reports.get("templates");
      expect(templates).toMatchObject({ call: "list_templates", ok: true, status: 200 });
      expect(templates?.response).toEqual(expectedTemplates(REST_ENUMS));
      expect(templateId).toMatch(/^tpl_[0-9a-f-]{36}$/);
      expect(senderId).toMatch(/^snd_[0-9a-f-]{36}$/);
      expectStandardHeaders(templates!.headers, /^100$/);
    });

    messageChecks(() => run, REST_ENUMS);

    it("a send without a required variable: 400 invalid_argument naming the field in the details", () => {
      const refused = run.reports.get("missing_variable");
      expect(refused).toMatchObject({ call: "send_message", ok: false, status: 400 });
      expect(refused?.error).toEqual({
        code: "invalid_argument",
        message: "template.variables.code: is required by the template",
        details: { field: MISSING_CODE.field, rule: MISSING_CODE.description, field_violations: [MISSING_CODE] },
        request_id: refused?.headers["request-id"],
      });
      expectStandardHeaders(refused!.headers, /^100$/);
    });
  });
});
