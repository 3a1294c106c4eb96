import type { StoredEvent } from "../src/events/event-bus.js";
import { createHash, createHmac } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DeliveryService } from "../gen/messaging/console/v1/deliveries_pb.js";
import { WebhookEndpointService } from "../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { WebhookService } from "../gen/messaging/v1/webhooks_pb.js";
import type { EventType } from "../src/events/event-bus.js";
import { Webhook } from "standardwebhooks";
import { verifyWebhookSignature } from "../src/webhooks/signature.js";
import { clientFor, grpcJsCall, rest } from "./helpers/clients.js";
import { answerOk, answerStatus, failTimes, startReceiver, type Receiver, type ReceiverBehavior } from "./helpers/receivers.js";
import { msgsvc as runMsgsvc, spawnMsgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * The delivery engine against real local receivers, with the retry schedule
 * compressed to 0, 100 ms, 100 ms … (config), through the console's REST API.
 */

let t: TestService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await createTestService({
    config: {
      webhookAllowHttpLoopback: true,
      webhookAllowPrivateTargets: true,
      webhookRetrySchedule: [0, 100, 100, 100, 100, 100, 100],
      webhookAttemptTimeoutMs: 1000,
      webhookLeaseMs: 3000,
      jobPollIntervalMs: 100,
      webhookClaimIntervalMs: 200,
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

async function endpoint(workspaceId: string, url: string, events: string[] = ["message.delivered"], name = "test endpoint") {
  const res = await consoleRest("POST", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, { name, url, events });
  expect(res.status, res.text).toBe(200);
  return res.json as { webhook_endpoint: { id: string; secret_hint: string }; secret: string };
}

let messages = 0;
const publish = (workspaceId: string, type: EventType = "message.delivered") =>
  t.service.events.publish({
    workspaceId,
    type,
    data: {
      message_id: `msg_00000000-0000-4000-8000-${String(++messages).padStart(12, "0")}`,
      to: "4915112345678",
      status: type.slice("message.".length),
      wa_message_id: `wamid.${messages}`,
      occurred_at: "2026-01-31T12:00:00.000Z",
      error: null,
    },
  });

/** The deliveries of an endpoint (REST JSON), once `ready` holds for them. */
const deliveriesOf = (endpointId: string, ready: (data: any[]) => boolean) =>
  eventually(async () => {
    const res = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${endpointId}`);
    return ready(res.json.data) ? (res.json.data as any[]) : undefined;
  });

const attemptsOf = async (deliveryId: string) =>
  ((await consoleRest("GET", `/console/v1/deliveries/${deliveryId}/attempts`)).json.data as any[]).reverse();

describe("signed deliveries (spec §Outbound, §Webhook signature)", () => {
  it("POSTs the stored envelope, signed, with the spec's headers, and records the attempt", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const { webhook_endpoint: ep, secret } = await endpoint(ws, rcv.url);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(ep.secret_hint).toBe(`whsec_${secret.slice(6, 10)}…${secret.slice(-4)}`);

    const event = await publish(ws);
    const got = await eventually(async () => rcv.requests[0]);
    expect(got.method).toBe("POST");
    expect(got.body).toBe(event.body);
    expect(JSON.parse(got.body)).toEqual({ id: event._id, type: "message.delivered", created_at: event.created_at.toISOString(), data: event.data });
    expect(got.headers["content-type"]).toBe("application/json");
    expect(got.headers["service-event"]).toBe("message.delivered");
    expect(got.headers["service-delivery"]).toBe(event._id);
    expect(got.headers["user-agent"]).toMatch(/^messaging-service-webhooks\/\d/);

    // With the receiver helper, and with a plain HMAC as any language would compute it.
    const header = got.headers["service-signature"] as string;
    expect(verifyWebhookSignature(got.body, header, secret)).toBe(true);
    const [, stamp, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header) ?? [];
    expect(Math.abs(Number(stamp) - Date.now() / 1000)).toBeLessThan(60);
    expect(v1).toBe(createHmac("sha256", secret).update(`${stamp}.${got.body}`).digest("hex"));

    const [delivery] = await deliveriesOf(ep.id, (d) => d[0]?.status === "succeeded");
    expect(delivery).toMatchObject({
      object: "delivery",
      workspace_id: ws,
      endpoint_id: ep.id,
      event_id: event._id,
      event_type: "message.delivered",
      status: "succeeded",
      attempt_count: 1,
      last_http_status: 200,
      last_error_kind: null,
      next_attempt_at: null,
    });
    expect(delivery.id).toMatch(/^dlv_[0-9a-f-]{36}$/);
    const [attempt] = await attemptsOf(delivery.id);
    expect(attempt).toMatchObject({
      id: `${delivery.id}.1`,
      object: "delivery_attempt",
      number: 1,
      trigger: "automatic",
      url: rcv.url,
      http_status: 200,
      response_body: '{"received":true}',
      error_kind: null,
      error_message: null,
      succeeded: true,
      disabled_endpoint: false,
      next_attempt_at: null,
    });
    expect(attempt.duration_ms).toBeGreaterThanOrEqual(0);
    expect(attempt.started_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const viaEvent = await consoleRest("GET", `/console/v1/deliveries?event_id=${event._id}`);
    expect(viaEvent.json.data.map((d: { id: string }) => d.id)).toEqual([delivery.id]);

    // last_success_at shows in GET /v1/webhook.
    const key = await t.createKey(ws, { scopes: ["webhooks:read"] });
    const listed = await rest(t.publicUrl, "GET", "/v1/webhook", { key: key.secret });
    expect(listed.json.data[0].last_success_at).toMatch(/Z$/);
  });

  it("delivers only to enabled endpoints of the event's workspace that selected its type", async () => {
    const ws = await t.createWorkspace();
    const other = await t.createWorkspace();
    const delivered = await receiver();
    const read = await receiver();
    const both = await receiver();
    const disabled = await receiver();
    const elsewhere = await receiver();
    await endpoint(ws, delivered.url, ["message.delivered"]);
    await endpoint(ws, read.url, ["message.read"]);
    await endpoint(ws, both.url, ["message.read", "message.delivered"]);
    const off = await endpoint(ws, disabled.url, ["message.delivered", "message.read"]);
    await consoleRest("POST", `/console/v1/webhook_endpoints/${off.webhook_endpoint.id}:disable`, {});
    await endpoint(other, elsewhere.url, ["message.delivered", "message.read"]);

    const first = await publish(ws, "message.delivered");
    const second = await publish(ws, "message.read");
    await eventually(async () => (both.requests.length === 2 && delivered.requests.length === 1 && read.requests.length === 1 ? true : undefined));
    expect(delivered.requests.map((r) => r.headers["service-delivery"])).toEqual([first._id]);
    expect(read.requests.map((r) => r.headers["service-delivery"])).toEqual([second._id]);
    expect(both.requests.map((r) => r.headers["service-event"]).sort()).toEqual(["message.delivered", "message.read"]);
    // Each delivery's state is stored (once the outcome is written, just after the answer): succeeded, nothing due.
    const stored = await eventually(async () => {
      const all = await t.service.db.collection("webhook_deliveries").find({ event_id: { $in: [first._id, second._id] } }).toArray();
      return all.length === 4 && all.every((d) => d.status !== "pending") ? all : undefined;
    });
    expect(stored.map((d) => [d.status, d.attempt_count, d.due_at, d.lease_owner])).toEqual(stored.map(() => ["succeeded", 1, undefined, null]));
    expect(disabled.requests).toHaveLength(0);
    expect(elsewhere.requests).toHaveLength(0);

    // An event no enabled endpoint selected has no delivery.
    const unwanted = await publish(ws, "message.failed");
    expect((await consoleRest("GET", `/console/v1/deliveries?event_id=${unwanted._id}`)).json.data).toEqual([]);
  });

  it("also sends the Standard Webhooks headers, which the standardwebhooks library verifies on every attempt", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(failTimes(1));
    // Created over Connect here (REST above): a secret the Standard Webhooks libraries accept, 32 random bytes.
    const { secret } = await t.console(WebhookEndpointService).createWebhookEndpoint({ workspaceId: ws, name: "standard", url: rcv.url, events: ["message.delivered"] });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice("whsec_".length), "base64")).toHaveLength(32);

    const event = await publish(ws);
    await eventually(async () => (rcv.requests.length === 2 ? true : undefined));
    const standard = new Webhook(secret);
    for (const got of rcv.requests) {
      const headers = {
        "webhook-id": got.headers["webhook-id"] as string,
        "webhook-timestamp": got.headers["webhook-timestamp"] as string,
        "webhook-signature": got.headers["webhook-signature"] as string,
      };
      expect(headers["webhook-id"]).toBe(event._id);
      expect(headers["webhook-timestamp"]).toBe(/^t=(\d+),/.exec(got.headers["service-signature"] as string)?.[1]);
      expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // Both schemes verify the same request; the spec's header is unchanged beside the new ones.
      expect(standard.verify(got.body, headers)).toEqual(JSON.parse(got.body));
      expect(verifyWebhookSignature(got.body, got.headers["service-signature"] as string, secret)).toBe(true);
      expect(() => standard.verify(`${got.body} `, headers)).toThrow();
    }
  });

  it("rotates the signing secret: the old one signs beside the new one until its end, then stops (REST, gRPC, msgsvc)", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const { webhook_endpoint: ep, secret: first } = await endpoint(ws, rcv.url);
    const signers = (got: { body: string; headers: Record<string, unknown> }) =>
      [first, second].filter((s) => {
        try {
          return verifyWebhookSignature(got.body, got.headers["service-signature"] as string, s);
        } catch {
          return false;
        }
      });

    // REST: the old secret keeps signing for 1.5 s.
    const until = new Date(Date.now() + 1500);
    const rotated = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:rotateSecret`, { previous_secret_expires_at: until.toISOString() });
    expect(rotated.status, rotated.text).toBe(200);
    const second = rotated.json.secret as string;
    expect(second).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.json.webhook_endpoint).toMatchObject({ secret_hint: `whsec_${second.slice(6, 10)}…${second.slice(-4)}`, previous_secret_expires_at: until.toISOString() });
    await publish(ws);
    const during = await eventually(async () => rcv.requests[0]);
    expect((during.headers["service-signature"] as string).match(/v1=/g)).toHaveLength(2);
    expect(signers(during)).toEqual([first, second]);
    expect((during.headers["webhook-signature"] as string).split(" ")).toHaveLength(2);
    const headers = Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, during.headers[h] as string]));
    for (const s of [first, second]) expect(new Webhook(s).verify(during.body, headers)).toEqual(JSON.parse(during.body));

    // Past its end the old secret no longer signs, and GET says there is none.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, until.getTime() - Date.now() + 50)));
    await publish(ws);
    const after = await eventually(async () => rcv.requests[1]);
    expect(signers(after)).toEqual([second]);
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`)).json.previous_secret_expires_at).toBeNull();

    // gRPC (@grpc/grpc-js): at once (a time already past), so only the newest signs.
    const overGrpc = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, WebhookEndpointService.method.rotateWebhookEndpointSecret, {
      id: ep.id,
      previousSecretExpiresAt: { seconds: BigInt(Math.floor(Date.now() / 1000) - 1), nanos: 0 },
    }, { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` });
    expect(overGrpc.error).toBeUndefined();
    const third = overGrpc.response!.secret;
    expect(overGrpc.response!.webhookEndpoint?.previousSecretExpiresAt).toBeUndefined();
    await publish(ws);
    const atOnce = await eventually(async () => rcv.requests[2]);
    expect(verifyWebhookSignature(atOnce.body, atOnce.headers["service-signature"] as string, third)).toBe(true);
    expect((atOnce.headers["service-signature"] as string).match(/v1=/g)).toHaveLength(1);

    // msgsvc, with the default overlap of 24 hours.
    const cli = await runMsgsvc(t, ["webhooks", "rotate-secret", ep.id, "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const printed = JSON.parse(cli.stdout) as { secret: string; webhook_endpoint: { previous_secret_expires_at: string } };
    expect(printed.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Math.abs(Date.parse(printed.webhook_endpoint.previous_secret_expires_at) - Date.now() - 86_400_000)).toBeLessThan(60_000);

    // Bad input names the field and the rule.
    const tooLong = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:rotateSecret`, { previous_secret_expires_at: new Date(Date.now() + 8 * 86_400_000).toISOString() });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.details.field_violations).toEqual([{ field: "previous_secret_expires_at", description: "must be at most 7 days from now" }]);
    expect((await consoleRest("POST", `/console/v1/webhook_endpoints/whk_00000000-0000-4000-8000-000000000000:rotateSecret`, {})).status).toBe(404);
    const badCli = await runMsgsvc(t, ["webhooks", "rotate-secret", ep.id, "--expire-old-in", "soon"]);
    expect(badCli.code).not.toBe(0);
    expect(badCli.stderr).toContain("--expire-old-in");
  });

  it("sends a test event of a chosen type with sample data, recorded as a test delivery (REST, Connect, msgsvc)", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    // The endpoint selected message.delivered only: a test event of any type reaches it.
    const { webhook_endpoint: ep, secret } = await endpoint(ws, rcv.url);

    const sent = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:sendTestEvent`, { type: "message.failed" });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.json.delivery).toMatchObject({ endpoint_id: ep.id, event_type: "message.failed", status: "succeeded", attempt_count: 1, test: true });
    expect(sent.json.attempt).toMatchObject({ number: 1, trigger: "automatic", succeeded: true, http_status: 200 });
    const got = rcv.requests[0]!;
    expect(verifyWebhookSignature(got.body, got.headers["service-signature"] as string, secret)).toBe(true);
    expect(new Webhook(secret).verify(got.body, Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, got.headers[h] as string])))).toBeTruthy();
    const envelope = JSON.parse(got.body);
    expect(envelope).toMatchObject({ id: sent.json.delivery.event_id, type: "message.failed", test: true, data: { status: "failed", error: { code: 131026 } } });
    expect(got.headers["service-delivery"]).toBe(envelope.id);
    // Listed with the endpoint's deliveries, marked as a test.
    const listed = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${ep.id}`);
    expect(listed.json.data).toEqual([expect.objectContaining({ id: sent.json.delivery.id, test: true })]);

    // Connect: a receiver that fails gets the first attempt and the immediate retry; the schedule goes on.
    rcv.behave(answerStatus(500));
    const failing = await t.console(DeliveryService).sendTestEvent({ endpointId: ep.id, type: "flow.completed" });
    expect(failing.attempt?.succeeded).toBe(false);
    expect(failing.attempt?.httpStatus).toBe(500);
    expect(failing.delivery?.test).toBe(true);
    expect(failing.delivery?.attemptCount).toBe(2);
    expect(JSON.parse(rcv.requests[1]!.body)).toMatchObject({ type: "flow.completed", test: true, data: { object: "flow_response" } });
    rcv.behave(answerOk);
    await deliveriesOf(ep.id, (d) => d.find((x) => x.id === failing.delivery?.id)?.status === "succeeded");

    // msgsvc: the attempt as JSON, exit 0; a failed attempt would be exit 1 (as deliveries retry).
    const cli = await runMsgsvc(t, ["webhooks", "test", "--endpoint", ep.id, "--type", "message.received", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ attempt: { succeeded: true }, delivery: { event_type: "message.received", test: true } });

    // Bad input names the field; a disabled endpoint refuses.
    const badType = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:sendTestEvent`, { type: "message.exploded" });
    expect(badType.status).toBe(400);
    expect(badType.json.error.details.field_violations[0].field).toBe("type");
    await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:disable`, {});
    const refused = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:sendTestEvent`, { type: "message.sent" });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("failed_precondition");
  });

  it("recovers failed deliveries and events published while disabled, with a dry run, a fresh schedule, once (REST, Connect, gRPC, msgsvc)", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(503));
    const { webhook_endpoint: ep } = await endpoint(ws, rcv.url, ["message.delivered", "message.read"]);
    const start = new Date(Date.now() - 1000).toISOString();
    // Two deliveries fail (8 attempts each); then, while the endpoint is disabled, an event makes no delivery.
    const [first, second] = [await publish(ws), await publish(ws)];
    await deliveriesOf(ep.id, (d) => d.length === 2 && d.every((x) => x.status === "failed"));
    await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:disable`, {});
    const whileDisabled = await publish(ws, "message.read");
    const other = await publish(ws, "message.sent"); // a type the endpoint does not select
    const recover = (body: object) => consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:recoverDeliveries`, body);

    // Refused while disabled; bad input names the field and the rule.
    const refused = await recover({ since: start });
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("failed_precondition");
    await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:enable`, {});
    const violation = async (body: object) => (await recover(body)).json.error.details.field_violations[0];
    expect(await violation({})).toMatchObject({ field: "since" });
    expect(await violation({ since: start, until: start })).toEqual({ field: "until", description: "must be after since" });
    expect((await violation({ since: start, event_types: ["message.sent"] })).field).toBe("event_types");
    expect((await violation({ since: start, event_types: ["message.exploded"] })).field).toBe("event_types[0]");

    // A dry run counts and changes nothing (REST); event_types narrows (gRPC).
    const requests = rcv.requests.length;
    const dry = await recover({ since: start, dry_run: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.json).toEqual({ object: "delivery_recovery", recovered_count: 3, failed_count: 2, unattempted_count: 1, scanned_count: 3, dry_run: true, next_since: null });
    const narrowed = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, DeliveryService.method.recoverDeliveries, {
      endpointId: ep.id,
      since: { seconds: BigInt(Math.floor(Date.parse(start) / 1000)), nanos: 0 },
      eventTypes: ["message.read"],
      dryRun: true,
    }, { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` });
    expect(narrowed.error).toBeUndefined();
    expect(narrowed.response).toMatchObject({ recoveredCount: 1, failedCount: 0, unattemptedCount: 1, scannedCount: 1 });
    expect((await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${ep.id}`)).json.data.map((d: { status: string }) => d.status)).toEqual(["failed", "failed"]);
    expect(rcv.requests.length).toBe(requests);

    // Connect: recovers. The first recovered attempt of one delivery fails: the fresh schedule retries at once.
    let failedOnce = false;
    rcv.behave((req, res, count) => {
      if (!failedOnce && req.headers["service-delivery"] === first._id) {
        failedOnce = true;
        return answerStatus(500)(req, res, count);
      }
      answerOk(req, res, count);
    });
    const recovered = await t.console(DeliveryService).recoverDeliveries({ endpointId: ep.id, since: timestampFromDate(new Date(start)) });
    expect(recovered).toMatchObject({ recoveredCount: 3, failedCount: 2, unattemptedCount: 1, dryRun: false });
    const done = await deliveriesOf(ep.id, (d) => d.length === 3 && d.every((x) => x.status === "succeeded"));
    expect(new Set(done.map((d) => d.event_id))).toEqual(new Set([first._id, second._id, whileDisabled._id]));
    const firstAttempts = await attemptsOf(done.find((d) => d.event_id === first._id).id);
    expect(firstAttempts.slice(8).map((a) => [a.number, a.trigger, a.succeeded])).toEqual([[9, "automatic", false], [10, "automatic", true]]);
    expect((await attemptsOf(done.find((d) => d.event_id === whileDisabled._id).id)).map((a) => a.number)).toEqual([1]);
    expect(rcv.requests.some((r) => r.headers["service-delivery"] === other._id)).toBe(false);

    // msgsvc: a second run queues nothing; both runs are in the audit log.
    const again = await runMsgsvc(t, ["webhooks", "recover", "--endpoint", ep.id, "--since", start, "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ object: "delivery_recovery", recovered_count: 0, failed_count: 0, unattempted_count: 0, scanned_count: 3, dry_run: false, calls: 1 });
    const audited = await t.service.db.collection("audit_log").find({ operation: "messaging.console.v1.DeliveryService/RecoverDeliveries", "request.endpoint_id": ep.id }).toArray();
    expect(audited.map((a) => [a.outcome, a.request.dry_run])).toEqual(expect.arrayContaining([["ok", false], ["ok", true], ["failed_precondition", false]]));
    const badUntil = await runMsgsvc(t, ["webhooks", "recover", "--endpoint", ep.id, "--since", "1h", "--until", "later"]);
    expect(badUntil.code).not.toBe(0);
    expect(badUntil.stderr).toContain("--until");
  });

  it("recovers a failed delivery stored under the former id shape (all of it hashed), not a second one", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const { webhook_endpoint: ep } = await endpoint(ws, rcv.url);
    const now = new Date();
    const eventId = crypto.randomUUID(); // a version 4, as events had before ids became version 7
    const body = JSON.stringify({ id: eventId, type: "message.delivered", created_at: now.toISOString(), data: {} });
    await t.service.db.collection<StoredEvent>("events").insertOne({ _id: eventId as never, workspace_id: ws, type: "message.delivered", created_at: now, data: {}, body });
    const hex = createHash("sha256").update(`${eventId}/${ep.id}`).digest("hex");
    const formerId = `dlv_${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
    await t.service.db.collection("webhook_deliveries").insertOne({
      _id: formerId as never,
      workspace_id: ws,
      endpoint_id: ep.id,
      event_id: eventId,
      event_type: "message.delivered",
      created_at: now,
      status: "failed",
      automatic_attempts: 8,
      attempt_count: 8,
      manual_attempts: 0,
      lease_owner: null,
      last_attempt_at: now,
      last_http_status: 503,
      last_error_kind: "http_status",
      updated_at: now,
    });
    const recovered = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:recoverDeliveries`, { since: new Date(now.getTime() - 1000).toISOString() });
    expect(recovered.json).toMatchObject({ failed_count: 1, unattempted_count: 0, scanned_count: 1 });
    const done = await deliveriesOf(ep.id, (d) => d.length === 1 && d[0].status === "succeeded");
    expect(done[0].id).toBe(formerId);
    expect(rcv.requests.map((r) => r.headers["service-delivery"])).toEqual([eventId]);
  });

  it("recovers a window of more than 10,000 events in several calls (msgsvc --dry-run)", async () => {
    const ws = await t.createWorkspace();
    const { webhook_endpoint: ep } = await endpoint(ws, "http://127.0.0.1:9/unused");
    // Stored events as the event bus stores them, one millisecond apart, not published (no deliveries), after
    // the endpoint's creation (moved back a minute).
    const base = Date.now() - 60_000;
    await t.service.db.collection("webhook_endpoints").updateOne({ _id: ep.id as any }, { $set: { created_at: new Date(base - 1000) } });
    await t.service.db.collection<StoredEvent>("events").insertMany(
      Array.from({ length: 10_001 }, (_, i) => ({ _id: crypto.randomUUID(), workspace_id: ws, type: "message.delivered", created_at: new Date(base + i), data: {}, body: "{}" })) as any[],
    );
    const one = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:recoverDeliveries`, { since: new Date(base - 1).toISOString(), dry_run: true });
    expect(one.json).toMatchObject({ scanned_count: 10_000, unattempted_count: 10_000, next_since: new Date(base + 10_000).toISOString() });
    const cli = await runMsgsvc(t, ["webhooks", "recover", "--endpoint", ep.id, "--since", "2m", "--dry-run", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ recovered_count: 10_001, unattempted_count: 10_001, scanned_count: 10_001, dry_run: true, calls: 2 });
    expect(await t.service.db.collection("webhook_deliveries").countDocuments({ endpoint_id: ep.id })).toBe(0);
  });

  it("limits an endpoint's attempts per second: the rest wait their turn in order, uncounted (REST, Connect, gRPC, msgsvc)", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const created = await consoleRest("POST", `/console/v1/workspaces/${ws}/webhook_endpoints`, { name: "limited", url: rcv.url, events: ["message.delivered"], rate_limit: 5 });
    expect(created.status, created.text).toBe(200);
    const ep = created.json.webhook_endpoint;
    expect(ep.rate_limit).toBe(5);

    // Twenty events at once: at most five attempts a clock second; those further off than the lease allows to wait
    // (here 500 ms) go back to the database until their turn, and are claimed again then.
    const events: { _id: string }[] = [];
    for (let i = 0; i < 20; i++) events.push(await publish(ws));
    const done = await deliveriesOf(ep.id, (d) => d.length === 20 && d.every((x) => x.status === "succeeded"));
    expect(done.every((d) => d.attempt_count === 1)).toBe(true);
    // Every event arrived once; the attempts began in the order of the events (their turns). The order of arrival is
    // not compared: two requests of one window race over the network.
    expect(rcv.requests.map((r) => r.headers["service-delivery"]).sort()).toEqual(events.map((e) => e._id).sort());
    const eventOf = new Map(done.map((d) => [d.id, d.event_id]));
    const began = await t.service.db.collection("webhook_attempts").find({ delivery_id: { $in: [...eventOf.keys()] } }).sort({ started_at: 1, _id: 1 }).toArray();
    expect(began.map((a) => eventOf.get(a.delivery_id))).toEqual(events.map((e) => e._id));
    // At most five attempts in any window of a second, so twenty took four windows at least.
    const windows = await t.service.db.collection("rate_windows").find({ subject: `webhook:${ep.id}` }).toArray();
    expect(windows.every((w) => w.count <= 5)).toBe(true);
    expect(windows.reduce((sum, w) => sum + w.count, 0)).toBeGreaterThanOrEqual(20);
    expect(windows.filter((w) => w.count > 0).length).toBeGreaterThanOrEqual(4);
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`)).json).toMatchObject({ consecutive_failures: 0, rate_limit: 5 });

    // The retry schedule is the same: attempts waiting their turn are not attempts.
    rcv.behave(failTimes(rcv.requests.length + 2));
    const retried = await publish(ws);
    const list = await deliveriesOf(ep.id, (d) => d.find((x) => x.event_id === retried._id)?.status === "succeeded");
    const attempts = await attemptsOf(list.find((x) => x.event_id === retried._id).id);
    expect(attempts.map((a) => [a.number, a.succeeded])).toEqual([[1, false], [2, false], [3, true]]);

    // Connect clears it (named in update_mask, unset); msgsvc sets it; bad values name the field and the rule.
    const cleared = await t.console(WebhookEndpointService).updateWebhookEndpoint({ webhookEndpoint: { id: ep.id }, updateMask: { paths: ["rate_limit"] } });
    expect(cleared.webhookEndpoint?.rateLimit).toBeUndefined();
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`)).json.rate_limit).toBeNull();
    const cli = await runMsgsvc(t, ["webhooks", "update", ep.id, "--rate-limit", "50", "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout).rate_limit).toBe(50);
    const overGrpc = await grpcJsCall(`127.0.0.1:${t.service.consolePort}`, WebhookEndpointService.method.createWebhookEndpoint, {
      workspaceId: ws, name: "zero", url: rcv.url, events: ["message.delivered"], rateLimit: 0,
    }, { authorization: `Bearer ${TEST_CONSOLE_TOKEN}` });
    expect(overGrpc.error?.code).toBe(3);
    const tooHigh = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${ep.id}?update_mask=rate_limit`, { rate_limit: 10_001 });
    expect(tooHigh.status).toBe(400);
    expect(tooHigh.json.error.details.field_violations).toEqual([{ field: "webhook_endpoint.rate_limit", description: "must be from 1 to 10000" }]);
    const badCli = await runMsgsvc(t, ["webhooks", "update", ep.id, "--rate-limit", "fast"]);
    expect(badCli.code).not.toBe(0);
    expect(badCli.stderr).toContain("--rate-limit");
  });

  it("retries on the schedule with the same bytes and id, and a fresh signature each time", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(failTimes(3));
    const { webhook_endpoint: ep, secret } = await endpoint(ws, rcv.url);
    const event = await publish(ws);
    const [delivery] = await deliveriesOf(ep.id, (d) => d[0]?.status === "succeeded");
    expect(delivery.attempt_count).toBe(4);
    expect(rcv.requests).toHaveLength(4);
    for (const request of rcv.requests) {
      expect(request.body).toBe(event.body);
      expect(request.headers["service-delivery"]).toBe(event._id);
      expect(verifyWebhookSignature(request.body, request.headers["service-signature"] as string, secret)).toBe(true);
    }
    const attempts = await attemptsOf(delivery.id);
    expect(attempts.map((a) => [a.number, a.trigger, a.http_status, a.error_kind, a.succeeded])).toEqual([
      [1, "automatic", 500, "http_status", false],
      [2, "automatic", 500, "http_status", false],
      [3, "automatic", 500, "http_status", false],
      [4, "automatic", 200, null, true],
    ]);
    expect(attempts[0].response_body).toBe("status 500 from the test receiver");
    expect(attempts[0].error_message).toBe("Answered 500");
    // The first retry is immediate; the next waits for the schedule's 100 ms.
    const startedAt = attempts.map((a) => Date.parse(a.started_at));
    expect(startedAt[2]! - startedAt[1]!).toBeGreaterThanOrEqual(100);
    expect(Date.parse(attempts[1].next_attempt_at)).toBeGreaterThanOrEqual(startedAt[1]! + 100);
    // A success resets the endpoint's count of failures.
    const after = await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`);
    expect(after.json).toMatchObject({ consecutive_failures: 0, enabled: true });
  });

  it("fails a delivery after the first attempt and seven retries", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(503));
    const { webhook_endpoint: ep } = await endpoint(ws, rcv.url);
    await publish(ws);
    const [delivery] = await deliveriesOf(ep.id, (d) => d[0]?.status === "failed");
    expect(delivery).toMatchObject({ attempt_count: 8, last_http_status: 503, last_error_kind: "http_status", next_attempt_at: null });
    const attempts = await attemptsOf(delivery.id);
    expect(attempts.map((a) => a.number)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(attempts[7].next_attempt_at).toBeNull();
    expect(rcv.requests).toHaveLength(8);
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`)).json.consecutive_failures).toBe(8);
  });
});

describe("manual retry (spec §Delivery rules 3)", () => {
  it("makes one attempt now, recorded as manual, with a fresh signature; a success ends the schedule", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(500));
    const { webhook_endpoint: ep, secret } = await endpoint(ws, rcv.url);
    await publish(ws);
    const [delivery] = await deliveriesOf(ep.id, (d) => d[0]?.status === "failed");

    rcv.behave(answerOk);
    const res = await consoleRest("POST", `/console/v1/deliveries/${delivery.id}:retry`, {});
    expect(res.status, res.text).toBe(200);
    expect(res.json.attempt).toMatchObject({ id: `${delivery.id}.m1`, trigger: "manual", number: 1, http_status: 200, succeeded: true, next_attempt_at: null });
    expect(res.json.delivery).toMatchObject({ status: "succeeded", attempt_count: 9 });
    expect(rcv.requests).toHaveLength(9);
    const manual = rcv.requests[8]!;
    expect(verifyWebhookSignature(manual.body, manual.headers["service-signature"] as string, secret)).toBe(true);

    // Retried again by hand: numbered on.
    const again = await consoleRest("POST", `/console/v1/deliveries/${delivery.id}:retry`, {});
    expect(again.json.attempt.id).toBe(`${delivery.id}.m2`);
  });

  it("ends the automatic schedule of a pending delivery when the manual attempt succeeds", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(500));
    const { webhook_endpoint: ep } = await endpoint(ws, rcv.url);
    await publish(ws);
    const [delivery] = await deliveriesOf(ep.id, (d) => d[0]?.attempt_count >= 2);
    rcv.behave(answerOk);
    const res = await consoleRest("POST", `/console/v1/deliveries/${delivery.id}:retry`, {});
    expect(res.json.delivery.status).toBe("succeeded");
    const manualEnd = Date.parse(res.json.attempt.started_at) + res.json.attempt.duration_ms;
    // The stored delivery is settled: nothing is due, so no automatic attempt starts after the manual one
    // (one already in flight when it was made may still finish and be recorded).
    const stored = await t.service.db.collection("webhook_deliveries").findOne({ _id: delivery.id as never });
    expect(stored).toMatchObject({ status: "succeeded", manual_attempts: 1 });
    expect(stored?.due_at).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const automatic = (await attemptsOf(delivery.id)).filter((a) => a.trigger === "automatic");
    expect(automatic.filter((a) => Date.parse(a.started_at) > manualEnd).length).toBeLessThanOrEqual(1);
    expect(automatic.length).toBeLessThan(8);
    const after = (await consoleRest("GET", `/console/v1/deliveries/${delivery.id}`)).json;
    expect(after).toMatchObject({ status: "succeeded", next_attempt_at: null });
    expect(after.attempt_count).toBeGreaterThanOrEqual(automatic.length);
  });
});

describe("auto-disable after twenty consecutive failures (spec §States and transitions)", () => {
  it("counts failures across deliveries exactly, disables once, pauses, and resumes when enabled", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(500));
    const { webhook_endpoint: ep } = await endpoint(ws, rcv.url);
    // Fifteen events at once: thirty failures race for the count (each first attempt and its immediate retry).
    const events = await Promise.all(Array.from({ length: 15 }, () => publish(ws)));
    const disabled = await eventually(async () => {
      const res = await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`);
      return res.json.enabled === false ? res.json : undefined;
    });
    expect(disabled.consecutive_failures).toBe(20);
    expect(disabled.disabled_reason).toMatch(/^Disabled after 20 consecutive failed attempts; the last at \d{4}-.+Z: Answered 500$/);
    expect(disabled.disabled_at).toMatch(/Z$/);

    // Exactly one attempt disabled it.
    const attempts = await eventually(async () => {
      const all = await t.service.db.collection("webhook_attempts").find({ endpoint_id: ep.id }).toArray();
      return all.length >= 20 ? all : undefined;
    });
    expect(attempts.filter((a) => a.disabled_endpoint)).toHaveLength(1);

    // Visible in the public API.
    const key = await t.createKey(ws, { scopes: ["webhooks:read"] });
    const listed = await rest(t.publicUrl, "GET", "/v1/webhook", { key: key.secret });
    expect(listed.json.data[0]).toMatchObject({ id: ep.id, enabled: false, disabled_reason: disabled.disabled_reason });

    // Nothing is attempted while disabled: new events make no deliveries, retries wait.
    const settled = rcv.requests.length;
    const probe = await receiver();
    await endpoint(ws, probe.url);
    const whileDisabled = await publish(ws);
    await eventually(async () => (probe.requests.length === 1 ? true : undefined));
    await eventually(async () =>
      (await t.service.db.collection("webhook_deliveries").countDocuments({ endpoint_id: ep.id, status: "disabled" })) > 0 ? true : undefined,
    );
    expect(rcv.requests.length).toBe(settled);
    const manual = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${ep.id}`);
    const refused = await consoleRest("POST", `/console/v1/deliveries/${manual.json.data[0].id}:retry`, {});
    expect(refused.status).toBe(409);
    expect(refused.json.error.code).toBe("failed_precondition");

    // A person enables it: the count starts again and the paused deliveries go out.
    rcv.behave(answerOk);
    const enabled = await consoleRest("POST", `/console/v1/webhook_endpoints/${ep.id}:enable`, {});
    expect(enabled.json).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null, consecutive_failures: 0 });
    const ids = new Set(events.map((e) => e._id));
    await eventually(async () => {
      const res = await consoleRest("GET", `/console/v1/deliveries?endpoint_id=${ep.id}&page_size=100`);
      return res.json.data.length === 15 && res.json.data.every((d: { status: string }) => d.status === "succeeded") ? true : undefined;
    }, 20_000).catch(async (err: Error) => {
      // What was left, to tell a slow machine from a delivery nobody claims.
      const left = await t.service.db.collection("webhook_deliveries").find({ endpoint_id: ep.id, status: { $ne: "succeeded" } }).toArray();
      const claimJobs = await t.service.db.collection("jobs").find({ name: { $regex: "^webhooks\\.claim:" } }).toArray();
      throw new Error(`${err.message}: not succeeded ${JSON.stringify(left)}; claim jobs ${JSON.stringify(claimJobs)}; now ${new Date().toISOString()}`);
    });
    expect(rcv.requests.filter((r) => r.headers["service-delivery"] === whileDisabled._id)).toHaveLength(0);
    expect(new Set(rcv.requests.map((r) => r.headers["service-delivery"]))).toEqual(ids);
  });
});

describe("GET /v1/webhook (spec §Webhook endpoint)", () => {
  it("lists the workspace's endpoints with exactly the spec's fields, over REST and Connect", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver();
    const created = await endpoint(ws, rcv.url, ["message.delivered", "flow.completed"], "orders");
    const other = await t.createWorkspace();
    await endpoint(other, rcv.url);
    const key = await t.createKey(ws, { scopes: ["webhooks:read"] });
    const res = await rest(t.publicUrl, "GET", "/v1/webhook", { key: key.secret });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      object: "list",
      total: 1,
      data: [
        {
          id: created.webhook_endpoint.id,
          object: "webhook",
          name: "orders",
          url: rcv.url,
          secret_hint: created.webhook_endpoint.secret_hint,
          events: ["message.delivered", "flow.completed"],
          enabled: true,
          disabled_reason: null,
          last_success_at: null,
        },
      ],
    });
    expect(res.json.data[0].id).toMatch(/^whk_[0-9a-f-]{36}$/);
    const viaConnect = await clientFor(WebhookService, "connect-json", t.publicUrl, key.secret).listWebhooks({});
    expect(viaConnect.data.map((w) => w.id)).toEqual([created.webhook_endpoint.id]);
  });
});

describe("console endpoints", () => {
  it("updates URL, name and events; lists; deletes and cancels pending deliveries", async () => {
    const ws = await t.createWorkspace();
    const first = await receiver(answerStatus(500));
    const second = await receiver();
    const { webhook_endpoint: ep } = await endpoint(ws, first.url);
    const updated = await consoleRest("PATCH", `/console/v1/webhook_endpoints/${ep.id}`, { url: second.url, events: ["message.read"] });
    expect(updated.json).toMatchObject({ url: second.url, events: ["message.read"], name: "test endpoint" });
    await publish(ws, "message.read");
    await eventually(async () => (second.requests.length === 1 ? true : undefined));

    const listed = await t.console(WebhookEndpointService).listWebhookEndpoints({ workspaceId: ws });
    expect(listed.data.map((e) => e.id)).toEqual([ep.id]);

    await consoleRest("PATCH", `/console/v1/webhook_endpoints/${ep.id}`, { url: first.url, events: ["message.delivered"] });
    await publish(ws);
    const [pending] = await deliveriesOf(ep.id, (d) => d.some((x) => x.event_type === "message.delivered"));
    const deleted = await consoleRest("DELETE", `/console/v1/webhook_endpoints/${ep.id}`);
    expect(deleted.status).toBe(200);
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${ep.id}`)).status).toBe(404);
    const after = await eventually(async () => {
      const res = await consoleRest("GET", `/console/v1/deliveries/${pending.id}`);
      return res.json.status === "canceled" ? res.json : undefined;
    });
    expect(after.next_attempt_at).toBeNull();
  });
});

