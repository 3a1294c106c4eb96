import { Agent, request } from "undici";
import { Semaphore } from "async-mutex";
import type { Metrics } from "../metrics/metrics.js";
import type { Clock } from "../shared/clock.js";
import { computeSignature, signStandardWebhook } from "./signature.js";
import { blockedLiteral, guardedLookup, type TargetPolicy } from "./target-policy.js";

/** Why an attempt failed (proto messaging.console.v1.AttemptErrorKind, lower case). */
export type AttemptErrorKind =
  | "http_status"
  | "redirect"
  | "timeout"
  | "connection_refused"
  | "connection_reset"
  | "dns"
  | "tls"
  | "blocked_address"
  | "network"
  | "interrupted";

/** What one HTTP attempt gave. */
export interface AttemptOutcome {
  startedAt: Date;
  /** Milliseconds from the start until the whole answer was read or the attempt failed; null when unknown (interrupted). */
  durationMs: number | null;
  /** Status of the answer; null when there was none. */
  httpStatus: number | null;
  /** The first RESPONSE_BODY_KEPT bytes of the answer as text; null when there was none. */
  responseBody: string | null;
  succeeded: boolean;
  errorKind: AttemptErrorKind | null;
  errorMessage: string | null;
}

/** What an attempt sends. */
export interface WebhookRequest {
  url: string;
  /** The event's stored envelope: the exact bytes sent and signed. */
  body: string;
  /** Signing secret of the endpoint (whsec_…). */
  secret: string;
  /** The secret its last rotation replaced, while it still verifies: the attempt is signed with it too. */
  previousSecret?: string;
  /** Event type, for Service-Event. */
  eventType: string;
  /** Event id, for Service-Delivery. */
  eventId: string;
  /** Goes ahead of the others waiting for a free slot (first attempts of new events, manual ones). */
  urgent?: boolean;
}

/** Bytes of an answer's body kept on the attempt record. */
export const RESPONSE_BODY_KEPT = 4096;
/** Bytes of an answer's body read at most; a longer body is cut off (the connection is closed). */
const RESPONSE_BODY_READ = 1 << 20;
/** Attempts in flight at once in one process. */
const MAX_IN_FLIGHT = 512;
/** Connections kept per receiving origin (scheme, host, port), reused with keep-alive. */
const CONNECTIONS_PER_ORIGIN = 64;

/** The User-Agent of every attempt. */
export const USER_AGENT = "messaging-service-webhooks/0.1";

/** Sends signed webhook requests (spec §Outbound: webhook delivery). */
export interface WebhookSender {
  /** Makes one attempt (urgent ones first when all slots are taken); never throws: every failure is an outcome. */
  send(req: WebhookRequest): Promise<AttemptOutcome>;
  /** Closes the connections. */
  close(): Promise<void>;
}

function errorCode(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; cause?: unknown };
  if (typeof e?.code === "string") return e.code;
  if (e?.cause) return errorCode(e.cause);
  return typeof e?.name === "string" ? e.name : "";
}

function errorText(err: unknown): string {
  const e = err as { message?: unknown; cause?: { message?: unknown } };
  const own = typeof e?.message === "string" ? e.message : String(err);
  const cause = typeof e?.cause?.message === "string" && e.cause.message !== own ? `: ${e.cause.message}` : "";
  return (own + cause).slice(0, 500);
}

/** Maps an error of undici, net, tls or dns to an error kind. */
export function classifyError(err: unknown, timedOut: boolean): AttemptErrorKind {
  if (timedOut) return "timeout";
  const code = errorCode(err);
  if (code === "ERR_WEBHOOK_BLOCKED_ADDRESS") return "blocked_address";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME") return "dns";
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || code === "ETIMEDOUT") {
    return "timeout";
  }
  if (code === "ECONNRESET" || code === "EPIPE" || code === "UND_ERR_SOCKET" || code === "UND_ERR_CLOSED" || code === "ECONNABORTED") {
    return "connection_reset";
  }
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL|HOSTNAME_MISMATCH)/.test(code) || /ssl|tls|certificate/i.test(errorText(err))) {
    return "tls";
  }
  return "network";
}

