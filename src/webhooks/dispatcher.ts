import type { Db } from "mongodb";
import { exponential, type Job } from "agenda";
import type { EventBus, StoredEvent } from "../events/event-bus.js";
import type { JobSpec, Scheduler } from "../jobs/scheduler.js";
import type { Clock } from "../shared/clock.js";
import { apiError } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import {
  automaticAttemptId,
  deliveryId,
  insertNew,
  manualAttemptId,
  type AttemptRecord,
  type BatchItem,
  type DeliveryRecord,
  type DeliveryStore,
} from "./delivery-store.js";
import { EndpointCache, type EndpointView } from "./endpoint-cache.js";
import type { CountedFailure, EndpointStore } from "./endpoint-store.js";
import { GroupCommit } from "./group-commit.js";
import type { AttemptOutcome, WebhookSender } from "./http-sender.js";
import { PublisherRegistry } from "./publisher-registry.js";
import { SecretKeyError } from "./signing-secret.js";

/** Agenda job that runs one retry batch (data: `{ batch_id }`). */
export const BATCH_JOB = "webhooks.batch";
/** Agenda job, recurring, that recovers what crashed processes left and restarts paused deliveries. */
export const SWEEP_JOB = "webhooks.sweep";

/** Most items in one retry batch. */
const MAX_BATCH_ITEMS = 500;
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
/** Longest interval between writes of last_success_at for an endpoint that keeps succeeding, in ms. */
const SUCCESS_WRITE_INTERVAL_MS = 1000;

/**
 * One automatic attempt to make: attempt `number` of the delivery of an
 * event to an endpoint, on behalf of `work`, the durable record that
 * answers for it until it is done: "event:<id>" (an event not yet marked
 * fanned out: the sweep redoes it after a crash) or "batch:<id>" (a retry
 * batch: Agenda runs it again when its worker dies).
 */
interface Item {
  deliveryId: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The event's stored envelope: the bytes sent and signed. */
  body: string;
  number: number;
  work: string;
  /** A claim made by this work is our own earlier, interrupted try. */
  recover?: string;
}

/** Result of claiming an attempt. */
type Claim = { claimed: true } | { claimed: false; work: string; at: Date };

/** An outcome to record. */
interface ResultEntry {
  item: Pick<Item, "deliveryId" | "workspaceId" | "endpointId" | "eventId">;
  trigger: "automatic" | "manual";
  number: number;
  url: string;
  outcome: AttemptOutcome;
  /** Whether it counts for the endpoint's consecutive failures (interrupted attempts do not). */
  counts: boolean;
  nextAttemptAt: Date | null;
}

/** An item to hand to a retry batch: due at a time, or paused until its endpoint is enabled. */
type FollowUp = { item: Item; due: Date } | { item: Item; pausedFor: string };

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

const toBatchItem = (i: Item): BatchItem => ({
  d: i.deliveryId,
  w: i.workspaceId,
  e: i.endpointId,
  v: i.eventId,
  t: i.eventType,
  b: i.body,
  n: i.number,
  ...(i.recover ? { r: i.recover } : {}),
});

const fromBatchItem = (b: BatchItem, work: string): Item => ({
  deliveryId: b.d,
  workspaceId: b.w,
  endpointId: b.e,
  eventId: b.v,
  eventType: b.t,
  body: b.b,
  number: b.n,
  work,
  ...(b.r ? { recover: b.r } : {}),
});

/**
 * The webhook delivery engine (spec §Delivery rules, DESIGN.md §6).
 *
 * Path of an event: the event bus stores it, then hands it to onEvent in
 * the same process, which makes one delivery per enabled endpoint of the
 * workspace selecting its type and attempts each at once: no job, no
 * polling. A failed attempt is retried at once when the schedule says so
 * (the first retry), otherwise it goes into a retry batch: a small record
 * and one Agenda job due at the retry's time, which any worker may run.
 * The event is marked fanned out only when every one of its deliveries has
 * succeeded, failed for good, or sits in a batch.
 *
 * At most once per attempt: before attempt n of a delivery is sent, its
 * claim is inserted with a known _id (the delivery record itself for n = 1);
 * only the inserter sends it. Whoever finds the claim taken by other work
 * leaves the attempt to that work; finding it taken by its own work means a
 * rerun after a crash: it follows the recorded outcome, or, with none,
 * records the attempt as interrupted (the receiver may have had it) and goes
 * on with the next one. At least once overall: work is durable before it is
 * dropped from memory (events stay unmarked, batches stay with their job), a
 * crashed worker's batch jobs run again when their Agenda lock expires
 * (WEBHOOK_LEASE_MS without renewal), and the sweep redoes the unmarked
 * events of processes whose registration expired (PublisherRegistry).
 *
 * Writes are grouped (GroupCommit): claims, outcomes, batches and marks of
 * many attempts go in one command each, and a delivery costs about three
 * inserted records.
 */
