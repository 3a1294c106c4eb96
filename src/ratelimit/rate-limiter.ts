import { randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";
import { isDuplicateKeyError } from "../shared/errors.js";

/** Length of a rate window of the API keys (spec §Limits: one minute per key), the default. */
export const WINDOW_MS = 60_000;

/** A lease grows only when the previous one was used up within this time. */
const BUSY_MS = 1000;
/** Growth of a lease over the previous one while busy. */
const GROWTH = 4;

/** The answer for one request. */
export interface RateLimitDecision {
  /** Whether the request fits the budget. */
  allowed: boolean;
  /** Budget per window: the RateLimit-Limit header. */
  limit: number;
  /**
   * Requests left in the window: the RateLimit-Remaining header. Exact for
   * one process; with several, other processes' unused leases count as spent.
   */
  remaining: number;
  /** Whole seconds until the window rolls over (at least 1): RateLimit-Reset and Retry-After. */
  resetSeconds: number;
  /** Milliseconds until the window rolls over (at least 1). */
  resetMs: number;
}

/** A fixed window per subject (one minute unless told), shared by every process through MongoDB. */
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
  /** Requests granted to processes in this window (leased, used or not). */
  count: number;
  /** Ids of the processes that took leases in this window. */
  holders: string[];
  /** One window after the window's end: the TTL index deletes it then (reads go by `_id`, which names the window). */
  expires_at: Date;
}

/** What this process holds of one subject's current window. */
interface Lease {
  start: number;
  /** Granted to this process and not used yet. */
  spare: number;
  /** The window's count after this process's last lease. */
  knownCount: number;
  /** How many processes had taken leases of the window, as of the last lease. */
  knownHolders: number;
  /** True once the window's budget is all granted. */
  exhausted: boolean;
  lastSize: number;
  lastAt: number;
  /** The lease request in flight, shared by concurrent requests. */
  pending?: Promise<void>;
}

/**
 * Creates the rate limiter: fixed windows of `windowMs` aligned to the
 * clock (one minute: the clock's minutes), one shared counter document per
 * subject and window (subjects of limiters with other windows must differ).
 *
 * Processes take budget from the shared counter in leases, with one atomic
 * conditional `$inc` (`count <= limit - n`), and spend it locally. So
 * several processes never admit more than the budget together, and the
 * database sees a handful of updates per subject and window instead of one
 * per request. A lease starts at one request and grows fourfold while the
 * previous one was used up within a second. A process alone on a window may
 * lease all that is left; with others, at most a share of what is left
 * (left / (2 × processes)), so the last requests of a window are leased one
 * at a time and budget stranded in a process whose traffic stopped stays
 * small: the budget is never exceeded, and a few requests at most are
 * refused early. Once the budget is all granted, the process refuses the
 * subject locally until the window ends.
 */
export function createRateLimiter(db: Db, clock: Clock, windowMs = WINDOW_MS): RateLimiter {
  const collection: Collection<WindowRecord> = db.collection<WindowRecord>("rate_windows");
  const leases = new LRUCache<string, Lease>({ max: 100_000 });
  const processId = randomUUID();

  interface Taken {
    granted: number;
    count: number;
    holders: number;
  }

  /**
   * Takes up to `wanted` requests of the window from the shared counter: one
   * conditional upsert (a new window is created by its first lease); when it
   * finds the window with less left than wanted, it reads what is left and
   * asks for that.
   */
  async function take(subject: string, start: number, limit: number, wanted: number): Promise<Taken> {
    const id = `${subject}|${start}`;
    let n = wanted;
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const updated = await collection.findOneAndUpdate(
          { _id: id, count: { $lte: limit - n } },
          {
            $inc: { count: n },
            $addToSet: { holders: processId },
            $setOnInsert: { subject, window_start: new Date(start), expires_at: new Date(start + 2 * windowMs) },
          },
          { returnDocument: "after", upsert: true },
        );
        if (updated) return { granted: n, count: updated.count, holders: updated.holders.length };
      } catch (err) {
        // The window exists with less than n left: the upsert's insert met it.
        if (!isDuplicateKeyError(err)) throw err;
      }
      const current = await collection.findOne({ _id: id });
      if (!current) continue; // deleted meanwhile (pruned): the next upsert creates it
      if (current.count >= limit) return { granted: 0, count: current.count, holders: current.holders.length };
      n = Math.min(n, limit - current.count);
    }
    return { granted: 0, count: limit, holders: 0 }; // heavy contention: refuse rather than loop
  }

  async function renew(lease: Lease, subject: string, limit: number, now: number): Promise<void> {
    const left = limit - lease.knownCount;
    const busy = now - lease.lastAt < BUSY_MS && lease.lastSize > 0;
    const share = lease.knownHolders <= 1 ? left : Math.floor(left / (2 * lease.knownHolders));
    const wanted = Math.max(1, Math.min(busy ? lease.lastSize * GROWTH : 1, share));
    const taken = await take(subject, lease.start, limit, wanted);
    lease.spare += taken.granted;
    lease.knownCount = taken.count;
    lease.knownHolders = taken.holders;
    lease.lastSize = taken.granted;
    lease.lastAt = now;
    if (taken.granted === 0) lease.exhausted = true;
  }

  return {
    async consume(subject, limit) {
      const now = clock.now().getTime();
      const start = now - (now % windowMs);
      const resetMs = Math.max(1, start + windowMs - now);
      const resetSeconds = Math.max(1, Math.ceil(resetMs / 1000));
      let lease = leases.get(subject);
      if (!lease || lease.start !== start) {
        lease = { start, spare: 0, knownCount: 0, knownHolders: 0, exhausted: false, lastSize: 0, lastAt: 0 };
        leases.set(subject, lease);
      }
      while (lease.spare === 0 && !lease.exhausted) {
        if (!lease.pending) {
          const current = lease;
          current.pending = renew(current, subject, limit, now).finally(() => (current.pending = undefined));
        }
        await lease.pending;
      }
      if (lease.spare === 0) return { allowed: false, limit, remaining: 0, resetSeconds, resetMs };
      lease.spare--;
      return { allowed: true, limit, remaining: Math.max(0, limit - lease.knownCount + lease.spare), resetSeconds, resetMs };
    },
    async prune() {
      const result = await collection.deleteMany({ expires_at: { $lte: clock.now() } });
      return result.deletedCount;
    },
    async ensureIndexes() {
      await collection.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },
  };
}
