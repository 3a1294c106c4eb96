import { LRUCache } from "lru-cache";
import type { Throttle } from "../ratelimit/throttle.js";
import type { Clock } from "../shared/clock.js";

/** Why a message waits in its sender's queue (the message's `queued_reason`, README "Pacing"). */
export type QueuedReason = "sender_rate" | "recipient_pair_rate" | "daily_limit";

/**
 * A message's turn: go now; or wait in the database until `at` (a little
 * before `slot`, the instant it is expected to leave), for `reason`.
 */
export type PaceTurn = { go: true } | { go: false; at: Date; slot: Date; reason: QueuedReason };

/** Pacing settings (PAIR_RATE_* configuration). */
export interface PacingOptions {
  /** Spacing of the messages from one number to one recipient, in ms (Meta: about 6 s); 0 turns the pair rate off. */
  pairIntervalMs: number;
  /** Messages to one recipient that may go at once before the spacing applies (a burst borrows from later). */
  pairBurst: number;
  /** Longest wait with a message's lease held, in ms; a longer one goes back to the database. */
  holdMs: number;
}

/** Waits after the n-th pair-rate refusal (131056) of one message, in ms: 1, 4, 16, 64, 256 s, as Meta suggests. */
export const PAIR_REFUSAL_BACKOFF_MS = [1_000, 4_000, 16_000, 64_000, 256_000] as const;

/**
 * Share of a sender's rate its messages are paced at: 5% under it, for the time from a message's turn to the
 * network's count of it, which varies (a write, a network call) and would otherwise make some seconds count more.
 */
const HEADROOM = 0.95;
/**
 * Share of the configured rate a sender's rate gains per second without a refusal (additive increase): quickly
 * below the rate of the last refusal (95% of it), slowly above, where the network refused before.
 */
const INCREASE_PER_SECOND = { belowCeiling: 0.1, aboveCeiling: 0.002 } as const;
/** Factor of a sender's rate after a throughput refusal (multiplicative decrease). */
const DECREASE = 0.75;
/**
 * Refusals within this long of a decrease count as the same one, in ms (they were sent at the old rate); and the
 * rate grows again only this long after the last refusal.
 */
const DECREASE_QUIET_MS = 1_000;
/**
 * Over how long what the network took of a sender is counted, in ms, for the floor of a decrease (its rate over this
 * long): longer than the stalls of a loaded process, after which the waiting messages go at once and some are
 * refused while few were taken just before.
 */
const TAKEN_WINDOW_MS = 3_000;
/**
 * How long the rate of the last refusal is remembered, in ms: after this long without a refusal the ceiling is the
 * configured rate again, and the rate regains quickly up to 95% of it. Refusals that are not the number's limit (a
 * bunch of messages handed over at once by a stalled process) would otherwise each lower the ceiling for good; a
 * number the network holds lower is probed again once in this long (a refusal or two, then the rate is lowered).
 */
const CEILING_MEMORY_MS = 30_000;
/**
 * How much of a second's worth of a sender's rate may be handed to the network at once (Pacer.handOver): the network
 * takes a second's worth at once (a token bucket); the other half is left for the time from the hand-over to the
 * network's count of it, which varies.
 */
const HAND_OVER_BURST_SECONDS = 0.5;

/** One sender's adaptive rate in this process. */
interface SenderRate {
  /** The sender's configured throughput (throughput_mps). */
  configured: number;
  /** The rate used now, in messages per second: configured, lowered by refusals, probing back up. */
  current: number;
  /** The rate of the last refusal (the configured rate before any): probing above it is slow. */
  ceiling: number;
  /** When `current` last changed, in ms since the epoch. */
  changedAt: number;
  /** When it was last lowered, in ms since the epoch. */
  loweredAt: number;
  /** When the last throughput refusal came, in ms since the epoch (counted or not): the rate grows only from DECREASE_QUIET_MS after it. */
  refusedAt: number;
  /** When the network took this process's messages of the sender within TAKEN_WINDOW_MS, in ms since the epoch, oldest first. */
  taken: number[];
  /** When the sender's next message would be handed to the network with no burst left (handOver), in ms since the epoch. */
  handOverAt: number;
}

