import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { RateLimiter } from "../ratelimit/rate-limiter.js";
import type { RequestLog } from "../requestlog/request-log.js";
import type { JobSpec } from "./scheduler.js";

/** Name of the retention job. */
export const PRUNE_JOB = "maintenance.prune";

/**
 * The retention job, run every 10 minutes by one worker: deletes request-log
 * rows and rate windows whose `expires_at` has passed. Both collections carry
 * a TTL index on `expires_at` too, but MongoDB's TTL monitor is a background
 * pass (once a minute, and it may fall behind), and not every MongoDB-wire
 * server runs one: this job is what bounds them by their retention on any
 * server. Reads check `expires_at` themselves. A failed run is simply done
 * again at the next interval.
 */
export function createPruneJob(deps: {
  requestLog: RequestLog;
  rateLimiter: RateLimiter;
  clock: Clock;
  logger: Logger;
}): JobSpec {
  return {
    name: PRUNE_JOB,
    concurrency: 1,
    async run() {
      const requestLogRows = await deps.requestLog.prune(deps.clock);
      const rateWindows = await deps.rateLimiter.prune();
      deps.logger.info({ requestLogRows, rateWindows }, "retention: old rows deleted");
    },
  };
}
