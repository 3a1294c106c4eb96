import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { SimulatorMediaStore } from "./simulator-media.js";
import {
  NetworkSendError,
  type InboundContent,
  type NetworkAdapter,
  type NetworkReport,
  type OutboundTemplateMessage,
  type ReportSink,
  type ReportedStatus,
} from "./network.js";

/** Delays and randomness of the simulator (SIMULATOR_* configuration). */
export interface SimulatorOptions {
  /** From acceptance to the "sent" report, in ms. */
  sentDelayMs: number;
  /** From acceptance to "delivered", in ms. */
  deliveredDelayMs: number;
  /** From acceptance to "read", in ms. */
  readDelayMs: number;
  /** Share of ordinary messages whose delivered and read reports arrive swapped, 0 to 100. */
  outOfOrderPercent: number;
  clock: Clock;
  logger: Logger;
  /** Random number in [0, 1); Math.random by default. */
  random?: () => number;
  /** Where simulated phones' uploaded media are kept. */
  media: SimulatorMediaStore;
}

/**
 * Test numbers of the simulator, by the last four digits of the recipient
 * (README §Simulator). Errors carry real WhatsApp Cloud API codes and titles
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes).
 */
export const SIMULATOR_TEST_NUMBERS = {
  /** The send is refused: 131026 "Message undeliverable" (permanent: failed, refunded). */
  rejected: "9990",
  /** Accepted and sent, then failed: 131049 (not delivered to maintain ecosystem engagement). */
  failsAfterSent: "9991",
  /** Read receipts off: sent and delivered, never read. */
  readReceiptsOff: "9992",
  /** The first two attempts meet an outage: 131016 "Service unavailable" (retried with backoff). */
  outage: "9993",
  /** Reports always out of order: read arrives before delivered. */
  outOfOrder: "9994",
  /** Every report arrives twice. */
  duplicates: "9995",
  /**
   * Stopped marketing messages: a marketing template is sent, then fails with 131050 (the service puts the number
   * on the workspace's opt-out list); other categories are delivered as usual.
   */
  stoppedMarketing: "9996",
} as const;

/** WhatsApp's error of a marketing message to a user who stopped them. */
const STOPPED_MARKETING = { code: 131050, title: "User stopped marketing messages" };

/** The simulator: a NetworkAdapter that can also play the recipient. */
export interface Simulator extends NetworkAdapter {
  /**
   * The recipient of an accepted message replies with `text`; the reply goes
   * to the report sink like any inbound message. Resolves to the reply's
   * network id once it is stored.
   */
  injectReply(original: { networkMessageId: string; recipient: string; senderPhoneNumber: string }, text: string): Promise<string>;
  /**
   * The recipient of an accepted message submits the form it carried, as
   * WhatsApp reports it: an inbound flow_response whose `responseJson` is the
   * nfm_reply's response_json (fields, flow_token, media references). Resolves
   * to the submission's network id once it is stored.
   */
  injectFlowResponse(original: { networkMessageId: string; recipient: string; senderPhoneNumber: string }, responseJson: string): Promise<string>;
  /** The simulated network's media store (files uploaded in forms). */
  readonly media: SimulatorMediaStore;
}

const networkId = () => `wamid.SIM${randomBytes(18).toString("base64url")}`;

/**
 * The in-process messaging network (NETWORK=simulator, the default). It
 * accepts template sends at once (idempotently per message id, as a network
 * with idempotency keys would) and reports, after the configured delays,
 * "sent", "delivered" and "read" (only with read receipts on), some out of
 * order; test numbers fail, lose receipts, meet outages or repeat reports
 * (SIMULATOR_TEST_NUMBERS). Pending reports live in timers of this process:
 * a report lost to a restart is what a real network's lost callback is.
 */
