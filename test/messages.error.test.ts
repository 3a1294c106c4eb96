import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { SenderService as ConsoleSenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService as ConsoleTemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { MessageService } from "../gen/messaging/v1/messages_pb.js";
import { clientFor, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let templateId: string;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
  workspaceId = await t.createWorkspace("Refusals", 10);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
  senderId = await createSender(t, workspaceId);
  templateId = await createTemplate(t, workspaceId, { optional: ["name"] });
});
afterAll(() => t.close());

const send = (body: unknown, secret = key.secret) => rest(t.publicUrl, "POST", "/v1/messages", { key: secret, body });
const violations = (res: { json: { error: { details: { field_violations: { field: string; description: string }[] } } } }) =>
  res.json.error.details.field_violations.map((v) => `${v.field}: ${v.description}`);
const count = (collection: string, filter: object) => t.service.db.collection(collection).countDocuments(filter);

describe("validation names every field and rule at once", () => {
  it("refuses malformed recipient, sender, template and variables", async () => {
    const res = await send({ to: "+49 151", sender: "sender-1", template: { id: "tpl_x", variables: { code: "a\nb", name: "x".repeat(1025) }, flow: { token: "t".repeat(201) } } });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("invalid_argument");
    expect(violations(res)).toEqual([
      "to: must be 8 to 15 digits with country code, without '+', spaces or a leading 0",
      "sender: must be an id such as snd_<uuid>",
      "template.id: must be an id such as tpl_<uuid>",
      "template.variables.code: must not contain new lines, tabs or more than four spaces in a row",
      "template.variables.name: must be at most 1024 characters",
      "template.flow.token: must be at most 200 characters",
    ]);
    expect(res.json.error.details).toMatchObject({ field: "to" });
  });

  it("names the contract's rules and the template's together, over REST, Connect and gRPC", async () => {
    // A malformed recipient and value (contract rules), an unknown and a missing variable (the template's rules).
    const body = { to: "12", sender: senderId, template: { id: templateId, variables: { nme: "Ada", name: "a\tb" } } };
    const expected = [
      "to: must be 8 to 15 digits with country code, without '+', spaces or a leading 0",
      "template.variables.name: must not contain new lines, tabs or more than four spaces in a row",
      "template.variables.code: is required by the template",
      "template.variables.nme: is not a variable of the template (it has: name, code)",
    ];
    const res = await send(body);
    expect(res.status).toBe(400);
    expect(violations(res)).toEqual(expected);
    for (const protocol of ["connect-json", "grpc"] as const) {
      const client = clientFor(MessageService, protocol, t.publicUrl, key.secret);
      const err = await client.sendMessage(body).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, protocol).toBe(Code.InvalidArgument);
      const [badRequest] = err!.findDetails(BadRequestSchema);
      expect(badRequest?.fieldViolations.map((v) => `${v.field}: ${v.description}`), protocol).toEqual(expected);
    }
    expect(await count("messages", { to: "12" })).toBe(0);
  });

  it("does not look up a malformed sender or template id: one violation each", async () => {
    const res = await send({ to: "4915123456789", sender: "snd_x", template: { id: "tpl_x", variables: { any: "thing" } } });
    expect(violations(res)).toEqual(["sender: must be an id such as snd_<uuid>", "template.id: must be an id such as tpl_<uuid>"]);
  });

  it("requires the template", async () => {
    const res = await send({ to: "4915123456789", sender: senderId });
    expect(violations(res)).toEqual(["template: is required"]);
  });

  it("says a missing or empty recipient, sender and template id are required, not what shape they lack", async () => {
    expect(violations(await send({}))).toEqual(["to: is required", "sender: is required", "template: is required"]);
    expect(violations(await send({ to: "", sender: "", template: { id: "" } }))).toEqual(["to: is required", "sender: is required", "template.id: is required"]);
  });

  it("tells -1 and a number past int32 the same range of page_size; one over 100 is read as 100", async () => {
    for (const size of ["-1", "99999999999", "-99999999999"]) {
      const res = await rest(t.publicUrl, "GET", `/v1/messages?page_size=${size}`, { key: key.secret });
      expect(res.status, size).toBe(400);
      expect(res.json.error.message, size).toBe("page_size: must be from 0 to 2147483647");
    }
    // A key's budget (100 a minute) cannot make 101 messages and list them; the console's lists page the same way.
    for (let i = 0; i < 101; i++) await t.createWorkspace(`Page size ${i}`);
    const cut = await rest(t.consoleUrl, "GET", "/console/v1/workspaces?page_size=1000000", { key: TEST_CONSOLE_TOKEN });
    expect(cut.status).toBe(200);
    expect(cut.json.data).toHaveLength(100);
    expect(cut.json.next_page_token).toEqual(expect.any(String));
  });

  it("refuses unknown senders and templates, and those of another workspace, as invalid_argument", async () => {
    const other = await t.createWorkspace("Other");
    const foreignSender = await createSender(t, other, "4915100000009");
    const foreignTemplate = await createTemplate(t, other);
    const res = await send({ to: "4915123456789", sender: foreignSender, template: { id: foreignTemplate, variables: {} } });
    expect(violations(res)).toEqual([
      "sender: no sender with this id in the workspace (see GET /v1/senders)",
      "template.id: no template with this id in the workspace (see GET /v1/templates)",
    ]);
  });

  it("refuses a missing required variable, an unknown variable, and a flow token for a template without a flow", async () => {
    const res = await send({ to: "4915123456789", sender: senderId, template: { id: templateId, variables: { nme: "Ada" }, flow: { token: "abc" } } });
    expect(violations(res)).toEqual([
      "template.variables.code: is required by the template",
      "template.variables.nme: is not a variable of the template (it has: name, code)",
      "template.flow.token: the template carries no flow",
    ]);
  });

  it("refuses archived senders and templates", async () => {
    const sender = await createSender(t, workspaceId, "4915100000002");
    const template = await createTemplate(t, workspaceId, { name: "to_archive", body: "Hi" });
    await t.console(ConsoleSenderService).archiveSender({ id: sender });
    await t.console(ConsoleTemplateService).archiveTemplate({ id: template });
    const res = await send({ to: "4915123456789", sender, template: { id: template } });
    expect(violations(res)).toEqual(["sender: is archived; send from an active sender", "template.id: is archived; use an active template"]);
  });

  it("refuses a rendered message longer than 1024 characters", async () => {
    const res = await send({ to: "4915123456789", sender: senderId, template: { id: templateId, variables: { code: "x".repeat(1000), name: "y".repeat(100) } } });
    expect(violations(res)).toEqual(["template.variables: the rendered message must be at most 1024 characters"]);
  });

  it("refuses a malformed Idempotency-Key", async () => {
    const res = await rest(t.publicUrl, "POST", "/v1/messages", {
      key: key.secret,
      headers: { "idempotency-key": "x".repeat(256) },
      body: { to: "4915123456789", sender: senderId, template: { id: templateId, variables: { code: "1" } } },
    });
    expect(violations(res)).toEqual(["Idempotency-Key: must be 1 to 255 printable ASCII characters"]);
  });

  it("answers gRPC with INVALID_ARGUMENT and a google.rpc.BadRequest listing the violations: the contract's rules first, then the database's", async () => {
    const grpc = clientFor(MessageService, "grpc", t.publicUrl, key.secret);
    const fieldsOf = async (req: Parameters<typeof grpc.sendMessage>[0]) => {
      const err = await grpc.sendMessage(req).catch((e: unknown) => ConnectError.from(e));
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      return (err as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field);
    };
    expect(await fieldsOf({ to: "12", sender: "snd_1", template: { id: templateId, variables: { code: "a\tb" } } })).toEqual([
      "to",
      "sender",
      "template.variables.code",
    ]);
    expect(await fieldsOf({ to: "4915123456789", sender: senderId, template: { id: templateId, variables: { nme: "Ada" } } })).toEqual([
      "template.variables.code",
      "template.variables.nme",
    ]);
  });
});

