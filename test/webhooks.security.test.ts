import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decryptSecret, SecretKeyError, type EncryptedSecret } from "../src/webhooks/signing-secret.js";
import { rest } from "./helpers/clients.js";
import { TEST_WEBHOOK_SECRET_KEY } from "./helpers/processes.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * What must not leak or pass: the signing secret (shown once, stored
 * encrypted), other workspaces' endpoints, and requests into the service's
 * own network (SSRF). This service keeps the default policy (https only,
 * public addresses only) except where a test says otherwise.
 */

let t: TestService;

beforeAll(async () => {
  t = await createTestService({ config: { webhookRetrySchedule: [60_000], webhookAttemptTimeoutMs: 1000 } });
});
afterAll(() => t.close());

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });

describe("signing secrets (README, Design §7)", () => {
  it("are shown once, stored encrypted, and never returned again", async () => {
    const ws = await t.createWorkspace();
    const created = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, {
      name: "secret",
      url: "https://example.com/hook",
      events: ["message.read"],
    });
    const { secret } = created.json;
    const id = created.json.webhook_endpoint.id;
    expect(secret).toMatch(/^whsec_/);
    expect(created.json.webhook_endpoint).not.toHaveProperty("secret");

    const key = await t.createKey(ws, { scopes: ["webhooks:read"] });
    const answers = [
      await consoleRest("GET", `/console/v1/webhook_endpoints/${id}`),
      await consoleRest("GET", `/console/v1/workspaces/${ws}/webhook_endpoints`),
      await consoleRest("PATCH", `/console/v1/webhook_endpoints/${id}`, { name: "renamed" }),
      await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:disable`, {}),
      await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:enable`, {}),
      await rest(t.publicUrl, "GET", "/v1/webhook", { key: key.secret }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.text).not.toContain(secret.slice(6));
    }

    const stored = await t.service.db.collection("webhook_endpoints").findOne({ _id: id as never });
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6));
    const encrypted = stored!.secret as EncryptedSecret;
    expect(encrypted).toMatchObject({ v: 1, kid: expect.stringMatching(/^[0-9a-f]{8}$/) });
    expect(decryptSecret(Buffer.from(TEST_WEBHOOK_SECRET_KEY, "hex"), encrypted, id)).toBe(secret);
    // Another key, or the ciphertext moved onto another endpoint, does not decrypt.
    expect(() => decryptSecret(Buffer.alloc(32, 1), encrypted, id)).toThrow(SecretKeyError);
    expect(() => decryptSecret(Buffer.from(TEST_WEBHOOK_SECRET_KEY, "hex"), encrypted, "whk_other")).toThrow(SecretKeyError);
  });
});

describe("GET /v1/webhook", () => {
  it("needs webhooks:read and shows only the key's workspace", async () => {
    const ws = await t.createWorkspace();
    const other = await t.createWorkspace();
    await consoleRest("POST", `/console/v1/workspaces/${other}/webhook_endpoints`, { name: "theirs", url: "https://example.com/x", events: ["message.sent"] });
    const without = await t.createKey(ws, { scopes: ["messages:read"] });
    const refused = await rest(t.publicUrl, "GET", "/v1/webhook", { key: without.secret });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: "insufficient_scope", details: { required_scope: "webhooks:read" } });
    const reader = await t.createKey(ws, { scopes: ["webhooks:read"] });
    expect((await rest(t.publicUrl, "GET", "/v1/webhook", { key: reader.secret })).json).toEqual({ object: "list", data: [], total: 0 });
  });
});

describe("server-side request forgery", () => {
  it.each([
    "https://127.0.0.1/hook",
    "https://10.1.2.3/hook",
    "https://192.168.0.10/hook",
    "https://169.254.169.254/latest/meta-data",
    "https://[::1]/hook",
    "https://[fd00::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://0.0.0.0/hook",
    "http://127.0.0.1/hook",
  ])("refuses an endpoint at %s", async (url) => {
    const ws = await t.createWorkspace();
    const res = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, { name: "x", url, events: ["message.sent"] });
    expect(res.status).toBe(400);
    expect(res.json.error.details.field).toBe("url");
  });

  it("refuses, and records, an attempt to a host name that resolves to a loopback address", async () => {
    // A listener that counts connections: none may reach it.
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const ws = await t.createWorkspace();
      const created = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, {
        name: "rebinding",
        url: `https://localhost:${port}/hook`,
        events: ["message.sent"],
      });
      expect(created.status, created.text).toBe(200);
      await t.service.events.publish({ workspaceId: ws, type: "message.sent", data: {} });
      const attempt = await eventually(async () => {
        const list = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${created.json.webhook_endpoint.id}`);
        const delivery = list.json.data[0];
        return delivery?.attempt_count ? (await consoleRest("GET", `/console/v1/deliveries/${delivery.id}/attempts`)).json.data[0] : undefined;
      });
      expect(attempt).toMatchObject({ succeeded: false, error_kind: "blocked_address", http_status: null });
      expect(attempt.error_message).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a private, loopback or link-local address/);
      expect(connections).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