export function createSimulator(options: SimulatorOptions, sink: ReportSink): Simulator {
  const random = options.random ?? Math.random;
  const accepted = new LRUCache<string, string>({ max: 100_000 });
  const attempts = new LRUCache<string, number>({ max: 100_000 });
  const timers = new Set<NodeJS.Timeout>();
  const delivering = new Set<Promise<void>>();

  function later(delayMs: number, report: NetworkReport, times = 1): void {
    const timer = setTimeout(() => {
      timers.delete(timer);
      const delivery = (async () => {
        for (let i = 0; i < times; i++) {
          await sink(report).catch((err: unknown) => options.logger.error({ err }, "simulator: report not stored"));
        }
      })();
      delivering.add(delivery);
      void delivery.finally(() => delivering.delete(delivery));
    }, delayMs);
    timers.add(timer);
  }

  function scheduleReports(message: OutboundTemplateMessage, id: string): void {
    const acceptedAt = options.clock.now().getTime();
    const suffix = message.to.slice(-4);
    const times = suffix === SIMULATOR_TEST_NUMBERS.duplicates ? 2 : 1;
    const stopped = suffix === SIMULATOR_TEST_NUMBERS.stoppedMarketing && message.templateCategory === "marketing";
    const status = (s: ReportedStatus, delayMs: number, reportAfterMs = delayMs) => {
      const occurredAt = new Date(acceptedAt + delayMs);
      const error = s !== "failed" ? undefined : stopped ? STOPPED_MARKETING : { code: 131049, title: "This message was not delivered to maintain healthy ecosystem engagement" };
      later(reportAfterMs, { kind: "status", networkMessageId: id, messageId: message.messageId, status: s, occurredAt, error }, times);
    };
    status("sent", options.sentDelayMs);
    if (suffix === SIMULATOR_TEST_NUMBERS.failsAfterSent || stopped) {
      status("failed", options.deliveredDelayMs);
      return;
    }
    const { deliveredDelayMs: d, readDelayMs: r } = options;
    if (suffix === SIMULATOR_TEST_NUMBERS.readReceiptsOff) {
      status("delivered", d);
      return;
    }
    const swapped = suffix === SIMULATOR_TEST_NUMBERS.outOfOrder || random() * 100 < options.outOfOrderPercent;
    // Swapped: each report arrives when the other was due, but says when it really happened.
    status("delivered", d, swapped ? r + 1 : d);
    status("read", r, swapped ? d : r);
  }

  async function inject(original: { networkMessageId: string; recipient: string; senderPhoneNumber: string }, content: InboundContent): Promise<string> {
    const id = networkId();
    await sink({
      kind: "message",
      networkMessageId: id,
      from: original.recipient,
      to: { phoneNumber: original.senderPhoneNumber },
      replyToNetworkMessageId: original.networkMessageId,
      occurredAt: options.clock.now(),
      content,
    });
    return id;
  }

  return {
    name: "simulator",
    httpRoutes: [],
    async send(message) {
      const known = accepted.get(message.messageId);
      if (known) return known;
      const suffix = message.to.slice(-4);
      if (suffix === SIMULATOR_TEST_NUMBERS.rejected) {
        throw new NetworkSendError({ code: 131026, title: "Message undeliverable" }, false);
      }
      if (suffix === SIMULATOR_TEST_NUMBERS.outage) {
        const n = (attempts.get(message.messageId) ?? 0) + 1;
        attempts.set(message.messageId, n);
        if (n <= 2) throw new NetworkSendError({ code: 131016, title: "Service unavailable" }, true);
      }
      const id = networkId();
      accepted.set(message.messageId, id);
      scheduleReports(message, id);
      return id;
    },
    async injectReply(original, text) {
      return inject(original, { type: "text", text });
    },
    async injectFlowResponse(original, responseJson) {
      return inject(original, { type: "flow_response", responseJson, body: "Sent" });
    },
    media: options.media,
    fetchMedia: (media) => options.media.fetch(media.id),
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all(delivering);
    },
  };
}
