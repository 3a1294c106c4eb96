import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuditLogService } from "../gen/messaging/console/v1/audit_log_pb.js";
import { OptOutService as ConsoleOptOutService } from "../gen/messaging/console/v1/opt_outs_pb.js";
import { SimulatorService } from "../gen/messaging/console/v1/simulator_pb.js";
import { TemplateCategory, TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { WebhookEndpointService } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { MessageService } from "../gen/messaging/v1/messages_pb.js";
import { OptOutService } from "../gen/messaging/v1/opt_outs_pb.js";
import type { StoredEvent } from "../src/events/event-bus.js";
import { projectRoot } from "../src/shared/project-root.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { answerOk, startReceiver, type Receiver } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/**
 * The opt-out list of a workspace (README "Sending messages", The opt-out
 * list): replies with keywords and WhatsApp's 131050 on marketing templates
 * change it, the console does; a send to a listed number (single or batch
 * item) is refused with recipient_opted_out before anything is spent; each
 * change fires its contact.* event to the endpoints that chose it and is in
 * the audit log with its source. Through REST, Connect, gRPC, msgsvc and the
 * simulator, on a real server and database.
 */

let t: TestService;
let receiver: Receiver;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let templateId: string;
let marketingId: string;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", webhookAllowHttpLoopback: true, webhookAllowPrivateTargets: true } });
  receiver = await startReceiver(answerOk);
  workspaceId = await t.createWorkspace("Opt-outs", 100);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
  senderId = await createSender(t, workspaceId, "4915100000201");
  templateId = await createTemplate(t, workspaceId);
  const { template } = await t.console(TemplateService).createTemplate({
    workspaceId,
    name: "spring_sale",
    language: "en",
    body: "Hello {{name}}, {{code}} off this week",
    category: TemplateCategory.MARKETING,
  });
  marketingId = template!.id;
  await t.console(WebhookEndpointService).createWebhookEndpoint({ workspaceId, name: "contacts", url: receiver.url, events: ["contact.opted_out", "contact.opted_in"] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const body = (to: string, template = templateId) => ({ to, sender: senderId, template: { id: template, variables: { name: "Ada", code: "1" } } });
const send = (to: string, template = templateId) => rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, body: body(to, template) });
const balance = async () => Number((await t.console(WorkspaceService).getWorkspace({ id: workspaceId })).workspace!.creditBalance);
const listed = async (phoneNumber: string) => (await rest(t.publicUrl, "GET", `/v1/opt_outs?phone_number=${phoneNumber}`, { key: key.secret })).json.data[0];
/** Waits for the contact.* event of `type` about `phoneNumber` (the `n`th when there are several), and its delivery to the receiver. */
async function contactEvent(type: string, phoneNumber: string, n = 1) {
  const events = await eventually(async () => {
    const found = await t.service.db.collection<StoredEvent>("events").find({ type, "data.phone_number": phoneNumber }).sort({ created_at: 1 }).toArray();
    return found.length >= n ? found : undefined;
  });
  const event = events[n - 1]!;
  await eventually(async () => (receiver.requests.some((r) => r.headers["service-delivery"] === event._id) ? true : undefined));
  return event;
}
/** The recipient of message `messageId` replies `text` (the simulator plays the handset). */
async function reply(messageId: string, text: string) {
  await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: messageId as never }))?.wa_message_id ? true : undefined));
  await t.console(SimulatorService).simulateReply({ messageId, text });
}

