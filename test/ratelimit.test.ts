import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { inject } from "vitest";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { startServiceProcess, stopProcess } from "./helpers/processes.js";
import { createTestClock, createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

describe("per-key rate limit (spec §Limits)", () => {
  // 10:00:05 on the clock: the window rolls over in 55 seconds.
  const clock = createTestClock(new Date("2026-11-23T10:00:05.000Z"));
  let t: TestService;
  let workspaceId: string;

  beforeAll(async () => {
    t = await createTestService({ clock, config: { unauthenticatedRateLimitPerMin: 3 } });
    workspaceId = await t.createWorkspace("Limits");
  });
  afterAll(() => t.close());

  it("counts down RateLimit-Remaining, then answers 429 with Retry-After equal to RateLimit-Reset", async () => {
    const key = await t.createKey(workspaceId, { rateLimitPerMin: 3 });
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit-limit")).toBe("3");
      expect(res.headers.get("ratelimit-reset")).toBe("55");
      remaining.push(res.headers.get("ratelimit-remaining") as string);
    }
    expect(remaining).toEqual(["2", "1", "0"]);
    // The shared window, created by its first lease: the whole budget granted, expiring one window after its end.
    const window = await t.service.db.collection("rate_windows").findOne({ _id: `key:${key.id}|${Date.parse("2026-11-23T10:00:00.000Z")}` as never });
    expect(window).toMatchObject({
      subject: `key:${key.id}`,
      count: 3,
      window_start: new Date("2026-11-23T10:00:00.000Z"),
      expires_at: new Date("2026-11-23T10:02:00.000Z"),
    });
    expect(window?.holders).toHaveLength(1);

    const refused = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toMatchObject({
      code: "rate_limited",
      message: "Rate limit of 3 requests per minute exceeded; retry after 55 s",
      details: { limit: "3", retry_after_seconds: "55" },
    });
    expect(refused.headers.get("retry-after")).toBe("55");
    expect(refused.headers.get("ratelimit-reset")).toBe("55");
    expect(refused.headers.get("ratelimit-remaining")).toBe("0");

    // gRPC: RESOURCE_EXHAUSTED, the same headers as response metadata.
    const answer = await grpcJsCall(`127.0.0.1:${t.service.publicPort}`, AccountService.method.getMe, {}, {
      authorization: `Bearer ${key.secret}`,
    });
    expect(answer.error?.code).toBe(Code.ResourceExhausted);
    expect(answer.headers.get("retry-after")).toEqual(["55"]);
    expect(answer.headers.get("ratelimit-limit")).toEqual(["3"]);
    expect(answer.headers.get("ratelimit-remaining")).toEqual(["0"]);

    // Connect: the same code and headers.
    const err = await clientFor(AccountService, "connect-json", t.publicUrl, key.secret)
      .getMe({})
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((err as ConnectError).metadata.get("retry-after")).toBe("55");

    // The next window starts with a full budget.
    clock.advance(55_000);
    const next = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    expect(next.status).toBe(200);
    expect(next.headers.get("ratelimit-remaining")).toBe("2");
    expect(next.headers.get("ratelimit-reset")).toBe("60");
  });

  it("gives each key its own budget", async () => {
    const a = await t.createKey(workspaceId, { rateLimitPerMin: 1 });
    const b = await t.createKey(workspaceId, { rateLimitPerMin: 1 });
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: a.secret })).status).toBe(200);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: a.secret })).status).toBe(429);
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: b.secret })).status).toBe(200);
  });

  it("limits requests without an accepted key per client address", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await rest(`http://[::1]:${t.service.publicPort}`, "GET", "/v1/me", { key: "sk_nope" });
      statuses.push(res.status);
      expect(res.headers.get("ratelimit-limit")).toBe("3");
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    // A valid key from the same address keeps its own budget.
    const key = await t.createKey(workspaceId);
    expect((await rest(`http://[::1]:${t.service.publicPort}`, "GET", "/v1/me", { key: key.secret })).status).toBe(200);
  });
});

describe("one budget shared by several server processes", () => {
  let t: TestService;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    t = await createTestService();
  });
  afterAll(async () => {
    await Promise.all(children.map(stopProcess));
    await t.close();
  });

  it("never admits more than the budget across two processes, then answers 429 with Retry-After", async () => {
    const env = {
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DATABASE: t.databaseName,
      CONSOLE_TOKEN: TEST_CONSOLE_TOKEN,
      ROLE: "api",
    };
    const [a, b] = await Promise.all([startServiceProcess(env), startServiceProcess(env)]);
    children.push(a.child, b.child);
    const workspaceId = await t.createWorkspace("Shared budget");
    const key = await t.createKey(workspaceId, { rateLimitPerMin: 10 });

    // Windows follow the wall clock's minutes: keep the burst inside one window.
    const intoWindow = Date.now() % 60_000;
    if (intoWindow > 45_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoWindow + 100));

    // Alternating, one at a time: exactly the budget is admitted.
    const answers = [];
    for (let i = 0; i < 12; i++) {
      const port = i % 2 === 0 ? a.publicPort : b.publicPort;
      answers.push(await rest(`http://127.0.0.1:${port}`, "GET", "/v1/me", { key: key.secret }));
    }
    expect(answers.filter((r) => r.status === 200)).toHaveLength(10);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(2);
    for (const refused of answers.filter((r) => r.status === 429)) {
      expect(refused.headers.get("retry-after")).toBe(refused.headers.get("ratelimit-reset"));
      expect(refused.json.error.code).toBe("rate_limited");
      expect(refused.headers.get("ratelimit-remaining")).toBe("0");
    }

    // Concurrently, 40 calls spread over both processes: never more than the budget; at most
    // a few fewer when budget leased to one process is left over there (see rate-limiter.ts).
    const burstKey = await t.createKey(workspaceId, { rateLimitPerMin: 25 });
    const burst = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        rest(`http://127.0.0.1:${i % 2 === 0 ? a.publicPort : b.publicPort}`, "GET", "/v1/me", { key: burstKey.secret }),
      ),
    );
    const admitted = burst.filter((r) => r.status === 200).length;
    expect(admitted).toBeLessThanOrEqual(25);
    expect(admitted).toBeGreaterThanOrEqual(22);
    expect(burst.filter((r) => r.status === 429)).toHaveLength(40 - admitted);
  });
});
