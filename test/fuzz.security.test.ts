import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../src/auth/scopes.js";
import { createLogger } from "../src/shared/logger.js";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { clientFor, rest } from "./helpers/clients.js";
import { createTestService, type TestService } from "./helpers/test-service.js";
import { runFuzz } from "./fuzz/requests.js";

/*
 * Property-based requests (test/fuzz/requests.ts) against the running
 * service over REST, Connect, gRPC-Web and gRPC, with a fixed seed and a
 * bounded count: never a 5xx, never internal/unknown over gRPC, never a
 * connection closed without an answer, never an error logged; and a valid
 * request answered correctly afterwards. `npm run fuzz` runs them longer.
 */

const logged: { level: number; msg: string; err?: unknown }[] = [];
let t: TestService;
let key: string;
let workspaceId: string;
beforeAll(async () => {
  const destination = { write: (line: string) => void logged.push(JSON.parse(line)) };
  t = await createTestService({ config: { logLevel: "warn" }, logger: createLogger("warn", "fuzz", destination) });
  workspaceId = await t.createWorkspace("Fuzz", 5);
  key = (await t.createKey(workspaceId, { scopes: [...SCOPES], rateLimitPerMin: 100 })).secret;
});
afterAll(() => t.close());

describe("random requests over every protocol", () => {
  it("never break the service (seed 20261125, 250 requests over HTTP/1.1 and 250 over gRPC)", async () => {
    await runFuzz({ publicUrl: t.publicUrl, key }, { seed: 20261125, runs: 250 });
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);
  }, 120_000);

  it("and a valid request is answered correctly afterwards, over REST, Connect and gRPC", async () => {
    // A fresh key: the fuzz run may have spent the first one's budget (100 a minute).
    const after = await t.createKey(workspaceId, { name: "after the fuzz run" });
    const me = await rest(t.publicUrl, "GET", "/v1/me", { key: after.secret });
    expect(me.status, me.text).toBe(200);
    expect(me.json.key).toMatchObject({ id: after.id, name: "after the fuzz run" });
    for (const protocol of ["connect-json", "grpc"] as const) {
      const answer = await clientFor(AccountService, protocol, t.publicUrl, after.secret).getMe({});
      expect(answer.key?.id).toBe(after.id);
    }
  });
});
