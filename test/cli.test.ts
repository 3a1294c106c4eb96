import type { StoredEvent } from "../src/events/event-bus.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { ConsoleRole, ConsoleUserService } from "../gen/messaging/console/v1/console_users_pb.js";
import { rest } from "./helpers/clients.js";
import { createSender, createTemplate, FAST_MESSAGING, msgsvc as runMsgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
const msgsvc = (args: string[]) => runMsgsvc(t, args);

beforeAll(async () => {
  t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error", webhookAllowPrivateTargets: true, webhookAllowHttpLoopback: true } });
});
afterAll(() => t.close());

describe("msgsvc basics", () => {
  it("prints its version, and --help shows each default once", async () => {
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    const res = await msgsvc(["--version"]);
    expect(res).toMatchObject({ code: 0, stdout: `${version}\n` });
    const help = await msgsvc(["keys", "create", "--help"]);
    expect(help.stdout).toContain('requests per minute, 1 to 100 (default: 30)');
    expect(help.stdout).not.toMatch(/default 30\)|\(default: "0"\)/);
    const listen = await msgsvc(["webhooks", "listen", "--help"]);
    expect(listen.stdout).toContain("comma-separated event types (default: all)");
    expect(listen.stdout).not.toMatch(/\(default: all\)[^\n]*\(default/);
  });

  it("shows nested values readably in tables and prints the whole list answer with --json", async () => {
    const ws = await t.createWorkspace("CLI tables");
    const email = `ada.${Date.now()}@example.com`;
    const created = await msgsvc(["users", "create", "--email", email, "--password", "correct horse battery", "--roles", `${ws}:viewer`]);
    expect(created.code).toBe(0);
    expect(created.stdout).not.toContain("[object Object]");
    expect(created.stdout).toContain(`workspace_id=${ws} role=viewer`);
    await msgsvc(["users", "create", "--email", `grace.${Date.now()}@example.com`, "--password", "correct horse battery"]);
    const list = await msgsvc(["users", "list", "--page-size", "1", "--json"]);
    const answer = JSON.parse(list.stdout);
    expect(answer).toMatchObject({ object: "list", data: [expect.objectContaining({ object: "console_user" })] });
    expect(answer.total).toBeGreaterThanOrEqual(2);
    expect(typeof answer.next_page_token).toBe("string");
    const next = await msgsvc(["users", "list", "--page-size", "1", "--page-token", answer.next_page_token, "--json"]);
    expect(JSON.parse(next.stdout).data[0].id).not.toBe(answer.data[0].id);
    const table = await msgsvc(["users", "list", "--page-size", "1"]);
    expect(table.stdout).toContain(`more: --page-token ${answer.next_page_token}`);
  });

  it("exits non-zero with the error code on every failure", async () => {
    const notFound = await msgsvc(["messages", "get", "msg_nope", "--workspace", await t.createWorkspace("CLI errors")]);
    expect(notFound.code).toBe(1);
    expect(notFound.stderr).toMatch(/^error: not_found: /);
    const usage = await msgsvc(["messages", "list", "--workspace", "x", "--status", "lost"]);
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining("--status: must be one of accepted, sent, delivered, read, failed") });
    const badPage = await msgsvc(["messages", "list", "--workspace", "x", "--page-size", "ten"]);
    expect(badPage).toMatchObject({ code: 2, stderr: expect.stringContaining("--page-size: must be a whole number") });
  });
});