export class Dispatcher {
  readonly cache: EndpointCache;
  private readonly registry: PublisherRegistry;
  private readonly maxAttempts: number;
  private readonly bucketMs: number;
  private stopping = false;
  /** Work left unfinished at stop (then the registration expires instead of being removed). */
  private leftWork = false;
  private inFlight = 0;
  private readonly running = new Set<Promise<unknown>>();
  private sweptOnce = false;
  /** Per endpoint: when this process last wrote last_success_at. */
  private readonly successWrittenAt = new Map<string, number>();
  private wake: () => void = () => {};
  private readonly stopped = new Promise<void>((resolve) => (this.wake = resolve));

  // Writes are capped (items per command) so that no single command holds the database for long.
  // New events have writers of their own, so that their first attempts never queue behind retries.
  private readonly writers = {
    urgent: {
      claims: new GroupCommit<Item, Claim>((items) => this.writeClaims(items), 200),
      results: new GroupCommit<ResultEntry, boolean>((entries) => this.writeResults(entries), 200),
    },
    background: {
      claims: new GroupCommit<Item, Claim>((items) => this.writeClaims(items), 200),
      results: new GroupCommit<ResultEntry, boolean>((entries) => this.writeResults(entries), 200),
    },
  };
  private readonly followUps = new GroupCommit<FollowUp, void>((entries) => this.writeFollowUps(entries), MAX_BATCH_ITEMS);
  private readonly marks = new GroupCommit<string, void>((ids) => this.writeMarks(ids), 100);

  constructor(private readonly o: DispatcherOptions) {
    this.cache = new EndpointCache(o.endpoints, o.secretKey);
    this.registry = new PublisherRegistry(o.db, o.clock, o.leaseMs, o.role, o.logger);
    this.maxAttempts = 1 + o.schedule.length;
    const shortest = Math.min(...o.schedule.filter((d) => d > 0), 4000);
    this.bucketMs = Math.max(10, Math.min(1000, Math.floor(shortest / 4)));
  }

  /** The jobs to define: retry batches and the sweep. */
  get jobs(): JobSpec<never>[] {
    const batch: JobSpec<{ batch_id: string }> = {
      name: BATCH_JOB,
      concurrency: BATCH_CONCURRENCY,
      lockLimit: BATCH_LOCK_LIMIT,
      lockLifetimeMs: this.o.leaseMs,
      removeOnComplete: true,
      // A batch that fails (database unavailable, stopping) runs again: nothing is dropped.
      backoff: exponential({ delay: 1000, factor: 2, maxDelay: 60_000, maxRetries: Number.MAX_SAFE_INTEGER }),
      run: (data, job) => this.track(this.runBatch(data.batch_id, job)),
    };
    const sweep: JobSpec = { name: SWEEP_JOB, concurrency: 1, lockLifetimeMs: this.o.leaseMs, run: (_data, job) => this.track(this.sweep(job)) };
    return [batch, sweep] as JobSpec<never>[];
  }

  /** Registers this process as a publisher (before any event can be published here). */
  async start(): Promise<void> {
    await this.registry.register();
  }

