import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { automaticAttemptId, insertNew, manualAttemptId, type AttemptRecord, type DeliveryStore } from "./delivery-store.js";
import type { EndpointCache } from "./endpoint-cache.js";
import type { CountedFailure, EndpointStore } from "./endpoint-store.js";
import { GroupCommit } from "../store/group-commit.js";
import type { AttemptOutcome } from "./http-sender.js";
import type { WorkItem } from "./work-item.js";

/** Result of claiming an attempt: ours, or taken by `work` at `at`. */
export type Claim = { claimed: true } | { claimed: false; work: string; at: Date };

/** An outcome to record. */
export interface AttemptEntry {
  item: Pick<WorkItem, "deliveryId" | "workspaceId" | "endpointId" | "eventId">;
  trigger: "automatic" | "manual";
  number: number;
  url: string;
  outcome: AttemptOutcome;
  /** Whether it counts for the endpoint's consecutive failures (interrupted attempts do not). */
  counts: boolean;
  nextAttemptAt: Date | null;
}

/**
 * Most claims or outcomes in one command: new events' writes are rare and
 * small; retries' writes are kept short (a few ms each) so that new events'
 * writes, queued behind them on the database, wait little.
 */
const MAX_WRITE = { urgent: 200, background: 50 };
/**
 * For an endpoint that keeps succeeding: longest interval between reads of
 * its count (another process may have counted failures) and between writes
 * of last_success_at, in ms.
 */
const SUCCESS_CHECK_INTERVAL_MS = 1000;

/**
 * Claims and outcomes of attempts, written in groups (GroupCommit): the
 * claims of many attempts in one insert, their outcomes in another, with the
 * endpoints' failure counts updated first (DISABLE_AFTER_FAILURES). New
 * events have writers of their own ("urgent"), so that their first attempts
 * never queue behind a backlog of retries.
 */
export class AttemptLog {
  /** Per endpoint: when this process last checked its count after a success. */
  private readonly checkedAt = new Map<string, number>();
  /** Endpoints for which this process counted failures since it last reset the count. */
  private readonly failedHere = new Set<string>();
  private readonly writers: Record<"urgent" | "background", ReturnType<AttemptLog["makeWriters"]>>;

  constructor(private readonly o: { store: DeliveryStore; endpoints: EndpointStore; cache: EndpointCache; clock: Clock; logger: Logger }) {
    this.writers = { urgent: this.makeWriters(MAX_WRITE.urgent, o.store), background: this.makeWriters(MAX_WRITE.background, o.store) };
  }

  private makeWriters(maxWrite: number, store: DeliveryStore) {
    return {
      claims: new GroupCommit<WorkItem, Claim>((items) => this.writeClaims(items, store), maxWrite),
      outcomes: new GroupCommit<AttemptEntry, boolean>((entries) => this.writeOutcomes(entries, store), maxWrite),
    };
  }

  /**
   * Claims automatic attempt `item.number`: inserts its claim with a known
   * _id (the delivery record itself for the first attempt). Whoever inserts
   * it makes the attempt; anyone else learns who did.
   */
  claim(item: WorkItem, urgent: boolean): Promise<Claim> {
    return this.writers[urgent ? "urgent" : "background"].claims.add(item);
  }

  /** Records an outcome; resolves to false when that attempt had been recorded already. */
  record(entry: AttemptEntry, urgent: boolean): Promise<boolean> {
    return this.writers[urgent ? "urgent" : "background"].outcomes.add(entry);
  }

  private async writeClaims(items: WorkItem[], store: DeliveryStore): Promise<Claim[]> {
    const now = this.o.clock.now();
    const firsts = items.filter((i) => i.number === 1);
    const later = items.filter((i) => i.number > 1);
    const firstsNew = await insertNew(
      store.deliveries,
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
      store.claims,
      later.map((i) => ({ _id: automaticAttemptId(i.deliveryId, i.number), delivery_id: i.deliveryId, work: i.work, created_at: now })),
    );
    const claims = new Map<WorkItem, Claim>();
    const settle = async (item: WorkItem, isNew: boolean, read: () => Promise<{ work: string; created_at: Date } | null>) => {
      if (isNew) return claims.set(item, { claimed: true });
      const existing = await read();
      claims.set(item, { claimed: false, work: existing?.work ?? "unknown", at: existing?.created_at ?? now });
    };
    await Promise.all([
      ...firsts.map((item, i) => settle(item, firstsNew[i] as boolean, () => store.deliveries.findOne({ _id: item.deliveryId }))),
      ...later.map((item, i) => settle(item, laterNew[i] as boolean, () => store.claims.findOne({ _id: automaticAttemptId(item.deliveryId, item.number) }))),
    ]);
    return items.map((item) => claims.get(item) as Claim);
  }

  /** The endpoints' counts first (which may disable one, flagging the attempt that did), then the attempts. */
  private async writeOutcomes(entries: AttemptEntry[], store: DeliveryStore): Promise<boolean[]> {
    const disabling = new Set<AttemptEntry>();
    const byEndpoint = new Map<string, AttemptEntry[]>();
    for (const entry of entries) {
      if (!entry.counts) continue;
      byEndpoint.set(entry.item.endpointId, [...(byEndpoint.get(entry.item.endpointId) ?? []), entry]);
    }
    await Promise.all(
      [...byEndpoint].map(async ([endpointId, list]) => {
        // In order: each run of failures is counted, each run of successes resets.
        let failed: AttemptEntry[] = [];
        let succeededAt: Date | undefined;
        const countFailed = async () => {
          if (failed.length === 0) return;
          const failures: CountedFailure[] = failed.map((e) => ({ at: e.outcome.startedAt, summary: e.outcome.errorMessage ?? "failed" }));
          this.failedHere.add(endpointId);
          const tipping = await this.o.endpoints.countFailures(endpointId, failures);
          if (tipping !== undefined) {
            disabling.add(failed[tipping] as AttemptEntry);
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
    return insertNew(
      store.attempts,
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
