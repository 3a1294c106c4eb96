import type { StoredEvent } from "../src/events/event-bus.js";
import { createHmac } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SenderService as ConsoleSenderService, ThroughputSource } from "../gen/messaging/console/v1/senders_pb.js";
import { WorkspaceService } from "../gen/messaging/console/v1/workspaces_pb.js";
import { createLogger } from "../src/shared/logger.js";
import { rest } from "./helpers/clients.js";
import { startFakeGraphApi } from "./helpers/fake-graph-api.js";
import { createSender, createTemplate, FAST_MESSAGING } from "./helpers/messaging.js";
import { createTestService, eventually, TEST_CONSOLE_TOKEN, type TestService } from "./helpers/test-service.js";

/*
 * The WhatsApp Cloud API adapter against a local stand-in for the Graph API,
 * with payloads as Meta documents them:
 * - send: https://developers.facebook.com/docs/whatsapp/cloud-api/guides/send-message-templates
 *   and the messages endpoint's answer https://developers.facebook.com/docs/whatsapp/cloud-api/reference/messages
 * - errors: https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes
 * - callbacks: https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/status/
 *   and .../webhooks/reference/messages/text/
 * - verification and signatures: https://developers.facebook.com/docs/graph-api/webhooks/getting-started
 * - a number's throughput level (GET /{version}/{phone-number-id}?fields=throughput):
 *   https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput
 */

const APP_SECRET = "test-app-secret-0123456789";
const VERIFY_TOKEN = "verify-token-0123";
const PHONE_NUMBER_ID = "106540352242922";
const DISPLAY_NUMBER = "15550783881";

let t: TestService;
let graph: Awaited<ReturnType<typeof startFakeGraphApi>>;
let workspaceId: string;
let key: { id: string; secret: string };
let senderId: string;
let templateId: string;
let flowTemplateId: string;
/** The service's log lines at warn and above. */
const logLines: { level: number; msg: string; [field: string]: unknown }[] = [];

beforeAll(async () => {
  graph = await startFakeGraphApi((req, calls) => {
    const to: string = req.body?.to ?? "";
    if (to.endsWith("0400")) {
      return {
        status: 400,
        body: {
          error: {
            message: "(#132001) Template name does not exist in the translation",
            type: "OAuthException",
            code: 132001,
            error_data: { messaging_product: "whatsapp", details: "template name (verification_code) does not exist in en" },
            fbtrace_id: "AbCdEfGhIjK",
          },
        },
      };
    }
    if (to.endsWith("0503") && calls === 1) {
      return { status: 503, body: { error: { message: "(#131016) Service unavailable", type: "OAuthException", code: 131016, fbtrace_id: "AbC" } } };
    }
    return undefined;
  });
  graph.throughput.set(PHONE_NUMBER_ID, "STANDARD");
  const logSink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) logLines.push(JSON.parse(line));
      done();
    },
  });
  t = await createTestService({
    logger: createLogger("warn", "whatsapp-test", logSink),
    config: {
      ...FAST_MESSAGING,
      logLevel: "error",
      network: "whatsapp",
      whatsappGraphUrl: graph.url,
      whatsappGraphVersion: "v23.0",
      whatsappAccessToken: "EAAG-test-access-token",
      whatsappAppSecret: APP_SECRET,
      whatsappVerifyToken: VERIFY_TOKEN,
    },
  });
  workspaceId = await t.createWorkspace("WhatsApp", 50);
  key = await t.createKey(workspaceId, { scopes: ["messages:send", "messages:read"] });
  senderId = await createSender(t, workspaceId, DISPLAY_NUMBER, PHONE_NUMBER_ID);
  templateId = await createTemplate(t, workspaceId);
  flowTemplateId = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}, please sign up", flowId: "1234567890" });
});
afterAll(async () => {
  await t.close();
  await graph.close();
});

const send = (to: string, template = templateId, variables: Record<string, string> = { name: "Ada", code: "123456" }) =>
  rest(t.publicUrl, "POST", "/v1/messages", { key: key.secret, body: { to, sender: senderId, template: { id: template, variables } } });
