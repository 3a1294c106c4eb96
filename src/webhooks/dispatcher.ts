import type { Db } from "mongodb";
import { exponential, type Job } from "agenda";
import type { EventBus, StoredEvent } from "../events/event-bus.js";
import type { JobSpec, Scheduler } from "../jobs/scheduler.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { AttemptLog } from "./attempt-log.js";
import { automaticAttemptId, deliveryId, type AttemptRecord, type DeliveryRecord, type DeliveryStore } from "./delivery-store.js";
import { EndpointCache, type EndpointView } from "./endpoint-cache.js";
import type { EndpointStore } from "./endpoint-store.js";
import { GroupCommit } from "../store/group-commit.js";
import type { AttemptOutcome, WebhookSender } from "./http-sender.js";
import { retryManually } from "./manual-retry.js";
import { PublisherRegistry } from "./publisher-registry.js";
import { BATCH_JOB, RetryBatches } from "./retry-batches.js";
import { SecretKeyError } from "./signing-secret.js";
import { WebhookSweep } from "./webhook-sweep.js";
import { forEachSettled, fromBatchItem, interruptedOutcome, isUrgent, type WorkItem } from "./work-item.js";

/** Attempts of new events in flight in one process before further new events go to retry batches (a memory bound). */
const MAX_IN_FLIGHT_ITEMS = 10_000;
/** Retry batches one process runs at once. */
const BATCH_CONCURRENCY = 4;
/** Items of one retry batch in progress at once (so that queues stay short and new events pass). */
const ITEMS_IN_PROGRESS_PER_BATCH = 64;
/**
 * Retry batches one process holds locked (running or next in line). Agenda
 * looks for new jobs only every JOB_POLL_INTERVAL_MS, so a process keeps a
 * few seconds of work in hand; the rest stays free for other workers.
 */
const BATCH_LOCK_LIMIT = 16;
/** Beyond the attempt deadline, how long a claim without an outcome may still be in flight, in ms. */
const CLAIM_MARGIN_MS = 2000;

/** Raised inside the engine once the process stops; the work is left to its durable record. */
class StoppingError extends Error {
  override name = "StoppingError";
}

/** What the dispatcher is built from. */
export interface DispatcherOptions {
  db: Db;
  events: EventBus;
  endpoints: EndpointStore;
  store: DeliveryStore;
  sender: WebhookSender;
  scheduler: Scheduler;
  clock: Clock;
  logger: Logger;
  secretKey: Buffer;
  /** Delays before the retries, in ms (WEBHOOK_RETRY_SCHEDULE). */
  schedule: readonly number[];
  /** Attempt deadline, in ms. */
  timeoutMs: number;
  /** WEBHOOK_LEASE_MS. */
  leaseMs: number;
  /** ROLE, recorded with the registration. */
  role: string;
}

/**
 * The webhook delivery engine (spec §Delivery rules, DESIGN.md §6).
 *
 * Path of an event: the event bus stores it, then hands it to onEvent in
 * the same process, which makes one delivery per enabled endpoint of the
 * workspace selecting its type and attempts each at once: no job, no
 * polling. A failed attempt is retried at once when the schedule says so
 * (the first retry); later retries go into a retry batch (RetryBatches): a
 * record and an Agenda job due at the retry's time, which any worker may
 * run. The event is marked fanned out once each of its deliveries has
 * succeeded, failed for good, or sits in a batch.
 *
 * At most once per attempt: before attempt n of a delivery is sent, its
 * claim is inserted with a known _id (AttemptLog.claim); only the inserter
 * sends it. Whoever finds the claim taken by other work leaves the attempt
 * to that work. Finding it taken by its own work means a rerun after a
 * crash: it follows the recorded outcome or, with none, records the attempt
 * as interrupted (the receiver may have had it) and goes on with the next.
 *
 * At least once overall: work is durable before it leaves memory (events
 * stay unmarked, batches keep their job until they have run); a dead
 * worker's batch jobs run again when their Agenda lock expires
 * (WEBHOOK_LEASE_MS without renewal); the sweep (WebhookSweep) redoes the
 * unmarked events of processes whose registration expired
 * (PublisherRegistry). While an endpoint is disabled its deliveries wait in
 * paused batches; nothing is attempted for it.
 */