/** Runs the msgsvc bin against the test service. */
const msgsvc = (args: string[], token?: string) => runMsgsvc(t, args, token);

describe("msgsvc webhooks, deliveries, attempts", () => {
  it("manages an endpoint, lists its deliveries and attempts, and retries one", async () => {
    const ws = await t.createWorkspace();
    const rcv = await receiver(answerStatus(500));
    const created = await msgsvc(["webhooks", "create", "--workspace", ws, "--name", "cli", "--url", rcv.url, "--events", "message.delivered,flow.completed"]);
    expect(created.code, created.stderr).toBe(0);
    const secret = /Signing secret \(shown once, store it now\):\n(whsec_[A-Za-z0-9+/]{43}=)\n/.exec(created.stdout)?.[1];
    expect(secret).toBeDefined();
    const id = /(whk_[0-9a-f-]{36})/.exec(created.stdout)?.[1] as string;

    const listed = await msgsvc(["webhooks", "list", "--workspace", ws]);
    expect(listed.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+URL\s+EVENTS\s+ENABLED/);
    expect(listed.stdout).toContain("message.delivered,flow.completed");
    expect(listed.stdout).not.toContain(secret);

    const updated = await msgsvc(["webhooks", "update", id, "--name", "renamed", "--events", "message.delivered", "--json"]);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name: "renamed", events: ["message.delivered"] });

    const event = await publish(ws);
    const [delivery] = await deliveriesOf(id, (d) => d[0]?.status === "failed");
    const deliveries = await msgsvc(["deliveries", "list", "--endpoint", id]);
    expect(deliveries.stdout).toMatch(new RegExp(`${delivery.id}\\s+message.delivered\\s+failed\\s+8\\s+500\\s+http_status`));
    expect(JSON.parse((await msgsvc(["deliveries", "list", "--event", event._id, "--json"])).stdout).data[0].id).toBe(delivery.id);
    const attempts = await msgsvc(["attempts", "list", "--delivery", delivery.id, "--json"]);
    expect(JSON.parse(attempts.stdout)).toMatchObject({ object: "list", total: 8, next_page_token: null });

    rcv.behave(answerOk);
    const retried = await msgsvc(["deliveries", "retry", delivery.id]);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/manual\s+1\s+/);
    expect(retried.stdout).toContain(`delivery ${delivery.id} is succeeded`);

    const disabled = await msgsvc(["webhooks", "disable", id, "--reason", "rotating the server", "--json"]);
    expect(JSON.parse(disabled.stdout)).toMatchObject({ enabled: false, disabled_reason: "rotating the server" });
    expect(JSON.parse((await msgsvc(["webhooks", "enable", id, "--json"])).stdout).enabled).toBe(true);
    expect((await msgsvc(["webhooks", "delete", id])).stdout).toBe(`deleted ${id}\n`);
    const gone = await msgsvc(["webhooks", "get", id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^error: not_found: No webhook_endpoint with id/);
    const usage = await msgsvc(["deliveries", "list"]);
    expect(usage).toMatchObject({ code: 2, stderr: "error: give --endpoint or --event\n" });
  }, 60_000); // a dozen CLI processes, each starting Node
});