describe("msgsvc messages", () => {
  let ws: string;
  let key: string;
  let sender: string;
  let template: string;
  const send = async (to: string) => {
    const res = await rest(t.publicUrl, "POST", "/v1/messages", { key, body: { to, sender, template: { id: template, variables: { name: "Ada", code: "1" } } } });
    expect(res.status).toBe(200);
    return res.json.message_id as string;
  };
  beforeAll(async () => {
    ws = await t.createWorkspace("CLI messages", 100);
    key = (await t.createKey(ws, { scopes: ["messages:send"] })).secret;
    sender = await createSender(t, ws);
    template = await createTemplate(t, ws);
  });

  it("lists by status and recipient and shows a message's timeline, credits and events", async () => {
    const read = await send("4915100001234");
    const failed = await send("4915100009991");
    await eventually(async () => {
      const res = await msgsvc(["messages", "get", read, "--workspace", ws, "--json"]);
      return JSON.parse(res.stdout).events.length === 3 || undefined;
    });
    const got = JSON.parse((await msgsvc(["messages", "get", read, "--workspace", ws, "--json"])).stdout);
    expect(got.message).toMatchObject({ message_id: read, status: "read", credits: 1 });
    expect(got.timeline.map((s: { status: string }) => s.status)).toEqual(["accepted", "sent", "delivered", "read"]);
    expect(got.charge).toMatchObject({ id: `spend:${read}`, kind: "spend", amount: -1 });
    expect(got.refund).toBeNull();
    expect(got.events.map((e: { type: string }) => e.type)).toEqual(["message.sent", "message.delivered", "message.read"]);
    expect(got.events[2].data).toMatchObject({ message_id: read, status: "read" });

    const refunded = await eventually(async () => {
      const res = JSON.parse((await msgsvc(["messages", "get", failed, "--workspace", ws, "--json"])).stdout);
      return res.refund ? res : undefined;
    });
    // Sent is dated when dispatch handed the message to the network, so the network's failed (40 ms after it accepted
    // the send here) comes after it however late its answer was read.
    expect(refunded.timeline.map((s: { status: string }) => s.status)).toEqual(["accepted", "sent", "failed"]);
    expect(refunded.refund).toMatchObject({ kind: "refund", amount: 1 });
    expect(refunded.message.error).toEqual({ code: 131049, title: expect.any(String), reason: null });

    const onlyFailed = JSON.parse((await msgsvc(["messages", "list", "--workspace", ws, "--status", "failed", "--json"])).stdout);
    expect(onlyFailed).toMatchObject({ object: "list", total: 1, next_page_token: null, data: [{ message_id: failed }] });
    const byRecipient = JSON.parse((await msgsvc(["messages", "list", "--workspace", ws, "--to", "4915100001234", "--json"])).stdout);
    expect(byRecipient.data.map((m: { message_id: string }) => m.message_id)).toEqual([read]);
    const future = JSON.parse((await msgsvc(["messages", "list", "--workspace", ws, "--since", "2999-01-01T00:00:00Z", "--json"])).stdout);
    expect(future.total).toBe(0);

    const people = await msgsvc(["messages", "get", read, "--workspace", ws]);
    expect(people.stdout).toMatch(/Timeline[\s\S]*delivered[\s\S]*Credits[\s\S]*spend[\s\S]*Events[\s\S]*message\.read/);
    const event = await msgsvc(["events", "get", got.events[0].id, "--workspace", ws]);
    expect(event.code).toBe(0);
    expect(event.stdout).toContain(`"message_id": "${read}"`);
    // Another workspace sees neither the message nor its event.
    const other = await t.createWorkspace("CLI other");
    expect((await msgsvc(["messages", "get", read, "--workspace", other])).stderr).toMatch(/^error: not_found/);
    expect((await msgsvc(["events", "get", got.events[0].id, "--workspace", other])).stderr).toMatch(/^error: not_found/);
  });

  it("lists a message's events stored in one write by the time each says it happened", async () => {
    const id = await send("4915100001236");
    // Reports applied together store their events with one created_at; the ids (random) must not decide the order.
    const events = t.service.db.collection<StoredEvent>("events");
    const stored = await eventually(async () => {
      const found = await events.find({ "data.message_id": id }).toArray();
      return found.length === 3 ? found : undefined;
    });
    expect(stored.map((e) => e.type).sort()).toEqual(["message.delivered", "message.read", "message.sent"]);
    const together = new Date();
    const copies = stored.map((e) => ({
      ...e,
      _id: `evt_${e.type === "message.read" ? "00000000" : "ffffffff"}-0000-4000-8000-${e._id.slice(-12)}`,
      created_at: e.type === "message.sent" ? e.created_at : together,
    }));
    await events.deleteMany({ "data.message_id": id });
    await events.insertMany(copies);
    const got = JSON.parse((await msgsvc(["messages", "get", id, "--json"])).stdout);
    expect(got.events.map((e: { type: string }) => e.type)).toEqual(["message.sent", "message.delivered", "message.read"]);
  });

  it("gets a message and an event by the id alone, as every other get does", async () => {
    const id = await send("4915100001235");
    const byId = await eventually(async () => {
      const res = await msgsvc(["messages", "get", id, "--json"]);
      expect(res.stderr).toBe("");
      const json = JSON.parse(res.stdout);
      return json.events.length > 0 ? json : undefined;
    });
    expect(byId.message).toMatchObject({ message_id: id, to: "4915100001235" });
    const event = await msgsvc(["events", "get", byId.events[0].id, "--json"]);
    expect(event.code, event.stderr).toBe(0);
    expect(JSON.parse(event.stdout)).toMatchObject({ id: byId.events[0].id, workspace_id: ws, data: { message_id: id } });
    // The console's REST routes without the workspace.
    const overRest = await rest(t.consoleUrl, "GET", `/console/v1/messages/${id}`, { key: TEST_CONSOLE_TOKEN });
    expect(overRest.json.message.message_id).toBe(id);
    const eventOverRest = await rest(t.consoleUrl, "GET", `/console/v1/events/${byId.events[0].id}`, { key: TEST_CONSOLE_TOKEN });
    expect(eventOverRest.json).toMatchObject({ id: byId.events[0].id, type: byId.events[0].type });
    expect((await msgsvc(["messages", "get", "msg_00000000-0000-4000-8000-000000000000"])).stderr).toMatch(/^error: not_found/);
  });

  it("by the id alone, a console user reads only the messages and events of workspaces it has a role in", async () => {
    const id = await send("4915100001236");
    const eventId = await eventually(async () => (await t.service.db.collection<StoredEvent>("events").findOne({ "data.message_id": id }))?._id);
    const other = await t.createWorkspace("CLI outsider's workspace");
    const password = "a-good-password-123";
    const users = t.console(ConsoleUserService);
    await users.createConsoleUser({ email: "outsider@example.com", password, roles: [{ workspaceId: other, role: ConsoleRole.VIEWER }] });
    await users.createConsoleUser({ email: "insider@example.com", password, roles: [{ workspaceId: ws, role: ConsoleRole.VIEWER }] });
    const tokenOf = async (email: string) => (await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email, password } })).json.token as string;
    const outsider = await tokenOf("outsider@example.com");
    const insider = await tokenOf("insider@example.com");
    for (const path of [`/console/v1/messages/${id}`, `/console/v1/events/${eventId}`]) {
      const refused = await rest(t.consoleUrl, "GET", path, { key: outsider });
      expect(refused.status, path).toBe(404);
      expect(refused.json.error.code).toBe("not_found");
      expect((await rest(t.consoleUrl, "GET", path, { key: insider })).status, path).toBe(200);
    }
  });

  it("the same message log over the console's REST routes", async () => {
    const id = await send("4915100005555");
    const res = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${ws}/messages/${id}`, { key: "test-console-token-0123456789" });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ message: { message_id: id }, api_key_id: expect.any(String) });
    expect(res.json.timeline[0].status).toBe("accepted");
    const list = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${ws}/messages?page_size=1`, { key: "test-console-token-0123456789" });
    expect(list.json).toMatchObject({ object: "list", data: [{ message_id: expect.any(String) }] });
    expect(typeof list.json.next_page_token).toBe("string");
  });
});

