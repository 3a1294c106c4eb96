import { createHmac, timingSafeEqual } from "node:crypto";
import { requestUrl, writeRestError, type HttpRoute, type NodeRequest, type NodeResponse } from "../../gateway/node-http.js";
import { apiError } from "../../shared/errors.js";
import type { InboundContent, NetworkReport, ReportedStatus, ReportSink } from "../network.js";

/** Path of the WhatsApp callback on the public port (configured as the app's webhook URL at Meta). */
export const WHATSAPP_WEBHOOK_PATH = "/network/whatsapp/webhook";

/** Largest callback body accepted, in bytes. */
const MAX_BODY_BYTES = 3 * 1024 * 1024;

/* Shapes of the Cloud API's messages webhook (the parts read here), from
 * https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/status/
 * and .../reference/messages/text/; flow responses (interactive nfm_reply) from
 * https://developers.facebook.com/docs/whatsapp/flows/guides/receiveflowresponse */
interface WaStatus {
  id?: string;
  status?: string;
  timestamp?: string;
  recipient_id?: string;
  biz_opaque_callback_data?: string;
  errors?: { code?: number; title?: string }[];
}
interface WaMessage {
  id?: string;
  from?: string;
  timestamp?: string;
  type?: string;
  context?: { id?: string };
  text?: { body?: string };
  button?: { text?: string; payload?: string };
  interactive?: { type?: string; nfm_reply?: { name?: string; body?: string; response_json?: unknown } };
  [kind: string]: unknown;
}
interface WaValue {
  metadata?: { display_phone_number?: string; phone_number_id?: string };
  statuses?: WaStatus[];
  messages?: WaMessage[];
}

/**
 * Parsers of inbound message kinds by WhatsApp `type`. A new kind is one
 * more entry; unknown kinds are kept as "unsupported" rather than dropped.
 * "interactive" with type "nfm_reply" is a submitted form (flow response);
 * its response_json is JSON text (an object is accepted too); other
 * interactive replies are unsupported ("interactive.button_reply" …).
 */
export const inboundParsers: Record<string, (message: WaMessage) => InboundContent> = {
  text: (m) => ({ type: "text", text: m.text?.body ?? "" }),
  button: (m) => ({ type: "button", text: m.button?.text ?? "", payload: m.button?.payload ?? "" }),
  interactive: (m) => {
    const reply = m.interactive?.nfm_reply;
    if (m.interactive?.type !== "nfm_reply" || !reply) return { type: "unsupported", networkType: `interactive.${m.interactive?.type ?? "unknown"}` };
    const json = reply.response_json;
    return { type: "flow_response", responseJson: typeof json === "string" ? json : JSON.stringify(json ?? {}), body: reply.body ?? "" };
  },
};

const STATUSES: readonly string[] = ["sent", "delivered", "read", "failed"] satisfies ReportedStatus[];

const timeOf = (timestamp: string | undefined) => new Date(Number(timestamp ?? "0") * 1000);

/**
 * Turns a messages webhook payload (`{"object":"whatsapp_business_account",
 * "entry":[{"changes":[{"field":"messages","value":{…}}]}]}`) into reports:
 * each of `value.statuses` (sent, delivered, read, failed with errors[0]'s
 * code and title; other statuses are ignored) and each of `value.messages`.
 */
