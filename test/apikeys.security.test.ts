import { createHash } from "node:crypto";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { redactedPaths } from "../src/shared/logger.js";
import { rest } from "./helpers/clients.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Secrets");
});
afterAll(() => t.close());

describe("API key secrets (spec §Authentication 2, README, Design §7)", () => {
  it("stores only the SHA-256 hash of the secret, never the secret", async () => {
    const key = await t.createKey(workspaceId, { name: "hashed" });
    const raw = await t.service.db.collection("api_keys").findOne({ _id: key.id as never });
    expect(raw).not.toBeNull();
    const stored = JSON.stringify(raw);
    expect(stored).not.toContain(key.secret);
    expect(stored).not.toContain(key.secret.slice(3)); // nor its random part
    expect(raw?.secret_hash).toBe(createHash("sha256").update(key.secret).digest("hex"));
    // No document of any collection holds it.
    for (const { name } of await t.service.db.listCollections().toArray()) {
      const docs = await t.service.db.collection(name).find({}).toArray();
      expect(JSON.stringify(docs)).not.toContain(key.secret);
    }
  });

  it("never returns the secret or its hash after creation", async () => {
    const key = await t.createKey(workspaceId, { name: "shown once" });
    const raw = await t.service.db.collection("api_keys").findOne({ _id: key.id as never });
    const listed = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/api_keys`, { key: TEST_CONSOLE_TOKEN });
    const revoked = await t.console(ApiKeyService).revokeApiKey({ id: key.id });
    for (const text of [listed.text, JSON.stringify(revoked.apiKey, (_k, v) => (typeof v === "bigint" ? String(v) : v))]) {
      expect(text).not.toContain(key.secret);
      expect(text).not.toContain(raw?.secret_hash);
    }
  });

  it("records the last use of a key (written in batches every few seconds)", async () => {
    const key = await t.createKey(workspaceId, { name: "used" });
    const before = await t.console(ApiKeyService).listApiKeys({ workspaceId });
    expect(before.data.find((k) => k.id === key.id)?.lastUsedAt).toBeUndefined();
    const calledAt = Date.now();
    await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    await t.service.flushKeyUsage();
    const after = await t.console(ApiKeyService).listApiKeys({ workspaceId });
    const lastUsed = after.data.find((k) => k.id === key.id)?.lastUsedAt;
    expect(Number(lastUsed?.seconds) * 1000).toBeGreaterThanOrEqual(Math.floor(calledAt / 1000) * 1000);
  });
});

describe("logs", () => {
  it("redact Authorization headers and secrets", () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
    const logger = pino({ redact: { paths: redactedPaths, censor: "[redacted]" } }, sink);
    logger.info({ headers: { authorization: "Bearer sk_live" }, secret: "whsec_abc", nested: { token: "t0k" } }, "request");
    const line = JSON.parse(lines[0] as string);
    expect(line.headers.authorization).toBe("[redacted]");
    expect(line.secret).toBe("[redacted]");
    expect(line.nested.token).toBe("[redacted]");
  });
});