describe("credits", () => {
  it("refuses a send without enough credits with insufficient_credits, creating nothing", async () => {
    const poor = await t.createWorkspace("Poor", 0);
    const poorKey = await t.createKey(poor, { scopes: ["messages:send"] });
    const sender = await createSender(t, poor, "4915100000003");
    const template = await createTemplate(t, poor);
    const body = { to: "4915123456789", sender, template: { id: template, variables: { name: "A", code: "1" } } };
    const res = await send(body, poorKey.secret);
    expect(res.status).toBe(402);
    expect(res.json.error).toMatchObject({ code: "insufficient_credits", details: { price_credits: "1" } });
    const err = await clientFor(MessageService, "grpc", t.publicUrl, poorKey.secret)
      .sendMessage(body as never)
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((err as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason).toBe("insufficient_credits");
    expect(await count("messages", { workspace_id: poor })).toBe(0);
    expect(await count("credit_ledger", { workspace_id: poor })).toBe(0);
    // An Idempotency-Key of a refused send is free for the retry after a top-up.
    const keyed = await rest(t.publicUrl, "POST", "/v1/messages", { key: poorKey.secret, body, headers: { "idempotency-key": "k1" } });
    expect(keyed.status).toBe(402);
    await t.console(WorkspaceService).getWorkspace({ id: poor });
  });

  it("accepts exactly 20 of 50 concurrent sends against a balance of 20", async () => {
    const ws = await t.createWorkspace("Race", 20);
    const raceKey = await t.createKey(ws, { scopes: ["messages:send"] });
    const sender = await createSender(t, ws, "4915100000004");
    const template = await createTemplate(t, ws);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        i % 2 === 0
          ? send({ to: `49151234${String(i).padStart(5, "0")}`, sender, template: { id: template, variables: { name: "A", code: String(i) } } }, raceKey.secret).then((r) => r.status)
          : clientFor(MessageService, "grpc", t.publicUrl, raceKey.secret)
              .sendMessage({ to: `49151234${String(i).padStart(5, "0")}`, sender, template: { id: template, variables: { name: "A", code: String(i) } } })
              .then(() => 200, (e: unknown) => (ConnectError.from(e).code === Code.FailedPrecondition ? 402 : 500)),
      ),
    );
    expect(answers.filter((s) => s === 200)).toHaveLength(20);
    expect(answers.filter((s) => s === 402)).toHaveLength(30);
    expect((await t.console(WorkspaceService).getWorkspace({ id: ws })).workspace!.creditBalance).toBe(0n);
    expect(await count("messages", { workspace_id: ws })).toBe(20);
    // Reserved together or one at a time, each spend's entry carries the balance right after it: 19 down to 0.
    const spends = await t.service.db.collection("credit_ledger").find({ workspace_id: ws, kind: "spend" }).toArray();
    expect(spends.map((e) => e.amount as number)).toEqual(Array.from({ length: 20 }, () => -1));
    expect(spends.map((e) => e.balance_after as number).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // All 20 are dispatched.
    await eventually(async () => ((await count("messages", { workspace_id: ws, wa_message_id: { $ne: null } })) === 20 ? true : undefined));
  });

  it("keeps the ledger exact when concurrent sends are debited together", async () => {
    const ws = await t.createWorkspace("Together", 100);
    const key = await t.createKey(ws, { scopes: ["messages:send"] });
    const sender = await createSender(t, ws, "4915100000005");
    const template = await createTemplate(t, ws);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        send({ to: `49151235${String(i).padStart(5, "0")}`, sender, template: { id: template, variables: { name: "A", code: String(i) } } }, key.secret).then((r) => r.status),
      ),
    );
    expect(answers.filter((s) => s === 200)).toHaveLength(40);
    expect((await t.console(WorkspaceService).getWorkspace({ id: ws })).workspace!.creditBalance).toBe(60n);
    const ledger = await t.service.db.collection("credit_ledger").find({ workspace_id: ws }).toArray();
    const spends = ledger.filter((e) => e.kind === "spend");
    expect(spends.map((e) => e.balance_after as number).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => 60 + i));
    // The opening balance has its entry too: the entries add up to the balance.
    expect(ledger.filter((e) => e.kind === "top_up")).toMatchObject([{ amount: 100, balance_after: 100, note: "opening balance" }]);
    expect(ledger.reduce((sum, e) => sum + (e.amount as number), 0)).toBe(60);
  });
});