describe("a reply with a keyword", () => {
  it("STOP puts the number on the list: later sends are refused before anything is spent, until START", async () => {
    const to = "4915122300001";
    const first = await send(to);
    expect(first.status).toBe(200);
    await reply(first.json.message_id, "  stop ");
    const event = await contactEvent("contact.opted_out", to);
    expect(JSON.parse(event.body).data).toMatchObject({ phone_number: to, status: "opted_out", source: "reply", keyword: "stop", error_code: null });
    expect(await listed(to)).toMatchObject({ phone_number: to, object: "opt_out", status: "opted_out", source: "reply", keyword: "stop" });

    const before = await balance();
    const refused = await send(to);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toMatchObject({ code: "recipient_opted_out", details: { phone_number: to } });
    const overGrpc = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, MessageService.method.sendMessage, body(to), { authorization: `Bearer ${key.secret}` });
    expect(overGrpc.error?.code).toBe(9); // FAILED_PRECONDITION
    const overConnect = await clientFor(MessageService, "connect-json", t.publicUrl, key.secret)
      .sendMessage(body(to))
      .catch((e: unknown) => ConnectError.from(e));
    expect((overConnect as ConnectError).code).toBe(Code.FailedPrecondition);
    const batch = await rest(t.publicUrl, "POST", "/v1/messages:batch", { key: key.secret, body: { messages: [body(to), body("4915122300002")] } });
    expect(batch.json.results.map((r: any) => r.error?.code ?? "ok")).toEqual(["recipient_opted_out", "ok"]);
    expect(await balance()).toBe(before - 1);
    // An Idempotency-Key of a refused send is free again.
    const keyed = await rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, body: body(to), headers: { "idempotency-key": "opted-out-1" } });
    expect(keyed.json.error.code).toBe("recipient_opted_out");

    // The audit log has the change, with its source.
    const audit = await t.console(AuditLogService).listAuditEntries({ workspaceId, pageSize: 100 });
    const entry = audit.data.find((a) => a.id === `${event.data.message_id}:opted_out`);
    expect(entry).toMatchObject({ actor: "service", operation: "contact.opted_out", source: "reply", outcome: "ok", request: { phone_number: to, keyword: "stop" } });

    // START takes it off: contact.opted_in, and sends are accepted again.
    await reply(first.json.message_id, "Start");
    const optedIn = await contactEvent("contact.opted_in", to);
    expect(JSON.parse(optedIn.body).data).toMatchObject({ status: "opted_in", source: "reply", keyword: "Start" });
    expect((await send(to)).status).toBe(200);
    const sync = await rest(t.publicUrl, "GET", `/v1/opt_outs?updated_after=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}`, { key: key.secret });
    expect(sync.json.data.find((o: any) => o.phone_number === to)).toMatchObject({ status: "opted_in" });
    expect(await listed(to)).toBeUndefined(); // no longer on the list
  });

  it("changes nothing for other text, and fires once for a repeated keyword", async () => {
    const to = "4915122300011";
    const first = await send(to);
    await reply(first.json.message_id, "please stop sending me these");
    await reply(first.json.message_id, "END");
    await reply(first.json.message_id, "quit");
    await contactEvent("contact.opted_out", to);
    await eventually(async () => ((await t.service.db.collection("messages").countDocuments({ direction: "inbound", from: to })) === 3 ? true : undefined));
    expect(await t.service.db.collection("events").countDocuments({ type: "contact.opted_out", "data.phone_number": to })).toBe(1);
    expect((await listed(to)).keyword).toBe("END");
  });

  it("uses the workspace's own keywords once set in the console", async () => {
    const res = await msgsvc(t, ["opt-outs", "keywords", "--workspace", workspaceId, "--opt-out", "alto,basta", "--opt-in", "sigue"]);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain("ALTO,BASTA");
    const to = "4915122300021";
    const first = await send(to);
    await reply(first.json.message_id, "STOP"); // no longer a keyword here
    await reply(first.json.message_id, "Basta");
    await contactEvent("contact.opted_out", to);
    expect((await listed(to)).keyword).toBe("Basta");
    const shown = await msgsvc(t, ["opt-outs", "keywords", "--workspace", workspaceId, "--json"]);
    expect(JSON.parse(shown.stdout)).toEqual({ workspace_id: workspaceId, opt_out_keywords: ["ALTO", "BASTA"], opt_in_keywords: ["SIGUE"], defaults: false });
    const clash = await msgsvc(t, ["opt-outs", "keywords", "--workspace", workspaceId, "--opt-in", "basta"]);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain("opt_out_settings.opt_in_keywords[0]: must not also be an opt-out keyword");
    await msgsvc(t, ["opt-outs", "keywords", "--workspace", workspaceId, "--opt-out", "STOP,STOPALL,UNSUBSCRIBE,CANCEL,END,QUIT", "--opt-in", "START,UNSTOP,YES"]);
  }, 90_000);
});

