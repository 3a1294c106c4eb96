import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { SenderService } from "../gen/messaging/v1/senders_pb.js";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb.js";
import { ApiKeyService } from "../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { createTestClock, createTestService, eventually, type TestService } from "./helpers/test-service.js";

const clock = createTestClock();
let t: TestService;
let workspaceId: string;

beforeAll(async () => {
  // Cache off: console changes must show at once here; the staleness bound has its own test.
  t = await createTestService({ clock, config: { keyCacheTtlMs: 0 } });
  workspaceId = await t.createWorkspace("Auth");
});
afterAll(() => t.close());

interface Refusal {
  httpStatus: number;
  grpcCode: Code;
  code: string;
  message: string;
  details?: Record<string, string>;
}

/** Calls GET /v1/me over REST, Connect-gRPC and @grpc/grpc-js and checks the same refusal on each. */
async function expectRefusal(authorization: string | undefined, refusal: Refusal, path = "/v1/me") {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const res = await rest(t.publicUrl, "GET", path, { headers });
  expect(res.status).toBe(refusal.httpStatus);
  expect(res.json.error.code).toBe(refusal.code);
  expect(res.json.error.message).toBe(refusal.message);
  if (refusal.details) expect(res.json.error.details).toEqual(refusal.details);
  expect(res.headers.get("ratelimit-limit")).toMatch(/^\d+$/);

  const isMe = path === "/v1/me";
  const method: DescMethodUnary = isMe ? AccountService.method.getMe : SenderService.method.listSenders;
  const call = isMe
    ? clientFor(AccountService, "grpc", t.publicUrl).getMe({}, { headers })
    : clientFor(SenderService, "grpc", t.publicUrl).listSenders({}, { headers });
  const err = await call.then(() => undefined).catch((e: unknown) => ConnectError.from(e));
  expect(err?.code).toBe(refusal.grpcCode);
  expect(err?.rawMessage).toBe(refusal.message);
  expect(err?.findDetails(ErrorInfoSchema)[0]?.reason).toBe(refusal.code);
  if (refusal.details) expect(err?.findDetails(ErrorInfoSchema)[0]?.metadata).toEqual(refusal.details);

  const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, method, {}, headers);
  expect(answer.error?.code).toBe(refusal.grpcCode);
  expect(answer.error?.details).toBe(refusal.message);
}

describe("missing or malformed Authorization is invalid_key saying what is wrong", () => {
  it("no header", () =>
    expectRefusal(undefined, {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "invalid_key",
      message: "Missing Authorization header; send 'Authorization: Bearer <API key>'",
    }));
  it("another scheme", () =>
    expectRefusal("Basic dXNlcjpwYXNz", {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "invalid_key",
      message: "The Authorization header must use the Bearer scheme: 'Authorization: Bearer <API key>'",
    }));
  it("a token that is not a key", () =>
    expectRefusal("Bearer hello", {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "invalid_key",
      message: "The API key is malformed: keys are 'sk_' followed by 46 letters and digits",
    }));
  it("a well-formed key nobody issued", () =>
    expectRefusal(`Bearer sk_${"A".repeat(43)}`, {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "invalid_key",
      message: "The API key is not recognised",
    }));
});

