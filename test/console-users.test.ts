import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { AuditLogService } from "../gen/messaging/console/v1/audit_log_pb.js";
import { ConsoleRole, ConsoleUserService } from "../gen/messaging/console/v1/console_users_pb.js";
import { DeliveryService } from "../gen/messaging/console/v1/deliveries_pb.js";
import { WebhookEndpointService } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { rest } from "./helpers/clients.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

const ADMIN_EMAIL = "root@example.com";
const ADMIN_PASSWORD = "bootstrap-password-0001";
let t: TestService;
let workspaceA: string;
let workspaceB: string;

beforeAll(async () => {
  t = await createTestService({ config: { consoleAdminEmail: ADMIN_EMAIL, consoleAdminPassword: ADMIN_PASSWORD } });
  workspaceA = await t.createWorkspace("A");
  workspaceB = await t.createWorkspace("B");
});
afterAll(() => t.close());

/** Signs in over REST and returns the session token. */
async function login(email: string, password: string): Promise<string> {
  const res = await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email, password } });
  expect(res.status).toBe(200);
  return res.json.token;
}

/** A Connect client of a console service acting with `token`. */
function as<S extends Parameters<typeof createClient>[0]>(service: S, token: string) {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createClient(service, createConnectTransport({ baseUrl: t.consoleUrl, httpVersion: "1.1", interceptors: [auth] }));
}

async function createUser(email: string, roles: { workspaceId: string; role: ConsoleRole }[]) {
  const { user } = await t.console(ConsoleUserService).createConsoleUser({ email, password: "a-good-password-123", roles });
  return user!;
}

const errorOf = (promise: Promise<unknown>) => promise.then(() => undefined).catch((e: unknown) => ConnectError.from(e));

describe("sign-in", () => {
  it("signs the bootstrap admin in, who may do what the operator may", async () => {
    const token = await login(ADMIN_EMAIL.toUpperCase(), ADMIN_PASSWORD);
    expect(token).toMatch(/^cs_[A-Za-z0-9_-]{43}$/);
    const me = await rest(t.consoleUrl, "GET", "/console/v1/me", { key: token });
    expect(me.json).toMatchObject({ kind: "user", user: { email: ADMIN_EMAIL, operator: true, roles: [] } });
    const { workspace } = await as(WorkspaceService, token).createWorkspace({ name: "made by the bootstrap admin" });
    expect(workspace?.name).toBe("made by the bootstrap admin");
  });

  it("answers a wrong password and an unknown email alike, then rate-limits", async () => {
    const wrong = await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email: ADMIN_EMAIL, password: "nope-nope-nope" } });
    const unknown = await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email: "who@example.com", password: "nope-nope-nope" } });
    expect(wrong.status).toBe(401);
    expect(wrong.json.error).toMatchObject({ code: "unauthenticated", message: "Wrong email or password" });
    expect(unknown.json.error.message).toBe(wrong.json.error.message);
    const codes: string[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await rest(t.consoleUrl, "POST", "/console/v1/sessions", { body: { email: "victim@example.com", password: "guess-guess-1" } });
      codes.push(res.json.error.code);
    }
    expect(codes.slice(0, 10).every((c) => c === "unauthenticated")).toBe(true);
    expect(codes[10]).toBe("rate_limited");
  });

  it("ends a session on logout", async () => {
    await createUser("leaving@example.com", []);
    const token = await login("leaving@example.com", "a-good-password-123");
    expect((await rest(t.consoleUrl, "GET", "/console/v1/me", { key: token })).status).toBe(200);
    expect((await rest(t.consoleUrl, "POST", "/console/v1/sessions:logout", { key: token, body: {} })).status).toBe(200);
    const after = await rest(t.consoleUrl, "GET", "/console/v1/me", { key: token });
    expect(after.status).toBe(401);
  });

  it("never stores a password or a session token", async () => {
    await createUser("stored@example.com", []);
    const token = await login("stored@example.com", "a-good-password-123");
    const users = JSON.stringify(await t.service.db.collection("console_users").find({}).toArray());
    const sessions = JSON.stringify(await t.service.db.collection("console_sessions").find({}).toArray());
    expect(users).not.toContain("a-good-password-123");
    expect(users).toContain("scrypt$");
    expect(sessions).not.toContain(token);
  });
});

