import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { RequestLogService, RequestOutcome } from "../gen/messaging/console/v1/request_log_pb.js";
import { rest } from "./helpers/clients.js";
import { msgsvc } from "./helpers/messaging.js";
import { createTestService, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
let workspaceId: string;
let limitedKeyId: string;

beforeAll(async () => {
  t = await createTestService();
  workspaceId = await t.createWorkspace("Refusals");
  // A mix of refusals: insufficient_scope ×3, ip_not_allowed ×2, rate_limited ×1, invalid_key ×2 (no workspace).
  const noScope = await t.createKey(workspaceId, { scopes: [] });
  for (let i = 0; i < 3; i++) await rest(t.publicUrl, "GET", "/v1/senders", { key: noScope.secret });
  const elsewhere = await t.createKey(workspaceId, { ipAllowList: ["192.0.2.0/24"] });
  for (let i = 0; i < 2; i++) await rest(t.publicUrl, "GET", "/v1/me", { key: elsewhere.secret });
  const limited = await t.createKey(workspaceId, { rateLimitPerMin: 1 });
  limitedKeyId = limited.id;
  await rest(t.publicUrl, "GET", "/v1/me", { key: limited.secret });
  await rest(t.publicUrl, "GET", "/v1/me", { key: limited.secret });
  for (let i = 0; i < 2; i++) await rest(t.publicUrl, "GET", "/v1/me", { key: `sk_${"Z".repeat(43)}` });
  await t.flushRequestLog();
});
afterAll(() => t.close());

describe("refused requests grouped by error (spec §What the service does, 5)", () => {
  it("groups a workspace's refusals with counts, first and last seen and a sample", async () => {
    const res = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/refused_requests`, { key: TEST_CONSOLE_TOKEN });
    expect(res.status).toBe(200);
    expect(res.json.object).toBe("list");
    expect(res.json.data.map((g: { error_code: string; count: number }) => [g.error_code, g.count])).toEqual([
      ["insufficient_scope", 3],
      ["ip_not_allowed", 2],
      ["rate_limited", 1],
    ]);
    const scope = res.json.data[0];
    expect(scope.first_seen <= scope.last_seen).toBe(true);
    expect(scope.sample).toMatchObject({ object: "request", path: "/v1/senders", http_status: 403, error_code: "insufficient_scope" });
    expect(scope.sample.at).toBe(scope.last_seen);
  });

  it("shows refusals without a known key to the operator across workspaces", async () => {
    const all = await t.console(RequestLogService).listRefusedRequestGroups({ workspaceId: "-" });
    const invalid = all.data.find((g) => g.errorCode === "invalid_key");
    expect(invalid?.count).toBe(2);
    expect(invalid?.sample?.apiKeyId).toBeUndefined();
  });

  it("lists requests with filters by key, outcome, error code, operation and time", async () => {
    const byKey = await t.console(RequestLogService).listRequests({ workspaceId, apiKeyId: limitedKeyId });
    expect(byKey.data.map((r) => r.errorCode ?? "ok")).toEqual(["rate_limited", "ok"]);
    const ok = await t.console(RequestLogService).listRequests({ workspaceId, outcome: RequestOutcome.OK });
    expect(ok.total).toBe(1);
    const refused = await t.console(RequestLogService).listRequests({ workspaceId, outcome: RequestOutcome.REFUSED });
    expect(refused.total).toBe(6);
    const code = await t.console(RequestLogService).listRequests({ workspaceId, errorCode: "ip_not_allowed" });
    expect(code.total).toBe(2);
    const op = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/requests?operation=messaging.v1.SenderService/ListSenders&page_size=2`, {
      key: TEST_CONSOLE_TOKEN,
    });
    expect(op.json.total).toBe(3);
    expect(op.json.data).toHaveLength(2);
    expect(op.json.next_page_token).toEqual(expect.any(String));
    const future = await rest(t.consoleUrl, "GET", `/console/v1/workspaces/${workspaceId}/requests?since=2999-01-01T00:00:00.000Z`, { key: TEST_CONSOLE_TOKEN });
    expect(future.json.total).toBe(0);
  });

  it("counts refusals per time bucket for the chart", async () => {
    const timeline = await t.console(RequestLogService).getRefusalTimeline({ workspaceId, buckets: 12 });
    expect(timeline.buckets).toHaveLength(12);
    expect(timeline.bucketSeconds).toBe(7200);
    expect(timeline.buckets.reduce((sum, b) => sum + b.count, 0)).toBe(6);
    expect(timeline.buckets[11]?.count).toBe(6);
    const bad = await t.console(RequestLogService).getRefusalTimeline({ workspaceId, buckets: 500 }).catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
  });

  it("prints the grouped view with `msgsvc requests refused --workspace W --since 1h`", async () => {
    const out = await msgsvc(t, ["requests", "refused", "--workspace", workspaceId, "--since", "1h"]);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^ERROR_CODE\s+COUNT\s+FIRST_SEEN\s+LAST_SEEN\s+SAMPLE$/);
    expect(lines[1]).toMatch(/^insufficient_scope\s+3\s+\S+Z\s+\S+Z\s+GET \/v1\/senders req_/);
    expect(lines).toHaveLength(4);
  });

  it("prints refusals over time with `msgsvc requests timeline`", async () => {
    const out = await msgsvc(t, ["requests", "timeline", "--workspace", workspaceId, "--since", "2h", "--buckets", "4"]);
    expect(out.stderr).toBe("");
    const lines = out.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^START\s+COUNT\s+BAR$/);
    expect(lines.slice(1).map((l) => Number(l.split(/\s+/)[1]))).toEqual([0, 0, 0, 6]);
    expect(lines[4]).toMatch(/\s6\s+#{40}$/);
    const json = JSON.parse((await msgsvc(t, ["requests", "timeline", "--workspace", workspaceId, "--json"])).stdout);
    expect(json.bucket_seconds).toBe(3600);
    expect(json.buckets).toHaveLength(24);
    const bad = await msgsvc(t, ["requests", "timeline", "--workspace", workspaceId, "--buckets", "many"]);
    expect(bad).toMatchObject({ code: 2, stderr: 'error: --buckets: must be a whole number, got "many"\n' });
  });
});
