import { randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { SimulatorLimits } from "./simulator-limits.js";
import type { SimulatorMediaStore } from "./simulator-media.js";
import { statusReportOf, type ScheduledReport, type SimulatorReportStore } from "./simulator-report-store.js";
import {
  NetworkSendError,
  type InboundContent,
  type NetworkAdapter,
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
  /** Where the reports the network will make wait until they are due (in the database: they outlive any process). */
  reports: SimulatorReportStore;
  /** Names this process in the leases of the reports it makes. */
  owner: string;
  /** How long a report being made stays with its process, in ms: past it, another makes it (RECOVERY_AGE_MS). */
  leaseMs: number;
  /** The claim interval of worker processes, in ms (QUEUE_CLAIM_INTERVAL_MS). */
  claimIntervalMs: number;
  /** WhatsApp's throughput and pair rate limits, enforced on every send; null when off (SIMULATOR_LIMITS=false). */
  limits: SimulatorLimits | null;
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
  /**
   * Lets this process make the reports that fall due (a worker: ROLE=worker
   * or all): from now on it claims them on its wake-ups and its drains.
   */
  start(): void;
  /** Makes the reports that are due now (a claim round of the queue; the worker's recurring claim job runs it). */
  drain(): Promise<void>;
}

const networkId = () => `wamid.SIM${randomBytes(18).toString("base64url")}`;

/**
 * The simulated messaging network (NETWORK=simulator, the default). It
 * accepts template sends at once (idempotently per message id, as a network
 * with idempotency keys would), within WhatsApp's limits when they are on
 * (a number's throughput, 130429; the pair rate, 131056: SimulatorLimits), and reports, after the configured delays,
 * "sent", "delivered" and "read" (only with read receipts on), some out of
 * order; test numbers fail, lose receipts, meet outages or repeat reports
 * (SIMULATOR_TEST_NUMBERS). With its limits on, it states the throughput it holds a number at (readThroughput),
 * as WhatsApp states a number's throughput level, so that a sender created without one paces at it from the start;
 * with them off it holds none and states none. The reports it will make are records in the
 * database (`simulator_reports`, a leased queue) stored before the send is
 * answered, and any worker process makes them when due: like a real
 * network's, they outlive the process that sent the message (README "The
 * network: simulator").
 */
export function createSimulator(options: SimulatorOptions, sink: ReportSink): Simulator {
  const random = options.random ?? Math.random;
  const accepted = new LRUCache<string, string>({ max: 100_000 });
  const attempts = new LRUCache<string, number>({ max: 100_000 });
  /** The report of each message being made in this process: the next one of the same message waits for it. */
  const making = new Map<string, Promise<void>>();
  const queue = options.reports.queue({
    name: "simulator_reports",
    owner: options.owner,
    clock: options.clock,
    logger: options.logger,
    leaseMs: options.leaseMs,
    maxInFlight: 256,
    intervalMs: options.claimIntervalMs,
    run({ record, lease }) {
      // The reports of one message are made in the order they fell due (a round that claims several of them, as a
      // late claim does, begins them in due order): the network reports a message's statuses one after the other.
      const previous = making.get(record.message_id) ?? Promise.resolve();
      const made = previous.then(async () => {
        const report = statusReportOf(record);
        // A sink that fails throws: the lease lapses and the report is made again (the inbound path ignores repeats).
        for (let i = 0; i < record.times; i++) await sink(report);
        await options.reports.done(record._id, lease);
      });
      const settled = made.catch(() => undefined);
      making.set(record.message_id, settled);
      void settled.then(() => {
        if (making.get(record.message_id) === settled) making.delete(record.message_id);
      });
      return made;
    },
  });

  function reportsOf(message: OutboundTemplateMessage, id: string): ScheduledReport[] {
    const acceptedAt = options.clock.now().getTime();
    const suffix = message.to.slice(-4);
    const times = suffix === SIMULATOR_TEST_NUMBERS.duplicates ? 2 : 1;
    const records: ScheduledReport[] = [];
    const stopped = suffix === SIMULATOR_TEST_NUMBERS.stoppedMarketing && message.templateCategory === "marketing";
    const status = (s: ReportedStatus, delayMs: number, reportAfterMs = delayMs) => {
      const error = s !== "failed" ? null : stopped ? STOPPED_MARKETING : { code: 131049, title: "This message was not delivered to maintain healthy ecosystem engagement" };
      records.push({
        _id: `${id}:${s}`,
        network_message_id: id,
        message_id: message.messageId,
        status: s,
        occurred_at: new Date(acceptedAt + delayMs),
        error,
        times,
        due_at: new Date(acceptedAt + reportAfterMs),
        lease_owner: null,
        leased_at: null,
      });
    };
    status("sent", options.sentDelayMs);
    if (suffix === SIMULATOR_TEST_NUMBERS.failsAfterSent || stopped) {
      status("failed", options.deliveredDelayMs);
      return records;
    }
    const { deliveredDelayMs: d, readDelayMs: r } = options;
    if (suffix === SIMULATOR_TEST_NUMBERS.readReceiptsOff) {
      status("delivered", d);
      return records;
    }
    const swapped = suffix === SIMULATOR_TEST_NUMBERS.outOfOrder || random() * 100 < options.outOfOrderPercent;
    // Swapped: each report arrives when the other was due, but says when it really happened.
    status("delivered", d, swapped ? r + 1 : d);
    status("read", r, swapped ? d : r);
    return records;
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
      const refusal = await options.limits?.admit(message.fromPhoneNumber, message.to);
      if (refusal) throw new NetworkSendError(refusal, true);
      if (suffix === SIMULATOR_TEST_NUMBERS.rejected) {
        throw new NetworkSendError({ code: 131026, title: "Message undeliverable" }, false);
      }
      if (suffix === SIMULATOR_TEST_NUMBERS.outage) {
        const n = (attempts.get(message.messageId) ?? 0) + 1;
        attempts.set(message.messageId, n);
        if (n <= 2) throw new NetworkSendError({ code: 131016, title: "Service unavailable" }, true);
      }
      const id = networkId();
      const reports = reportsOf(message, id);
      // Stored before the send is answered: a process that dies now leaves them to the others.
      await options.reports.schedule(reports);
      accepted.set(message.messageId, id);
      for (const report of reports) queue.wakeAt(report.due_at as Date);
      return id;
    },
    async injectReply(original, text) {
      return inject(original, { type: "text", text });
    },
    async injectFlowResponse(original, responseJson) {
      return inject(original, { type: "flow_response", responseJson, body: "Sent" });
    },
    // The limits' own figure (held by the digits; no phone number ID needed), the 20 of a number ending in 0020
    // included, which WhatsApp's levels cannot state. Without limits it holds none and has nothing to state (a
    // sender then starts at the default without a warning).
    ...(options.limits ? { readThroughput: async (number: { phoneNumber: string }) => options.limits!.throughputOf(number.phoneNumber) } : {}),
    media: options.media,
    fetchMedia: (media) => options.media.fetch(media.id),
    start: () => queue.start(),
    drain: () => queue.drain(),
    async stop() {
      // Reports being made are finished; those not begun stay queued for another process (or the next start).
      await queue.stop();
    },
  };
}