describe("API key acceptance (spec §API key acceptance)", () => {
  it("refuses a revoked key with key_revoked", async () => {
    const key = await t.createKey(workspaceId);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
    await t.console(ApiKeyService).revokeApiKey({ id: key.id });
    await expectRefusal(`Bearer ${key.secret}`, {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "key_revoked",
      message: "The API key was revoked",
      details: { api_key_id: key.id },
    });
  });

  it("refuses a key whose expiry has passed with key_expired", async () => {
    const expiresAt = new Date(clock.now().getTime() + 60_000);
    const key = await t.createKey(workspaceId, { expiresAt });
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
    clock.advance(61_000);
    await expectRefusal(`Bearer ${key.secret}`, {
      httpStatus: 401,
      grpcCode: Code.Unauthenticated,
      code: "key_expired",
      message: `The API key expired at ${expiresAt.toISOString()}`,
      details: { api_key_id: key.id, expired_at: expiresAt.toISOString() },
    });
  });

  it("refuses keys of a suspended workspace with workspace_suspended, and accepts them again on resume", async () => {
    const suspended = await t.createWorkspace("To suspend");
    const key = await t.createKey(suspended);
    await t.console(WorkspaceService).suspendWorkspace({ id: suspended });
    await expectRefusal(`Bearer ${key.secret}`, {
      httpStatus: 403,
      grpcCode: Code.PermissionDenied,
      code: "workspace_suspended",
      message: "The workspace is suspended",
      details: { account_id: suspended },
    });
    await t.console(WorkspaceService).resumeWorkspace({ id: suspended });
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
  });

  it("refuses a key without the needed scope, naming the scope needed and the scopes held", async () => {
    const key = await t.createKey(workspaceId, { scopes: ["messages:read", "templates:read"] });
    await expectRefusal(
      `Bearer ${key.secret}`,
      {
        httpStatus: 403,
        grpcCode: Code.PermissionDenied,
        code: "insufficient_scope",
        message: "This operation needs the scope senders:read; the key holds: messages:read, templates:read",
        details: { required_scope: "senders:read", held_scopes: "messages:read,templates:read" },
      },
      "/v1/senders",
    );
    const none = await t.createKey(workspaceId, { scopes: [] });
    const res = await rest(t.publicUrl, "GET", "/v1/senders", { key: none.secret });
    expect(res.json.error.message).toBe("This operation needs the scope senders:read; the key holds: none");
    // GET /v1/me needs no scope.
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: none.secret })).status).toBe(200);
  });
});

describe("IP allow-list (IPv4, IPv6, CIDR; empty = any)", () => {
  const v4 = () => `http://127.0.0.1:${t.service.publicPort}`;
  const v6 = () => `http://[::1]:${t.service.publicPort}`;
  const status = async (base: string, secret: string) => (await rest(base, "GET", "/v1/me", { key: secret })).status;

  it("accepts any address with an empty list", async () => {
    const key = await t.createKey(workspaceId, { ipAllowList: [] });
    expect(await status(v4(), key.secret)).toBe(200);
    expect(await status(v6(), key.secret)).toBe(200);
  });

  it.each([
    [["127.0.0.1"], 200, 403],
    [["127.0.0.0/8"], 200, 403],
    [["10.0.0.0/8"], 403, 403],
    [["::1"], 403, 200],
    [["::1/128"], 403, 200],
    [["2001:db8::/32"], 403, 403],
    [["10.1.2.3", "::1"], 403, 200],
  ])("allow-list %j: IPv4 client %i, IPv6 client %i", async (list, fromV4, fromV6) => {
    const key = await t.createKey(workspaceId, { ipAllowList: list });
    expect(await status(v4(), key.secret)).toBe(fromV4);
    expect(await status(v6(), key.secret)).toBe(fromV6);
  });

  it("refuses with ip_not_allowed naming the address, over gRPC too", async () => {
    const key = await t.createKey(workspaceId, { ipAllowList: ["192.0.2.0/24"] });
    await expectRefusal(`Bearer ${key.secret}`, {
      httpStatus: 403,
      grpcCode: Code.PermissionDenied,
      code: "ip_not_allowed",
      message: "Requests from 127.0.0.1 are not in the key's IP allow-list",
      details: { client_address: "127.0.0.1" },
    });
  });

  it("ignores X-Forwarded-For unless the configuration trusts it", async () => {
    const key = await t.createKey(workspaceId, { ipAllowList: ["198.51.100.0/24"] });
    const res = await rest(v4(), "GET", "/v1/me", { key: key.secret, headers: { "x-forwarded-for": "198.51.100.7" } });
    expect(res.status).toBe(403);
    expect(res.json.error.details.client_address).toBe("127.0.0.1");
  });

  it("uses the last X-Forwarded-For address when TRUST_X_FORWARDED_FOR is on", async () => {
    const trusting = await createTestService({ config: { trustXForwardedFor: true } });
    try {
      const ws = await trusting.createWorkspace();
      const key = await trusting.createKey(ws, { ipAllowList: ["198.51.100.0/24", "2001:db8::/32"] });
      const call = (xff: string) => rest(trusting.publicUrl, "GET", "/v1/me", { key: key.secret, headers: { "x-forwarded-for": xff } });
      expect((await call("198.51.100.7")).status).toBe(200);
      expect((await call("2001:db8::5")).status).toBe(200);
      expect((await call("198.51.100.7, 203.0.113.9")).status).toBe(403);
      expect((await call("203.0.113.9, 198.51.100.7")).status).toBe(200);
    } finally {
      await trusting.close();
    }
  });
});