/**
 * Paces dispatch against the network's limits (README "Pacing"), in front
 * of the network call:
 *
 * - **Per sender number**: at most the sender's rate per clock second, all
 *   processes together (the shared Throttle, subject `sender:<id>`). The
 *   rate starts from the sender's `throughput_mps` and adapts (AIMD): a
 *   throughput refusal (130429) lowers it by a quarter at once (once a
 *   second at most, and not for a message handed over before the last
 *   decrease: it was paced at the old rate), not below the rate at which the
 *   network took the sender's messages from this process over the last 3 s;
 *   from a second after the last refusal, each second adds 10% of the
 *   configured rate up to 95% of the rate last refused, then 0.2% up to the
 *   configured rate. So a number the network holds lower than configured
 *   converges to just under its real limit, probing above it slowly. The
 *   rate of the last refusal is remembered for CEILING_MEMORY_MS (30 s):
 *   then it is forgotten, the rate regains quickly (a refusal that was not
 *   the number's limit costs 30 s at most), and a number held lower is
 *   probed once more. The adaptive rate is each process's own (each learns
 *   from its own refusals). Messages are paced at 95% of it (HEADROOM),
 *   and spaced again at it right before the network call (handOver).
 * - **Per recipient** (the pair of number and user): at most `pairBurst`
 *   messages at once less one kept in reserve, then one per
 *   `pairIntervalMs` (a generic cell rate algorithm: a burst borrows from
 *   later). Counted in this process, which dispatches most of a pair's
 *   messages; a pair refusal (131056) from the
 *   network (messages of one pair dispatched by several processes) makes
 *   that recipient wait 1, 4, 16, 64, then 256 s, while other recipients go
 *   on.
 *
 * Waits up to `holdMs` are taken here, with the message's lease held;
 * longer ones send the message back to the database until its turn.
 */
export class Pacer {
  private readonly rates = new Map<string, SenderRate>();
  /** Per pair: its theoretical arrival time (ms since the epoch): when the next message would go with no burst left. */
  private readonly pairs = new LRUCache<string, number>({ max: 200_000 });

  constructor(
    private readonly o: {
      throttle: Throttle;
      clock: Clock;
      options: PacingOptions;
    },
  ) {}

  /**
   * The turn of a message from sender `senderId` (configured at `throughputMps`) to `to`: resolves when it may be
   * handed to the network, or at once with when to take it again.
   *
   * @throws the shared limiter's database error (the message's lease then lapses and it is taken again).
   */
  async turn(message: { senderId: string; throughputMps: number; to: string }): Promise<PaceTurn> {
    const now = this.o.clock.now().getTime();
    const pairAt = this.pairTurn(message.senderId, message.to, now);
    if (pairAt - now > this.o.options.holdMs) {
      return { go: false, at: new Date(pairAt - this.o.options.holdMs / 2), slot: new Date(pairAt), reason: "recipient_pair_rate" };
    }
    // Taken before the wait: the pair's next message, asking meanwhile, comes after this one.
    this.tookPair(message.senderId, message.to, pairAt);
    if (pairAt > now) await sleep(pairAt - now);
    const turn = await this.o.throttle.turn(`sender:${message.senderId}`, this.rate(message.senderId, message.throughputMps) * HEADROOM);
    if (turn.go) return turn;
    return { go: false, at: turn.at, slot: turn.slot, reason: "sender_rate" };
  }

  /**
   * How long a message of `senderId` whose turn came (turn) waits before it is handed to the network, in whole ms (0:
   * at once); it counts as handed over then. At the sender's rate as adapted (without turn's 5% headroom),
   * HAND_OVER_BURST_SECONDS of it at once, in the order asked: a generic cell rate algorithm, as the network counts.
   * Between a turn and the network call come a wait for a network slot and the claim's write, whose times vary: a
   * claim's write held up 1.6 to 1.9 s by a busy database let two seconds of turns through at once, and the network
   * refused what went past its second's worth; this spaces them again, where a wait of the turn alone would not.
   * Never longer than `maxWaitMs` (the message's claim is held meanwhile). 0 for a sender without a turn here.
   */
  handOver(senderId: string, maxWaitMs: number): number {
    const rate = this.rates.get(senderId);
    if (!rate) return 0;
    const now = this.o.clock.now().getTime();
    this.settle(rate, now);
    const wait = Math.min(maxWaitMs, Math.max(0, Math.round(rate.handOverAt - HAND_OVER_BURST_SECONDS * 1000 - now)));
    rate.handOverAt = Math.max(rate.handOverAt, now + wait) + 1000 / rate.current;
    return wait;
  }

  /**
   * The network refused a message of `senderId` handed to it at `handedAt` for its throughput (130429): the sender's
   * rate is lowered by a quarter (not below the rate the network took from this process over TAKEN_WINDOW_MS), unless the
   * message was handed over before the last decrease or that decrease was less than a second ago; either way the
   * rate grows again only from a second after this refusal.
   */
  throughputRefused(senderId: string, handedAt: Date): void {
    const rate = this.rates.get(senderId);
    const now = this.o.clock.now().getTime();
    if (!rate) return;
    // The rate grows only from a second after the last refusal: while refusals keep coming it does not climb back
    // between decreases (it did, and a number held at 20/s configured at 80 took 20 s and ~450 refusals to get there).
    this.settle(rate, now);
    rate.refusedAt = now;
    // A message handed over before the last decrease was paced at the rate before it: its refusal says nothing new.
    if (handedAt.getTime() <= rate.loweredAt || now - rate.loweredAt < DECREASE_QUIET_MS) return;
    rate.ceiling = rate.current;
    // Not below the rate the network took from this process: refusals that come late (messages already on their way)
    // would otherwise lower the rate by a quarter again and again, far under the number's limit.
    rate.current = Math.max(1, rate.current * DECREASE, Math.min(rate.current, this.takenRate(rate, now)));
    rate.changedAt = rate.loweredAt = now;
  }

