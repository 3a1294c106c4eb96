import { newId } from "../shared/ids.js";
import type { EventBus, EventType, StoredEvent } from "../events/event-bus.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { Scheduler } from "../jobs/scheduler.js";
import { apiError } from "../shared/errors.js";
import { GroupCommit } from "../store/group-commit.js";
import { waiting, type LeasedQueue, type Queued, type Taken } from "../jobs/leased-queue.js";
import { Attempts } from "./attempt.js";
import { deliveryId, type AttemptRecord, type DeliveryRecord, type DeliveryStore } from "./delivery-store.js";
import { EndpointCache, type EndpointView } from "./endpoint-cache.js";
import type { EndpointRecord, EndpointStore } from "./endpoint-store.js";
import type { WebhookSender } from "./http-sender.js";
import { RetrySchedule } from "./schedule.js";
import { SecretKeyError } from "./signing-secret.js";
import { sampleEventData } from "./test-event.js";
import { Throttle } from "../ratelimit/throttle.js";
import type { RateLimiter } from "../ratelimit/rate-limiter.js";

/**
 * Deliveries in progress in one process, at most (a memory bound); past it, new events' deliveries wait for a
 * claim. Far above what the connections take at once (64 per endpoint), so slow endpoints do not hold up the
 * rest; lower than it was (10,000), since what waits longer lives past the young generation's collections and
 * only raises the heap (the 100,000 backlog drains as fast either way).
 */
const MAX_IN_FLIGHT = 2_000;

/** Events one recovery looks at, at most; past it the caller goes on from nextSince (RecoverDeliveries). */
export const MAX_RECOVERED_EVENTS = 10_000;
/** Deliveries one recovery reads and writes at once. */
const RECOVERY_CHUNK = 1_000;

/** What a recovery covers (Dispatcher.recover). */
export interface RecoveryRequest {
  /** Events created at or after (the endpoint's creation at the earliest). */
  since: Date;
  /** Events created before. */
  until: Date;
  /** Event types, each selected by the endpoint. */
  types: string[];
  /** Count only. */
  dryRun: boolean;
}

/** What a recovery queued again (or, in a dry run, would). */
export interface Recovery {
  /** Failed deliveries queued again with a fresh schedule. */
  failed: number;
  /** Events that had no delivery to the endpoint, now queued. */
  unattempted: number;
  /** Events of the window looked at. */
  scanned: number;
  /** Where the next call goes on when the window held more than MAX_RECOVERED_EVENTS; null otherwise. */
  nextSince: Date | null;
}

/** The kind of the workers' recurring claim job (named `webhooks.claim:<process>`, see Scheduler.everyInThisProcess). */
export const CLAIM_JOB = "webhooks.claim";

/** What the dispatcher is built from. */
export interface DispatcherOptions {
  events: EventBus;
  endpoints: EndpointStore;
  store: DeliveryStore;
  sender: WebhookSender;
  clock: Clock;
  logger: Logger;
  scheduler: Scheduler;
  secretKey: Buffer;
  /** Delays before the retries, in ms (WEBHOOK_RETRY_SCHEDULE). */
  schedule: readonly number[];
  /** Attempt deadline, in ms. */
  timeoutMs: number;
  /** WEBHOOK_LEASE_MS. */
  leaseMs: number;
  /** WEBHOOK_CLAIM_INTERVAL_MS. */
  claimIntervalMs: number;
  /** Whether this process claims due deliveries (the worker role, whose scheduler runs). */
  claims: boolean;
  /** Counts the endpoints' rate limits (windows of THROTTLE_WINDOW_MS). */
  throttleLimiter: RateLimiter;
}

/**
 * The webhook delivery engine (spec §Delivery rules, README "Design" §6): one
 * delivery document per event and endpoint, updated in place
 * (delivery-store.ts).
 *
 * A new event's deliveries (one per enabled endpoint of its workspace that
 * selected its type and existed when it was created) are stored before the
 * event (the event bus's outbox), leased to this process, and attempted at
 * once once the event is stored: no job, no polling (Attempts). The
 * deliveries are a leased queue (src/jobs/leased-queue.ts): a retry not due
 * at once is stored as the delivery's due_at; every worker has a recurring
 * Agenda job (CLAIM_JOB, every WEBHOOK_CLAIM_INTERVAL_MS) that claims due
 * deliveries in rounds, reading their events' envelopes while the lease is
 * written, and wakes itself when the next one falls due. A process that
 * dies leaves leases that lapse and are claimed again; the lost attempt is
 * recorded as interrupted. While an
 * endpoint is disabled its deliveries wait as `disabled` and resume when it
 * is enabled; when it is deleted they are canceled.
 */