const stored = (id: string) => t.service.db.collection("messages").findOne({ _id: id as never });
const until = <T>(f: () => Promise<T | null | undefined | false>) => eventually(async () => (await f()) || undefined);
const eventsOf = (messageId: string) => t.service.db.collection<StoredEvent>("events").find({ "data.message_id": messageId }).toArray();
/** Waits until dispatch is complete (message.sent stored), then returns the stored message. */
const dispatched = (id: string) =>
  until(async () => (await t.service.db.collection<StoredEvent>("events").countDocuments({ type: "message.sent", "data.message_id": id })) > 0 && stored(id));
const balance = async () => Number((await t.console(WorkspaceService).getWorkspace({ id: workspaceId })).workspace!.creditBalance);

/** Posts a callback to the service's WhatsApp endpoint, signed as Meta signs it (X-Hub-Signature-256). */
function callback(payload: unknown, signature?: string) {
  const raw = JSON.stringify(payload);
  const sig = signature ?? `sha256=${createHmac("sha256", APP_SECRET).update(raw).digest("hex")}`;
  return rest(t.publicUrl, "POST", "/network/whatsapp/webhook", { rawBody: raw, headers: { "x-hub-signature-256": sig, "content-type": "application/json" } });
}

/** A status callback as in Meta's status webhook reference. */
function statusPayload(wamid: string, status: string, timestamp: number, recipient: string, extra: Record<string, unknown> = {}) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "102290129340398",
        changes: [
          {
            value: {
              messaging_product: "whatsapp",
              metadata: { display_phone_number: DISPLAY_NUMBER, phone_number_id: PHONE_NUMBER_ID },
              statuses: [
                {
                  id: wamid,
                  status,
                  timestamp: String(timestamp),
                  recipient_id: recipient,
                  pricing: { billable: true, pricing_model: "PMP", category: "utility" },
                  ...extra,
                },
              ],
            },
            field: "messages",
          },
        ],
      },
    ],
  };
}

describe("sending through the Graph API", () => {
  it("posts the documented template body with the bearer token and records the wamid", async () => {
    const res = await send("16505551234");
    expect(res.status).toBe(200);
    const id = res.json.message_id;
    const message = await until(async () => (await stored(id))?.status === "sent" && stored(id));
    const request = graph.requests.find((r) => r.body?.biz_opaque_callback_data === id)!;
    expect(request.method).toBe("POST");
    expect(request.path).toBe(`/v23.0/${PHONE_NUMBER_ID}/messages`);
    expect(request.authorization).toBe("Bearer EAAG-test-access-token");
    expect(request.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "16505551234",
      type: "template",
      biz_opaque_callback_data: id,
      template: {
        name: "verification_code",
        language: { code: "en" },
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", parameter_name: "name", text: "Ada" },
              { type: "text", parameter_name: "code", text: "123456" },
            ],
          },
        ],
      },
    });
    expect(message!.wa_message_id).toMatch(/^wamid\./);
    expect(message!.status).toBe("sent");
    expect((await until(async () => (await eventsOf(id)).length > 0 && eventsOf(id)))!.map((e) => e.type)).toEqual(["message.sent"]);
  });

  it("carries the flow token in a flow button, generating one when none is given", async () => {
    const res = await send("16505551235", flowTemplateId, { name: "Bo" });
    expect(res.json.flow_token).toMatch(/^[0-9a-f-]{36}$/);
    const request = await until(async () => graph.requests.find((r) => r.body?.biz_opaque_callback_data === res.json.message_id));
    expect(request.body.template.components[1]).toEqual({
      type: "button",
      sub_type: "flow",
      index: "0",
      parameters: [{ type: "action", action: { flow_token: res.json.flow_token } }],
    });
  });

  it("fails and refunds a message the Graph API refuses for good (132001)", async () => {
    const before = await balance();
    const res = await send("16505550400");
    const failed = await until(async () => (await stored(res.json.message_id))?.status === "failed" && stored(res.json.message_id));
    expect(failed!.error).toEqual({ code: 132001, title: "Template name does not exist in the translation" });
    await until(async () => (await balance()) === before);
    expect(graph.requests.filter((r) => r.body?.biz_opaque_callback_data === res.json.message_id)).toHaveLength(1);
  });

  it("retries an outage (503, 131016) and then sends once", async () => {
    const res = await send("16505550503");
    const sent = await until(async () => (await stored(res.json.message_id))?.status === "sent" && stored(res.json.message_id));
    expect(sent!.dispatch).toMatchObject({ attempts: 2, state: "done" });
    expect(graph.requests.filter((r) => r.body?.biz_opaque_callback_data === res.json.message_id)).toHaveLength(2);
  });
});

