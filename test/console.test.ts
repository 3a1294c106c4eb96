import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { rest } from "./helpers/clients.js";
import { msgsvc as runMsgsvc } from "./helpers/messaging.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;

beforeAll(async () => {
  t = await createTestService();
});
afterAll(() => t.close());

const consoleRest = (method: string, path: string, body?: unknown) =>
  rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });

describe("console authentication", () => {
  it("refuses a missing or wrong console token with unauthenticated", async () => {
    const missing = await rest(t.consoleUrl, "GET", "/console/v1/workspaces");
    expect(missing.status).toBe(401);
    expect(missing.json.error).toMatchObject({
      code: "unauthenticated",
      message: "Missing console credentials; send 'Authorization: Bearer <CONSOLE_TOKEN or session token>'",
    });
    const wrong = await rest(t.consoleUrl, "GET", "/console/v1/workspaces", { key: "not-the-token" });
    expect(wrong.json.error.message).toBe("The console token or session is not valid; sessions end after CONSOLE_SESSION_TTL_HOURS");
    // An API key is not a console credential.
    const ws = await t.createWorkspace();
    const key = await t.createKey(ws);
    expect((await rest(t.consoleUrl, "GET", "/console/v1/workspaces", { key: key.secret })).status).toBe(401);
  });
});

describe("workspaces", () => {
  it("creates, gets, suspends and resumes", async () => {
    const created = await consoleRest("POST", "/console/v1/workspaces", { name: "Acme", credits: 250 });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ object: "workspace", name: "Acme", status: "active", credit_balance: 250, suspended_at: null });
    const id = created.json.id;
    expect((await consoleRest("GET", `/console/v1/workspaces/${id}`)).json.name).toBe("Acme");
    const suspended = await consoleRest("POST", `/console/v1/workspaces/${id}:suspend`, {});
    expect(suspended.json).toMatchObject({ status: "suspended" });
    expect(suspended.json.suspended_at).toMatch(/Z$/);
    expect((await consoleRest("POST", `/console/v1/workspaces/${id}:resume`, {})).json).toMatchObject({ status: "active", suspended_at: null });
  });

  it("validates names and credits", async () => {
    const res = await consoleRest("POST", "/console/v1/workspaces", { name: " ", credits: -1 });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toBe("name: must not be blank; credits: must be from 0 to 9007199254740991");
  });

  it("answers not_found for an unknown workspace", async () => {
    const res = await consoleRest("GET", "/console/v1/workspaces/00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe("not_found");
    const err = await t.console(WorkspaceService).getWorkspace({ id: "nope" }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });

  it("pages newest first with an opaque token", async () => {
    const names = ["Page A", "Page B", "Page C"];
    for (const name of names) await t.createWorkspace(name);
    const first = await consoleRest("GET", "/console/v1/workspaces?page_size=2");
    expect(first.json.data).toHaveLength(2);
    expect(first.json.data.map((w: { name: string }) => w.name)).toEqual(["Page C", "Page B"]);
    expect(typeof first.json.next_page_token).toBe("string");
    const second = await consoleRest("GET", `/console/v1/workspaces?page_size=2&page_token=${first.json.next_page_token}`);
    expect(second.json.data[0].name).toBe("Page A");
    expect(second.json.total).toBe(first.json.total);
    const bad = await consoleRest("GET", "/console/v1/workspaces?page_token=garbage");
    expect(bad.json.error.details).toMatchObject({ field: "page_token" });
    const negative = await consoleRest("GET", "/console/v1/workspaces?page_size=-1");
    expect(negative.json.error.message).toBe("page_size: must be from 0 to 2147483647");
  });
});

