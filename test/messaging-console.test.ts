import type { StoredEvent } from "../src/events/event-bus.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreditService } from "../gen/messaging/console/v1/credits_pb.js";
import { clientFor, rest } from "./helpers/clients.js";
import { FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
});
afterAll(() => t.close());

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });
const fields = (res: { json: { error: { details: { field_violations: { field: string }[] } } } }) =>
  res.json.error.details.field_violations.map((v) => v.field);

describe("console API for senders, templates and credits", () => {
  let workspaceId: string;
  beforeAll(async () => {
    workspaceId = await t.createWorkspace("Console messaging");
  });

  it("validates senders and refuses a second active sender with the same number", async () => {
    const bad = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "+49 151", name: "", whatsapp_phone_number_id: "abc" });
    expect(bad.status).toBe(400);
    expect(fields(bad)).toEqual(["phone_number", "name", "whatsapp_phone_number_id"]);
    const created = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "4915100000777", name: "Sales" });
    expect(created.json).toMatchObject({ object: "sender", workspace_id: workspaceId, status: "active", whatsapp_phone_number_id: null, archived_at: null });
    const twice = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/senders`, { phone_number: "4915100000777", name: "Sales 2" });
    expect(twice.status).toBe(409);
    const archived = await consoleRest("POST", `/console/v1/senders/${created.json.id}:archive`, {});
    expect(archived.json.status).toBe("archived");
    expect((await consoleRest("POST", `/console/v1/senders/snd_unknown:archive`, {})).status).toBe(404);
  });

  it("validates templates: name, language, body variables, examples, optional variables and flow id", async () => {
    const bad = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/templates`, {
      name: "Order Update",
      language: "english",
      body: "Hi {{Name}} {{code",
      examples: { nope: "x" },
      optional_variables: ["missing"],
      flow_id: "f-1",
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.details.field_violations).toEqual([
      { field: "name", description: "must be 1 to 512 lower-case letters, digits or '_'" },
      { field: "language", description: "must be a language code such as en or pt_BR" },
      { field: "flow_id", description: "must be 1 to 30 digits" },
    ]);
    // The rules of the body's variables are checked once the contract's hold.
    const variables = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/templates`, {
      name: "order_update",
      language: "en",
      body: "Hi {{Name}} {{code",
      examples: { nope: "x" },
      optional_variables: ["missing"],
    });
    expect(variables.json.error.details.field_violations).toEqual([
      { field: "body", description: "variable {{Name}}: name must be a lower-case letter or '_' followed by up to 63 lower-case letters, digits or '_'" },
      { field: "body", description: "has an unmatched '{{' or '}}'" },
      { field: "examples.nope", description: "is not a variable of the body" },
      { field: "optional_variables[0]", description: 'is not a variable of the body (got "missing")' },
    ]);
  });

  it("tops up credits and records every change in the ledger", async () => {
    const added = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/credits:add`, { amount: 25, note: "invoice 42" });
    expect(added.status).toBe(200);
    expect(added.json).toMatchObject({ credit_balance: 25, entry: { kind: "top_up", amount: 25, balance_after: 25, note: "invoice 42", message_id: null } });
    expect(added.json.entry.id).toMatch(/^top_up:/);
    const refused = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/credits:add`, { amount: 0 });
    expect(refused.json.error.message).toBe("amount: must be from 1 to 1000000000");
    const ledger = await consoleRest("GET", `/console/v1/workspaces/${workspaceId}/credit_ledger`);
    expect(ledger.json).toMatchObject({ object: "list", total: 1 });
  });
});

describe("opening credits", () => {
  it("records a new workspace's opening balance in its ledger, over REST and gRPC", async () => {
    const created = await consoleRest("POST", "/console/v1/workspaces", { name: "Opening", credits: 50 });
    expect(created.status).toBe(200);
    expect(created.json.credit_balance).toBe(50);
    const ledger = await consoleRest("GET", `/console/v1/workspaces/${created.json.id}/credit_ledger`);
    expect(ledger.json).toMatchObject({ object: "list", total: 1 });
    expect(ledger.json.data[0]).toMatchObject({ kind: "top_up", amount: 50, balance_after: 50, note: "opening balance", message_id: null });
    expect(ledger.json.data[0].id).toMatch(/^top_up:/);
    const overGrpc = await clientFor(CreditService, "grpc", t.consoleUrl, TEST_CONSOLE_TOKEN).listCreditLedgerEntries({ workspaceId: created.json.id });
    expect(overGrpc.data.map((e) => [e.id, e.amount, e.balanceAfter, e.note])).toEqual([[ledger.json.data[0].id, 50n, 50n, "opening balance"]]);
    // No credits, no entry.
    const empty = await consoleRest("POST", "/console/v1/workspaces", { name: "Empty" });
    expect((await consoleRest("GET", `/console/v1/workspaces/${empty.json.id}/credit_ledger`)).json.total).toBe(0);
  });
});

describe("msgsvc senders, templates, credits and simulate", () => {
  it("sets up a workspace from the CLI, sends a message, and simulates the reply", async () => {
    const ws = JSON.parse((await msgsvc(t, ["workspaces", "create", "--name", "CLI messaging", "--json"])).stdout);
    const credits = await msgsvc(t, ["credits", "add", "--workspace", ws.id, "--amount", "5", "--note", "start"]);
    expect(credits.code).toBe(0);
    expect(credits.stdout).toContain("Balance: 5 credits");
    const sender = JSON.parse((await msgsvc(t, ["senders", "create", "--workspace", ws.id, "--phone-number", "4915100000888", "--name", "CLI sender", "--json"])).stdout);
    expect(sender).toMatchObject({ phone_number: "4915100000888", status: "active" });
    const created = await msgsvc(t, [
      "templates", "create", "--workspace", ws.id, "--name", "welcome", "--language", "en",
      "--body", "Hello {{name}}, your code is {{code}}", "--examples", "name=Ada,code=123456", "--optional", "name",
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+LANGUAGE\s+CATEGORY\s+STATUS\s+VARIABLES/);
    expect(created.stdout).toContain("name?,code");
    const templatesList = JSON.parse((await msgsvc(t, ["templates", "list", "--workspace", ws.id, "--json"])).stdout);
    expect(templatesList).toMatchObject({ object: "list", total: 1, next_page_token: null });
    const [template] = templatesList.data;
    expect(template.variables).toEqual([
      { name: "name", required: false, example: "Ada" },
      { name: "code", required: true, example: "123456" },
    ]);
    // Created without a throughput: the list shows the figure and where it came from.
    const listed = (await msgsvc(t, ["senders", "list", "--workspace", ws.id])).stdout;
    expect(listed).toContain("CLI sender");
    expect(listed.split("\n")[0]).toMatch(/\bTHROUGHPUT_MPS\s+THROUGHPUT_SOURCE\b/);
    expect(["network", "default"]).toContain(sender.throughput_source);
    expect(listed).toMatch(new RegExp(`\\b${sender.throughput_mps}\\s+${sender.throughput_source}\\b`));

    const { secret } = JSON.parse((await msgsvc(t, ["keys", "create", "--workspace", ws.id, "--name", "cli", "--scopes", "messages:send,messages:read", "--json"])).stdout);
    const sent = await rest(t.publicUrl, "POST", "/v1/messages", { key: secret, body: { to: "4915123456000", sender: sender.id, template: { id: template.id, variables: { code: "9" } } } });
    expect(sent.status).toBe(200);
    const id = sent.json.message_id;
    await eventually(async () => ((await t.service.db.collection("messages").findOne({ _id: id, wa_message_id: { $ne: null } })) ? true : undefined));
    const reply = await msgsvc(t, ["simulate", "reply", "--message", id, "--text", "Got it", "--json"]);
    expect(reply.code).toBe(0);
    const { message_id: replyId } = JSON.parse(reply.stdout);
    expect(await t.service.db.collection<StoredEvent>("events").countDocuments({ type: "message.received", "data.message_id": replyId, "data.text": "Got it" })).toBe(1);

    const stats = await msgsvc(t, ["workspaces", "stats", ws.id]);
    expect(stats.stdout).toMatch(/^STATUS\s+MESSAGES$/m);
    expect(stats.stdout).toContain("All time: 1 messages. Since ");
    expect(stats.stdout).toMatch(/: 1 sent, 1 replies\.$/m);
    const statsJson = JSON.parse((await msgsvc(t, ["workspaces", "stats", ws.id, "--since", "1h", "--json"])).stdout);
    expect(statsJson).toMatchObject({ total: 1, recent: 1, recent_replies: 1 });
    expect(Object.values(statsJson.by_status as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(1);
    const ledger = await msgsvc(t, ["credits", "ledger", "--workspace", ws.id, "--json"]);
    expect(JSON.parse(ledger.stdout).data.map((e: { kind: string; amount: number }) => [e.kind, e.amount])).toEqual([["spend", -1], ["top_up", 5]]);
    const archived = await msgsvc(t, ["templates", "archive", template.id, "--json"]);
    expect(JSON.parse(archived.stdout).status).toBe("archived");
    expect((await msgsvc(t, ["senders", "archive", sender.id])).stdout).toContain("archived");
  }, 60_000); // a dozen CLI processes, each starting Node

  it("reports refusals of the simulator on stderr", async () => {
    const unknown = await msgsvc(t, ["simulate", "reply", "--message", "msg_unknown", "--text", "hi"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('error: not_found: No message with id "msg_unknown"');
    const usage = await msgsvc(t, ["credits", "add", "--workspace", "w", "--amount", "lots"]);
    expect(usage.code).toBe(2);
  });
});