describe("the callback endpoint", () => {
  it("answers Meta's verification handshake only with the verify token", async () => {
    const ok = await rest(t.publicUrl, "GET", `/network/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1158201444`);
    expect(ok.status).toBe(200);
    expect(ok.text).toBe("1158201444");
    const wrong = await rest(t.publicUrl, "GET", "/network/whatsapp/webhook?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1158201444");
    expect(wrong.status).toBe(403);
    expect(wrong.text).not.toContain("1158201444");
  });

  it("refuses callbacks with a missing or wrong X-Hub-Signature-256 and stores nothing", async () => {
    const payload = statusPayload("wamid.forged", "delivered", 1750857384, "16505551234");
    const wrong = await callback(payload, `sha256=${createHmac("sha256", "another-secret").update(JSON.stringify(payload)).digest("hex")}`);
    expect(wrong.status).toBe(401);
    expect(wrong.json.error.code).toBe("unauthenticated");
    expect((await callback(payload, "")).status).toBe(401);
    expect(await t.service.db.collection("message_reports").countDocuments({ network_message_id: "wamid.forged" })).toBe(0);
  });

  it("reconciles statuses that arrive out of order and twice", async () => {
    const res = await send("16505551236");
    const id = res.json.message_id;
    const { wa_message_id: wamid } = (await dispatched(id))!;
    const t0 = 1795400000;
    expect((await callback(statusPayload(wamid, "read", t0 + 20, "16505551236"))).status).toBe(200);
    expect((await callback(statusPayload(wamid, "delivered", t0 + 10, "16505551236"))).status).toBe(200);
    expect((await callback(statusPayload(wamid, "delivered", t0 + 10, "16505551236"))).status).toBe(200);
    const message = (await rest(t.publicUrl, "GET", `/v1/messages/${id}`, { key: key.secret })).json;
    expect(message).toMatchObject({ status: "read", delivered_at: "2026-11-23T02:13:30.000Z", read_at: "2026-11-23T02:13:40.000Z" });
    const events = await eventsOf(id);
    expect(events.map((e) => e.type).sort()).toEqual(["message.delivered", "message.read", "message.sent"]);
    expect(events.find((e) => e.type === "message.delivered")!.data).toMatchObject({ occurred_at: "2026-11-23T02:13:30.000Z", wa_message_id: wamid });
  });

  it("applies a burst of statuses for many messages at once: each status once, each repeat counted", async () => {
    const recipients = ["16505551240", "16505551241", "16505551242", "16505551243", "16505551244"];
    const sent = await Promise.all(
      recipients.map(async (to) => {
        const id = (await send(to)).json.message_id as string;
        return { to, id, wamid: (await dispatched(id))!.wa_message_id as string };
      }),
    );
    const t0 = 1795400200;
    // Everything at once, so that reports share batches: delivered twice and read once per message.
    const answers = await Promise.all(
      sent.flatMap(({ to, wamid }) => [
        callback(statusPayload(wamid, "delivered", t0 + 1, to)),
        callback(statusPayload(wamid, "read", t0 + 2, to)),
        callback(statusPayload(wamid, "delivered", t0 + 1, to)),
      ]),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    for (const { id } of sent) {
      const message = await until(async () => {
        const m = await stored(id);
        return m?.events_pending?.length === 0 && m;
      });
      expect(message).toMatchObject({ status: "read", duplicate_reports: 1, delivered_at: new Date((t0 + 1) * 1000), read_at: new Date((t0 + 2) * 1000) });
      expect([...message.reports].sort()).toEqual(["delivered", "read", "sent"]);
      expect((await eventsOf(id)).map((e) => e.type).sort()).toEqual(["message.delivered", "message.read", "message.sent"]);
    }
  });

  it("turns a failed status with Meta's errors into message.failed and a refund", async () => {
    const before = await balance();
    const res = await send("16505551237");
    const { wa_message_id: wamid } = (await dispatched(res.json.message_id))!;
    const failed = statusPayload(wamid, "failed", 1795400100, "16505551237", {
      errors: [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable", error_data: { details: "Message Undeliverable." } }],
    });
    expect((await callback(failed)).status).toBe(200);
    const message = (await rest(t.publicUrl, "GET", `/v1/messages/${res.json.message_id}`, { key: key.secret })).json;
    expect(message).toMatchObject({ status: "failed", error: { code: 131026, title: "Message undeliverable" }, failed_at: "2026-11-23T02:15:00.000Z" });
    expect(await balance()).toBe(before);
    expect((await eventsOf(res.json.message_id)).find((e) => e.type === "message.failed")!.data.error).toEqual({ code: 131026, title: "Message undeliverable", reason: null });
  });

  it("records a text reply as an inbound message and fires message.received", async () => {
    const res = await send("16315551181");
    const { wa_message_id: wamid } = (await dispatched(res.json.message_id))!;
    const reply = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "102290129340398",
          changes: [
            {
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: DISPLAY_NUMBER, phone_number_id: PHONE_NUMBER_ID },
                contacts: [{ profile: { name: "Sheena Nelson" }, wa_id: "16315551181" }],
                messages: [
                  {
                    context: { from: DISPLAY_NUMBER, id: wamid },
                    from: "16315551181",
                    id: "wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
                    timestamp: "1795400200",
                    type: "text",
                    text: { body: "Does it come in another color?" },
                  },
                ],
              },
              field: "messages",
            },
          ],
        },
      ],
    };
    expect((await callback(reply)).status).toBe(200);
    expect((await callback(reply)).status).toBe(200); // Meta retries: stored once
    const events = await t.service.db.collection<StoredEvent>("events").find({ type: "message.received", "data.reply_to_message_id": res.json.message_id }).toArray();
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      to: DISPLAY_NUMBER,
      from: "16315551181",
      status: "received",
      text: "Does it come in another color?",
      wa_message_id: "wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=",
      occurred_at: "2026-11-23T02:16:40.000Z",
      error: null,
    });
    const inbound = await stored(events[0]!.data.message_id as string);
    expect(inbound).toMatchObject({ direction: "inbound", workspace_id: workspaceId, content: { type: "text", text: "Does it come in another color?" } });
  });
});

