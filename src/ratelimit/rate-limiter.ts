import type { Collection, Db } from "mongodb";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";
import { isDuplicateKeyError } from "../shared/errors.js";

/** Length of a rate window (spec §Limits: one minute per key). */
export const WINDOW_MS = 60_000;

/** The answer for one request. */
export interface RateLimitDecision {
  /** Whether the request fits the budget. */
  allowed: boolean;
  /** Budget per window: the RateLimit-Limit header. */
  limit: number;
  /** Requests left in the window: the RateLimit-Remaining header. */
  remaining: number;
  /** Whole seconds until the window rolls over (at least 1): RateLimit-Reset and Retry-After. */
  resetSeconds: number;
}

/** A fixed one-minute window per subject, shared by every process through MongoDB. */
export interface RateLimiter {
  /**
   * Counts one request of `subject` (for example "key:<id>") against a budget
   * of `limit` per window and says whether it is allowed.
   */
  consume(subject: string, limit: number): Promise<RateLimitDecision>;
  /** Deletes windows that have ended; returns how many. */
  prune(): Promise<number>;
  ensureIndexes(): Promise<void>;
}

interface WindowRecord {
  /** `<subject>|<window start ms>`. */
  _id: string;
  subject: string;
  window_start: Date;
  count: number;
}

/**
 * Creates the rate limiter. Windows are aligned to the clock's minutes. Each
 * allowed request is one atomic `$inc` upsert of the window's counter, so
 * several server processes enforce one budget exactly. Once a process sees a
 * subject's window exhausted, it refuses that subject locally until the
 * window ends, without touching the database: counts only grow within a
 * window, so the answer cannot change. The database work is thus bounded by
 * the budgets (at most 100 per key per minute), not by the request rate.
 */
export function createRateLimiter(db: Db, clock: Clock): RateLimiter {
  const collection: Collection<WindowRecord> = db.collection<WindowRecord>("rate_windows");
  /** Subject to the start of the window it is known to have exhausted. */
  const exhausted = new LRUCache<string, number>({ max: 100_000 });

  async function increment(id: string, subject: string, start: number): Promise<number> {
    const update = {
      $inc: { count: 1 },
      $setOnInsert: { subject, window_start: new Date(start) },
    };
    try {
      const doc = await collection.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument: "after" });
      return doc?.count ?? 1;
    } catch (err) {
      // Two first requests of a window may race to insert it; the loser retries as an update.
      if (!isDuplicateKeyError(err)) throw err;
      const doc = await collection.findOneAndUpdate({ _id: id }, { $inc: { count: 1 } }, { returnDocument: "after" });
      return doc?.count ?? 1;
    }
  }

  return {
    async consume(subject, limit) {
      const now = clock.now().getTime();
      const start = now - (now % WINDOW_MS);
      const resetSeconds = Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000));
      if (exhausted.get(subject) === start) return { allowed: false, limit, remaining: 0, resetSeconds };
      const count = await increment(`${subject}|${start}`, subject, start);
      const allowed = count <= limit;
      if (count >= limit) exhausted.set(subject, start);
      return { allowed, limit, remaining: Math.max(0, limit - count), resetSeconds };
    },
    async prune() {
      const now = clock.now().getTime();
      const result = await collection.deleteMany({ window_start: { $lt: new Date(now - (now % WINDOW_MS) - WINDOW_MS) } });
      return result.deletedCount;
    },
    async ensureIndexes() {
      await collection.createIndex({ window_start: 1 });
    },
  };
}
