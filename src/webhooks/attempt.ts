import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { GroupCommit } from "../store/group-commit.js";
import { automaticAttemptId, manualAttemptId, type AttemptRecord, type DeliveryChange, type DeliveryRecord, type DeliveryStore } from "./delivery-store.js";
import type { EndpointCache, EndpointView } from "./endpoint-cache.js";
import type { CountedFailure, EndpointStore } from "./endpoint-store.js";
import type { AttemptOutcome, WebhookSender } from "./http-sender.js";
import type { RetrySchedule } from "./schedule.js";
import { SecretKeyError } from "./signing-secret.js";
import type { Throttle } from "../ratelimit/throttle.js";

/** Most outcomes in one write (two commands: the attempts' insert and the deliveries' bulkWrite). */
const MAX_OUTCOMES_PER_WRITE = 500;
/**
 * How long an outcome waits for others to share its write when none is running, in ms: at 100 attempts/s
 * about two outcomes share a write (two commands), so an attempt costs one command or less at any rate
 * (measured in the webhook benchmark: 291 writes for 601 outcomes at 100/s, 430 for 1,500 at 250/s). The POST is already made, so
 * nothing waits for it but the delivery's record; a process killed meanwhile loses the outcome as it would
 * during the write: the lease ends and the delivery is attempted again (at least once).
 */
const OUTCOME_LINGER_MS = 20;
/**
 * For an endpoint that keeps succeeding: longest interval between reads of
 * its count (another process may have counted failures) and between writes
 * of last_success_at, in ms.
 */
const SUCCESS_CHECK_INTERVAL_MS = 1000;

/** A leased delivery to attempt: automatic attempt `number`, made under `lease`. */
export interface LeasedDelivery {
  delivery: Pick<DeliveryRecord, "_id" | "workspace_id" | "endpoint_id" | "event_id" | "event_type" | "schedule_start" | "test" | "throttle_slot">;
  /** The event's stored envelope: the bytes sent and signed. */
  body: string;
  number: number;
  /** The lease the delivery is held by (src/jobs/leased-queue.ts). */
  lease: string;
  /** Set when an earlier lease ended without an outcome: that attempt (`number`) began then and is recorded as interrupted. */
  interruptedSince?: Date;
}

/** An outcome to record. */
interface OutcomeEntry {
  delivery: LeasedDelivery["delivery"];
  trigger: "automatic" | "manual";
  number: number;
  url: string;
  outcome: AttemptOutcome;
  /** Whether it counts for the endpoint's consecutive failures (interrupted attempts do not). */
  counts: boolean;
  /** Automatic: the lease it was made under; the next attempt's time (null: none); whether the lease is kept for it. */
  automatic?: { lease: string; next: Date | null; keepLease: boolean };
}

/** The outcome recorded for an attempt whose process stopped before its outcome was known. */
function interruptedOutcome(since: Date): AttemptOutcome {
  return {
    startedAt: since,
    durationMs: null,
    httpStatus: null,
    responseBody: null,
    succeeded: false,
    errorKind: "interrupted",
    errorMessage: "The worker making this attempt stopped before its outcome was recorded; the receiver may have received it",
  };
}

/**
 * Attempts (spec §Delivery rules, §Webhook signature): sign and POST the
 * stored envelope, then record the outcome. Outcomes are written in groups
 * (GroupCommit): the endpoints' failure counts first (the twentieth failure
 * in a row disables the endpoint, once, flagging that attempt), then every
 * attempt record in one insert and every delivery's new state in one
 * bulkWrite.
 */
export class Attempts {
  /** Per endpoint: when this process last checked its count after a success. */
  private readonly checkedAt = new Map<string, number>();
  /** Endpoints for which this process counted failures since it last reset the count. */
  private readonly failedHere = new Set<string>();
  private readonly outcomes = new GroupCommit<OutcomeEntry, void>((entries) => this.write(entries), MAX_OUTCOMES_PER_WRITE, OUTCOME_LINGER_MS);

  constructor(
    private readonly o: {
      store: DeliveryStore;
      endpoints: EndpointStore;
      cache: EndpointCache;
      sender: WebhookSender;
      schedule: RetrySchedule;
      throttle: Throttle;
      clock: Clock;
      logger: Logger;
      leaseMs: number;
      /** Told of each delivery this process hands back due later (a retry, a rate-limited endpoint's turn), with when. */
      dueAt?: (at: Date) => void;
    },
  ) {}

