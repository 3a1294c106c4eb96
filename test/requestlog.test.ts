import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import type { RequestLogRow } from "../src/requestlog/request-log.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Logged");
});
afterAll(() => t.close());

/** The request-log row of a request id, once it has been written. */
async function rowOf(requestId: string | null): Promise<RequestLogRow> {
  expect(requestId).toMatch(/^req_/);
  return eventually(async () => {
    await t.flushRequestLog();
    return (await t.service.db.collection<RequestLogRow>("request_log").findOne({ _id: requestId as string })) ?? undefined;
  });
}

describe("request log (spec §What the service does, 5)", () => {
  it("records an accepted REST call with workspace, key, operation, protocol, status, address and duration", async () => {
    const key = await t.createKey(workspaceId);
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    const row = await rowOf(res.headers.get("request-id"));
    expect(row).toMatchObject({
      workspace_id: workspaceId,
      api_key_id: key.id,
      operation: "messaging.v1.AccountService/GetMe",
      protocol: "rest",
      http_method: "GET",
      path: "/v1/me",
      http_status: 200,
      error_code: null,
      client_address: "127.0.0.1",
    });
    expect(row.duration_ms).toBeGreaterThan(0);
    expect(row.at).toBeInstanceOf(Date);
  });

  it("records calls over Connect and gRPC with their protocol", async () => {
    const key = await t.createKey(workspaceId);
    let connectId = "";
    await clientFor(AccountService, "connect-binary", t.publicUrl, key.secret).getMe({}, { onHeader: (h) => (connectId = h.get("request-id") ?? "") });
    expect(await rowOf(connectId)).toMatchObject({ protocol: "connect", operation: "messaging.v1.AccountService/GetMe", http_status: 200 });
    let webId = "";
    await clientFor(AccountService, "grpc-web", t.publicUrl, key.secret).getMe({}, { onHeader: (h) => (webId = h.get("request-id") ?? "") });
    expect(await rowOf(webId)).toMatchObject({ protocol: "grpc-web", error_code: null });
    const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, AccountService.method.getMe, {}, { authorization: "Bearer sk_bad" });
    expect(await rowOf(answer.headers.get("request-id")[0] as string)).toMatchObject({
      protocol: "grpc",
      operation: "messaging.v1.AccountService/GetMe",
      error_code: "invalid_key",
      workspace_id: null,
      api_key_id: null,
    });
  });

  it("records refused requests: unknown key, bad JSON, unknown route, scope, revoked key, rate limited", async () => {
    const unknownKey = await rest(t.publicUrl, "GET", "/v1/me", { key: `sk_${"B".repeat(43)}` });
    expect(await rowOf(unknownKey.headers.get("request-id"))).toMatchObject({ error_code: "invalid_key", http_status: 401 });

    const sender = await t.createKey(workspaceId, { scopes: ["messages:send"], rateLimitPerMin: 2 });
    const badJson = await rest(t.publicUrl, "POST", "/v1/messages", { key: sender.secret, rawBody: "{" });
    expect(await rowOf(badJson.headers.get("request-id"))).toMatchObject({
      error_code: "invalid_argument",
      http_status: 400,
      operation: "messaging.v1.MessageService/SendMessage",
      api_key_id: sender.id,
    });

    const unknownRoute = await rest(t.publicUrl, "GET", "/v2/whatever", { key: sender.secret });
    expect(await rowOf(unknownRoute.headers.get("request-id"))).toMatchObject({
      error_code: "not_found",
      http_status: 404,
      operation: null,
      path: "/v2/whatever",
      workspace_id: workspaceId,
    });

    const limited = await rest(t.publicUrl, "GET", "/v1/me", { key: sender.secret });
    expect(limited.status).toBe(429);
    expect(await rowOf(limited.headers.get("request-id"))).toMatchObject({ error_code: "rate_limited", http_status: 429, api_key_id: sender.id });

    const noScope = await t.createKey(workspaceId, { scopes: [] });
    const scoped = await rest(t.publicUrl, "GET", "/v1/templates", { key: noScope.secret });
    expect(await rowOf(scoped.headers.get("request-id"))).toMatchObject({ error_code: "insufficient_scope", http_status: 403 });

    const revoked = await t.createKey(workspaceId);
    await rest(t.consoleUrl, "POST", `/console/v1/api_keys/${revoked.id}:revoke`, { key: "test-console-token-0123456789", body: {} });
    const refused = await rest(t.publicUrl, "GET", "/v1/me", { key: revoked.secret });
    expect(await rowOf(refused.headers.get("request-id"))).toMatchObject({
      error_code: "key_revoked",
      workspace_id: workspaceId,
      api_key_id: revoked.id,
    });
  });

  it("prunes rows older than the retention", async () => {
    const old = new Date(Date.now() - 40 * 86_400_000);
    await t.service.db.collection<RequestLogRow>("request_log").insertOne({
      _id: "req_old_row",
      at: old,
      workspace_id: null,
      api_key_id: null,
      operation: null,
      protocol: "rest",
      http_method: "GET",
      path: "/v1/me",
      http_status: 401,
      error_code: "invalid_key",
      client_address: "127.0.0.1",
      duration_ms: 1,
      expires_at: new Date(old.getTime() + 30 * 86_400_000),
    });
    const deleted = await t.service.requestLog.prune({ now: () => new Date() });
    expect(deleted).toBeGreaterThanOrEqual(1);
    expect(await t.service.db.collection<RequestLogRow>("request_log").findOne({ _id: "req_old_row" })).toBeNull();
    expect(await t.service.db.collection<RequestLogRow>("request_log").countDocuments()).toBeGreaterThan(0);
  });
});
