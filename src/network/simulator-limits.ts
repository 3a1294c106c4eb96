import type { Db } from "mongodb";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import type { NetworkErrorInfo } from "./network.js";

/** WhatsApp's limits as the simulated network enforces them (SIMULATOR_* configuration). */
export interface SimulatorLimitOptions {
  /** Messages per second a sender number may send, unless its number says otherwise (heldThroughput). */
  throughputMps: number;
  /** Spacing the pair of a number and a recipient must keep, in ms. */
  pairIntervalMs: number;
  /** Messages to one recipient that may go at once before the spacing applies. */
  pairBurst: number;
}

/**
 * Sender numbers the simulated network holds at another throughput than
 * SIMULATOR_THROUGHPUT_MPS, by their last four digits (README "The network:
 * simulator"): as a number shared with the WhatsApp Business app (20 per
 * second), and one Meta upgraded (1,000 per second).
 */
export const SIMULATOR_SENDER_NUMBERS = {
  /** Held at 20 messages per second. */
  coexistence: "0020",
  /** Held at 1,000 messages per second. */
  upgraded: "1000",
} as const;

/** The errors of the Cloud API for its limits (https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes). */
export const THROUGHPUT_REFUSAL: NetworkErrorInfo = { code: 130429, title: "Rate limit hit" };
export const PAIR_RATE_REFUSAL: NetworkErrorInfo = { code: 131056, title: "(Business Account, Consumer Account) pair rate limit hit" };

/** The throughput the simulated network allows sender number `phoneNumber`, in messages per second. */
export function heldThroughput(phoneNumber: string, throughputMps: number): number {
  const suffix = phoneNumber.slice(-4);
  if (suffix === SIMULATOR_SENDER_NUMBERS.coexistence) return 20;
  if (suffix === SIMULATOR_SENDER_NUMBERS.upgraded) return 1000;
  return throughputMps;
}

/** A count of one number's sends in one clock second, as kept in `simulator_rate_windows`. */
interface RateWindow {
  /** "<phone number>|<second since the epoch>". */
  _id: string;
  count: number;
  /** The TTL index deletes it then. */
  expires_at: Date;
}

/** The limits the simulated network enforces on a send (src/network/simulator.ts). */
export interface SimulatorLimits {
  /**
   * Counts a send from `from` to `to`: null when it is within the limits, else the network's refusal (130429 for the
   * number's throughput, 131056 for the pair rate), the send not counted.
   *
   * @throws the database's error (the send then fails as an outage).
   */
  admit(from: string, to: string): Promise<NetworkErrorInfo | null>;
  ensureIndexes(): Promise<void>;
}

/**
 * The simulated network's limits. A number's throughput counts its sends per
 * clock second in `simulator_rate_windows`, shared by every process as the
 * network's own count is: one conditional upsert a send (`count` below the
 * limit), refused when the second's window is full. The pair rate is a
 * generic cell rate algorithm per pair of number and recipient (a burst of
 * `pairBurst`, then one per `pairIntervalMs`), counted in each process: the
 * simulator of the process that sends a pair's messages counts them.
 */
export function createSimulatorLimits(db: Db, clock: Clock, options: SimulatorLimitOptions): SimulatorLimits {
  const windows = db.collection<RateWindow>("simulator_rate_windows");
  /** Per pair: its theoretical arrival time, in ms since the epoch. */
  const pairs = new LRUCache<string, number>({ max: 200_000 });
  const burstMs = (Math.max(1, options.pairBurst) - 1) * options.pairIntervalMs;
  return {
    async admit(from, to) {
      const now = clock.now().getTime();
      const key = `${from}|${to}`;
      const arrival = Math.max(pairs.get(key) ?? now, now);
      if (arrival - now > burstMs) return PAIR_RATE_REFUSAL;
      // Counted before the write: a send of the same pair meanwhile sees this one.
      pairs.set(key, arrival + options.pairIntervalMs);
      const second = Math.floor(now / 1000);
      try {
        await windows.updateOne(
          { _id: `${from}|${second}`, count: { $lt: heldThroughput(from, options.throughputMps) } },
          { $inc: { count: 1 }, $setOnInsert: { expires_at: new Date((second + 60) * 1000) } },
          { upsert: true },
        );
      } catch (err) {
        pairs.set(key, (pairs.get(key) ?? now) - options.pairIntervalMs); // not sent: its place given back
        // The window exists and is full: the upsert's insert met its id.
        if (isDuplicateKeyError(err)) return THROUGHPUT_REFUSAL;
        throw err;
      }
      return null;
    },
    async ensureIndexes() {
      await windows.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },
  };
}