export class Dispatcher {
  readonly cache: EndpointCache;
  private readonly attempts: Attempts;
  /** The deliveries as a leased queue; a round's prefetch is its events' envelopes by event id. */
  private readonly claims: LeasedQueue<DeliveryRecord, Map<string, string>>;
  private readonly throttle: Throttle;
  /** Names this process's leases. */
  private readonly owner = newId();
  private stopping = false;
  private removeClaimJob: (() => Promise<void>) | undefined;
  private readonly running = new Set<Promise<unknown>>();
  /** New events' deliveries, stored together (one insert for whatever accumulated meanwhile). */
  private readonly inserts = new GroupCommit<DeliveryRecord[], boolean[]>(async (groups) => {
    const inserted = await this.o.store.insert(groups.flat());
    let at = 0;
    return groups.map((g) => inserted.slice(at, (at += g.length)));
  }, 100);

  constructor(private readonly o: DispatcherOptions) {
    const { store, endpoints, sender, clock, logger, leaseMs } = o;
    this.cache = new EndpointCache(endpoints, o.secretKey);
    const schedule = new RetrySchedule(o.schedule);
    // An attempt waits its turn at most this long with its lease held: the lease covers the wait and the attempt,
    // and the immediate retry's wait and attempt under the lease renewed (WEBHOOK_LEASE_MS ≥ 2 × the deadline).
    this.throttle = new Throttle({ limiter: o.throttleLimiter, clock, holdMs: (leaseMs - 2 * o.timeoutMs) / 2 });
    this.attempts = new Attempts({ store, endpoints, cache: this.cache, sender, schedule, throttle: this.throttle, clock, logger, leaseMs, dueAt: (at) => this.claims.wakeAt(at) });
    this.claims = store.queue({
      name: "webhook deliveries",
      owner: this.owner,
      clock,
      logger,
      leaseMs,
      maxInFlight: MAX_IN_FLIGHT,
      intervalMs: o.claimIntervalMs,
      prefetch: (due) => o.events.bodies([...new Set(due.map((d) => d.event_id))]),
      run: (taken, bodies) => this.take(taken, bodies),
    });
    o.events.onPublish(this.outbox);
  }

  /** Starts claiming due deliveries (worker role): this process's claim job, and a first drain at once. */
  async start(): Promise<void> {
    if (!this.o.claims) return;
    this.removeClaimJob = await this.o.scheduler.everyInThisProcess(CLAIM_JOB, this.owner, this.o.claimIntervalMs, () => this.claims.drain());
    this.claims.start();
    this.claims.poke();
  }

  /**
   * Stops claiming and waits for the attempts in flight (about the attempt
   * deadline at most); attempts waiting for a rate-limited endpoint's turn
   * go back to the database, due now; what is left keeps its lease, which
   * ends and is claimed again.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.removeClaimJob?.().catch((err: unknown) => this.o.logger.warn({ err }, "removing this process's webhook claim job failed"));
    const late = this.o.timeoutMs + 5000;
    this.throttle.stop();
    await this.claims.stop(late);
    await Promise.race([Promise.allSettled([...this.running]), new Promise((resolve) => setTimeout(resolve, late).unref())]);
    await this.o.sender.close();
  }

  /** Deliveries waiting while their endpoint was disabled are due now (after it was enabled). */
  async resume(endpointId: string): Promise<void> {
    const now = this.o.clock.now();
    await this.o.store.resumeEndpoint(endpointId, now);
    this.claims.poke();
  }

  /** Deliveries not yet settled end as canceled (after their endpoint was deleted); one in flight finishes. */
  async cancel(endpointId: string): Promise<void> {
    await this.o.store.cancelEndpoint(endpointId, this.o.clock.now());
  }

