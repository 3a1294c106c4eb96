import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rest } from "./helpers/clients.js";
import { answerRedirect, dropConnection, slowBody, startReceiver, type Receiver, type ReceiverBehavior } from "./helpers/receivers.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * Refusals of the console, and attempts that fail in each way the spec
 * names (§Delivery rules 1: a slow answer, a redirect, a dropped or refused
 * connection, a TLS error), each recorded with its kind.
 */

let t: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await createTestService({
    config: {
      webhookAllowHttpLoopback: true,
      webhookAllowPrivateTargets: true,
      // No retries: each test looks at one attempt.
      webhookRetrySchedule: [60_000],
      webhookAttemptTimeoutMs: 500,
      webhookLeaseMs: 3000,
      jobPollIntervalMs: 100,
    },
  });
});
afterAll(async () => {
  await t.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(behavior?: ReceiverBehavior): Promise<Receiver> {
  const r = await startReceiver(behavior);
  receivers.push(r);
  return r;
}

const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });
const create = (workspaceId: string, body: Record<string, unknown>) =>
  consoleRest("POST", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, { name: "x", events: ["message.sent"], ...body });

/** Creates an endpoint at `url`, publishes one event, and resolves to its first attempt once recorded. */
async function firstAttempt(url: string) {
  const ws = await t.createWorkspace();
  const created = await create(ws, { url });
  expect(created.status, created.text).toBe(200);
  await t.service.events.publish({ workspaceId: ws, type: "message.sent", data: { message_id: "msg_x" } });
  return eventually(async () => {
    const list = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${created.json.webhook_endpoint.id}`);
    const delivery = list.json.data[0];
    if (!delivery || delivery.attempt_count === 0) return undefined;
    return (await consoleRest("GET", `/console/v1/deliveries/${delivery.id}/attempts`)).json.data[0];
  });
}

describe("endpoint validation", () => {
  let ws: string;
  beforeAll(async () => {
    ws = await t.createWorkspace();
  });

  it("names every broken rule of the contract at once, then the URL's (the service's policy)", async () => {
    const res = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, {
      name: " ",
      url: "http://example.com/hook",
      events: ["message.delivered", "message.bounced", "message.delivered"],
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe("invalid_argument");
    expect(res.json.error.details.field_violations).toEqual([
      { field: "name", description: "must not be blank" },
      { field: "events", description: "must not repeat an item" },
      { field: "events[1]", description: "must be one of message.sent, message.delivered, message.read, message.failed, message.canceled, message.received, flow.completed, contact.opted_out, contact.opted_in" },
    ]);
    const url = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, { name: "n", url: "http://example.com/hook", events: ["message.read"] });
    expect(url.json.error.details.field_violations).toEqual([{ field: "url", description: "must use https" }]);
  });

  it.each([
    ["", "must be 1 to 2048 characters"],
    [`https://example.com/${"a".repeat(2048)}`, "must be 1 to 2048 characters"],
    ["example.com/hook", "must be an absolute URL such as https://example.com/webhooks"],
    ["ftp://example.com/hook", "must use https"],
    ["https://user:pw@example.com/hook", "must not contain a user name or password"],
    ["https://example.com/hook#part", "must not contain a fragment (#…)"],
  ])("refuses the URL %j", async (url, rule) => {
    const res = await create(ws, { url });
    expect(res.status).toBe(400);
    expect(res.json.error.details).toMatchObject({ field: "url", rule });
  });

  it("refuses an endpoint without event types, and unknown ids", async () => {
    const none = await create(ws, { url: "https://example.com/hook", events: [] });
    expect(none.json.error.details).toMatchObject({ field: "events", rule: "must not be empty" });
    const unknownWorkspace = await create("00000000-0000-4000-8000-000000000000", { url: "https://example.com/hook" });
    expect(unknownWorkspace.status).toBe(404);
    for (const id of ["whk_00000000-0000-4000-8000-000000000000", "not-an-id"]) {
      expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${id}`)).status).toBe(404);
      expect((await consoleRest("PATCH", `/console/v1/webhook_endpoints/${id}`, { name: "y" })).status).toBe(404);
      expect((await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:enable`, {})).status).toBe(404);
      expect((await consoleRest("DELETE", `/console/v1/webhook_endpoints/${id}`)).status).toBe(404);
    }
  });

  it("checks updates and reasons with the same rules", async () => {
    const created = await create(ws, { url: "https://example.com/hook" });
    const id = created.json.webhook_endpoint.id;
    const bad = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${id}?update_mask=name,url,events`, { url: "http://example.com/", name: "", events: ["nope"] });
    expect(bad.status).toBe(400);
    expect(bad.json.error.details.field_violations).toEqual([
      { field: "webhook_endpoint.name", description: "must not be empty" },
      { field: "webhook_endpoint.events[0]", description: "must be one of message.sent, message.delivered, message.read, message.failed, message.canceled, message.received, flow.completed, contact.opted_out, contact.opted_in" },
      { field: "webhook_endpoint.url", description: "must use https" },
    ]);
    // Without a mask, the fields given with a value change; an unknown mask path is named.
    const renamed = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${id}`, { name: "renamed" });
    expect(renamed.json).toMatchObject({ name: "renamed", url: "https://example.com/hook" });
    const unknown = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${id}?update_mask=secret_hint`, {});
    expect(unknown.json.error.details.field_violations).toEqual([{ field: "update_mask[0]", description: 'must be one of name, url, events, rate_limit (got "secret_hint")' }]);
    const reason = await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:disable`, { reason: "x".repeat(501) });
    expect(reason.json.error.details).toMatchObject({ field: "reason", rule: "must be at most 500 characters" });
    const disabled = await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:disable`, { reason: "maintenance" });
    expect(disabled.json).toMatchObject({ enabled: false, disabled_reason: "maintenance" });
    const again = await consoleRest("POST", `/console/v1/webhook_endpoints/${id}:disable`, { reason: "other" });
    expect(again.json.disabled_reason).toBe("maintenance");
  });

  it("limits a workspace to twenty endpoints", async () => {
    const full = await t.createWorkspace();
    for (let i = 0; i < 20; i++) expect((await create(full, { url: `https://example.com/${i}` })).status).toBe(200);
    const refused = await create(full, { url: "https://example.com/21" });
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: "failed_precondition", details: { limit: "20" } });
  });
});