describe("WhatsApp's 131050 (the user stopped marketing messages)", () => {
  it("puts the recipient of a marketing template on the list, not one of a utility template", async () => {
    const to = "4915122309996"; // the simulator's number that stopped marketing messages
    const utility = await send(to);
    expect(utility.status).toBe(200);
    await eventually(async () => ((await rest(t.publicUrl, "GET", `/v1/messages/${utility.json.message_id}`, { key: key.secret })).json.status === "read" ? true : undefined));
    expect(await listed(to)).toBeUndefined();

    const marketing = await send(to, marketingId);
    const failed = await eventually(async () => {
      const m = (await rest(t.publicUrl, "GET", `/v1/messages/${marketing.json.message_id}`, { key: key.secret })).json;
      return m.status === "failed" ? m : undefined;
    });
    expect(failed.error).toEqual({ code: 131050, title: "User stopped marketing messages", reason: null });
    const event = await contactEvent("contact.opted_out", to);
    expect(JSON.parse(event.body).data).toMatchObject({ source: "network_error", error_code: 131050, message_id: marketing.json.message_id, keyword: null });
    expect((await send(to)).json.error.code).toBe("recipient_opted_out");
    const audit = await t.console(AuditLogService).getAuditEntry({ id: `${marketing.json.message_id}:opted_out` });
    expect(audit.auditEntry).toMatchObject({ source: "network_error", operation: "contact.opted_out", workspaceId });
  });
});

