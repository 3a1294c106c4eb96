import type { Clock } from "../shared/clock.js";
import type { RateLimiter } from "./rate-limiter.js";

/** Length of the throttle's windows: a rate limit counts per clock second. */
export const THROTTLE_WINDOW_MS = 1000;

/** Without kept slots: how far ahead of its rate a subject's work may go at once, in ms (a tenth of a second's worth). */
const BURST_MS = 100;

/**
 * A piece of work's turn: go now; or, when its slot is too far off to wait
 * for with the lease held, be claimed again at `at` (a little before `slot`)
 * and go at `slot`.
 */
export type Turn = { go: true } | { go: false; slot: Date; at: Date };

/** One subject's work in this process. */
interface Line {
  /** The latest slot given (ms); the next is one step (1 s / limit) later, or now if that has passed. */
  cursor: number;
  /** Without kept slots: the latest turn estimated for work sent back to wait (ms); the next is one step after it. */
  deferredUntil: number;
  /** Work whose slot came, waiting for the limiter, in order. */
  waiting: { go: () => void; fail: (err: unknown) => void }[];
  pumping: boolean;
  limit: number;
}

/**
 * Rate limits per subject, shared by every process: at most `limit` pieces
 * of work per subject and clock second. Used by a webhook endpoint's
 * `rateLimit` (subject `webhook:<endpoint id>`, as Svix's endpoint
 * `rateLimit`) and by a sender number's throughput (subject
 * `sender:<sender id>`, src/messages/pacing.ts).
 *
 * In a process, each piece of work of a subject gets a slot, one step
 * (1 s / limit) after the previous one: the subject's work goes in the
 * order it asked, spaced at its rate, and none is made or counted while it
 * waits. Work whose slot is further off than `holdMs` does not wait with
 * its lease held: it goes back to the database, due a little before its
 * slot (holdMs / 2), and keeps the slot for when it is claimed again. At its
 * slot the work also takes its place in the shared rate limiter's
 * one-second window of the subject, so that all processes together never
 * exceed the limit; refused, it waits for the next window, in order.
 */
export class Throttle {
  private readonly lines = new Map<string, Line>();
  private stopping = false;
  private stopWaiting!: () => void;
  /** Resolves when the process stops: the attempts still waiting go back to the database. */
  private readonly stopped = new Promise<void>((resolve) => (this.stopWaiting = resolve));

  constructor(
    private readonly o: {
      /** A limiter of THROTTLE_WINDOW_MS windows. */
      limiter: RateLimiter;
      clock: Clock;
      /** Longest wait with a lease held, in ms (well under the lease). */
      holdMs: number;
      /**
       * Whether work sent back to wait keeps its slot (true unless false: a webhook attempt keeps its place); without,
       * it is given an estimate and takes a slot when it comes back (a sender's messages, whose rate adapts).
       */
      keepSlots?: boolean;
    },
  ) {}

  /**
   * The turn of a piece of work of `subject` under `limit` per second:
   * resolves when it may go, or at once with its slot and when to claim it
   * again.
   *
   * Once the process stops (stop), work still waiting resolves at once to
   * its slot, due now (for another worker).
   *
   * @param slot the slot the work kept when it went back to the database, if any.
   * @throws the limiter's database error (the work's lease then ends and it is claimed again).
   */
  async turn(subject: string, limit: number, slot?: Date): Promise<Turn> {
    const now = this.o.clock.now().getTime();
    let line = this.lines.get(subject);
    if (!line) {
      line = { cursor: 0, deferredUntil: 0, waiting: [], pumping: false, limit };
      this.lines.set(subject, line);
    }
    line.limit = limit;
    const step = THROTTLE_WINDOW_MS / limit;
    let at = slot?.getTime();
    if (at === undefined && this.o.keepSlots === false) {
      // Work sent back to wait takes no slot: it is given an estimate after the others sent back, and takes a slot at
      // the rate of then when it comes back (so a rate that changed meanwhile applies to it).
      const next = Math.max(line.cursor + step, now);
      if (next - now > this.o.holdMs) {
        const estimate = (line.deferredUntil = Math.max(line.deferredUntil + step, next));
        return { go: false, slot: new Date(estimate), at: new Date(estimate - this.o.holdMs / 2) };
      }
      line.cursor = next;
      // Within the burst allowed (BURST_MS of work ahead of the rate), it goes now: the pieces of work that arrive
      // together go together (their writes are shared), the second's window still counting them all.
      at = next - now <= BURST_MS ? now : next;
    } else if (at === undefined) {
      at = line.cursor = Math.max(line.cursor + step, now);
      if (at - now > this.o.holdMs) return { go: false, slot: new Date(at), at: new Date(at - this.o.holdMs / 2) };
    } else {
      // Later attempts go after it (a slot kept from before this process's line, say).
      line.cursor = Math.max(line.cursor, at);
    }
    const handBack = (): Turn => ({ go: false, slot: new Date(at), at: this.o.clock.now() });
    if (at > now) await Promise.race([new Promise((resolve) => setTimeout(resolve, at - now).unref()), this.stopped]);
    if (this.stopping) return handBack();
    const granted = new Promise<void>((go, fail) => {
      line.waiting.push({ go, fail });
      if (!line.pumping) void this.pump(subject, line);
    });
    await Promise.race([granted, this.stopped]);
    return this.stopping ? handBack() : { go: true };
  }

  /** The process stops: work waiting for its turn goes back to the database at once (see turn). */
  stop(): void {
    this.stopping = true;
    this.stopWaiting();
  }

  /** Lets the waiting work go, in order, as the limiter grants it; sleeps to the next window when it refuses. */
  private async pump(subject: string, line: Line): Promise<void> {
    line.pumping = true;
    try {
      while (line.waiting.length > 0) {
        const decision = await this.o.limiter.consume(subject, line.limit);
        if (decision.allowed) line.waiting.shift()?.go();
        else await new Promise((resolve) => setTimeout(resolve, decision.resetMs).unref());
      }
    } catch (err) {
      for (const waiter of line.waiting.splice(0)) waiter.fail(err);
    } finally {
      line.pumping = false;
      const now = this.o.clock.now().getTime();
      if (line.cursor <= now && line.deferredUntil <= now) this.lines.delete(subject);
    }
  }
}