  /**
   * Takes a leased delivery as far as it goes now: attempts until success,
   * the end of the schedule, or a retry that is not due at once (then it is
   * released with that time). Each attempt to a rate-limited endpoint (test
   * events aside) waits its turn (src/ratelimit/throttle.ts); one too far off is
   * released, not counted, due again at its turn. A delivery whose endpoint
   * is disabled is released as `disabled`, one whose endpoint was deleted as
   * `canceled`.
   *
   * @throws SecretKeyError when the endpoint's secret does not decrypt (the lease then ends on its own), or the database's error.
   */
  async run(leased: LeasedDelivery): Promise<void> {
    const { delivery, lease } = leased;
    let number = leased.number;
    // The place of attempt `number` in the retry schedule, which a recovery starts afresh.
    const place = (n: number) => n - (delivery.schedule_start ?? 1) + 1;
    if (leased.interruptedSince) {
      const outcome = interruptedOutcome(leased.interruptedSince);
      const next = this.o.schedule.next(place(number), outcome);
      const keepLease = next !== null && next.getTime() <= this.o.clock.now().getTime();
      const url = (await this.o.cache.get(delivery.endpoint_id))?.url ?? "";
      await this.record({ delivery, trigger: "automatic", number, url, outcome, counts: false, automatic: { lease, next, keepLease } });
      if (!keepLease) return;
      number++;
    }
    for (;;) {
      const endpoint = await this.usable(delivery.endpoint_id);
      if (endpoint === null || !endpoint.enabled) {
        await this.release(delivery._id, lease, endpoint === null ? "canceled" : "disabled", delivery.endpoint_id);
        return;
      }
      if (endpoint.rateLimit !== null && delivery.test !== true) {
        // The slot kept when it went back to wait is its first attempt's; a retry gets a new one.
        const kept = number === leased.number ? (delivery.throttle_slot ?? undefined) : undefined;
        const turn = await this.o.throttle.turn(`webhook:${endpoint.id}`, endpoint.rateLimit, kept);
        if (!turn.go) {
          await this.postpone(delivery._id, lease, turn);
          return;
        }
      }
      const outcome = await this.send(endpoint, delivery, leased.body);
      const next = outcome.succeeded ? null : this.o.schedule.next(place(number), outcome);
      const keepLease = next !== null && this.o.schedule.immediate(place(number));
      await this.record({ delivery, trigger: "automatic", number, url: endpoint.url, outcome, counts: true, automatic: { lease, next, keepLease } });
      if (!keepLease) return;
      number++;
    }
  }

  /**
   * One manual attempt now (spec §Delivery rules 3), numbered on its own
   * (m1, m2, …), counted for the endpoint like any attempt. A success makes
   * the delivery succeeded and ends its automatic schedule and lease (an
   * automatic attempt already in flight still finishes and is recorded as
   * an attempt, and changes nothing more).
   */
  async manual(delivery: DeliveryRecord, endpoint: EndpointView, body: string): Promise<AttemptRecord> {
    const number = (await this.o.store.numberManualAttempt(delivery._id)) ?? delivery.manual_attempts + 1;
    const outcome = await this.send(endpoint, delivery, body);
    await this.record({ delivery, trigger: "manual", number, url: endpoint.url, outcome, counts: true });
    return (await this.o.store.getAttempt(manualAttemptId(delivery._id, number))) as AttemptRecord;
  }

  /** The endpoint as last read (a disabled one read again, in case it was just enabled); null when deleted. */
  private async usable(endpointId: string): Promise<EndpointView | null> {
    const endpoint = await this.o.cache.get(endpointId);
    return endpoint && !endpoint.enabled ? this.o.cache.get(endpointId, 0) : endpoint;
  }

  private send(endpoint: EndpointView, delivery: LeasedDelivery["delivery"], body: string): Promise<AttemptOutcome> {
    if (endpoint.secret === undefined) throw new SecretKeyError(endpoint.secretError ?? "no signing secret");
    // A rotated secret signs too until its end (checked now: the endpoint may have been read up to a second ago).
    const previous = endpoint.previousSecret && endpoint.previousSecret.until.getTime() > this.o.clock.now().getTime() ? endpoint.previousSecret.secret : undefined;
    return this.o.sender.send({
      url: endpoint.url,
      secret: endpoint.secret,
      ...(previous !== undefined ? { previousSecret: previous } : {}),
      body,
      eventType: delivery.event_type,
      eventId: delivery.event_id,
      urgent: true,
    });
  }

  /** Ends a lease without an attempt, for its endpoint's rate limit: the same attempt is due again at its turn, in its slot. */
  private async postpone(id: string, lease: string, turn: { slot: Date; at: Date }): Promise<void> {
    await this.o.store.postpone(id, lease, turn.at, turn.slot, this.o.clock.now());
    this.o.dueAt?.(turn.at);
  }