export function reportsOf(payload: unknown): NetworkReport[] {
  const reports: NetworkReport[] = [];
  const entries = (payload as { entry?: { changes?: { field?: string; value?: WaValue }[] }[] } | null)?.entry ?? [];
  for (const change of entries.flatMap((e) => e.changes ?? [])) {
    if (change.field !== "messages" || !change.value) continue;
    const { metadata, statuses = [], messages = [] } = change.value;
    for (const s of statuses) {
      if (!s.id || !s.status || !STATUSES.includes(s.status)) continue;
      const error = s.errors?.[0];
      reports.push({
        kind: "status",
        networkMessageId: s.id,
        messageId: s.biz_opaque_callback_data?.startsWith("msg_") ? s.biz_opaque_callback_data : undefined,
        status: s.status as ReportedStatus,
        occurredAt: timeOf(s.timestamp),
        error: s.status === "failed" ? { code: error?.code ?? 0, title: error?.title ?? "Failed" } : undefined,
      });
    }
    for (const m of messages) {
      if (!m.id || !m.from) continue;
      const parse = inboundParsers[m.type ?? ""];
      reports.push({
        kind: "message",
        networkMessageId: m.id,
        from: m.from,
        to: { phoneNumberId: metadata?.phone_number_id, phoneNumber: metadata?.display_phone_number },
        replyToNetworkMessageId: m.context?.id,
        occurredAt: timeOf(m.timestamp),
        content: parse ? parse(m) : { type: "unsupported", networkType: m.type ?? "unknown" },
      });
    }
  }
  return reports;
}

/** True when `header` is "sha256=<hex>" of the HMAC-SHA256 of `body` keyed with `secret` (constant-time). */
export function isValidSignature(secret: string, body: Buffer, header: string | undefined): boolean {
  const match = /^sha256=([0-9a-f]{64})$/i.exec(header ?? "");
  if (!match) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  const given = Buffer.from(match[1] as string, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readBody(req: NodeRequest): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function answer(res: NodeResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

/**
 * The WhatsApp callback endpoint (public port, outside API-key admission):
 *
 * - GET: Meta's verification handshake. With hub.mode=subscribe and
 *   hub.verify_token equal to WHATSAPP_VERIFY_TOKEN it answers 200 with
 *   hub.challenge as text; otherwise 403 permission_denied.
 * - POST: refused with 401 unauthenticated unless X-Hub-Signature-256 is the
 *   HMAC-SHA256 of the raw body keyed with WHATSAPP_APP_SECRET; a body that
 *   is not JSON is 400. Every report is handed to `sink`; the answer is 200
 *   only once all are stored, else 500 so that Meta retries the callback.
 */
export function createWhatsAppWebhookRoutes(options: { appSecret: string; verifyToken: string; sink: ReportSink }): HttpRoute[] {
  return [
    {
      method: "GET",
      path: WHATSAPP_WEBHOOK_PATH,
      async handler(req, res, state) {
        const query = requestUrl(req).searchParams;
        const token = query.get("hub.verify_token") ?? "";
        const tokenOk = token.length === options.verifyToken.length && timingSafeEqual(Buffer.from(token), Buffer.from(options.verifyToken));
        if (query.get("hub.mode") !== "subscribe" || !tokenOk) {
          return writeRestError(res, state, apiError("permission_denied", "hub.mode must be subscribe and hub.verify_token must match"));
        }
        answer(res, 200, "text/plain; charset=utf-8", query.get("hub.challenge") ?? "");
      },
    },
    {
      method: "POST",
      path: WHATSAPP_WEBHOOK_PATH,
      async handler(req, res, state) {
        const body = await readBody(req);
        if (!body) return writeRestError(res, state, apiError("invalid_argument", `Callback body is larger than ${MAX_BODY_BYTES} bytes`));
        const signature = req.headers["x-hub-signature-256"];
        if (!isValidSignature(options.appSecret, body, Array.isArray(signature) ? signature[0] : signature)) {
          return writeRestError(res, state, apiError("unauthenticated", "X-Hub-Signature-256 is missing or does not match the body"));
        }
        let payload: unknown;
        try {
          payload = JSON.parse(body.toString("utf8"));
        } catch {
          return writeRestError(res, state, apiError("invalid_argument", "Callback body is not valid JSON", { field: "(body)", rule: "must be valid JSON" }));
        }
        const reports = reportsOf(payload);
        for (const report of reports) await options.sink(report);
        answer(res, 200, "application/json", JSON.stringify({ received: reports.length }));
      },
    },
  ];
}
