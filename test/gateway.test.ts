import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError, Code } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { HealthCheckResponse_ServingStatus, Health } from "../gen/health/v1/health_pb.js";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { clientFor, grpcJsCall, rest, type ConnectProtocol } from "./helpers/clients.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;
let key: { id: string; secret: string };

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Gateway", 5);
  key = await t.createKey(workspaceId, {
    name: "gateway key",
    scopes: ["templates:read", "senders:read", "messages:send"],
    rateLimitPerMin: 100,
  });
});
afterAll(() => t.close());

const expectedMe = () => ({
  account_id: workspaceId,
  key: { id: key.id, name: "gateway key", scopes: ["templates:read", "senders:read", "messages:send"] },
  rate_limit_per_min: 100,
});

describe("GET /v1/me over every protocol", () => {
  it("answers REST with the spec's snake_case fields and the standard headers", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.json).toEqual(expectedMe());
    expect(res.headers.get("request-id")).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.headers.get("ratelimit-limit")).toBe("100");
    expect(Number(res.headers.get("ratelimit-remaining"))).toBeLessThan(100);
    expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers.get("ratelimit-reset"))).toBeLessThanOrEqual(60);
  });

  it.each<ConnectProtocol>(["connect-json", "connect-binary", "grpc-web", "grpc"])(
    "answers a Connect-node client over %s with the same content and headers",
    async (protocol) => {
      const client = clientFor(AccountService, protocol, t.publicUrl, key.secret);
      let headers = new Headers();
      const me = await client.getMe({}, { onHeader: (h) => (headers = h) });
      expect(me.accountId).toBe(workspaceId);
      expect(me.key).toMatchObject({ id: key.id, name: "gateway key", scopes: ["templates:read", "senders:read", "messages:send"] });
      expect(me.rateLimitPerMin).toBe(100);
      expect(headers.get("request-id")).toMatch(/^req_/);
      expect(headers.get("ratelimit-limit")).toBe("100");
      expect(headers.get("ratelimit-remaining")).toMatch(/^\d+$/);
    },
  );

  it("answers @grpc/grpc-js (the reference implementation) over HTTP/2 with metadata", async () => {
    const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, AccountService.method.getMe, {}, {
      authorization: `Bearer ${key.secret}`,
    });
    expect(answer.error).toBeUndefined();
    expect(answer.response?.accountId).toBe(workspaceId);
    expect(answer.response?.key?.scopes).toEqual(["templates:read", "senders:read", "messages:send"]);
    expect(answer.headers.get("ratelimit-limit")).toEqual(["100"]);
    expect(answer.headers.get("request-id")[0]).toMatch(/^req_/);
  });

  it("serves IPv6 clients on the same port", async () => {
    const res = await rest(`http://[::1]:${t.service.publicPort}`, "GET", "/v1/me", { key: key.secret });
    expect(res.status).toBe(200);
    expect(res.json.account_id).toBe(workspaceId);
  });
});

