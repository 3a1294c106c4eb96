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

/** A number's throughput account, as kept in `simulator_throughput`. */
interface ThroughputAccount {
  /** The sender's phone number. */
  _id: string;
  /** Its theoretical arrival time, in ms since the epoch: when its next send would be due with no burst left. */
  tat: number;
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
  /** The throughput the simulated network holds sender number `from` at, in messages per second (heldThroughput). */
  throughputOf(from: string): number;
}

/**
 * The simulated network's limits, each a generic cell rate algorithm (a
 * token bucket): a number may send a second's worth of its throughput at
 * once, then one message per 1/throughput s; a pair `pairBurst` messages at
 * once, then one per `pairIntervalMs`. A number's account is kept in
 * `simulator_throughput`, shared by every process as the network's own is:
 * a send is one conditional update when the number was idle (below its
 * limit: its arrival time set from now), two when it is busy (moved on by
 * one step while within the burst). The
 * pair rate is counted in each process: the simulator of the process that
 * sends a pair's messages counts them.
 */
export function createSimulatorLimits(db: Db, clock: Clock, options: SimulatorLimitOptions): SimulatorLimits {
  const accounts = db.collection<ThroughputAccount>("simulator_throughput");
  /** Per pair: its theoretical arrival time, in ms since the epoch. */
  const pairs = new LRUCache<string, number>({ max: 200_000 });
  const pairBurstMs = (Math.max(1, options.pairBurst) - 1) * options.pairIntervalMs;

  /**
   * Whether the number may send now; if so, its send is counted. A send refused is counted again once at the time of
   * the refusal, if the clock moved on meanwhile: the account is kept in the database, which may apply two writes in
   * another order than they were made (a write that waited in a busy database behind a later send's). A write made
   * with a `now` read a second before the later send's then met that send's count and was refused for a burst that
   * never was: a number allowed 1,000 a second was refused at 80 a second. The network counts a send when it
   * arrives; so does the count made again.
   */
  async function admitThroughput(from: string, now: number): Promise<boolean> {
    if (await countThroughput(from, now)) return true;
    const later = clock.now().getTime();
    return later > now && (await countThroughput(from, later));
  }

  /** Counts a send of `from` at `now` if the number's account allows it then. */
  async function countThroughput(from: string, now: number): Promise<boolean> {
    const step = 1000 / heldThroughput(from, options.throughputMps);
    // Idle (the usual case below the limit): from now.
    if ((await accounts.updateOne({ _id: from, tat: { $lt: now } }, { $set: { tat: now + step } })).matchedCount === 1) return true;
    // Busy: within the burst (a second's worth), one step on.
    if ((await accounts.updateOne({ _id: from, tat: { $gte: now, $lte: now + 1000 - step } }, { $inc: { tat: step } })).matchedCount === 1) return true;
    try {
      // A number's first send.
      await accounts.insertOne({ _id: from, tat: now + step });
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      // The account exists and is beyond the burst (or was made busy meanwhile: then within it).
      return (await accounts.updateOne({ _id: from, tat: { $gte: now, $lte: now + 1000 - step } }, { $inc: { tat: step } })).matchedCount === 1;
    }
  }

  return {
    throughputOf: (from) => heldThroughput(from, options.throughputMps),
    async admit(from, to) {
      const now = clock.now().getTime();
      const key = `${from}|${to}`;
      const arrival = Math.max(pairs.get(key) ?? now, now);
      if (arrival - now > pairBurstMs) return PAIR_RATE_REFUSAL;
      // Counted before the write: a send of the same pair meanwhile sees this one.
      pairs.set(key, arrival + options.pairIntervalMs);
      if (await admitThroughput(from, now)) return null;
      pairs.set(key, (pairs.get(key) ?? now) - options.pairIntervalMs); // not sent: its place given back
      return THROUGHPUT_REFUSAL;
    },
  };
}
