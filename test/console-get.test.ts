import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { AuditLogService } from "../gen/messaging/console/v1/audit_log_pb.js";
import { CreditService } from "../gen/messaging/console/v1/credits_pb.js";
import { RequestLogService } from "../gen/messaging/console/v1/request_log_pb.js";
import { ConsoleUserService } from "../gen/messaging/console/v1/console_users_pb.js";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { grpcJsCall, rest } from "./helpers/clients.js";
import { createSender, createTemplate, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * The console API has a Get for every resource it lists (AIP-131): API keys,
 * senders, templates, console users, audit entries, logged requests and
 * ledger entries, over REST (the resource itself), Connect, gRPC and the CLI;
 * an unknown id is not_found.
 */

let t: TestService;
let workspaceId: string;
let ids: { apiKey: string; sender: string; template: string; user: string };
beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Gets");
  const { user } = await t.console(ConsoleUserService).createConsoleUser({ email: "get@example.com", password: "a-good-password-123", roles: [] });
  ids = {
    apiKey: (await t.createKey(workspaceId, { name: "get me" })).id,
    sender: await createSender(t, workspaceId),
    template: await createTemplate(t, workspaceId),
    user: user!.id,
  };
});
afterAll(() => t.close());

const auth = { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` };

describe("Get of every listed console resource", () => {
  it("API key: REST, Connect and gRPC answer the key, never its secret", async () => {
    const overRest = await rest(t.consoleUrl, "GET", `/console/v1/api_keys/${ids.apiKey}`, { key: TEST_CONSOLE_TOKEN });
    expect(overRest.status).toBe(200);
    expect(overRest.json).toMatchObject({ id: ids.apiKey, object: "api_key", name: "get me", workspace_id: workspaceId });
    expect(overRest.text).not.toMatch(/sk_[0-9A-Za-z]{20}/);
    expect((await t.console(ApiKeyService).getApiKey({ id: ids.apiKey })).apiKey?.name).toBe("get me");
    const overGrpc = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, ApiKeyService.method.getApiKey, { id: ids.apiKey }, auth);
    expect(overGrpc.response?.apiKey?.id).toBe(ids.apiKey);
  });

  it("sender, template and console user over REST, Connect and gRPC", async () => {
    const cases = [
      { path: `/console/v1/senders/${ids.sender}`, id: ids.sender, connect: () => t.console(SenderService).getSender({ id: ids.sender }).then((r) => r.sender?.id) },
      { path: `/console/v1/templates/${ids.template}`, id: ids.template, connect: () => t.console(TemplateService).getTemplate({ id: ids.template }).then((r) => r.template?.id) },
      { path: `/console/v1/users/${ids.user}`, id: ids.user, connect: () => t.console(ConsoleUserService).getConsoleUser({ id: ids.user }).then((r) => r.user?.id) },
    ];
    for (const c of cases) {
      const overRest = await rest(t.consoleUrl, "GET", c.path, { key: TEST_CONSOLE_TOKEN });
      expect(overRest.status, c.path).toBe(200);
      expect(overRest.json.id).toBe(c.id);
      expect(await c.connect()).toBe(c.id);
    }
    const port = `127.0.0.1:${t.service.consolePort}`;
    expect((await grpcJsCall(port, SenderService.method.getSender, { id: ids.sender }, auth)).response?.sender?.id).toBe(ids.sender);
    expect((await grpcJsCall(port, TemplateService.method.getTemplate, { id: ids.template }, auth)).response?.template?.id).toBe(ids.template);
    const user = await grpcJsCall(port, ConsoleUserService.method.getConsoleUser, { id: ids.user }, auth);
    expect(user.response?.user?.email).toBe("get@example.com");
  });

  it("an unknown id is not_found over REST and gRPC", async () => {
    for (const path of ["/console/v1/api_keys/00000000-0000-4000-8000-000000000000", "/console/v1/senders/snd_x", "/console/v1/templates/tpl_x", "/console/v1/users/nope"]) {
      const answer = await rest(t.consoleUrl, "GET", path, { key: TEST_CONSOLE_TOKEN });
      expect(answer.status, path).toBe(404);
      expect(answer.json.error.code).toBe("not_found");
    }
    const missing = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, ApiKeyService.method.getApiKey, { id: "nope" }, auth);
    expect(missing.error?.code).toBe(grpc.status.NOT_FOUND);
  });

  it("msgsvc keys|senders|templates|users get print one resource", async () => {
    for (const [command, id] of [["keys", ids.apiKey], ["senders", ids.sender], ["templates", ids.template], ["users", ids.user]] as const) {
      const run = await msgsvc(t, [command, "get", id, "--json"]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout).id).toBe(id);
    }
  });
});

describe("Get of audit entries, logged requests and ledger entries", () => {
  const port = () => `127.0.0.1:${t.service.consolePort}`;

  it("a ledger entry (its id carries a ':'): REST, Connect, gRPC and msgsvc credits entry", async () => {
    const { entry } = await t.console(CreditService).addCredits({ workspaceId, amount: 7n, note: "for get" });
    const id = entry!.id;
    expect(id).toMatch(/^top_up:/);
    const overRest = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/credit_ledger/${encodeURIComponent(id)}`, { key: TEST_CONSOLE_TOKEN });
    expect(overRest.status).toBe(200);
    expect(overRest.json).toMatchObject({ id, kind: "top_up", amount: 7, note: "for get" });
    expect((await t.console(CreditService).getCreditLedgerEntry({ workspaceId, id })).entry?.amount).toBe(7n);
    expect((await grpcJsCall(port(), CreditService.method.getCreditLedgerEntry, { workspaceId, id }, auth)).response?.entry?.id).toBe(id);
    const other = await t.createWorkspace("Other ledger");
    expect((await grpcJsCall(port(), CreditService.method.getCreditLedgerEntry, { workspaceId: other, id }, auth)).error?.code).toBe(grpc.status.NOT_FOUND);
    const run = await msgsvc(t, ["credits", "entry", id, "--workspace", workspaceId, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ id, amount: 7 });
  });

  it("an audit entry: REST, Connect, gRPC and msgsvc audit get, by the id msgsvc audit list shows", async () => {
    const list = await t.console(AuditLogService).listAuditEntries({ workspaceId, pageSize: 1 });
    const id = list.data[0]!.id;
    const table = await msgsvc(t, ["audit", "list", "--workspace", workspaceId, "--page-size", "1"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID +AT +ACTOR +OPERATION/);
    expect(table.stdout.split("\n")[1]?.split(/ +/)[0]).toBe(id);
    const overRest = await rest(t.consoleUrl, "GET", `/console/v1/audit_entries/${id}`, { key: TEST_CONSOLE_TOKEN });
    expect(overRest.status).toBe(200);
    expect(overRest.json).toMatchObject({ id, object: "audit_entry", workspace_id: workspaceId, operation: list.data[0]!.operation });
    expect((await t.console(AuditLogService).getAuditEntry({ id })).auditEntry?.actor).toBe("operator");
    expect((await grpcJsCall(port(), AuditLogService.method.getAuditEntry, { id }, auth)).response?.auditEntry?.id).toBe(id);
    const run = await msgsvc(t, ["audit", "get", id, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).id).toBe(id);
    expect((await rest(t.consoleUrl, "GET", "/console/v1/audit_entries/req_unknown", { key: TEST_CONSOLE_TOKEN })).status).toBe(404);
  });

  it("a logged request by its Request-Id: REST, Connect, gRPC and msgsvc requests get, by the id msgsvc requests list shows", async () => {
    const key = await t.createKey(workspaceId, { name: "logged" });
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    const id = me.headers.get("request-id") as string;
    expect(id).toMatch(/^req_/);
    const overRest = await eventually(async () => {
      const answer = await rest(t.consoleUrl, "GET", `/console/v1/requests/${id}`, { key: TEST_CONSOLE_TOKEN });
      return answer.status === 200 ? answer : undefined;
    });
    expect(overRest.json).toMatchObject({ id, object: "request", http_method: "GET", path: "/v1/me", http_status: 200, api_key_id: key.id });
    const table = await msgsvc(t, ["requests", "list", "--workspace", workspaceId, "--key", key.id]);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID +AT +PROTOCOL/);
    expect(table.stdout.split("\n")[1]?.split(/ +/)[0]).toBe(id);
    expect((await t.console(RequestLogService).getLoggedRequest({ id })).request?.path).toBe("/v1/me");
    expect((await grpcJsCall(port(), RequestLogService.method.getLoggedRequest, { id }, auth)).response?.request?.id).toBe(id);
    const run = await msgsvc(t, ["requests", "get", id, "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).id).toBe(id);
    expect((await rest(t.consoleUrl, "GET", "/console/v1/requests/req_unknown", { key: TEST_CONSOLE_TOKEN })).status).toBe(404);
  });
});
