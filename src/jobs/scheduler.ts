import { Agenda, InMemoryNotificationChannel, type BackoffStrategy, type Job, type JobId } from "agenda";
import { MongoBackend } from "@agendajs/mongo-backend";
import type { Db } from "mongodb";
import type { Logger } from "../shared/logger.js";

/** A kind of background job: its name, handler and limits. */
export interface JobSpec<Data = unknown> {
  /** Unique name, for example "maintenance.prune". */
  name: string;
  /** Does the work; a throw marks the run failed (Agenda records the reason). */
  run(data: Data, job: Job<Data>): Promise<void>;
  /** Runs of this job at once in one process; Agenda's default (5) if unset. */
  concurrency?: number;
  /** How long a claimed run stays locked before another worker may take it over, in ms. */
  lockLifetimeMs?: number;
  /** Deletes a one-off run's job document once it completed (keeps `jobs` small for per-item jobs). */
  removeOnComplete?: boolean;
  /** Runs of this job one process holds locked at once (running or waiting to run); unlimited if unset. */
  lockLimit?: number;
  /** When a run throws: the delay before the next run, or null to give up (Agenda's backoff). */
  backoff?: BackoffStrategy;
}

/** Background work on Agenda (README "Design" §6), with jobs stored in the `jobs` collection. */
export interface Scheduler {
  /** The Agenda instance, for capabilities that schedule their own jobs. */
  readonly agenda: Agenda;
  /** Registers a kind of job (in every role: an API process may schedule what a worker runs). */
  define<Data>(spec: JobSpec<Data>): void;
  /**
   * Looks for due runs of job `name` now rather than at the next poll (for
   * example once a run finished and more may be waiting in the database).
   */
  poke(name: string): void;
  /**
   * Makes `name` run every `intervalMs` ms; one schedule across processes.
   * Always a number: Agenda reads a string through human-interval, which
   * takes "30000 milliseconds" for 30,000 seconds (test/scheduler.test.ts).
   */
  every(intervalMs: number, name: string): Promise<void>;
  /**
   * A recurring job that this process alone runs, every `intervalMs` ms (for
   * example a worker's claim of due webhook deliveries). Agenda runs only
   * the job names a process defines, so the job is named
   * `${kind}:${processId}`. The returned function removes it (at stop).
   * Such jobs of processes that died without stopping never run again; one
   * more than `staleMs` overdue (default an hour: a live process scans far
   * more often, and a job removed under a live process would never run
   * again) is removed when another process starts its own job of the kind.
   * Runs come at Agenda's scans (processEvery), so the scheduler should
   * scan at least as often as `intervalMs`.
   */
  everyInThisProcess(kind: string, processId: string, intervalMs: number, run: () => Promise<void>, staleMs?: number): Promise<() => Promise<void>>;
  /** Starts processing jobs (worker role). */
  start(): Promise<void>;
  /** Stops processing; running jobs are unlocked so another worker picks them up. */
  stop(): Promise<void>;
}

/**
 * Creates the scheduler over `db`. Jobs created in this process are picked
 * up at once (in-memory notifications); others are found by polling every
 * `processEvery` ms.
 */
export function createScheduler(db: Db, logger: Logger, processEveryMs = 5000): Scheduler {
  const notifications = new InMemoryNotificationChannel();
  const agenda = new Agenda({
    backend: new MongoBackend({ mongo: db, collection: "jobs" }),
    notificationChannel: notifications,
    processEvery: processEveryMs,
  });
  agenda.on("error", (err) => logger.error({ err }, "job scheduler error"));
  agenda.on("fail", (err, job) => logger.warn({ err, job: job.attrs.name }, "job failed"));
  let started = false;
  return {
    agenda,
    define(spec) {
      agenda.define(spec.name, (job: Job<never>) => spec.run(job.attrs.data, job as never), {
        ...(spec.concurrency ? { concurrency: spec.concurrency } : {}),
        ...(spec.lockLifetimeMs ? { lockLifetime: spec.lockLifetimeMs } : {}),
        ...(spec.removeOnComplete ? { removeOnComplete: true } : {}),
        ...(spec.lockLimit ? { lockLimit: spec.lockLimit } : {}),
        ...(spec.backoff ? { backoff: spec.backoff } : {}),
      });
    },
    poke(name) {
      if (!started) return;
      const now = new Date();
      notifications.publish({ jobId: name as JobId, jobName: name, nextRunAt: now, priority: 0, timestamp: now }).catch((err: unknown) => logger.warn({ err }, "job poke failed"));
    },
    async every(intervalMs, name) {
      await agenda.every(intervalMs, name, undefined, { skipImmediate: true });
    },
    async everyInThisProcess(kind, processId, intervalMs, run, staleMs = 3_600_000) {
      const name = `${kind}:${processId}`;
      agenda.define(name, () => run(), { concurrency: 1 });
      const overdue = Date.now() - staleMs;
      const { jobs } = await agenda.queryJobs({ search: `${kind}:` });
      const stale = jobs.filter((j) => j.name.startsWith(`${kind}:`) && j.nextRunAt && j.nextRunAt.getTime() < overdue).map((j) => String(j._id));
      if (stale.length > 0) {
        await agenda.cancel({ ids: stale });
        logger.info({ kind, removed: stale.length }, "removed the recurring jobs of processes that stopped without removing them");
      }
      await agenda.every(intervalMs, name, undefined, { skipImmediate: true });
      return async () => void (await agenda.cancel({ name }));
    },
    async start() {
      await agenda.start();
      started = true;
    },
    async stop() {
      if (started) await agenda.stop();
      started = false;
    },
  };
}