describe("errors in every protocol", () => {
  it("answers an unknown route with 404 not_found in the error format, with headers", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/nothing-here", { key: key.secret });
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ code: "not_found", message: "No route for GET /v1/nothing-here" });
    expect(res.json.error.request_id).toBe(res.headers.get("request-id"));
    expect(res.headers.get("ratelimit-limit")).toBe("100");
  });

  it("answers a known path with another method 405 method_not_allowed, naming the methods it accepts in Allow (RFC 9110)", async () => {
    const res = await rest(t.publicUrl, "DELETE", "/v1/me", { key: key.secret });
    expect(res.status).toBe(405);
    expect(res.json.error).toMatchObject({
      code: "method_not_allowed",
      message: "DELETE is not allowed on /v1/me; it accepts GET",
      details: { method: "DELETE", path: "/v1/me", allow: "GET" },
    });
    expect(res.headers.get("allow")).toBe("GET");
    const messages = await rest(t.publicUrl, "PUT", "/v1/messages", { key: key.secret, body: {} });
    expect(messages.status).toBe(405);
    expect(messages.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "POST"]);
    // The open services (health, reflection) are POSTed to.
    const health = await fetch(`${t.publicUrl}/grpc.health.v1.Health/Check`);
    expect(health.status).toBe(405);
    expect(health.headers.get("allow")).toBe("POST");
    expect(((await health.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed");
    // The console's REST routes alike.
    const workspaces = await rest(t.consoleUrl, "DELETE", "/console/v1/workspaces", { key: TEST_CONSOLE_TOKEN });
    expect(workspaces.status).toBe(405);
    expect(workspaces.headers.get("allow")?.split(", ").sort()).toEqual(["GET", "POST"]);
  });

  it("answers malformed JSON with 400 invalid_argument naming the problem", async () => {
    const res = await rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, rawBody: '{"to": "49' });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("invalid_argument");
    expect(res.json.error.message).toMatch(/^Request body is not valid JSON: /);
    expect(res.json.error.details).toEqual({ field: "(body)", rule: "must be valid JSON" });
  });

  it("names unknown fields and wrong types, all at once", async () => {
    const res = await rest(t.publicUrl, "POST", "/v1/messages", {
      key: key.secret,
      body: { to: 4915112345678, templat: {}, template: { variables: { name: 3 } } },
    });
    expect(res.status).toBe(400);
    const fields = res.json.error.details.field_violations.map((v: { field: string }) => v.field);
    expect(fields).toEqual(["to", "templat", "template.variables.name"]);
    expect(res.json.error.message).toBe(
      "to: must be a string; templat: is not a known field; template.variables.name: must be a string",
    );
  });

  it("refuses unknown query parameters", async () => {
    const res = await rest(t.publicUrl, "GET", "/v1/senders?page_size=2&colour=red", { key: key.secret });
    expect(res.status).toBe(400);
    expect(res.json.error.details).toMatchObject({ field: "colour", rule: "is not a known query parameter" });
  });

  it("carries google.rpc.ErrorInfo with the code over Connect and gRPC", async () => {
    for (const protocol of ["connect-json", "connect-binary", "grpc-web", "grpc"] as const) {
      const err = await clientFor(AccountService, protocol, t.publicUrl, "sk_wrong")
        .getMe({})
        .catch((e: unknown) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      const error = err as ConnectError;
      expect(error.code).toBe(Code.Unauthenticated);
      const [info] = error.findDetails(ErrorInfoSchema);
      expect(info?.reason).toBe("invalid_key");
      expect(info?.domain).toBe("messaging-service");
      expect(error.rawMessage).toBe("The API key is malformed: keys are 'sk_' followed by 46 letters and digits");
      expect(error.metadata.get("request-id")).toMatch(/^req_/);
      expect(error.metadata.get("ratelimit-limit")).toBe("30");
    }
  });
});

describe("JSON as the spec shows it", () => {
  it("writes explicit nulls, millisecond timestamps and lower-case enum values", async () => {
    const res = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/api_keys`, {
      key: TEST_CONSOLE_TOKEN,
    });
    expect(res.status).toBe(200);
    expect(res.json.object).toBe("list");
    expect(res.json.total).toBe(1);
    expect(res.json.next_page_token).toBeNull();
    const [item] = res.json.data;
    expect(item).toMatchObject({ id: key.id, status: "active", expires_at: null, revoked_at: null });
    expect(item.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(item).not.toHaveProperty("secret_hash");
  });

  it("reads path variables with a custom verb (POST /console/v1/api_keys/{id}:revoke)", async () => {
    const other = await t.createKey(workspaceId, { name: "to revoke" });
    const res = await rest(t.consoleUrl, "POST", `/console/v1/api_keys/${other.id}:revoke`, { key: TEST_CONSOLE_TOKEN, body: {} });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: other.id, status: "revoked" });
    expect(res.json.revoked_at).toMatch(/Z$/);
    const listed = await t.console(ApiKeyService).listApiKeys({ workspaceId });
    expect(listed.data.find((k) => k.id === other.id)?.revokedAt).toBeDefined();
  });
});

describe("health", () => {
  it("answers GET /healthz and grpc.health.v1 without a key", async () => {
    const res = await rest(t.publicUrl, "GET", "/healthz");
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: "ok" });
    const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, Health.method.check, { service: "" });
    expect(answer.response?.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    const unknown = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, Health.method.check, { service: "nope.Service" });
    expect(unknown.error?.code).toBe(grpc.status.NOT_FOUND);
  });
});