describe("the console", () => {
  it("adds, lists and removes numbers with msgsvc, each change an event and an audited console call", async () => {
    const to = "4915122300031";
    const added = await msgsvc(t, ["opt-outs", "add", "--workspace", workspaceId, "--number", to, "--json"]);
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ workspace_id: workspaceId, phone_number: to, status: "opted_out", source: "console", changed_by: "operator" });
    await contactEvent("contact.opted_out", to);
    expect((await send(to)).json.error.code).toBe("recipient_opted_out");
    const list = await msgsvc(t, ["opt-outs", "list", "--workspace", workspaceId]);
    expect(list.stdout).toContain(to);
    expect(list.stdout.split("\n")[0]).toMatch(/PHONE_NUMBER\s+STATUS\s+SOURCE/);
    const removed = await msgsvc(t, ["opt-outs", "remove", "--workspace", workspaceId, "--number", to, "--json"]);
    expect(JSON.parse(removed.stdout)).toMatchObject({ status: "opted_in", source: "console" });
    await contactEvent("contact.opted_in", to);
    expect((await send(to)).status).toBe(200);
    const again = await msgsvc(t, ["opt-outs", "remove", "--workspace", workspaceId, "--number", to]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("error: not_found:");
    const usage = await msgsvc(t, ["opt-outs", "add", "--workspace", workspaceId]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--number is required");
    const bad = await msgsvc(t, ["opt-outs", "add", "--workspace", workspaceId, "--number", "+49 151"]);
    expect(bad.stderr).toContain("phone_number: must be 8 to 15 digits");
    const audit = await t.console(AuditLogService).listAuditEntries({ workspaceId, pageSize: 100 });
    const consoleChanges = audit.data.filter((a) => a.operation.startsWith("messaging.console.v1.OptOutService/") && a.request?.phone_number === to);
    expect(consoleChanges.map((a) => [a.operation.split("/")[1], a.source, a.outcome])).toEqual([
      ["DeleteOptOut", "console", "not_found"],
      ["DeleteOptOut", "console", "ok"],
      ["CreateOptOut", "console", "ok"],
    ]);
  }, 90_000);

  it("answers the list over the console's REST API, and the public list only the key's workspace's", async () => {
    const other = await t.createWorkspace("Other", 0);
    await t.console(ConsoleOptOutService).createOptOut({ workspaceId: other, phoneNumber: "4915122300041" });
    const mine = await clientFor(OptOutService, "grpc", t.publicUrl, key.secret).listOptOuts({ phoneNumber: "4915122300041" });
    expect(mine.total).toBe(0);
    const theirs = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${other}/opt_outs`, { key: TEST_CONSOLE_TOKEN });
    expect(theirs.json).toMatchObject({ object: "list", total: 1, data: [{ phone_number: "4915122300041", status: "opted_out" }] });
    const noScope = await t.createKey(workspaceId, { scopes: ["messages:send"] });
    const refused = await rest(t.publicUrl, "GET", "/v1/opt_outs", { key: noScope.secret });
    expect(refused.json.error).toMatchObject({ code: "insufficient_scope", details: { required_scope: "messages:read" } });
  });
});

describe("msgsvc messages send --batch", () => {
  /** Runs msgsvc with the public API's address and the key. */
  const run = (args: string[], apiKey = key.secret) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["src/cli/bin.mjs", ...args], {
        cwd: projectRoot,
        env: { ...process.env, CONSOLE_URL: t.consoleUrl, CONSOLE_TOKEN: TEST_CONSOLE_TOKEN, API_URL: t.publicUrl, API_KEY: apiKey },
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (d) => (stdout += d));
      child.stderr.on("data", (d) => (stderr += d));
      child.on("error", reject);
      child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });

  it("sends a CSV with a header of variables, in requests of --batch-size, and writes each item's result", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "batch-"));
    try {
      await t.console(ConsoleOptOutService).createOptOut({ workspaceId, phoneNumber: "4915122300053" });
      const file = path.join(dir, "campaign.csv");
      await writeFile(file, "to,name,code\n4915122300051,Ada,1\n4915122300052,Grace,\n4915122300053,Linus,3\n4915122300054,\"Lovelace, Ada\",4\n");
      const before = await balance();
      const res = await run(["messages", "send", "--batch", file, "--sender", senderId, "--template", templateId, "--batch-size", "2", "--idempotency-key", "csv-1"]);
      expect(res.stdout.trim()).toBe(`4 messages in 2 requests: 2 accepted, 2 refused (invalid_argument 1, recipient_opted_out 1); results in ${file}.results.jsonl`);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain("error: items_refused: 2 of 4 messages were refused");
      const results = (await readFile(`${file}.results.jsonl`, "utf8")).trim().split("\n").map((l) => JSON.parse(l));
      expect(results.map((r) => [r.line, r.to, r.error?.code ?? r.message.status])).toEqual([
        [2, "4915122300051", "accepted"],
        [3, "4915122300052", "invalid_argument"],
        [4, "4915122300053", "recipient_opted_out"],
        [5, "4915122300054", "accepted"],
      ]);
      expect(results[1].error.details.field).toBe("template.variables.code");
      expect(await balance()).toBe(before - 2);
      // Run again with the same key: the same results, nothing spent again.
      const rerun = await run(["messages", "send", "--batch", file, "--sender", senderId, "--template", templateId, "--batch-size", "2", "--idempotency-key", "csv-1", "--json"]);
      expect(JSON.parse(rerun.stdout)).toMatchObject({ messages: 4, accepted: 2, refused: 2, requests: 2 });
      expect(await balance()).toBe(before - 2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it("sends JSON Lines, and refuses a malformed file naming its line before anything is sent", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "batch-"));
    try {
      const file = path.join(dir, "messages.jsonl");
      const lines = [JSON.stringify(body("4915122300061")), "", JSON.stringify({ to: "4915122300062", template: { variables: { name: "B", code: "2" } } })];
      await writeFile(file, `${lines.join("\n")}\n`);
      const ok = await run(["messages", "send", "--batch", file, "--sender", senderId, "--template", templateId, "--results", path.join(dir, "out.jsonl")]);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain("2 messages in 1 request: 2 accepted, 0 refused");
      const results = (await readFile(path.join(dir, "out.jsonl"), "utf8")).trim().split("\n").map((l) => JSON.parse(l));
      expect(results.map((r) => [r.line, r.message.status, r.message.sender])).toEqual([
        [1, "accepted", senderId],
        [3, "accepted", senderId],
      ]);
      await writeFile(file, `${JSON.stringify(body("4915122300063"))}\n{"to": 4915122300064}\n`);
      const bad = await run(["messages", "send", "--batch", file]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`${file} line 2: to: must be a string`);
      const noKey = await run(["messages", "send", "--batch", file], "");
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toContain("--api-key or API_KEY");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