  /**
   * One manual attempt now (spec §Delivery rules 3, Attempts.manual).
   *
   * @throws ConnectError failed_precondition when the endpoint is disabled or deleted, or the event is gone.
   */
  async retryManually(delivery: DeliveryRecord): Promise<AttemptRecord> {
    const endpoint = await this.cache.get(delivery.endpoint_id, 0);
    if (!endpoint) {
      throw apiError("failed_precondition", `The endpoint ${delivery.endpoint_id} of this delivery was deleted`, { endpoint_id: delivery.endpoint_id });
    }
    if (!endpoint.enabled) {
      throw apiError("failed_precondition", `The endpoint ${endpoint.id} is disabled; enable it before retrying its deliveries`, { endpoint_id: endpoint.id });
    }
    if (endpoint.secret === undefined) throw new SecretKeyError(endpoint.secretError ?? "no signing secret");
    const event = await this.o.events.get(delivery.event_id);
    if (!event) throw apiError("failed_precondition", `The event ${delivery.event_id} of this delivery no longer exists`);
    return this.attempts.manual(delivery, endpoint, event.body);
  }

  /**
   * Recovers the endpoint's deliveries of events created in the window, of
   * the given types, oldest first, at most MAX_RECOVERED_EVENTS (Svix's
   * "recover"): a failed delivery is pending again, due now, its retry
   * schedule started afresh (schedule_start: its attempt numbers go on); an
   * event without a delivery to the endpoint (published while it was
   * disabled, or before it selected the type) gets one, due now. Pending,
   * succeeded and test deliveries, test events, and events older than the
   * endpoint are left alone, so a second run queues nothing twice. Reads and
   * writes RECOVERY_CHUNK deliveries a command; a dry run only reads. The
   * claims attempt what was queued (at once in a worker).
   */
  async recover(endpoint: EndpointRecord, r: RecoveryRequest): Promise<Recovery> {
    const { events, store, clock } = this.o;
    const since = r.since.getTime() < endpoint.created_at.getTime() ? endpoint.created_at : r.since;
    const found = await events.findCreated(endpoint.workspace_id, since, r.until, r.types, MAX_RECOVERED_EVENTS + 1);
    const next = found.length > MAX_RECOVERED_EVENTS ? found.pop()! : null;
    const recovery: Recovery = { failed: 0, unattempted: 0, scanned: found.length, nextSince: next?.created_at ?? null };
    const now = clock.now();
    for (let at = 0; at < found.length; at += RECOVERY_CHUNK) {
      const chunk = found.slice(at, at + RECOVERY_CHUNK);
      const existing = new Map((await store.findForEvents(endpoint._id, chunk.map((e) => e._id))).map((d) => [d.event_id, d]));
      const failed = [...existing.values()].filter((d) => d.status === "failed" && d.test !== true);
      const missing = chunk.filter((e) => !existing.has(e._id));
      if (r.dryRun) {
        recovery.failed += failed.length;
        recovery.unattempted += missing.length;
        continue;
      }
      recovery.unattempted += (await store.insert(missing.map((e) => this.newDelivery(e, endpoint._id, now, waiting(now))))).filter(Boolean).length;
      recovery.failed += await store.requeueFailed(failed, now);
    }
    if (!r.dryRun) {
      this.o.logger.info({ endpointId: endpoint._id, ...recovery }, "webhook deliveries recovered");
      this.claims.poke();
    }
    return recovery;
  }

  /**
   * Sends a test event of `type` with sample data (test-event.ts) to the
   * endpoint alone: the event is stored (its envelope with "test": true) with
   * one delivery (test: true), leased to this process, and taken as far as
   * it goes now (the first attempt, and the immediate retry after a failure);
   * later retries follow the schedule like any. Resolves to the delivery and
   * its latest attempt.
   *
   * @throws ConnectError failed_precondition when the endpoint is disabled.
   */
  async sendTest(endpoint: EndpointRecord, type: EventType): Promise<{ delivery: DeliveryRecord; attempt: AttemptRecord | null }> {
    if (!endpoint.enabled) {
      throw apiError("failed_precondition", `The endpoint ${endpoint._id} is disabled; enable it before sending it a test event`, { endpoint_id: endpoint._id });
    }
    const now = this.o.clock.now();
    const id = newId();
    const data = sampleEventData(type, now);
    const body = JSON.stringify({ id, type, created_at: now.toISOString(), data, test: true });
    const held = this.claims.held(now);
    const delivery: DeliveryRecord = { ...this.newDelivery({ _id: id, workspace_id: endpoint.workspace_id, type }, endpoint._id, now, held.fields), test: true };
    // The delivery first, as the outbox does: a crash in between leaves a delivery without event, deleted by claims.
    await this.o.store.insert([delivery]);
    await this.o.events.insertTest({ _id: id, workspace_id: endpoint.workspace_id, type, created_at: now, data, body, test: true });
    await this.track(this.attempts.run({ delivery, body, number: 1, lease: held.lease }));
    const stored = (await this.o.store.get(delivery._id)) ?? delivery;
    const attempt = await this.o.store.latestAttempt(delivery._id);
    return { delivery: stored, attempt };
  }