describe("deliveries and attempts: refusals", () => {
  it("asks for an endpoint or an event, and answers not_found for unknown ones", async () => {
    const none = await consoleRest("GET", "/console/v1/deliveries");
    expect(none.json.error.details).toMatchObject({ field: "endpoint_id", rule: "one of endpoint_id and event_id is required" });
    expect((await consoleRest("GET", "/console/v1/deliveries?endpoint_id=whk_00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await consoleRest("GET", "/console/v1/deliveries?event_id=00000000-0000-4000-8000-000000000000")).status).toBe(404);
    const unknown = "dlv_00000000-0000-4000-8000-000000000000";
    expect((await consoleRest("GET", `/console/v1/deliveries/${unknown}`)).status).toBe(404);
    expect((await consoleRest("POST", `/console/v1/deliveries/${unknown}:retry`, {})).status).toBe(404);
    expect((await consoleRest("GET", `/console/v1/deliveries/${unknown}/attempts`)).status).toBe(404);
    expect((await consoleRest("GET", "/console/v1/deliveries/garbage/attempts")).status).toBe(404);
  });
});

describe("failed attempts, by kind (spec §Delivery rules 1)", () => {
  it("a 2xx whose body is slower than the deadline: timeout", async () => {
    const attempt = await firstAttempt((await receiver(slowBody(3000))).url);
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "timeout", http_status: null, error_message: "No complete answer within 500 ms" });
    expect(attempt.duration_ms).toBeGreaterThanOrEqual(500);
    expect(attempt.duration_ms).toBeLessThan(3000);
  });

  it("a redirect: failed, and not followed", async () => {
    const target = await receiver();
    const redirecting = await receiver((_req, res) => {
      res.writeHead(301, { location: target.url });
      res.end("moved");
    });
    const attempt = await firstAttempt(redirecting.url);
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "redirect", http_status: 301, response_body: "moved" });
    expect(attempt.error_message).toBe(`Answered 301 (redirects are not followed); Location: ${target.url}`);
    expect(target.requests).toHaveLength(0);
    expect((await firstAttempt((await receiver(answerRedirect)).url)).error_kind).toBe("redirect");
  });

  it("a dropped connection: connection_reset", async () => {
    const attempt = await firstAttempt((await receiver(dropConnection)).url);
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "connection_reset", http_status: null, response_body: null });
  });

  it("a refused connection: connection_refused", async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as net.AddressInfo).port;
    await new Promise((resolve) => server.close(resolve));
    const attempt = await firstAttempt(`http://127.0.0.1:${port}/hook`);
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "connection_refused" });
  });

  it("a TLS failure: tls", async () => {
    const plain = await receiver();
    const attempt = await firstAttempt(`https://127.0.0.1:${plain.port}/hook`);
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "tls", http_status: null });
  });

  it("a host that does not resolve: dns", async () => {
    const attempt = await firstAttempt("https://no-such-host.invalid/hook");
    expect(attempt).toMatchObject({ succeeded: false, error_kind: "dns" });
  });
});
