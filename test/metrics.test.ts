import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { AccountService } from "../gen/messaging/v1/account_pb.js";
import { createLogger } from "../src/shared/logger.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { parsePrometheusText, sampleValue, type Family } from "./helpers/prometheus.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { answerStatus, startReceiver } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

let t: TestService;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") logLines.push(JSON.parse(line));
      done();
    },
  });
  t = await createTestService({
    config: { ...FAST_MESSAGING, logLevel: "info", webhookAllowHttpLoopback: true, webhookAllowPrivateTargets: true, databaseCommandMetrics: true },
    logger: createLogger("info", "test", sink),
  });
});
afterAll(() => t.close());

/** Scrapes GET /metrics on the console port and parses it as Prometheus does. */
async function scrape(): Promise<Map<string, Family>> {
  const res = await fetch(`${t.consoleUrl}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

describe("GET /metrics (Prometheus text on the console port)", () => {
  it("counts public requests by operation, protocol and code over REST, Connect and gRPC, with latency histograms", async () => {
    const ws = await t.createWorkspace("Metrics", 10);
    const { secret } = await t.createKey(ws, { scopes: ["messages:send"] });
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: secret })).status).toBe(200);
    await clientFor(AccountService, "connect-json", t.publicUrl, secret).getMe({});
    const grpc = await grpcJsCall(t.publicUrl.replace("http://", ""), AccountService.method.getMe, {}, { authorization: `Bearer ${secret}` });
    expect(grpc.error).toBeUndefined();
    expect((await rest(t.publicUrl, "GET", "/v1/me", { key: "sk_wrong" })).status).toBe(401);

    const metrics = await scrape();
    // The reference parser names a counter family without its _total suffix.
    expect(metrics.get("msgsvc_requests")?.type).toBe("counter");
    const getMe = "messaging.v1.AccountService/GetMe";
    const requests = (labels: Record<string, string>) => sampleValue(metrics, "msgsvc_requests", "msgsvc_requests_total", labels);
    expect(requests({ operation: getMe, protocol: "rest", code: "ok" })).toBe(1);
    expect(requests({ operation: getMe, protocol: "connect", code: "ok" })).toBe(1);
    expect(requests({ operation: getMe, protocol: "grpc", code: "ok" })).toBe(1);
    expect(requests({ operation: getMe, protocol: "rest", code: "invalid_key" })).toBe(1);
    expect(metrics.get("msgsvc_request_duration_seconds")?.type).toBe("histogram");
    const latency = (name: string, labels: Record<string, string> = {}) =>
      sampleValue(metrics, "msgsvc_request_duration_seconds", name, { operation: getMe, protocol: "rest", ...labels });
    expect(latency("msgsvc_request_duration_seconds_count")).toBe(2); // the answered and the refused GET /v1/me
    expect(latency("msgsvc_request_duration_seconds_bucket", { le: "+Inf" })).toBe(2);
    expect(latency("msgsvc_request_duration_seconds_sum")).toBeGreaterThan(0);
    // Labels never carry a key, workspace or secret.
    const text = await (await fetch(`${t.consoleUrl}/metrics`)).text();
    expect(text).not.toContain(secret);
    expect(text).not.toContain(ws);
  });

  it("counts sends accepted and dispatched, the dispatch lag and database command latency", async () => {
    const ws = await t.createWorkspace("Metrics sends", 10);
    const { secret } = await t.createKey(ws, { scopes: ["messages:send"] });
    const sender = await createSender(t, ws);
    const template = await createTemplate(t, ws);
    const before = await scrape();
    const accepted = (m: Map<string, Family>) => sampleValue(m, "msgsvc_messages_accepted", "msgsvc_messages_accepted_total") ?? 0;
    const accepted0 = accepted(before);
    for (const to of ["4915100002001", "4915100009990"]) {
      const res = await rest(t.publicUrl, "POST", "/v1/messages", { key: secret, body: { to, sender, template: { id: template, variables: { name: "A", code: "1" } } } });
      expect(res.status).toBe(200);
    }
    const after = await eventually(async () => {
      const m = await scrape();
      const dispatched = (outcome: string) => sampleValue(m, "msgsvc_messages_dispatched", "msgsvc_messages_dispatched_total", { outcome });
      return dispatched("sent") && dispatched("refused") ? m : undefined;
    });
    expect(accepted(after) - accepted0).toBe(2);
    expect(sampleValue(after, "msgsvc_dispatch_lag_seconds", "msgsvc_dispatch_lag_seconds_count")).toBeGreaterThanOrEqual(1);
    const inserts = sampleValue(after, "msgsvc_database_command_duration_seconds", "msgsvc_database_command_duration_seconds_count", { command: "insert", outcome: "ok" });
    expect(inserts).toBeGreaterThan(0);
    expect(after.get("msgsvc_process_resident_memory_bytes")?.type).toBe("gauge");
  });
});

describe("database command latency", () => {
  it("is not measured unless DATABASE_COMMAND_METRICS is on (the driver's command events cost a second decoding of every reply)", async () => {
    const plain = await createTestService({ config: { ...FAST_MESSAGING } });
    try {
      const ws = await plain.createWorkspace("No command metrics");
      const { secret } = await plain.createKey(ws);
      expect((await rest(plain.publicUrl, "GET", "/v1/me", { key: secret })).status).toBe(200);
      const text = await (await fetch(`${plain.consoleUrl}/metrics`)).text();
      expect(text).toContain("msgsvc_requests_total");
      expect(text).not.toMatch(/^msgsvc_database_command_duration_seconds_count/m);
    } finally {
      await plain.close();
    }
  });
});

describe("access log", () => {
  it("writes one line per public request with request id, operation, key id, status and duration, never a secret", async () => {
    const ws = await t.createWorkspace("Access log");
    const key = await t.createKey(ws);
    const res = await rest(t.publicUrl, "GET", "/v1/me", { key: key.secret });
    const requestId = res.headers.get("request-id");
    const line = await eventually(async () => logLines.find((l) => l.requestId === requestId && l.msg === "request"));
    expect(line).toMatchObject({
      operation: "messaging.v1.AccountService/GetMe",
      protocol: "rest",
      method: "GET",
      path: "/v1/me",
      keyId: key.id,
      status: 200,
      code: null,
      durationMs: expect.any(Number),
    });
    expect(logLines.filter((l) => l.requestId === requestId)).toHaveLength(1);
    const refused = await rest(t.publicUrl, "POST", "/v1/messages?token=hunter2", { key: "sk_not_a_key" });
    const refusedLine = await eventually(async () => logLines.find((l) => l.requestId === refused.headers.get("request-id")));
    expect(refusedLine).toMatchObject({ status: 401, code: "invalid_key", keyId: null });
    const all = JSON.stringify(logLines);
    expect(all).not.toContain(key.secret);
    expect(all).not.toContain("hunter2");
    expect(all).not.toContain("sk_not_a_key");
  });
});

describe("webhook metrics", () => {
  it("counts attempts by outcome and the disabled endpoints", async () => {
    const ws = await t.createWorkspace("Metrics webhooks");
    const receiver = await startReceiver(answerStatus(503));
    try {
      const console = (method: string, path: string, body: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });
      const created = await console("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, { name: "m", url: receiver.url, events: ["message.delivered"] });
      expect(created.status).toBe(200);
      const failed0 = sampleValue(await scrape(), "msgsvc_webhook_attempts", "msgsvc_webhook_attempts_total", { outcome: "http_status" }) ?? 0;
      await t.service.events.publish({ workspaceId: ws, type: "message.delivered", data: { message_id: "msg_metrics" } });
      await eventually(async () => {
        const failed = sampleValue(await scrape(), "msgsvc_webhook_attempts", "msgsvc_webhook_attempts_total", { outcome: "http_status" }) ?? 0;
        return failed > failed0 ? true : undefined;
      });
      const disabled0 = sampleValue(await scrape(), "msgsvc_webhook_endpoints_disabled", "msgsvc_webhook_endpoints_disabled") ?? 0;
      const disabled = await console("POST", `/console/v1/webhook_endpoints/${created.json.webhook_endpoint.id}:disable`, { reason: "metrics test" });
      expect(disabled.status).toBe(200);
      const after = await scrape();
      expect(sampleValue(after, "msgsvc_webhook_endpoints_disabled", "msgsvc_webhook_endpoints_disabled")).toBe(disabled0 + 1);
      expect(after.get("msgsvc_webhook_backlog")?.type).toBe("gauge");
      expect(sampleValue(after, "msgsvc_webhook_backlog", "msgsvc_webhook_backlog")).toBeGreaterThanOrEqual(0);
      // The queues that wait for a worker, read from the database.
      for (const name of ["msgsvc_dispatch_backlog", "msgsvc_simulator_reports_backlog"]) {
        expect(after.get(name)?.type, name).toBe("gauge");
        expect(sampleValue(after, name, name), name).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await receiver.close();
    }
  });
});