/**
 * Creates the sender: undici with keep-alive connections per origin (at most
 * 64 each), at most 512 attempts in flight per process, no redirects
 * followed, and one deadline (`timeoutMs`, spec: 10 s) for the whole answer,
 * headers and body. Each attempt is signed at its start, with the time of
 * `clock` (spec §Webhook signature): Service-Signature `t=<unix s>,v1=<hex>`
 * (a second v1 while a rotated secret still verifies),
 * Service-Event, Service-Delivery, Content-Type application/json, User-Agent;
 * and beside them the Standard Webhooks headers webhook-id (the event id),
 * webhook-timestamp and webhook-signature (`v1,<base64>`).
 * Success is a 2xx whose whole body arrived in time; a 3xx is a failure
 * ("redirect"). Addresses are checked against `policy` after resolution.
 */
export function createWebhookSender(options: { timeoutMs: number; policy: TargetPolicy; clock: Clock }): WebhookSender {
  const { timeoutMs, policy, clock } = options;
  const agent = new Agent({
    connections: CONNECTIONS_PER_ORIGIN,
    pipelining: 1,
    connect: { timeout: timeoutMs, lookup: guardedLookup(policy) },
  });
  const slots = new Semaphore(MAX_IN_FLIGHT);

  async function attempt(req: WebhookRequest): Promise<AttemptOutcome> {
    const startedAt = clock.now();
    const began = performance.now();
    const finish = (fields: Omit<AttemptOutcome, "startedAt" | "durationMs">): AttemptOutcome => ({
      startedAt,
      durationMs: Math.round(performance.now() - began),
      ...fields,
    });
    const failure = (errorKind: AttemptErrorKind, errorMessage: string, httpStatus: number | null = null, responseBody: string | null = null) =>
      finish({ httpStatus, responseBody, succeeded: false, errorKind, errorMessage });

    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return failure("network", `The endpoint URL is not valid: ${req.url}`);
    }
    const refused = blockedLiteral(url, policy);
    if (refused) return failure("blocked_address", refused.message);

    const deadline = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      deadline.abort();
    }, timeoutMs);
    try {
      const timestamp = Math.floor(startedAt.getTime() / 1000);
      const secrets = req.previousSecret === undefined ? [req.secret] : [req.secret, req.previousSecret];
      const res = await request(url, {
        method: "POST",
        dispatcher: agent,
        signal: deadline.signal,
        maxRedirections: 0,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        headers: {
          "content-type": "application/json",
          "user-agent": USER_AGENT,
          // One signature per valid secret, the current one first (Stripe's v1s; Standard Webhooks' list).
          "service-signature": `t=${timestamp},${secrets.map((secret) => `v1=${computeSignature(secret, timestamp, req.body)}`).join(",")}`,
          "service-event": req.eventType,
          "service-delivery": req.eventId,
          "webhook-id": req.eventId,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": secrets.map((secret) => signStandardWebhook(secret, req.eventId, timestamp, req.body)).join(" "),
        },
        body: req.body,
      });
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let readBytes = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        readBytes += chunk.length;
        if (keptBytes < RESPONSE_BODY_KEPT) {
          const part = chunk.subarray(0, RESPONSE_BODY_KEPT - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        if (readBytes > RESPONSE_BODY_READ) {
          res.body.destroy();
          break;
        }
      }
      const status = res.statusCode;
      const body = Buffer.concat(kept).toString("utf8");
      if (status >= 200 && status < 300) return finish({ httpStatus: status, responseBody: body, succeeded: true, errorKind: null, errorMessage: null });
      if (status >= 300 && status < 400) {
        const location = res.headers.location;
        return failure("redirect", `Answered ${status} (redirects are not followed)${location ? `; Location: ${String(location).slice(0, 300)}` : ""}`, status, body);
      }
      return failure("http_status", `Answered ${status}`, status, body);
    } catch (err) {
      const kind = classifyError(err, timedOut);
      const message = kind === "timeout" ? `No complete answer within ${timeoutMs} ms` : errorText(err);
      return failure(kind, message);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    send: (req) => slots.runExclusive(() => attempt(req), 1, req.urgent ? 1 : 0),
    close: () => agent.close(),
  };
}

/** `sender` counting each attempt's outcome in `metrics.webhookAttempts` ("succeeded" or the error kind). */
export function countedAttempts(sender: WebhookSender, metrics: Pick<Metrics, "webhookAttempts">): WebhookSender {
  return {
    async send(req) {
      const outcome = await sender.send(req);
      metrics.webhookAttempts.inc({ outcome: outcome.succeeded ? "succeeded" : (outcome.errorKind ?? "failed") });
      return outcome;
    },
    close: () => sender.close(),
  };
}
