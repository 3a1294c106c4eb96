import type { Job } from "agenda";
import type { EventBus, StoredEvent } from "../events/event-bus.js";
import type { JobSpec } from "../jobs/scheduler.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { PublisherRegistry } from "./publisher-registry.js";
import type { RetryBatches } from "./retry-batches.js";

/** Agenda job, recurring (WEBHOOK_SWEEP_INTERVAL_MS), run by one worker at a time. */
export const SWEEP_JOB = "webhooks.sweep";

/**
 * The sweep (SWEEP_JOB), the safety net under the in-process fan-out:
 *
 * 1. When a publishing process's registration expired (it crashed, or
 *    stopped with work left), it fans out again every event still unmarked a
 *    lease (WEBHOOK_LEASE_MS) after its creation. This reads the events
 *    collection, so it happens only then, not on every run. Claims make it safe: attempts made already are not
 *    made again (see Dispatcher). Registrations are forgotten only once every
 *    such event was done; otherwise the next run tries again. (Processes
 *    register before any event can be published there, and a crash of every
 *    process leaves their registrations to expire, so no event escapes.)
 * 2. It gives a job to retry batches that should have one
 *    (RetryBatches.scheduleStray).
 *
 * A failed run is simply done again at the next interval.
 */
export class WebhookSweep {
  constructor(
    private readonly o: {
      registry: PublisherRegistry;
      events: EventBus;
      batches: RetryBatches;
      clock: Clock;
      logger: Logger;
      leaseMs: number;
      fanOut: (event: StoredEvent) => Promise<void>;
      track: <T>(work: Promise<T>) => Promise<T>;
    },
  ) {}

  /** The job to define. */
  get job(): JobSpec {
    return { name: SWEEP_JOB, concurrency: 1, lockLifetimeMs: this.o.leaseMs, run: (_data, job) => this.o.track(this.run(job)) };
  }

  private async run(job: Job<unknown>): Promise<void> {
    const now = this.o.clock.now();
    const dead = await this.o.registry.expired(now);
    if (dead.length > 0 && (await this.recoverEvents(new Date(now.getTime() - this.o.leaseMs), job))) {
      await this.o.registry.forget(dead.map((d) => d._id));
    }
    await this.o.batches.scheduleStray(this.o.leaseMs);
  }

  /** Fans out the events unmarked since before `before`, 100 at a time; true when all of them got done. */
  private async recoverEvents(before: Date, job: Job<unknown>): Promise<boolean> {
    let complete = true;
    let chunk: StoredEvent[] = [];
    const drain = async () => {
      for (const result of await Promise.allSettled(chunk.map((event) => this.o.fanOut(event)))) {
        if (result.status === "fulfilled") continue;
        complete = false;
        this.o.logger.warn({ err: result.reason }, "recovering an event failed; the next sweep tries again");
      }
      chunk = [];
      await job.touch();
    };
    for await (const event of this.o.events.collection.find({ fanned_out_at: null, created_at: { $lt: before } })) {
      chunk.push(event);
      if (chunk.length >= 100) await drain();
    }
    await drain();
    return complete;
  }
}