describe("a sender's throughput, read from the Graph API when CreateSender gives none", () => {
  const consoleRest = (method: string, path: string, body?: unknown) => rest(t.consoleUrl, method, path, { key: TEST_CONSOLE_TOKEN, body });
  const createOverRest = (phoneNumber: string, whatsappPhoneNumberId: string, extra: Record<string, unknown> = {}) =>
    consoleRest("POST", `/console/v1/workspaces/${workspaceId}/senders`, { phone_number: phoneNumber, name: "Campaigns", whatsapp_phone_number_id: whatsappPhoneNumberId, ...extra });
  const throughputReads = (phoneNumberId: string) => graph.requests.filter((r) => r.method === "GET" && r.path.startsWith(`/v23.0/${phoneNumberId}?`));
  const storedSender = (id: string) => t.service.db.collection("senders").findOne({ _id: id as never });

  it("asks GET /{version}/{phone-number-id}?fields=throughput with the bearer token and starts the sender at the level's rate: HIGH 1,000, STANDARD 80", async () => {
    graph.throughput.set("106540352240001", "HIGH");
    const high = await createOverRest("15550780001", "106540352240001");
    expect(high.status).toBe(200);
    expect(high.json).toMatchObject({ phone_number: "15550780001", throughput_mps: 1000, throughput_source: "network" });
    expect(throughputReads("106540352240001")).toEqual([
      { method: "GET", path: "/v23.0/106540352240001?fields=throughput", authorization: "Bearer EAAG-test-access-token", body: null },
    ]);
    // Stored as read: dispatch paces the number at it, and reading the sender shows it.
    expect(await storedSender(high.json.id)).toMatchObject({ throughput_mps: 1000, throughput_source: "network" });
    expect((await consoleRest("GET", `/console/v1/senders/${high.json.id}`)).json).toMatchObject({ throughput_mps: 1000, throughput_source: "network" });

    graph.throughput.set("106540352240002", "STANDARD");
    const { sender } = await t.console(ConsoleSenderService).createSender({ workspaceId, phoneNumber: "15550780002", name: "Support", whatsappPhoneNumberId: "106540352240002" });
    expect(sender).toMatchObject({ throughputMps: 80, throughputSource: ThroughputSource.NETWORK });
    expect(throughputReads("106540352240002")).toHaveLength(1);
  });

  it("takes a throughput_mps given as it is, without asking", async () => {
    graph.throughput.set("106540352240003", "HIGH");
    const given = await createOverRest("15550780003", "106540352240003", { throughput_mps: 20 });
    expect(given.json).toMatchObject({ throughput_mps: 20, throughput_source: "given" });
    expect(throughputReads("106540352240003")).toHaveLength(0);
  });

  it("falls back to 80 and logs a warning, never failing the creation, when the Graph API is down, refuses the question or states no level", async () => {
    graph.throughput.set("106540352240004", { status: 503, body: { error: { message: "(#131016) Service unavailable", type: "OAuthException", code: 131016, fbtrace_id: "AbC" } } });
    graph.throughput.set("106540352240005", "NOT_APPLICABLE");
    // 106540352240006 is unknown to the Graph API: 400, code 100.
    for (const [phoneNumber, phoneNumberId] of [["15550780004", "106540352240004"], ["15550780005", "106540352240005"], ["15550780006", "106540352240006"]] as const) {
      const created = await createOverRest(phoneNumber, phoneNumberId);
      expect(created.status).toBe(200);
      expect(created.json).toMatchObject({ phone_number: phoneNumber, throughput_mps: 80, throughput_source: "default" });
      expect(throughputReads(phoneNumberId)).toHaveLength(1);
      expect(await storedSender(created.json.id)).toMatchObject({ throughput_mps: 80, throughput_source: "default" });
      expect(logLines.some((l) => l.level === 40 && l.phoneNumberId === phoneNumberId && String(l.msg).includes("default throughput"))).toBe(true);
    }
    const refused = logLines.find((l) => l.phoneNumberId === "106540352240006");
    expect((refused?.err as { message?: string } | undefined)?.message).toMatch(/^100 Unsupported get request\. Object with ID .106540352240006. does not exist/);
  });

  it("asks nothing for a number without a WhatsApp phone number ID (80, default), and a throughput UpdateSender sets is given", async () => {
    const before = graph.requests.length;
    const created = await createOverRest("15550780007", "");
    expect(created.json).toMatchObject({ throughput_mps: 80, throughput_source: "default" });
    expect(graph.requests.slice(before).filter((r) => r.method === "GET")).toEqual([]);
    const patched = await consoleRest("PATCH", `/console/v1/senders/${created.json.id}?update_mask=throughput_mps`, { throughput_mps: 1000 });
    expect(patched.json).toMatchObject({ throughput_mps: 1000, throughput_source: "given" });
  });
});