describe("key cache staleness", () => {
  it("a suspension takes effect within the cache bound (KEY_CACHE_TTL_MS)", async () => {
    const cached = await createTestService({ config: { keyCacheTtlMs: 300 } });
    try {
      const ws = await cached.createWorkspace();
      const key = await cached.createKey(ws);
      expect((await rest(cached.publicUrl, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
      await cached.console(WorkspaceService).suspendWorkspace({ id: ws });
      const refused = await eventually(async () => {
        const res = await rest(cached.publicUrl, "GET", "/v1/me", { key: key.secret });
        return res.status === 403 ? res : undefined;
      }, 2000);
      expect(refused.json.error.code).toBe("workspace_suspended");
    } finally {
      await cached.close();
    }
  });

  it("a change written by another process is seen once KEY_CACHE_TTL_MS has passed since it was written", async () => {
    const cached = await createTestService({ config: { keyCacheTtlMs: 300 } });
    try {
      const ws = await cached.createWorkspace();
      const key = await cached.createKey(ws);
      for (let i = 0; i < 5; i++) expect((await rest(cached.publicUrl, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
      // Written to the database directly, as another process would: nothing here is told of it.
      await cached.service.db.collection("api_keys").updateOne({ _id: key.id } as never, { $set: { revoked_at: new Date() } });
      await new Promise((resolve) => setTimeout(resolve, 320));
      const res = await rest(cached.publicUrl, "GET", "/v1/me", { key: key.secret });
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe("key_revoked");
    } finally {
      await cached.close();
    }
  });

  it("keys first used at the same time are read together: two queries for twenty keys", async () => {
    const cached = await createTestService({ config: { keyCacheTtlMs: 1000, databaseCommandMetrics: true } });
    const grpcClient = new grpc.Client(new URL(cached.publicUrl).host, grpc.credentials.createInsecure());
    try {
      const ws = await cached.createWorkspace();
      const keys = await Promise.all(Array.from({ length: 20 }, (_, i) => cached.createKey(ws, { name: `key ${i}` })));
      const finds: string[] = [];
      const onCommand = (event: { commandName: string; command: Record<string, unknown> }) => {
        if (event.commandName === "find") finds.push(String(event.command.find));
      };
      cached.service.client.on("commandStarted", onCommand);
      // Twenty calls on one HTTP/2 connection, sent together: the service sees them at the same instant.
      const identity = (b: Buffer) => b;
      const codes = await Promise.all(
        keys.map(
          (key) =>
            new Promise<number>((resolve) => {
              const md = new grpc.Metadata();
              md.set("authorization", `Bearer ${key.secret}`);
              grpcClient.makeUnaryRequest("/messaging.v1.AccountService/GetMe", identity, identity, Buffer.alloc(0), md, (err) => resolve(err?.code ?? 0));
            }),
        ),
      );
      cached.service.client.off("commandStarted", onCommand);
      expect(codes).toEqual(keys.map(() => grpc.status.OK));
      // One read for the twenty keys (or one for the first and one for the rest asked for while it ran), not twenty.
      expect(finds.filter((c) => c === "api_keys").length).toBeLessThanOrEqual(2);
      expect(finds.filter((c) => c === "workspaces").length).toBeLessThanOrEqual(2);
    } finally {
      grpcClient.close();
      await cached.close();
    }
  });
});