  /**
   * Stops taking work, waits for attempts in flight (at most the attempt
   * deadline), and removes the registration, or lets it expire when events
   * were left unmarked so that a sweep recovers them.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await Promise.allSettled([...this.running]);
    await this.registry.unregister(!this.leftWork).catch((err: unknown) => this.o.logger.warn({ err }, "webhook publisher registration not removed"));
    await this.o.sender.close();
  }

  async ensureIndexes(): Promise<void> {
    await this.registry.ensureIndexes();
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
   * far as it goes now, and marks the event.
   */
  private async fanOut(event: StoredEvent): Promise<void> {
    const work = `event:${event._id}`;
    const endpoints = (await this.cache.forWorkspace(event.workspace_id)).filter(
      (e) => e.enabled && e.events.includes(event.type) && e.createdAt.getTime() <= event.created_at.getTime(),
    );
    const items: Item[] = endpoints.map((e) => ({
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
      await Promise.all(items.map((item) => this.followUps.add({ item, due: this.o.clock.now() })));
    } else {
      await forEachSettled(items, items.length, (item) => this.process(item));
    }
    await this.marks.add(event._id);
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
   * was deleted or another work makes the attempt.
   */
  private async process(first: Item): Promise<void> {
    this.inFlight++;
    try {
      let item = first;
      for (;;) {
        if (this.stopping) throw new StoppingError("the process is stopping");
        const endpoint = await this.cache.get(item.endpointId);
        if (!endpoint) return;
        if (!endpoint.enabled) return await this.followUps.add({ item, pausedFor: endpoint.id });
        const urgent = item.work.startsWith("event:");
        const { claims, results } = urgent ? this.writers.urgent : this.writers.background;
        const claim = await claims.add(item);
        let next: Date | null;
        if (claim.claimed) {
          const outcome = await this.attempt(item, endpoint, urgent);
          next = outcome.succeeded ? null : this.nextAttemptAt(item.number, outcome);
          const stored = await results.add({ item, trigger: "automatic", number: item.number, url: endpoint.url, outcome, counts: true, nextAttemptAt: next });
          if (outcome.succeeded) return;
          if (!stored) next = (await this.o.store.attempts.findOne({ _id: automaticAttemptId(item.deliveryId, item.number) }))?.next_attempt_at ?? null;
        } else {
          if (claim.work !== item.work && claim.work !== item.recover) return;
          const recorded = await this.o.store.attempts.findOne({ _id: automaticAttemptId(item.deliveryId, item.number) });
          if (recorded?.succeeded) return;
          if (recorded) {
            next = recorded.next_attempt_at;
          } else {
            const doubtUntil = claim.at.getTime() + this.o.timeoutMs + CLAIM_MARGIN_MS;
            if (doubtUntil > this.o.clock.now().getTime()) {
              // Possibly still in flight elsewhere: look again once it cannot be.
              return await this.followUps.add({ item: { ...item, recover: claim.work }, due: new Date(doubtUntil) });
            }
            const outcome = interrupted(claim.at);
            next = this.nextAttemptAt(item.number, outcome);
            await results.add({ item, trigger: "automatic", number: item.number, url: endpoint.url, outcome, counts: false, nextAttemptAt: next });
          }
        }
        if (next === null) return;
        const immediate = this.o.schedule[item.number - 1] === 0;
        item = { ...item, number: item.number + 1, recover: undefined };
        if (!immediate) return await this.followUps.add({ item, due: next });
      }
    } finally {
      this.inFlight--;
    }
  }

  private attempt(item: Item, endpoint: EndpointView, urgent: boolean): Promise<AttemptOutcome> {
    if (endpoint.secret === undefined) throw new SecretKeyError(endpoint.secretError ?? "no signing secret");
    return this.o.sender.send({ url: endpoint.url, body: item.body, secret: endpoint.secret, eventType: item.eventType, eventId: item.eventId, urgent });
  }

  /* ------------------------------------------------------------ grouped writes */

  private async writeClaims(items: Item[]): Promise<Claim[]> {
    const now = this.o.clock.now();
    const firsts = items.filter((i) => i.number === 1);
    const later = items.filter((i) => i.number > 1);
    const firstsNew = await insertNew(
      this.o.store.deliveries,
      firsts.map((i) => ({
        _id: i.deliveryId,
        workspace_id: i.workspaceId,
        endpoint_id: i.endpointId,
        event_id: i.eventId,
        event_type: i.eventType,
        created_at: now,
        work: i.work,
      })),
    );
    const laterNew = await insertNew(
      this.o.store.claims,
      later.map((i) => ({ _id: automaticAttemptId(i.deliveryId, i.number), delivery_id: i.deliveryId, work: i.work, created_at: now })),
    );
    const claims = new Map<Item, Claim>();
    const taken = async (item: Item, isNew: boolean, read: () => Promise<{ work: string; created_at: Date } | null>) => {
      if (isNew) return claims.set(item, { claimed: true });
      const existing = await read();
      claims.set(item, { claimed: false, work: existing?.work ?? "unknown", at: existing?.created_at ?? now });
    };
    await Promise.all([
      ...firsts.map((item, i) => taken(item, firstsNew[i] as boolean, () => this.o.store.deliveries.findOne({ _id: item.deliveryId }))),
      ...later.map((item, i) =>
        taken(item, laterNew[i] as boolean, () => this.o.store.claims.findOne({ _id: automaticAttemptId(item.deliveryId, item.number) })),
      ),
    ]);
    return items.map((item) => claims.get(item) as Claim);
  }

  /** Records outcomes: the endpoints' counts first (which may disable one), then the attempts. Resolves to "stored" per entry. */
  private async writeResults(entries: ResultEntry[]): Promise<boolean[]> {
    const disabling = new Set<ResultEntry>();
    const byEndpoint = new Map<string, ResultEntry[]>();
    for (const entry of entries) {
      if (!entry.counts) continue;
      const list = byEndpoint.get(entry.item.endpointId) ?? [];
      list.push(entry);
      byEndpoint.set(entry.item.endpointId, list);
    }
    await Promise.all(
      [...byEndpoint].map(async ([endpointId, list]) => {
        // In order: each run of failures is counted, each run of successes resets.
        let failed: ResultEntry[] = [];
        let succeededAt: Date | undefined;
        const countFailed = async () => {
          if (failed.length === 0) return;
          const failures: CountedFailure[] = failed.map((e) => ({ at: e.outcome.startedAt, summary: e.outcome.errorMessage ?? "failed" }));
          const tipping = await this.o.endpoints.countFailures(endpointId, failures);
          if (tipping !== undefined) {
            disabling.add(failed[tipping] as ResultEntry);
            this.cache.markDisabled(endpointId);
            this.o.logger.warn({ endpointId }, "webhook endpoint disabled after consecutive failures");
          }
          failed = [];
        };
        const countSucceeded = async () => {
          if (succeededAt) await this.noteSuccess(endpointId, succeededAt);
          succeededAt = undefined;
        };
        for (const entry of list) {
          if (entry.outcome.succeeded) {
            await countFailed();
            succeededAt = entry.outcome.startedAt;
          } else {
            await countSucceeded();
            failed.push(entry);
          }
        }
        await countFailed();
        await countSucceeded();
      }),
    );
    return insertNew(
      this.o.store.attempts,
      entries.map((e): AttemptRecord => ({
        _id: e.trigger === "manual" ? manualAttemptId(e.item.deliveryId, e.number) : automaticAttemptId(e.item.deliveryId, e.number),
        delivery_id: e.item.deliveryId,
        workspace_id: e.item.workspaceId,
        endpoint_id: e.item.endpointId,
        event_id: e.item.eventId,
        number: e.number,
        trigger: e.trigger,
        url: e.url,
        started_at: e.outcome.startedAt,
        duration_ms: e.outcome.durationMs,
        http_status: e.outcome.httpStatus,
        response_body: e.outcome.responseBody,
        succeeded: e.outcome.succeeded,
        error_kind: e.outcome.errorKind,
        error_message: e.outcome.errorMessage,
        disabled_endpoint: disabling.has(e),
        next_attempt_at: e.nextAttemptAt,
      })),
    );
  }

  /**
   * A success resets the endpoint's count: read it (cheap), and write only
   * when it is not 0, or to move last_success_at on at most once a second.
   */
  private async noteSuccess(endpointId: string, at: Date): Promise<void> {
    const current = await this.o.endpoints.collection.findOne({ _id: endpointId }, { projection: { consecutive_failures: 1 } });
    if (!current) return;
    const written = this.successWrittenAt.get(endpointId) ?? 0;
    if (current.consecutive_failures === 0 && performance.now() - written < SUCCESS_WRITE_INTERVAL_MS) return;
    this.successWrittenAt.set(endpointId, performance.now());
    await this.o.endpoints.recordSuccess(endpointId, at);
  }

  private async writeFollowUps(entries: FollowUp[]): Promise<void[]> {
    const now = this.o.clock.now();
    type Group = { due: Date | null; paused: string | null; items: BatchItem[] };
    const groups = new Map<string, Group[]>();
    for (const entry of entries) {
      const paused = "pausedFor" in entry ? entry.pausedFor : null;
      // Due times are rounded up to a bucket, so that retries due together share a batch.
      const due = "due" in entry ? new Date(Math.ceil(Math.max(entry.due.getTime(), now.getTime()) / this.bucketMs) * this.bucketMs) : null;
      const key = paused ? `paused:${paused}` : `due:${due?.getTime()}`;
      const list = groups.get(key) ?? [];
      groups.set(key, list);
      let group = list[list.length - 1];
      if (!group || group.items.length >= MAX_BATCH_ITEMS) list.push((group = { due, paused, items: [] }));
      group.items.push(toBatchItem(entry.item));
    }
    const batches = [...groups.values()].flat().map((g) => ({ _id: newId(), ...g }));
    await this.o.store.batchItems.insertMany(batches.map((b) => ({ _id: b._id, items: b.items })));
    await this.o.store.batches.insertMany(
      batches.map((b) => ({ _id: b._id, size: b.items.length, due_at: b.due, paused_endpoint_id: b.paused, created_at: now })),
    );
    for (const batch of batches) {
      if (batch.due) {
        await this.scheduleBatch(batch._id, batch.due);
      } else if (batch.paused) {
        // Enabled again meanwhile (its resume may have missed this batch): run it now.
        const endpoint = await this.cache.get(batch.paused, 0);
        if (!endpoint?.enabled) continue;
        await this.scheduleBatch(batch._id, now);
      }
    }
    return entries.map(() => undefined);
  }

  /** Creates the batch's job, unless it has one. */
  private async scheduleBatch(batchId: string, due: Date): Promise<void> {
    await this.o.scheduler.agenda
      .create(BATCH_JOB, { batch_id: batchId })
      .unique({ "data.batch_id": batchId }, { insertOnly: true })
      .schedule(due)
      .save();
  }

  private async writeMarks(ids: string[]): Promise<void[]> {
    const now = this.o.clock.now();
    await this.o.events.collection.bulkWrite(
      ids.map((id) => ({ updateOne: { filter: { _id: id }, update: { $set: { fanned_out_at: now } } } })),
      { ordered: false },
    );
    return ids.map(() => undefined);
  }

  /* ------------------------------------------------------------ jobs */

  /** Runs a retry batch (BATCH_JOB): every item as far as it goes, then deletes the batch. */
  private async runBatch(batchId: string, job: Job<unknown>): Promise<void> {
    const stored = await this.o.store.batchItems.findOne({ _id: batchId });
    if (!stored) {
      await this.o.store.batches.deleteOne({ _id: batchId });
      return;
    }
    const touch = setInterval(() => job.touch().catch((err: unknown) => this.o.logger.warn({ err, batchId }, "renewing a batch lock failed")), this.o.leaseMs / 3);
    try {
      for (const endpointId of new Set(stored.items.map((i) => i.e))) await this.cache.get(endpointId, 0);
      const work = `batch:${batchId}`;
      await forEachSettled(stored.items, ITEMS_IN_PROGRESS_PER_BATCH, (b) => this.process(fromBatchItem(b, work)));
      await this.o.store.batches.deleteOne({ _id: batchId });
      await this.o.store.batchItems.deleteOne({ _id: batchId });
    } finally {
      clearInterval(touch);
    }
  }

  /**
   * The sweep (SWEEP_JOB): (1) when a publisher's registration expired, or
   * on this process's first sweep, fans out again every event still
   * unmarked after a lease (claims make this safe: what was done is not done
   * twice); (2) gives a job to batches that should have one: paused ones
   * whose endpoint is enabled again or deleted, and any whose job was never
   * created (a crash between the two writes).
   */
  private async sweep(job: Job<unknown>): Promise<void> {
    const now = this.o.clock.now();
    const dead = await this.registry.expired(now);
    if (dead.length > 0 || !this.sweptOnce) {
      const complete = await this.recoverEvents(new Date(now.getTime() - this.o.leaseMs), job);
      this.sweptOnce = true;
      if (complete) await this.registry.forget(dead.map((d) => d._id));
    }
    const [batches, jobs] = await Promise.all([
      this.o.store.batches.find({}).toArray(),
      this.o.db.collection<{ data?: { batch_id?: string } }>("jobs").find({ name: BATCH_JOB }, { projection: { data: 1 } }).toArray(),
    ]);
    const withJob = new Set(jobs.map((j) => j.data?.batch_id));
    for (const batch of batches) {
      if (withJob.has(batch._id)) continue;
      if (batch.paused_endpoint_id) {
        const endpoint = await this.cache.get(batch.paused_endpoint_id, 0);
        if (!endpoint || endpoint.enabled) await this.scheduleBatch(batch._id, now);
      } else if (batch.created_at.getTime() < now.getTime() - this.o.leaseMs) {
        await this.scheduleBatch(batch._id, batch.due_at ?? now);
      }
    }
  }

  /** Fans out the events unmarked since before `before`; true when all of them got done. */
  private async recoverEvents(before: Date, job: Job<unknown>): Promise<boolean> {
    const cursor = this.o.events.collection.find({ fanned_out_at: null, created_at: { $lt: before } });
    let complete = true;
    let chunk: StoredEvent[] = [];
    const drain = async () => {
      const results = await Promise.allSettled(chunk.map((event) => this.fanOut(event)));
      for (const r of results) {
        if (r.status === "rejected") {
          complete = false;
          this.o.logger.warn({ err: r.reason }, "recovering an event failed; the next sweep tries again");
        }
      }
      chunk = [];
      await job.touch();
    };
    for await (const event of cursor) {
      chunk.push(event);
      if (chunk.length >= 100) await drain();
    }
    await drain();
    if (!complete) this.sweptOnce = false;
    return complete;
  }

  /* ------------------------------------------------------------ console */

  /** Gives every batch paused for `endpointId` a job now (after it was enabled or deleted). */
  async resumePaused(endpointId: string): Promise<void> {
    const paused = await this.o.store.batches.find({ paused_endpoint_id: endpointId }).toArray();
    for (const batch of paused) await this.scheduleBatch(batch._id, this.o.clock.now());
  }

  /**
   * Makes one manual attempt of `delivery` now (spec §Delivery rules 3) with
   * a fresh signature, records it (it counts for the endpoint like any
   * attempt), and, when it succeeds, ends the automatic schedule: claims of
   * the remaining automatic attempts are taken in its name.
   *
   * @throws ConnectError failed_precondition when the endpoint is disabled or deleted, or the event is gone.
   */
  async retryManually(delivery: DeliveryRecord): Promise<AttemptRecord> {
    const endpoint = await this.cache.get(delivery.endpoint_id, 0);
    if (!endpoint) {
      throw apiError("failed_precondition", `The endpoint ${delivery.endpoint_id} of this delivery was deleted`, { endpoint_id: delivery.endpoint_id });
    }
    if (!endpoint.enabled) {
      throw apiError("failed_precondition", `The endpoint ${endpoint.id} is disabled; enable it before retrying its deliveries`, {
        endpoint_id: endpoint.id,
      });
    }
    const event = await this.o.events.collection.findOne({ _id: delivery.event_id });
    if (!event) throw apiError("failed_precondition", `The event ${delivery.event_id} of this delivery no longer exists`);
    const { claims } = this.o.store;
    let number = 1;
    while (await claims.findOne({ _id: manualAttemptId(delivery._id, number) }, { projection: { _id: 1 } })) number++;
    const claimOf = (n: number) => ({ _id: manualAttemptId(delivery._id, n), delivery_id: delivery._id, work: "manual", created_at: this.o.clock.now() });
    while (!(await insertNew(claims, [claimOf(number)]))[0]) number++;
    const item: Item = {
      deliveryId: delivery._id,
      workspaceId: delivery.workspace_id,
      endpointId: delivery.endpoint_id,
      eventId: delivery.event_id,
      eventType: delivery.event_type,
      body: event.body,
      number,
      work: "manual",
    };
    const outcome = await this.attempt(item, endpoint, true);
    await this.writers.urgent.results.add({ item, trigger: "manual", number, url: endpoint.url, outcome, counts: true, nextAttemptAt: null });
    const id = manualAttemptId(delivery._id, number);
    if (outcome.succeeded) {
      const rest = [];
      for (let n = 2; n <= this.maxAttempts; n++) {
        rest.push({ _id: automaticAttemptId(delivery._id, n), delivery_id: delivery._id, work: `superseded:${id}`, created_at: this.o.clock.now() });
      }
      await insertNew(claims, rest);
    }
    return (await this.o.store.attempts.findOne({ _id: id })) as AttemptRecord;
  }
}

/** The outcome recorded for an attempt whose worker stopped before its outcome was known. */
function interrupted(claimedAt: Date): AttemptOutcome {
  return {
    startedAt: claimedAt,
    durationMs: null,
    httpStatus: null,
    responseBody: null,
    succeeded: false,
    errorKind: "interrupted",
    errorMessage: "The worker making this attempt stopped before its outcome was recorded; the receiver may have received it",
  };
}

/**
 * Runs `run` on every item, at most `limit` at once, and waits for all of
 * them; then throws the first error, if any (the others still ran).
 */
async function forEachSettled<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await run(item).catch((err: unknown) => errors.push(err));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length > 0) throw errors[0];
}