describe("API keys", () => {
  let workspaceId: string;
  beforeAll(async () => {
    workspaceId = await t.createWorkspace("Keys");
  });

  it("creates a key with the default budget of 30 and shows the secret once", async () => {
    const res = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/api_keys`, { name: "default", scopes: ["messages:read"] });
    expect(res.status).toBe(200);
    expect(res.json.secret).toMatch(/^sk_[0-9A-Za-z]{46}$/);
    expect(res.json.api_key).toMatchObject({ rate_limit_per_min: 30, scopes: ["messages:read"], status: "active", ip_allow_list: [] });
    expect(res.json.api_key.secret_prefix).toBe(res.json.secret.slice(0, 7));
    const listed = await consoleRest("GET", `/console/v1/workspaces/${workspaceId}/api_keys`);
    expect(listed.text).not.toContain(res.json.secret);
  });

  it("refuses a budget above 100, unknown or repeated scopes, a past expiry and bad allow-list entries, all at once", async () => {
    const res = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/api_keys`, {
      name: "",
      scopes: ["messages:send", "messages:send", "admin"],
      rate_limit_per_min: 101,
      expires_at: "2001-01-01T00:00:00.000Z",
      ip_allow_list: ["10.0.0.0/8", "10.0.0.0/33", "not-an-ip", "2001:db8::/129"],
    });
    expect(res.status).toBe(400);
    const fields = res.json.error.details.field_violations.map((v: { field: string }) => v.field);
    expect(fields).toEqual(["name", "scopes", "scopes[2]", "ip_allow_list[1]", "ip_allow_list[2]", "ip_allow_list[3]", "rate_limit_per_min"]);
    expect(res.json.error.details.field_violations.map((v: { description: string }) => v.description)).toEqual([
      "must not be empty",
      "must not repeat an item",
      "must be one of senders:read, templates:read, messages:send, messages:read, webhooks:read, flow_responses:read",
      "must be an IPv4 or IPv6 address or CIDR range, such as 203.0.113.0/24",
      "must be an IPv4 or IPv6 address or CIDR range, such as 203.0.113.0/24",
      "must be an IPv4 or IPv6 address or CIDR range, such as 203.0.113.0/24",
      "must be from 0 to 100",
    ]);
    // A past expiry needs the service's clock: checked once the contract's rules hold.
    const past = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/api_keys`, { name: "k", expires_at: "2001-01-01T00:00:00.000Z" });
    expect(past.json.error.details.field_violations).toEqual([{ field: "expires_at", description: "must be in the future" }]);
    expect((await t.console(ApiKeyService).listApiKeys({ workspaceId })).data.every((k) => k.name !== "")).toBe(true);
  });

  it("refuses a key for an unknown workspace and revokes idempotently", async () => {
    const unknown = await consoleRest("POST", "/console/v1/workspaces/00000000-0000-4000-8000-000000000000/api_keys", { name: "x" });
    expect(unknown.status).toBe(404);
    const key = await t.createKey(workspaceId);
    const first = await t.console(ApiKeyService).revokeApiKey({ id: key.id });
    const second = await t.console(ApiKeyService).revokeApiKey({ id: key.id });
    expect(second.apiKey?.revokedAt).toEqual(first.apiKey?.revokedAt);
    const missing = await consoleRest("POST", "/console/v1/api_keys/00000000-0000-4000-8000-000000000000:revoke", {});
    expect(missing.status).toBe(404);
  });
});

/** Runs the msgsvc bin against the test service. */
const msgsvc = (args: string[], token?: string) => runMsgsvc(t, args, token);

describe("msgsvc CLI", () => {
  it("creates a workspace and a key whose secret works against the public API", async () => {
    const ws = await msgsvc(["workspaces", "create", "--name", "CLI corp", "--credits", "7", "--json"]);
    expect(ws.code).toBe(0);
    const workspace = JSON.parse(ws.stdout);
    expect(workspace).toMatchObject({ name: "CLI corp", credit_balance: 7, status: "active" });

    const created = await msgsvc([
      "keys", "create", "--workspace", workspace.id, "--name", "cli key",
      "--scopes", "messages:send,messages:read", "--ip-allow", "127.0.0.1,::1", "--rate-limit", "50", "--json",
    ]);
    expect(created.code).toBe(0);
    const { api_key: apiKey, secret } = JSON.parse(created.stdout);
    expect(apiKey).toMatchObject({ name: "cli key", rate_limit_per_min: 50, ip_allow_list: ["127.0.0.1", "::1"] });
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key: secret });
    expect(me.json).toEqual({
      account_id: workspace.id,
      key: { id: apiKey.id, name: "cli key", scopes: ["messages:send", "messages:read"] },
      rate_limit_per_min: 50,
    });

    const table = await msgsvc(["keys", "list", "--workspace", workspace.id]);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+STATUS\s+SCOPES/);
    expect(table.stdout).toContain("cli key");
    expect(table.stdout).not.toContain(secret);

    expect((await msgsvc(["keys", "revoke", apiKey.id])).code).toBe(0);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: secret })).json.error.code).toBe("key_revoked");

    expect((await msgsvc(["workspaces", "suspend", workspace.id])).stdout).toContain("suspended");
    expect((await msgsvc(["workspaces", "resume", workspace.id, "--json"])).stdout).toContain('"status": "active"');
  });

  it("prints a human table and the secret once", async () => {
    const ws = await t.createWorkspace("Table");
    const created = await msgsvc(["keys", "create", "--workspace", ws, "--name", "people"]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/Secret \(shown once, store it now\):\nsk_[0-9A-Za-z]{46}\n/);
  });

  it("exits non-zero with the error code on failure", async () => {
    const refused = await msgsvc(["keys", "create", "--workspace", "00000000-0000-4000-8000-000000000000", "--name", "x", "--rate-limit", "500"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      "error: invalid_argument: rate_limit_per_min: must be from 0 to 100\n",
    );
    const unauthorized = await msgsvc(["workspaces", "list"], "wrong-token-0000000000");
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toBe(
      "error: unauthenticated: The console token or session is not valid; sessions end after CONSOLE_SESSION_TTL_HOURS\n",
    );
    const usage = await msgsvc(["keys", "create", "--name", "no workspace"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--workspace");
  });
});
