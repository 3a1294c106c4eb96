import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { ConsoleUserService } from "../gen/messaging/console/v1/console_users_pb.js";
import { SenderService } from "../gen/messaging/console/v1/senders_pb.js";
import { TemplateService } from "../gen/messaging/console/v1/templates_pb.js";
import { grpcJsCall, rest } from "./helpers/clients.js";
import { createSender, createTemplate, msgsvc } from "./helpers/messaging.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * The console API has a Get for every resource it lists (AIP-131): API keys,
 * senders, templates and console users, over REST (the resource itself),
 * Connect, gRPC and the CLI; an unknown id is not_found.
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