describe("msgsvc webhooks listen", () => {
  it("receives the workspace's events on a local receiver, verifies them, and deletes its endpoint on Ctrl-C", async () => {
    const ws = await t.createWorkspace();
    const child = spawnMsgsvc(t, ["webhooks", "listen", "--workspace", ws, "--events", "message.delivered"]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      const [, url, id] = await eventually(async () => /^Listening at (http:\/\/127\.0\.0\.1:\d+\/webhooks) as endpoint (whk_[0-9a-f-]{36})/m.exec(stdout) ?? undefined);
      const endpoint = await consoleRest("GET", `/console/v1/webhook_endpoints/${id}`);
      expect(endpoint.json).toMatchObject({ url, events: ["message.delivered"], enabled: true });

      const event = await publish(ws);
      await publish(ws, "message.read"); // not selected: never printed
      const line = await eventually(async () => stdout.split("\n").find((l) => l.includes(event._id)));
      expect(line).toMatch(new RegExp(`^\\S+Z  message\\.delivered  ${event._id}  signature ok  → 200$`));
      const [delivery] = await deliveriesOf(id as string, (d) => d[0]?.status === "succeeded");
      expect(delivery.attempt_count).toBe(1);

      // A forged delivery is refused with the verifier's reason.
      const forged = await fetch(url as string, {
        method: "POST",
        headers: { "service-signature": `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}`, "service-event": "message.delivered", "service-delivery": "forged" },
        body: "{}",
      });
      expect(forged.status).toBe(400);
      expect(await forged.text()).toBe("signature refused: signature_mismatch");
      await eventually(async () => (stdout.includes("message.delivered  forged  signature refused: signature_mismatch") ? true : undefined));
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe("");
    expect(stdout).not.toContain("message.read");
    const id = /endpoint (whk_[0-9a-f-]{36})/.exec(stdout)?.[1];
    expect(stdout).toContain(`deleted ${id}`);
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${id}`)).status).toBe(404);
  }, 60_000);
});

describe("msgsvc webhooks listen --forward-to", () => {
  it("prints the signing secret, forwards each verified delivery with its headers and raw body, relays the app's answer, and keeps the endpoint with --keep", async () => {
    const ws = await t.createWorkspace();
    const app = await startReceiver(answerStatus(500)); // the developer's app, failing at first
    const child = spawnMsgsvc(t, ["webhooks", "listen", "--workspace", ws, "--events", "message.delivered", "--forward-to", `http://127.0.0.1:${app.port}/hooks`, "--keep"]);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    let id = "";
    try {
      const [, secret] = await eventually(async () => /^Signing secret: (whsec_\S+)$/m.exec(stdout) ?? undefined);
      id = /endpoint (whk_[0-9a-f-]{36})/.exec(stdout)?.[1] as string;
      const appUrl = `http://127.0.0.1:${app.port}/hooks`;
      // The lines may come in separate chunks of the pipe.
      await eventually(async () => (stdout.includes(`Forwarding verified deliveries to ${appUrl}`) ? true : undefined));

      const event = await publish(ws);
      // The app's 500 is the service's answer: the delivery is retried, and each attempt is forwarded.
      const failed = await eventually(async () => stdout.split("\n").find((l) => l.includes(event._id)));
      expect(failed).toMatch(new RegExp(`^\\S+Z  message\\.delivered  ${event._id}  signature ok  → ${appUrl} 500 in \\d+ ms$`));
      app.behave(answerOk);
      await deliveriesOf(id, (d) => d[0]?.status === "succeeded");
      const ok = await eventually(async () => stdout.split("\n").find((l) => l.includes(event._id) && l.includes(" 200 in ")));
      expect(ok).toBeDefined();

      const received = app.requests.at(-1)!;
      expect(received).toMatchObject({ method: "POST", path: "/hooks" });
      expect(received.body).toBe(event.body); // raw bytes as the service sent them
      expect(received.headers["service-delivery"]).toBe(event._id);
      expect(received.headers["service-event"]).toBe("message.delivered");
      expect(() => verifyWebhookSignature(Buffer.from(received.body), received.headers["service-signature"] as string, secret as string)).not.toThrow();
    } finally {
      child.kill("SIGINT");
      await app.close();
    }
    expect(await exited).toBe(0);
    expect(stderr).toBe("");
    expect(stdout).not.toContain("deleted");
    expect((await consoleRest("GET", `/console/v1/webhook_endpoints/${id}`)).status).toBe(200);
  }, 60_000);

  it("answers 502 and says why when the app cannot be reached", async () => {
    const ws = await t.createWorkspace();
    const closed = await startReceiver();
    const url = `http://127.0.0.1:${closed.port}/gone`;
    await closed.close();
    const child = spawnMsgsvc(t, ["webhooks", "listen", "--workspace", ws, "--events", "message.delivered", "--forward-to", url]);
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await eventually(async () => (stdout.includes("Signing secret:") ? true : undefined));
      const event = await publish(ws);
      const line = await eventually(async () => stdout.split("\n").find((l) => l.includes(event._id)));
      expect(line).toMatch(/→ \S+ 502 \(ECONNREFUSED\) in \d+ ms$/);
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
  }, 60_000);

  it("refuses a --forward-to that is not an http URL", async () => {
    const res = await msgsvc(["webhooks", "listen", "--workspace", "x", "--forward-to", "localhost:3000"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("--forward-to: must be");
  });
});

describe("claims on time: a delivery is claimed when it falls due, not at the next claim", () => {
  // A claim interval of 8 s: without the wake-up, each attempt below would come up to 8 s after its instant
  // (each within a second by chance one time in eight); with it, within milliseconds. A second is the margin.
  let timed: TestService;
  beforeAll(async () => {
    timed = await createTestService({
      config: {
        webhookAllowHttpLoopback: true,
        webhookAllowPrivateTargets: true,
        webhookRetrySchedule: [0, 500, 600_000],
        webhookAttemptTimeoutMs: 1000,
        webhookLeaseMs: 3000,
        jobPollIntervalMs: 100,
        webhookClaimIntervalMs: 8000,
      },
    });
  });
  afterAll(() => timed.close());

  it("attempts a retry this process scheduled, and a delivery another writer made due, within a second of their instants", async () => {
    const workspaceId = await timed.createWorkspace();
    const rcv = await receiver(failTimes(3));
    const created = await rest(timed.consoleUrl, "POST", `/console/v1/workspaces/${workspaceId}/webhook_endpoints`, {
      key: TEST_CONSOLE_TOKEN,
      body: { name: "on time", url: rcv.url, events: ["message.delivered"] },
    });
    expect(created.status, created.text).toBe(200);
    await timed.service.events.publish({ workspaceId, type: "message.delivered", data: { n: 1 } });
    // Attempt 1 and the immediate retry fail; attempt 3 is due 500 ms after attempt 2 ended, and fails too.
    const third = await eventually(async () => (rcv.requests.length === 3 ? rcv.requests[2] : undefined), 10_000);
    const delivery = await eventually(async () => {
      const res = await rest(timed.consoleUrl, "GET", `/console/v1/deliveries?endpoint_id=${created.json.webhook_endpoint.id}`, { key: TEST_CONSOLE_TOKEN });
      return res.json.data[0]?.attempt_count === 3 ? (res.json.data[0] as { id: string }) : undefined;
    });
    const attempts = ((await rest(timed.consoleUrl, "GET", `/console/v1/deliveries/${delivery.id}/attempts`, { key: TEST_CONSOLE_TOKEN })).json.data as any[]).reverse();
    const retryDue = Date.parse(attempts[1].next_attempt_at);
    expect(third.at - retryDue).toBeGreaterThanOrEqual(0);
    expect(third.at - retryDue).toBeLessThan(1000);

    // Its next retry is 10 minutes away; another writer (here: the test) makes it due 8.5 s from now, after the
    // next claim (every 8 s), whose look-ahead finds it coming and wakes then.
    const mongo = await new MongoClient(inject("mongoUri")).connect();
    try {
      const dueAt = new Date(Date.now() + 8500);
      const changed = await mongo
        .db(timed.databaseName)
        .collection<{ _id: string; due_at?: Date }>("webhook_deliveries")
        .updateOne({ _id: delivery.id, lease_owner: null }, { $set: { due_at: dueAt } });
      expect(changed.modifiedCount).toBe(1);
      const fourth = await eventually(async () => (rcv.requests.length === 4 ? rcv.requests[3] : undefined), 20_000);
      expect(fourth.at - dueAt.getTime()).toBeGreaterThanOrEqual(0);
      // Well before the claim after next (8 s on): the wake-up took it, not a claim (a generous bound for a busy machine).
      expect(fourth.at - dueAt.getTime()).toBeLessThan(4000);
    } finally {
      await mongo.close();
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(rcv.requests).toHaveLength(4);
  });
});