  /**
   * Ends a lease without an attempt: the delivery waits (`disabled`) or ends
   * (`canceled`). Enabling an endpoint writes `enabled` and then resumes its
   * `disabled` deliveries (Dispatcher.resume); a delivery released here as
   * `disabled` after that resume, from an endpoint read before the enable,
   * would wait for good. So the endpoint is read again after the write: if it
   * is enabled by then, its waiting deliveries are resumed here too. Either
   * the enable's resume comes after this write and catches the delivery, or
   * the enable came before it and this read sees it. (A delete needs no such
   * read: its cancel also ends the leases of pending deliveries, so this
   * write then finds the lease gone.)
   */
  private async release(id: string, lease: string, status: "disabled" | "canceled", endpointId: string): Promise<void> {
    await this.o.store.endWithoutAttempt(id, lease, status, this.o.clock.now());
    if (status === "disabled" && (await this.o.cache.get(endpointId, 0))?.enabled) {
      const now = this.o.clock.now();
      await this.o.store.resumeEndpoint(endpointId, now);
      this.o.dueAt?.(now);
    }
  }

  private record(entry: OutcomeEntry): Promise<void> {
    return this.outcomes.add(entry);
  }

  private async write(entries: OutcomeEntry[]): Promise<void[]> {
    const disabling = await this.count(entries);
    const now = this.o.clock.now();
    await this.o.store.recordOutcomes(
      entries.map((e) => ({
        attempt: {
          _id: e.trigger === "manual" ? manualAttemptId(e.delivery._id, e.number) : automaticAttemptId(e.delivery._id, e.number),
          delivery_id: e.delivery._id,
          workspace_id: e.delivery.workspace_id,
          endpoint_id: e.delivery.endpoint_id,
          event_id: e.delivery.event_id,
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
          next_attempt_at: e.automatic?.next ?? null,
        },
        change: this.change(e, now),
      })),
      now,
    );
    for (const e of entries) if (e.automatic?.next && !e.automatic.keepLease) this.o.dueAt?.(e.automatic.next);
    return entries.map(() => undefined);
  }

  /**
   * What an outcome changes of its delivery: a manual one is counted (a
   * success settles it); an automatic one ends the schedule (succeeded, or
   * failed after the last retry), keeps the lease for the immediate retry,
   * or releases the delivery until its next retry.
   */
  private change(e: OutcomeEntry, now: Date): DeliveryChange {
    if (!e.automatic) return { kind: "manual", succeeded: e.outcome.succeeded };
    const { lease, next, keepLease } = e.automatic;
    if (e.outcome.succeeded || next === null) return { kind: "automatic", lease, change: { kind: "complete" }, status: e.outcome.succeeded ? "succeeded" : "failed" };
    if (keepLease) return { kind: "automatic", lease, change: { kind: "renew", now, until: new Date(now.getTime() + this.o.leaseMs) } };
    return { kind: "automatic", lease, change: { kind: "release", dueAt: next } };
  }

  /**
   * Counts the entries for their endpoints, in order (each run of failures
   * counted, each run of successes resets); answers the entries whose
   * failure disabled their endpoint.
   */
  private async count(entries: OutcomeEntry[]): Promise<Set<OutcomeEntry>> {
    const disabling = new Set<OutcomeEntry>();
    const byEndpoint = new Map<string, OutcomeEntry[]>();
    for (const entry of entries) {
      if (!entry.counts) continue;
      const list = byEndpoint.get(entry.delivery.endpoint_id);
      if (list) list.push(entry);
      else byEndpoint.set(entry.delivery.endpoint_id, [entry]);
    }
    await Promise.all(
      [...byEndpoint].map(async ([endpointId, list]) => {
        let failed: OutcomeEntry[] = [];
        let succeededAt: Date | undefined;
        const countFailed = async () => {
          if (failed.length === 0) return;
          const failures: CountedFailure[] = failed.map((e) => ({ at: e.outcome.startedAt, summary: e.outcome.errorMessage ?? "failed" }));
          this.failedHere.add(endpointId);
          const tipping = await this.o.endpoints.countFailures(endpointId, failures);
          if (tipping !== undefined) {
            disabling.add(failed[tipping] as OutcomeEntry);
            this.o.cache.markDisabled(endpointId);
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
    return disabling;
  }

  /**
   * A success resets the endpoint's count, with few writes: after a failure
   * counted here, at once; otherwise when the endpoint as last read (at most
   * a second ago, EndpointCache) shows failures counted elsewhere, or
   * last_success_at more than a second old. So a success resets failures
   * counted by other processes within about a second.
   */
  private async noteSuccess(endpointId: string, at: Date): Promise<void> {
    const failedHere = this.failedHere.has(endpointId);
    const checkedAt = this.checkedAt.get(endpointId);
    if (!failedHere && checkedAt !== undefined && performance.now() - checkedAt < SUCCESS_CHECK_INTERVAL_MS) return;
    this.checkedAt.set(endpointId, performance.now());
    const endpoint = await this.o.cache.get(endpointId);
    if (!endpoint) return;
    const stale = !endpoint.lastSuccessAt || at.getTime() - endpoint.lastSuccessAt.getTime() >= SUCCESS_CHECK_INTERVAL_MS;
    if (!failedHere && endpoint.consecutiveFailures === 0 && !stale) return;
    this.failedHere.delete(endpointId);
    await this.o.endpoints.recordSuccess(endpointId, at);
  }
}