describe("roles per workspace", () => {
  it("lets a viewer read but not create or revoke keys", async () => {
    await createUser("viewer@example.com", [{ workspaceId: workspaceA, role: ConsoleRole.VIEWER }]);
    const token = await login("viewer@example.com", "a-good-password-123");
    const keys = as(ApiKeyService, token);
    expect((await keys.listApiKeys({ workspaceId: workspaceA })).object).toBe("list");
    const create = await errorOf(keys.createApiKey({ workspaceId: workspaceA, name: "nope" }));
    expect(create?.code).toBe(Code.PermissionDenied);
    expect(create?.rawMessage).toBe(`This change needs the admin role in workspace ${workspaceA}`);
    const existing = await t.createKey(workspaceA);
    expect((await errorOf(keys.revokeApiKey({ id: existing.id })))?.code).toBe(Code.PermissionDenied);
    const rest403 = await rest(t.consoleUrl, "POST", `/console/v1/workspaces/${workspaceA}/api_keys`, { key: token, body: { name: "x" } });
    expect(rest403.status).toBe(403);
    expect(rest403.json.error.details).toMatchObject({ required_role: "admin", role: "viewer" });
  });

  it("lets an admin manage keys of their workspace only", async () => {
    await createUser("admin-a@example.com", [{ workspaceId: workspaceA, role: ConsoleRole.ADMIN }]);
    const token = await login("admin-a@example.com", "a-good-password-123");
    const keys = as(ApiKeyService, token);
    const created = await keys.createApiKey({ workspaceId: workspaceA, name: "by admin A", scopes: ["messages:read"] });
    expect(created.secret).toMatch(/^sk_/);
    expect((await errorOf(keys.listApiKeys({ workspaceId: workspaceB })))?.code).toBe(Code.PermissionDenied);
    expect((await errorOf(as(WorkspaceService, token).createWorkspace({ name: "no" })))?.code).toBe(Code.PermissionDenied);
    expect((await errorOf(as(WorkspaceService, token).suspendWorkspace({ id: workspaceA })))?.code).toBe(Code.PermissionDenied);
    expect((await as(WorkspaceService, token).getWorkspace({ id: workspaceA })).workspace?.id).toBe(workspaceA);
  });

  it("lets a workspace admin grant roles there, not elsewhere", async () => {
    const admin = await createUser("granter@example.com", [{ workspaceId: workspaceA, role: ConsoleRole.ADMIN }]);
    const other = await createUser("grantee@example.com", []);
    const token = await login("granter@example.com", "a-good-password-123");
    const users = as(ConsoleUserService, token);
    const granted = await users.grantRole({ userId: other.id, workspaceId: workspaceA, role: ConsoleRole.VIEWER });
    expect(granted.user?.roles).toEqual([expect.objectContaining({ workspaceId: workspaceA, role: ConsoleRole.VIEWER })]);
    expect((await errorOf(users.grantRole({ userId: other.id, workspaceId: workspaceB, role: ConsoleRole.ADMIN })))?.code).toBe(Code.PermissionDenied);
    expect((await errorOf(users.createConsoleUser({ email: "x@example.com", password: "a-good-password-123" })))?.code).toBe(Code.PermissionDenied);
    const revoked = await users.revokeRole({ userId: other.id, workspaceId: workspaceA });
    expect(revoked.user?.roles).toEqual([]);
    expect(admin.operator).toBe(false);
  });

  it("validates new users", async () => {
    const res = await rest(t.consoleUrl, "POST", "/console/v1/users", {
      key: "test-console-token-0123456789",
      body: { email: "not-an-email", password: "short", roles: [{ workspace_id: workspaceA }] },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toBe("email: must be a valid email address; password: must be at least 12 characters; roles[0].role: must be admin or viewer");
    await createUser("twice@example.com", []);
    const dup = await errorOf(t.console(ConsoleUserService).createConsoleUser({ email: "TWICE@example.com", password: "a-good-password-123" }));
    expect(dup?.code).toBe(Code.AlreadyExists);
  });
});

describe("webhook endpoints and deliveries by role", () => {
  it("lets a viewer read endpoints and deliveries but not change an endpoint or retry; an admin's changes are audited with the secret redacted", async () => {
    await createUser("hooks-viewer@example.com", [{ workspaceId: workspaceA, role: ConsoleRole.VIEWER }]);
    await createUser("hooks-admin@example.com", [{ workspaceId: workspaceA, role: ConsoleRole.ADMIN }]);
    const viewer = await login("hooks-viewer@example.com", "a-good-password-123");
    const admin = await login("hooks-admin@example.com", "a-good-password-123");
    const created = await as(WebhookEndpointService, admin).createWebhookEndpoint({
      workspaceId: workspaceA,
      name: "orders",
      url: "https://hooks.example.com/orders",
      events: ["message.delivered"],
    });
    const id = created.webhookEndpoint!.id;
    expect(created.secret).toMatch(/^whsec_/);

    const endpoints = as(WebhookEndpointService, viewer);
    expect((await endpoints.listWebhookEndpoints({ workspaceId: workspaceA })).data.map((e) => e.id)).toEqual([id]);
    expect((await endpoints.getWebhookEndpoint({ id })).webhookEndpoint?.secretHint).toBe(created.webhookEndpoint!.secretHint);
    await t.service.events.publish({
      workspaceId: workspaceA,
      type: "message.delivered",
      data: { message_id: "msg_00000000-0000-4000-8000-00000000a11d", to: "4915112345678", status: "delivered", wa_message_id: "wamid.1", occurred_at: "2026-01-31T12:00:00.000Z", error: null },
    });
    const delivery = await eventually(async () => (await as(DeliveryService, viewer).listDeliveries({ endpointId: id })).data[0]);
    for (const change of [
      () => endpoints.createWebhookEndpoint({ workspaceId: workspaceA, name: "x", url: "https://hooks.example.com/x", events: ["message.read"] }),
      () => endpoints.updateWebhookEndpoint({ webhookEndpoint: { id, name: "renamed" }, updateMask: { paths: ["name"] } }),
      () => endpoints.disableWebhookEndpoint({ id, reason: "no" }),
      () => endpoints.enableWebhookEndpoint({ id }),
      () => endpoints.deleteWebhookEndpoint({ id }),
      () => as(DeliveryService, viewer).retryDelivery({ id: delivery.id }),
    ]) {
      const err = await errorOf(change());
      expect(err?.code).toBe(Code.PermissionDenied);
    }
    await as(WebhookEndpointService, admin).disableWebhookEndpoint({ id, reason: "moving servers" });

    const entries = (await t.console(AuditLogService).listAuditEntries({ pageSize: 100, workspaceId: workspaceA })).data;
    const create = entries.find((e) => e.operation.endsWith("/CreateWebhookEndpoint") && e.actor === "hooks-admin@example.com");
    expect(create).toMatchObject({ outcome: "ok", workspaceId: workspaceA });
    expect(JSON.stringify(create?.request)).not.toContain(created.secret);
    const disables = entries.filter((e) => e.operation.endsWith("/DisableWebhookEndpoint"));
    expect(disables.map((e) => [e.actor, e.outcome])).toEqual(
      expect.arrayContaining([
        ["hooks-viewer@example.com", "permission_denied"],
        ["hooks-admin@example.com", "ok"],
      ]),
    );
  });
});

describe("audit log", () => {
  it("records every console change with who, what, when and the outcome, secrets redacted", async () => {
    const user = await createUser("audited@example.com", [{ workspaceId: workspaceB, role: ConsoleRole.ADMIN }]);
    const token = await login("audited@example.com", "a-good-password-123");
    const key = await as(ApiKeyService, token).createApiKey({ workspaceId: workspaceB, name: "audited key" });
    await errorOf(as(ApiKeyService, token).createApiKey({ workspaceId: workspaceA, name: "refused" }));
    await t.console(ApiKeyService).revokeApiKey({ id: key.apiKey!.id });

    const entries = (await t.console(AuditLogService).listAuditEntries({ pageSize: 100 })).data;
    const create = entries.find((e) => e.operation.endsWith("/CreateApiKey") && e.workspaceId === workspaceB);
    expect(create).toMatchObject({ actor: "audited@example.com", actorUserId: user.id, outcome: "ok" });
    expect(create?.request).toMatchObject({ workspace_id: workspaceB, name: "audited key" });
    const refused = entries.find((e) => e.operation.endsWith("/CreateApiKey") && e.workspaceId === workspaceA && e.actor === "audited@example.com");
    expect(refused?.outcome).toBe("permission_denied");
    const revoke = entries.find((e) => e.operation.endsWith("/RevokeApiKey") && e.request?.id === key.apiKey!.id);
    expect(revoke).toMatchObject({ actor: "operator", workspaceId: workspaceB, outcome: "ok" });
    const signIn = entries.find((e) => e.operation.endsWith("/Login") && e.actor === "audited@example.com");
    expect(signIn?.request).toEqual({ email: "audited@example.com", password: "[redacted]" });
    expect(JSON.stringify(entries, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain("a-good-password-123");
    expect(entries.some((e) => e.operation.includes("/List") || e.operation.includes("/Get"))).toBe(false);

    // A workspace admin sees the entries of their workspace only.
    const own = (await as(AuditLogService, token).listAuditEntries({ pageSize: 100 })).data;
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((e) => e.workspaceId === workspaceB)).toBe(true);
  });

  it("puts a workspace's creation, suspension and resumption in that workspace's log, a refused suspension too", async () => {
    const { workspace } = await t.console(WorkspaceService).createWorkspace({ name: "audited workspace" });
    const id = workspace!.id;
    await createUser("audited-admin@example.com", [{ workspaceId: id, role: ConsoleRole.ADMIN }]);
    const token = await login("audited-admin@example.com", "a-good-password-123");
    await t.console(WorkspaceService).suspendWorkspace({ id });
    await t.console(WorkspaceService).resumeWorkspace({ id });
    expect((await errorOf(as(WorkspaceService, token).suspendWorkspace({ id })))?.code).toBe(Code.PermissionDenied);

    const log = (await t.console(AuditLogService).listAuditEntries({ workspaceId: id, pageSize: 100 })).data;
    expect(log.map((e) => [e.operation.split("/")[1], e.actor, e.outcome]).reverse()).toEqual([
      ["CreateWorkspace", "operator", "ok"],
      ["CreateConsoleUser", "operator", "ok"],
      ["SuspendWorkspace", "operator", "ok"],
      ["ResumeWorkspace", "operator", "ok"],
      ["SuspendWorkspace", "audited-admin@example.com", "permission_denied"],
    ]);
    // The workspace's admin reads all of it.
    expect((await as(AuditLogService, token).listAuditEntries({ workspaceId: id, pageSize: 100 })).data).toHaveLength(5);
  });
});

describe("API key updates", () => {
  it("changes name, allow-list and budget by update mask, effective at once in this process", async () => {
    const key = await t.createKey(workspaceA, { rateLimitPerMin: 100 });
    const res = await rest(t.consoleUrl, "PATCH", `/console/v1/api_keys/${key.id}?update_mask=name,rate_limit_per_min,ip_allow_list`, {
      key: "test-console-token-0123456789",
      body: { name: "renamed", rate_limit_per_min: 7, ip_allow_list: ["192.0.2.0/24"] },
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: key.id, name: "renamed", rate_limit_per_min: 7, ip_allow_list: ["192.0.2.0/24"] });
    const refused = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(refused.json.error.code).toBe("ip_not_allowed");
    // Without a mask, the fields given are changed; an empty list must be named to clear it.
    const cleared = await rest(t.consoleUrl, "PATCH", `/console/v1/api_keys/${key.id}?update_mask=ip_allow_list`, {
      key: "test-console-token-0123456789",
      body: { ip_allow_list: [] },
    });
    expect(cleared.json.ip_allow_list).toEqual([]);
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(me.json).toMatchObject({ key: { name: "renamed" }, rate_limit_per_min: 7 });
  });

  it("refuses unknown mask fields and bad values", async () => {
    const key = await t.createKey(workspaceA);
    const res = await rest(t.consoleUrl, "PATCH", `/console/v1/api_keys/${key.id}?update_mask=scopes,rate_limit_per_min`, {
      key: "test-console-token-0123456789",
      body: { rate_limit_per_min: 101 },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toBe(
      'update_mask[0]: must be one of name, ip_allow_list, rate_limit_per_min (got "scopes"); api_key.rate_limit_per_min: must be from 1 to 100',
    );
    const nothing = await rest(t.consoleUrl, "PATCH", `/console/v1/api_keys/${key.id}`, { key: "test-console-token-0123456789", body: {} });
    expect(nothing.json.error.details.field).toBe("update_mask");
  });
});
