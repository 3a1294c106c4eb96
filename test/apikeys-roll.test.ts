import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { msgsvc } from "./helpers/messaging.js";
import { createTestClock, createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
const clock = createTestClock(new Date());
let workspaceId: string;

beforeAll(async () => {
  t = await createTestService({ clock });
  workspaceId = await t.createWorkspace("Keys");
});
afterAll(() => t.close());

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });
const getMe = (secret: string) => rest(t.publicUrl, "GET", "/v1/me", { key: secret });
const grpcGetMe = (secret: string) =>
  grpcJsCall(`127.0.0.1:${t.service.publicPort}`, AccountService.method.getMe, {}, { authorization: `Bearer ${secret}` });

/** The checksum rule, written out independently of the service: CRC-32 of the 40 random characters in base62. */
function expectedChecksum(random: string): string {
  const table = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let crc = 0xffffffff;
  for (const byte of Buffer.from(random)) crc = (table[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  let n = (crc ^ 0xffffffff) >>> 0;
  const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  let out = "";
  do {
    out = digits[n % 62] + out;
    n = Math.floor(n / 62);
  } while (n > 0);
  return out.padStart(6, "0");
}

describe("API key secrets a scanner recognises", () => {
  it("are sk_, 40 random base62 characters and a CRC-32 checksum; a mistyped key is refused as malformed on every protocol", async () => {
    const { secret } = await t.createKey(workspaceId);
    const match = /^sk_([0-9A-Za-z]{40})([0-9A-Za-z]{6})$/.exec(secret);
    expect(match).not.toBeNull();
    expect(match![2]).toBe(expectedChecksum(match![1]!));
    expect((await getMe(secret)).status).toBe(200);

    const last = secret.at(-1) === "A" ? "B" : "A";
    const typo = secret.slice(0, -1) + last;
    const rest = await getMe(typo);
    expect(rest.status).toBe(401);
    expect(rest.json.error).toMatchObject({ code: "invalid_key", message: "The API key is malformed: its checksum does not match: the key was mistyped or cut" });
    const connect = await clientFor(AccountService, "connect-json", t.publicUrl, typo).getMe({}).catch((err: unknown) => err);
    expect(connect).toBeInstanceOf(ConnectError);
    expect((connect as ConnectError).code).toBe(Code.Unauthenticated);
    expect((connect as ConnectError).rawMessage).toContain("checksum does not match");
    const grpc = await grpcGetMe(typo);
    expect(grpc.error?.code).toBe(16); // UNAUTHENTICATED
    expect(grpc.error?.details).toContain("checksum does not match");
    expect((await getMe(secret.slice(0, -2))).json.error.message).toBe("The API key is malformed: keys are 'sk_' followed by 46 letters and digits");
  });

  it("still accepts a key made before the checksum (sk_ and 43 base64url characters)", async () => {
    const legacy = `sk_${randomBytes(32).toString("base64url")}`;
    const { id } = await t.createKey(workspaceId, { name: "legacy" });
    await t.service.db.collection("api_keys").updateOne({ _id: id as never }, { $set: { secret_hash: createHash("sha256").update(legacy).digest("hex") } });
    const res = await getMe(legacy);
    expect(res.status, res.text).toBe(200);
    expect(res.json.key.id).toBe(id);
  });
});

describe("rolling an API key", () => {
  it("gives the key a new secret while the old one works until the chosen time, over REST and gRPC", async () => {
    const key = await t.createKey(workspaceId, { name: "rolled", scopes: ["templates:read"] });
    const until = new Date(clock.now().getTime() + 3_600_000);
    const rolled = await consoleRest("POST", `/console/v1/api_keys/${key.id}:roll`, { previous_secret_expires_at: until.toISOString() });
    expect(rolled.status, rolled.text).toBe(200);
    const secret = rolled.json.secret as string;
    expect(secret).toMatch(/^sk_[0-9A-Za-z]{46}$/);
    expect(secret).not.toBe(key.secret);
    expect(rolled.json.api_key).toMatchObject({
      id: key.id,
      scopes: ["templates:read"],
      status: "active",
      secret_prefix: secret.slice(0, 7),
      previous_secret_prefix: key.secret.slice(0, 7),
      previous_secret_expires_at: until.toISOString(),
    });
    for (const s of [secret, key.secret]) {
      const me = await getMe(s);
      expect(me.status).toBe(200);
      expect(me.json.key.id).toBe(key.id);
      expect((await grpcGetMe(s)).error).toBeUndefined();
    }
    const listed = await consoleRest("GET", `/console/v1/workspaces/${workspaceId}/api_keys`);
    expect(listed.json.data.find((k: { id: string }) => k.id === key.id)).toMatchObject({ previous_secret_expires_at: until.toISOString() });

    // Past the overlap the old secret is refused as expired; the new one goes on.
    clock.advance(3_600_001);
    const old = await getMe(key.secret);
    expect(old.status).toBe(401);
    expect(old.json.error).toMatchObject({ code: "key_expired", details: { api_key_id: key.id, expired_at: until.toISOString() } });
    expect((await grpcGetMe(key.secret)).error?.code).toBe(16);
    expect((await getMe(secret)).status).toBe(200);
    const after = await consoleRest("GET", `/console/v1/workspaces/${workspaceId}/api_keys`);
    expect(after.json.data.find((k: { id: string }) => k.id === key.id)).toMatchObject({ previous_secret_prefix: null, previous_secret_expires_at: null });
  });

  it("without an overlap ends the old secret at once, and keeps only one previous secret", async () => {
    const key = await t.createKey(workspaceId, { name: "twice" });
    const first = await consoleRest("POST", `/console/v1/api_keys/${key.id}:roll`, { previous_secret_expires_at: new Date(clock.now().getTime() + 60_000).toISOString() });
    const second = await consoleRest("POST", `/console/v1/api_keys/${key.id}:roll`, {});
    expect(second.status).toBe(200);
    expect(second.json.api_key).toMatchObject({ previous_secret_prefix: null, previous_secret_expires_at: null });
    expect((await getMe(key.secret)).json.error.code).toBe("invalid_key"); // two rolls ago: forgotten
    expect((await getMe(first.json.secret)).json.error.code).toBe("invalid_key"); // ended at once
    expect((await getMe(second.json.secret)).status).toBe(200);
  });

  it("refuses an overlap beyond 7 days, a revoked key and an unknown key", async () => {
    const key = await t.createKey(workspaceId, { name: "refused" });
    const far = await consoleRest("POST", `/console/v1/api_keys/${key.id}:roll`, { previous_secret_expires_at: new Date(clock.now().getTime() + 8 * 86_400_000).toISOString() });
    expect(far.status).toBe(400);
    expect(far.json.error.details.field_violations).toEqual([{ field: "previous_secret_expires_at", description: "must be at most 7 days from now" }]);
    await consoleRest("POST", `/console/v1/api_keys/${key.id}:revoke`, {});
    const revoked = await consoleRest("POST", `/console/v1/api_keys/${key.id}:roll`, {});
    expect(revoked.status).toBe(409);
    expect(revoked.json.error.code).toBe("failed_precondition");
    expect((await consoleRest("POST", "/console/v1/api_keys/00000000-0000-4000-8000-000000000000:roll", {})).status).toBe(404);
  });

  it("from the CLI: msgsvc keys roll KEY --expire-old-in 24h prints the new secret once and the old one's end", async () => {
    const key = await t.createKey(workspaceId, { name: "cli roll" });
    const res = await msgsvc(t, ["keys", "roll", key.id, "--expire-old-in", "24h"]);
    expect(res.code, res.stderr).toBe(0);
    const secret = /New secret \(shown once\): (sk_\S+)/.exec(res.stdout)?.[1] as string;
    expect((await getMe(secret)).status).toBe(200);
    expect((await getMe(key.secret)).status).toBe(200);
    expect(res.stdout).toMatch(/The old secret works until \d{4}-\d\d-\d\dT/);
    const json = JSON.parse((await msgsvc(t, ["keys", "roll", key.id, "--json"])).stdout);
    expect(json).toMatchObject({ api_key: { id: key.id, previous_secret_prefix: null }, secret: expect.stringMatching(/^sk_/) });
    const bad = await msgsvc(t, ["keys", "roll", key.id, "--expire-old-in", "soon"]);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining("--expire-old-in: must be a duration") });
  });
});