  /** The network took a message of `senderId` (this process's count over TAKEN_WINDOW_MS, for throughputRefused). */
  taken(senderId: string): void {
    const rate = this.rates.get(senderId);
    if (!rate) return;
    const now = this.o.clock.now().getTime();
    rate.taken.push(now);
    this.takenRate(rate, now);
  }

  /** The rate at which the network took the sender's messages from this process over TAKEN_WINDOW_MS before `now`, per second. */
  private takenRate(rate: SenderRate, now: number): number {
    let old = 0;
    while (old < rate.taken.length && rate.taken[old]! <= now - TAKEN_WINDOW_MS) old++;
    if (old > 0) rate.taken.splice(0, old);
    return rate.taken.length / (TAKEN_WINDOW_MS / 1000);
  }

  /**
   * The network refused a message of `senderId` to `to` for the pair rate (131056), for the `refusals`-th time:
   * the recipient's next message waits the backoff (PAIR_REFUSAL_BACKOFF_MS); resolves to when this one goes again.
   */
  pairRefused(senderId: string, to: string, refusals: number): Date {
    const wait = PAIR_REFUSAL_BACKOFF_MS[Math.min(refusals, PAIR_REFUSAL_BACKOFF_MS.length) - 1] ?? PAIR_REFUSAL_BACKOFF_MS[0];
    const at = this.o.clock.now().getTime() + wait;
    const key = pairKey(senderId, to);
    this.pairs.set(key, Math.max(this.pairs.get(key) ?? 0, at + this.burstMs()));
    return new Date(at);
  }

  /** The sender's rate now: configured unless refusals lowered it, regained at INCREASE_PER_SECOND since. */
  private rate(senderId: string, throughputMps: number): number {
    const now = this.o.clock.now().getTime();
    let rate = this.rates.get(senderId);
    if (!rate || rate.configured !== throughputMps) {
      rate = { configured: throughputMps, current: throughputMps, ceiling: throughputMps, changedAt: now, loweredAt: 0, refusedAt: 0, taken: [], handOverAt: 0 };
      this.rates.set(senderId, rate);
    }
    this.settle(rate, now);
    return rate.current;
  }

  /** Brings `rate` up to `now` (ms since the epoch): the increase earned since it last changed (INCREASE_PER_SECOND). */
  private settle(rate: SenderRate, now: number): void {
    if (rate.ceiling < rate.configured && now - rate.loweredAt >= CEILING_MEMORY_MS) rate.ceiling = rate.configured;
    if (rate.current < rate.configured) {
      // Quickly up to 95% of the ceiling, then slowly for the rest of the time since the last change.
      let seconds = Math.max(0, now - Math.max(rate.changedAt, rate.refusedAt + DECREASE_QUIET_MS)) / 1000;
      const fast = rate.configured * INCREASE_PER_SECOND.belowCeiling;
      const quick = Math.min(seconds, Math.max(0, 0.95 * rate.ceiling - rate.current) / fast);
      rate.current += quick * fast;
      seconds -= quick;
      rate.current = Math.min(rate.configured, rate.current + seconds * rate.configured * INCREASE_PER_SECOND.aboveCeiling);
    }
    rate.changedAt = now;
  }

  /**
   * How far ahead of now a pair's burst reaches, in ms. One message of the burst is kept in reserve: the time from a
   * message's turn here to the network's count of it varies (a write, a network call), and a later message that
   * arrives sooner after its predecessor than the spacing would otherwise meet the limit.
   */
  private burstMs(): number {
    return Math.max(0, this.o.options.pairBurst - 2) * this.o.options.pairIntervalMs;
  }

  /** When the pair's next message may go (ms since the epoch; `now` or later). */
  private pairTurn(senderId: string, to: string, now: number): number {
    if (this.o.options.pairIntervalMs <= 0) return now;
    const arrival = this.pairs.get(pairKey(senderId, to)) ?? now;
    return Math.max(now, arrival - this.burstMs());
  }

  /** A message of the pair goes at `at`: the next one's arrival moves one interval on. */
  private tookPair(senderId: string, to: string, at: number): void {
    if (this.o.options.pairIntervalMs <= 0) return;
    const key = pairKey(senderId, to);
    this.pairs.set(key, Math.max(this.pairs.get(key) ?? at, at) + this.o.options.pairIntervalMs);
  }
}

const pairKey = (senderId: string, to: string) => `${senderId}|${to}`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