export class Dispatcher {
  readonly cache: EndpointCache;
  private readonly registry: PublisherRegistry;
  private readonly log: AttemptLog;
  private readonly batches: RetryBatches;
  private readonly sweep: WebhookSweep;
  private stopping = false;
  /** Work left unfinished at stop (then the registration expires instead of being removed). */
  private leftWork = false;
  private inFlight = 0;
  private readonly running = new Set<Promise<unknown>>();
  /** Marks of events fanned out, 25 per command (commands stay short). */
  private readonly marks = new GroupCommit<string, void>((ids) => this.writeMarks(ids), 25);
  private wake: () => void = () => {};
  private readonly stopped = new Promise<void>((resolve) => (this.wake = resolve));

  constructor(private readonly o: DispatcherOptions) {
    const { db, store, scheduler, clock, logger, endpoints } = o;
    this.cache = new EndpointCache(endpoints, o.secretKey);
    this.registry = new PublisherRegistry(db, clock, o.leaseMs, o.role, logger);
    this.log = new AttemptLog({ store, endpoints, cache: this.cache, clock, logger });
    this.batches = new RetryBatches({ db, store, scheduler, cache: this.cache, clock, schedule: o.schedule });
    this.sweep = new WebhookSweep({
      registry: this.registry,
      events: o.events,
      batches: this.batches,
      clock,
      logger,
      leaseMs: o.leaseMs,
      fanOut: (event) => this.fanOut(event),
      track: (work) => this.track(work),
    });
  }

  /** The jobs to define: retry batches (BATCH_JOB) and the sweep (SWEEP_JOB). */
  get jobs(): JobSpec<never>[] {
    const batch: JobSpec<{ batch_id: string }> = {
      name: BATCH_JOB,
      concurrency: BATCH_CONCURRENCY,
      lockLimit: BATCH_LOCK_LIMIT,
      lockLifetimeMs: this.o.leaseMs,
      removeOnComplete: true,
      // A batch that fails (database unavailable, process stopping) runs again: nothing is dropped.
      backoff: exponential({ delay: 1000, factor: 2, maxDelay: 60_000, maxRetries: Number.MAX_SAFE_INTEGER }),
      run: (data, job) => this.track(this.runBatch(data.batch_id, job)),
    };
    return [batch, this.sweep.job] as JobSpec<never>[];
  }

  /** Registers this process as a publisher (before any event can be published here). */
  async start(): Promise<void> {
    await this.registry.register();
  }

  /**
   * Stops taking work, waits for attempts in flight (about the attempt
   * deadline at most), and removes the registration, or lets it expire when
   * events were left unmarked, so that a sweep recovers them (retry batches
   * left unfinished run again on their own: their jobs stay).
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    // Attempts in flight end within their deadline; past that (and their writes), leave the rest to recovery.
    const settled = Promise.allSettled([...this.running]).then(() => true);
    const late = new Promise<false>((resolve) => setTimeout(() => resolve(false), this.o.timeoutMs + 5000).unref());
    if (!(await Promise.race([settled, late]))) this.leftWork = true;
    await this.registry.unregister(!this.leftWork).catch((err: unknown) => this.o.logger.warn({ err }, "webhook publisher registration not removed"));
    await this.o.sender.close();
  }

  async ensureIndexes(): Promise<void> {
    await this.registry.ensureIndexes();
  }

  /** Gives every batch paused for `endpointId` a job now (after it was enabled or deleted). */
  resumePaused(endpointId: string): Promise<void> {
    return this.batches.resumePaused(endpointId);
  }