describe("msgsvc deliveries retry", () => {
  it("exits 1 naming the failure when the manual attempt fails", async () => {
    const ws = await t.createWorkspace("CLI retry", 10);
    const failing = http.createServer((_req, res) => res.writeHead(503).end("down"));
    await new Promise<void>((resolve) => failing.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/hook`;
      const endpoint = JSON.parse((await msgsvc(["webhooks", "create", "--workspace", ws, "--name", "failing", "--url", url, "--events", "message.sent", "--json"])).stdout);
      const key = (await t.createKey(ws, { scopes: ["messages:send"] })).secret;
      const sender = await createSender(t, ws);
      const template = await createTemplate(t, ws);
      await rest(t.publicUrl, "POST", "/v1/messages", { key, body: { to: "4915100001111", sender, template: { id: template, variables: { name: "A", code: "1" } } } });
      const delivery = await eventually(async () => {
        const list = JSON.parse((await msgsvc(["deliveries", "list", "--endpoint", endpoint.webhook_endpoint.id, "--json"])).stdout);
        return list.data[0];
      });
      const retry = await msgsvc(["deliveries", "retry", delivery.id]);
      expect(retry.code).toBe(1);
      expect(retry.stderr).toMatch(/^error: attempt_failed: the manual attempt .* failed: HTTP 503/);
      expect(retry.stdout).toContain("503");
    } finally {
      failing.close();
    }
  });
});