  /**
   * A new delivery of `event` to the endpoint, pending, with `queued`: the
   * lease fields of one leased to this process (its attempt starts here), or
   * of one due at once for a claim.
   */
  private newDelivery(event: Pick<StoredEvent, "_id" | "workspace_id" | "type">, endpointId: string, now: Date, queued: Queued): DeliveryRecord {
    return {
      _id: deliveryId(event._id, endpointId),
      workspace_id: event.workspace_id,
      endpoint_id: endpointId,
      event_id: event._id,
      event_type: event.type,
      created_at: now,
      status: "pending",
      automatic_attempts: 0,
      attempt_count: 0,
      manual_attempts: 0,
      ...queued,
      last_attempt_at: null,
      last_http_status: null,
      last_error_kind: null,
      updated_at: now,
    };
  }

  /**
   * A delivery the queue hands over (stored leased here, or claimed): its
   * next automatic attempt, or, when the earlier lease lapsed, the lost one
   * recorded as interrupted first (Attempts.run). A delivery whose event is
   * not stored (its publisher stopped between storing the deliveries and the
   * event, see EventOutbox) is looked at again a lease later, and deleted
   * once two leases old: that event was never published.
   */
  private async take({ record: delivery, lease, lapsedSince }: Taken<DeliveryRecord>, bodies: Map<string, string> | undefined): Promise<void> {
    const body = bodies?.get(delivery.event_id);
    if (body !== undefined) {
      await this.attempts.run({ delivery, body, number: delivery.automatic_attempts + 1, lease, ...(lapsedSince ? { interruptedSince: lapsedSince } : {}) });
      return;
    }
    const now = this.o.clock.now();
    const drop = delivery.created_at.getTime() < now.getTime() - 2 * this.o.leaseMs;
    if (drop) this.o.logger.warn({ deliveryId: delivery._id, eventId: delivery.event_id }, "deleting a webhook delivery whose event was never stored");
    await this.o.store.unpublished(delivery._id, lease, drop, new Date(now.getTime() + this.o.leaseMs));
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    void work.finally(() => this.running.delete(work)).catch(() => {});
    return work;
  }

  /** The enabled endpoints of the workspace that selected `type` and existed at `at`. */
  private async selecting(workspaceId: string, type: string, at: Date): Promise<EndpointView[]> {
    return (await this.cache.forWorkspace(workspaceId)).filter((e) => e.enabled && e.events.includes(type) && e.createdAt.getTime() <= at.getTime());
  }

  /**
   * The event bus's outbox: stores the event's deliveries, leased to this
   * process, and once the event is stored attempts them. Past
   * MAX_IN_FLIGHT (or while stopping) they are stored due now instead,
   * for a claim.
   */
  private outbox = async (event: StoredEvent): Promise<(() => void) | null> => {
    const endpoints = await this.selecting(event.workspace_id, event.type, event.created_at);
    if (endpoints.length === 0) return null;
    const now = this.o.clock.now();
    const held = !this.stopping && this.claims.inProgress + endpoints.length <= MAX_IN_FLIGHT ? this.claims.held(now) : undefined;
    const deliveries = endpoints.map((e) => this.newDelivery(event, e.id, now, held?.fields ?? waiting(now)));
    const inserted = await this.inserts.add(deliveries);
    if (!held) return () => this.claims.poke();
    const bodies = new Map([[event._id, event.body]]);
    return () => {
      deliveries.forEach((delivery, i) => {
        // One not inserted was stored earlier (the same event published again): someone else's to attempt.
        if (inserted[i]) this.claims.begin({ record: delivery, lease: held.lease }, bodies);
      });
    };
  };
}