  /** One manual attempt now (see retryManually). */
  retryManually(delivery: DeliveryRecord): Promise<AttemptRecord> {
    const { events, store, sender, clock } = this.o;
    return retryManually({ cache: this.cache, events, store, sender, log: this.log, clock, maxAttempts: 1 + this.o.schedule.length }, delivery);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    void work.finally(() => this.running.delete(work)).catch(() => {});
    return work;
  }

  /* ------------------------------------------------------------ new events */

  /** Event bus listener: fans the event out in the background (the publisher does not wait). */
  onEvent = async (event: StoredEvent): Promise<void> => {
    if (this.stopping) {
      this.leftWork = true;
      return;
    }
    void this.track(this.fanOutUntilDone(event));
  };

  /** Event bus interest: whether an enabled endpoint of the workspace selected the type (else the event needs no fan-out). */
  wants = async (workspaceId: string, type: string, at: Date): Promise<boolean> => (await this.selecting(workspaceId, type, at)).length > 0;

  /** The enabled endpoints of the workspace that selected `type` and existed at `at`. */
  private async selecting(workspaceId: string, type: string, at: Date): Promise<EndpointView[]> {
    return (await this.cache.forWorkspace(workspaceId)).filter((e) => e.enabled && e.events.includes(type) && e.createdAt.getTime() <= at.getTime());
  }

  /** Fans out, trying again while this process lives (the event stays unmarked meanwhile). */
  private async fanOutUntilDone(event: StoredEvent): Promise<void> {
    for (let wait = 500; ; wait = Math.min(wait * 2, 30_000)) {
      try {
        await this.fanOut(event);
        return;
      } catch (err) {
        if (this.stopping) {
          this.leftWork = true;
          return;
        }
        this.o.logger.warn({ err, eventId: event._id }, "fanning out an event failed; trying again");
        await Promise.race([new Promise((resolve) => setTimeout(resolve, wait)), this.stopped]);
      }
    }
  }

  /**
   * Makes the event's deliveries (one per enabled endpoint of its workspace
   * that selected its type and existed when it was created), takes each as
   * far as it goes now, and marks the event. Past MAX_IN_FLIGHT_ITEMS in this
   * process, the first attempts go to a retry batch due now instead.
   */
  private async fanOut(event: StoredEvent): Promise<void> {
    const work = `event:${event._id}`;
    const endpoints = await this.selecting(event.workspace_id, event.type, event.created_at);
    const items: WorkItem[] = endpoints.map((e) => ({
      deliveryId: deliveryId(event._id, e.id),
      workspaceId: event.workspace_id,
      endpointId: e.id,
      eventId: event._id,
      eventType: event.type,
      body: event.body,
      number: 1,
      work,
    }));
    if (this.inFlight + items.length > MAX_IN_FLIGHT_ITEMS) {
      await Promise.all(items.map((item) => this.batches.add(item, this.o.clock.now())));
    } else {
      await forEachSettled(items, items.length, (item) => this.process(item));
    }
    await this.marks.add(event._id);
  }

  private async writeMarks(ids: string[]): Promise<void[]> {
    const now = this.o.clock.now();
    await this.o.events.collection.bulkWrite(
      ids.map((id) => ({ updateOne: { filter: { _id: id }, update: { $set: { fanned_out_at: now } } } })),
      { ordered: false },
    );
    return ids.map(() => undefined);
  }

