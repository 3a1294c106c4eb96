import { NetworkReadError, NetworkSendError, type NetworkError, type NetworkErrorInfo, type OutboundTemplateMessage } from "../network.js";

/** Where and how to reach the Graph API (WHATSAPP_* configuration). */
export interface GraphOptions {
  /** Base URL without version, for example https://graph.facebook.com. */
  baseUrl: string;
  /** API version, for example "v23.0". */
  version: string;
  /** Access token sent as Bearer. */
  accessToken: string;
  /** Longest wait for an answer, in ms. */
  timeoutMs: number;
}

/**
 * Graph API error codes worth retrying: outages and throughput limits
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes):
 * 1 API Unknown, 2 API Service, 4 API Too Many Calls, 80007 rate limit,
 * 130429 Rate limit hit, 131000 Something went wrong, 131016 Service
 * unavailable, 131056 pair rate limit hit, 133004 Server temporarily
 * unavailable. Every other code (for example 100 Invalid parameter, 131026
 * Message undeliverable, 132001 Template does not exist) is permanent.
 */
export const RETRYABLE_GRAPH_CODES = new Set([1, 2, 4, 80007, 130429, 131000, 131016, 131056, 133004]);

/**
 * Codes never retried, whatever the HTTP status says (a spam limit may come as 429): 131026 Message undeliverable,
 * 131048 Spam rate limit hit, 131049 not delivered to maintain healthy ecosystem engagement, 131050 User stopped
 * marketing messages. Trying again only makes the number look worse to Meta; the message fails, refunded.
 */
export const FINAL_GRAPH_CODES = new Set([131026, 131048, 131049, 131050]);

/**
 * The JSON body of a template send (POST /{version}/{phone_number_id}/messages),
 * as documented at
 * https://developers.facebook.com/docs/whatsapp/cloud-api/guides/send-message-templates:
 * named body parameters, a flow button carrying the flow token when the
 * template has a flow, and our message id as biz_opaque_callback_data so that
 * status callbacks can be matched even before the send's answer is recorded.
 */
export function templateSendBody(message: OutboundTemplateMessage): Record<string, unknown> {
  const components: unknown[] = [];
  if (message.parameters.length > 0) {
    components.push({
      type: "body",
      parameters: message.parameters.map((p) => ({ type: "text", parameter_name: p.name, text: p.value })),
    });
  }
  if (message.flow) {
    components.push({
      type: "button",
      sub_type: "flow",
      index: "0",
      parameters: [{ type: "action", action: { flow_token: message.flow.token } }],
    });
  }
  return {
    messaging_product: "whatsapp",
    recipient_type: "individual",
    to: message.to,
    type: "template",
    biz_opaque_callback_data: message.messageId,
    template: { name: message.templateName, language: { code: message.language }, components },
  };
}

/**
 * The error of a Graph API error answer, `{"error":{"message","type","code","error_data":{"details"}}}`, and whether
 * asking again may succeed: not for FINAL_GRAPH_CODES; for HTTP 5xx, 429 and RETRYABLE_GRAPH_CODES.
 */
function graphErrorOf(status: number, body: unknown): { info: NetworkErrorInfo; retryable: boolean } {
  const error = (body as { error?: { code?: unknown; message?: unknown; error_user_title?: unknown } } | null)?.error;
  const code = typeof error?.code === "number" ? error.code : 0;
  const message = typeof error?.message === "string" ? error.message : `HTTP ${status}`;
  // Messages read "(#131026) Message Undeliverable."; the title is the text after the code.
  const title = typeof error?.error_user_title === "string" ? error.error_user_title : message.replace(/^\(#\d+\)\s*/, "").replace(/\.$/, "");
  return { info: { code, title }, retryable: !FINAL_GRAPH_CODES.has(code) && (status >= 500 || status === 429 || RETRYABLE_GRAPH_CODES.has(code)) };
}

/**
 * One request to the Graph API at `path` (after the version) with the access token and the request timeout; resolves
 * to the answer's JSON body (null when it is not JSON).
 *
 * @throws an `error` (NetworkSendError or NetworkReadError): retryable for timeouts and connection errors; for error
 *   answers as graphErrorOf judges them.
 */
async function callGraph(
  options: GraphOptions,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
  error: new (info: NetworkErrorInfo, retryable: boolean) => NetworkError,
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${options.baseUrl}/${options.version}/${path}`, {
      ...init,
      headers: { authorization: `Bearer ${options.accessToken}`, ...init.headers },
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (err) {
    throw new error({ code: 0, title: `Graph API unreachable: ${(err as Error).message}` }, true);
  }
  const text = await res.text().catch(() => "");
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: judged by the status below
  }
  if (!res.ok) {
    const { info, retryable } = graphErrorOf(res.status, body);
    throw new error(info, retryable);
  }
  return body;
}

/**
 * Sends a template message through the Cloud API and resolves to the wamid
 * of its answer (`{"messages":[{"id":"wamid…"}]}`).
 *
 * @throws NetworkSendError: retryable for timeouts, connection errors, HTTP
 *   5xx and 429 and RETRYABLE_GRAPH_CODES; permanent otherwise.
 */
export async function sendTemplate(options: GraphOptions, message: OutboundTemplateMessage): Promise<string> {
  if (!message.fromPhoneNumberId) {
    throw new NetworkSendError({ code: 100, title: "The sender has no WhatsApp phone number ID" }, false);
  }
  const body = await callGraph(
    options,
    `${encodeURIComponent(message.fromPhoneNumberId)}/messages`,
    { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(templateSendBody(message)) },
    NetworkSendError,
  );
  const id = (body as { messages?: { id?: unknown }[] } | null)?.messages?.[0]?.id;
  if (typeof id !== "string" || id === "") {
    throw new NetworkSendError({ code: 0, title: "Graph API answer without a message id" }, true);
  }
  return id;
}

/**
 * Messages per second of the throughput levels Meta documents for a business phone number
 * (https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput): STANDARD, the default,
 * 80; HIGH, after Meta's automatic upgrade, 1,000. NOT_APPLICABLE, and any level not listed here, states none.
 */
export const THROUGHPUT_LEVEL_MPS: ReadonlyMap<string, number> = new Map([
  ["STANDARD", 80],
  ["HIGH", 1000],
]);

/**
 * Reads the throughput of the business phone number `phoneNumberId` from the Cloud API: `GET
 * /{version}/{phone-number-id}?fields=throughput` with the access token answers
 * `{"throughput":{"level":"STANDARD"},"id":"…"}` (the WhatsApp Business Phone Number node's `throughput` field,
 * https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput). Resolves to the level's
 * messages per second (THROUGHPUT_LEVEL_MPS), or null for NOT_APPLICABLE, a level not listed there or an answer
 * without one.
 *
 * @throws NetworkReadError: retryable for timeouts, connection errors, HTTP 5xx and 429 and RETRYABLE_GRAPH_CODES;
 *   permanent for other error answers (for example 100 Invalid parameter for an unknown id, 190 for a wrong token).
 */
export async function readThroughput(options: GraphOptions, phoneNumberId: string): Promise<number | null> {
  const body = await callGraph(options, `${encodeURIComponent(phoneNumberId)}?fields=throughput`, {}, NetworkReadError);
  const level = (body as { throughput?: { level?: unknown } } | null)?.throughput?.level;
  return typeof level === "string" ? (THROUGHPUT_LEVEL_MPS.get(level) ?? null) : null;
}
