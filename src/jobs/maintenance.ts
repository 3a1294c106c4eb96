import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { RateLimiter } from "../ratelimit/rate-limiter.js";
import type { RequestLog } from "../requestlog/request-log.js";
import type { JobSpec } from "./scheduler.js";

/** Name of the retention job. */
export const PRUNE_JOB = "maintenance.prune";

/**
 * The retention job, run every 10 minutes by one worker: deletes request-log
 * rows older than REQUEST_LOG_RETENTION_DAYS and rate windows that have
 * ended. (FerretDB v1 has no TTL indexes, so retention is a job on every
 * database alike.) A failed run is simply done again at the next interval.
 */
export function createPruneJob(deps: {
  requestLog: RequestLog;
  rateLimiter: RateLimiter;
  retentionDays: number;
  clock: Clock;
  logger: Logger;
}): JobSpec {
  return {
    name: PRUNE_JOB,
    concurrency: 1,
    async run() {
      const requestLogRows = await deps.requestLog.prune(deps.retentionDays, deps.clock);
      const rateWindows = await deps.rateLimiter.prune();
      deps.logger.info({ requestLogRows, rateWindows }, "retention: old rows deleted");
    },
  };
}