  /** Runs a retry batch (BATCH_JOB): every item as far as it goes, then deletes the batch. */
  private async runBatch(batchId: string, job: Job<unknown>): Promise<void> {
    const stored = await this.batches.items(batchId);
    if (!stored) return this.batches.finish(batchId);
    const touch = setInterval(
      () => job.touch().catch((err: unknown) => this.o.logger.warn({ err, batchId }, "renewing a batch lock failed")),
      this.o.leaseMs / 3,
    );
    try {
      for (const endpointId of new Set(stored.items.map((i) => i.e))) await this.cache.get(endpointId, 0);
      const work = `batch:${batchId}`;
      await forEachSettled(stored.items, ITEMS_IN_PROGRESS_PER_BATCH, (b) => this.process(fromBatchItem(b, work)));
      await this.batches.finish(batchId);
      // Once Agenda has let go of this run, take on another due batch without waiting for its next poll.
      setTimeout(() => this.o.scheduler.poke(BATCH_JOB), 0);
    } finally {
      clearInterval(touch);
    }
  }

  /* ------------------------------------------------------------ one delivery */

  /** When attempt `number`, which failed, is followed by the next; null after the last. */
  private nextAttemptAt(number: number, outcome: Pick<AttemptOutcome, "startedAt" | "durationMs">): Date | null {
    const delay = this.o.schedule[number - 1];
    return delay === undefined ? null : new Date(outcome.startedAt.getTime() + (outcome.durationMs ?? 0) + delay);
  }

  /**
   * Takes an item as far as it goes now: attempts until success, the end
   * of the schedule, or a retry that is not due at once (handed to a batch);
   * pauses it while its endpoint is disabled; drops it when its endpoint
   * was deleted or other work makes the attempt.
   */
  private async process(first: WorkItem): Promise<void> {
    this.inFlight++;
    try {
      let item = first;
      for (;;) {
        if (this.stopping) throw new StoppingError("the process is stopping");
        const endpoint = await this.cache.get(item.endpointId);
        if (!endpoint) return;
        if (!endpoint.enabled) return await this.batches.pause(item, endpoint.id);
        if (endpoint.secret === undefined) throw new SecretKeyError(endpoint.secretError ?? "no signing secret");
        const urgent = isUrgent(item);
        const claim = await this.log.claim(item, urgent);
        const record = (outcome: AttemptOutcome, counts: boolean, nextAttemptAt: Date | null) =>
          this.log.record({ item, trigger: "automatic", number: item.number, url: endpoint.url, outcome, counts, nextAttemptAt }, urgent);
        let next: Date | null;
        if (claim.claimed) {
          const { url, secret } = endpoint;
          const outcome = await this.o.sender.send({ url, secret, body: item.body, eventType: item.eventType, eventId: item.eventId, urgent });
          next = outcome.succeeded ? null : this.nextAttemptAt(item.number, outcome);
          const stored = await record(outcome, true, next);
          if (outcome.succeeded) return;
          if (!stored) next = (await this.recorded(item))?.next_attempt_at ?? null;
        } else {
          if (claim.work !== item.work && claim.work !== item.recover) return;
          // Our own work claimed it before: a rerun. Follow what was recorded.
          const recorded = await this.recorded(item);
          if (recorded?.succeeded) return;
          if (recorded) {
            next = recorded.next_attempt_at;
          } else {
            const doubtUntil = claim.at.getTime() + this.o.timeoutMs + CLAIM_MARGIN_MS;
            if (doubtUntil > this.o.clock.now().getTime()) {
              // Possibly still in flight elsewhere: look again once it cannot be.
              return await this.batches.add({ ...item, recover: claim.work }, new Date(doubtUntil));
            }
            const outcome = interruptedOutcome(claim.at);
            next = this.nextAttemptAt(item.number, outcome);
            await record(outcome, false, next);
          }
        }
        if (next === null) return;
        const immediate = this.o.schedule[item.number - 1] === 0;
        item = { ...item, number: item.number + 1, recover: undefined };
        if (!immediate) return await this.batches.add(item, next);
      }
    } finally {
      this.inFlight--;
    }
  }

  private recorded(item: WorkItem): Promise<AttemptRecord | null> {
    return this.o.store.attempts.findOne({ _id: automaticAttemptId(item.deliveryId, item.number) });
  }
}
