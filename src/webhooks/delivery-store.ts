import { heldBy, LeasedQueue, leaseUpdate, waiting, type LeaseChange, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { uuidFromTimeAndName } from "../shared/ids.js";
import { renameIndexedField } from "../store/indexes.js";
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Db, type OptionalUnlessRequiredId } from "mongodb";
import type { AttemptErrorKind } from "./http-sender.js";

/*
 * The records of the delivery engine (spec §Delivery rules; the shape of
 * Svix's messagedestination and messageattempt):
 *
 * - webhook_deliveries: one per event and endpoint, _id derived from both,
 *   updated in place, a queued record (src/jobs/leased-queue.ts). Its status
 *   is stored, never recomputed; a pending delivery has due_at, and an
 *   attempt in flight holds a lease: lease_owner set, due_at pushed to the
 *   lease's end (so that, if its process dies, it is due again then, and
 *   whoever claims it next records the lost attempt as interrupted).
 * - webhook_attempts: one per attempt made (_id <delivery>.<n> for automatic
 *   ones, <delivery>.m<n> for manual ones), with its outcome. Never updated.
 */

/** Where a delivery stands. */
export type DeliveryState =
  /** Attempts remain; the next is due at due_at (or in flight while leased). */
  | "pending"
  /** An attempt was answered with a 2xx. */
  | "succeeded"
  /** The first attempt and every retry of the schedule failed. */
  | "failed"
  /** Waits, without due_at, while its endpoint is disabled; pending again when it is enabled. */
  | "disabled"
  /** Its endpoint was deleted before it succeeded. */
  | "canceled";

/** A delivery as stored in `webhook_deliveries` (due_at: when it is due, or when the lease of an attempt in flight ends). */
export interface DeliveryRecord extends Queued {
  /** dlv_<uuid> derived from event and endpoint (deliveryId). */
  _id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  created_at: Date;
  status: DeliveryState;
  /** Automatic attempts made (or interrupted) so far: the next one is number automatic_attempts + 1. */
  automatic_attempts: number;
  /**
   * The automatic attempt that began the current retry schedule: absent (1)
   * until a recovery queues the failed delivery again (Dispatcher.recover),
   * then the attempt after its last; the schedule counts from it.
   */
  schedule_start?: number;
  /** Every attempt made, automatic and manual. */
  attempt_count: number;
  /** Manual attempts made: the next one is m<manual_attempts + 1>. */
  manual_attempts: number;
  /**
   * The slot of its next attempt under its endpoint's rate limit, kept while
   * it waits in the database for its turn (src/ratelimit/throttle.ts); absent
   * otherwise.
   */
  throttle_slot?: Date | null;
  last_attempt_at: Date | null;
  last_http_status: number | null;
  last_error_kind: AttemptErrorKind | null;
  updated_at: Date;
  /** True for a test event sent from the console (Dispatcher.sendTest); absent otherwise. */
  test?: boolean;
}

/** One attempt as stored in `webhook_attempts`. Never updated. */
export interface AttemptRecord {
  /** <delivery id>.<n> (automatic) or <delivery id>.m<n> (manual). */
  _id: string;
  delivery_id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  number: number;
  trigger: "automatic" | "manual";
  url: string;
  started_at: Date;
  duration_ms: number | null;
  http_status: number | null;
  response_body: string | null;
  succeeded: boolean;
  error_kind: AttemptErrorKind | null;
  error_message: string | null;
  /** True when this failure disabled the endpoint (the twentieth in a row). */
  disabled_endpoint: boolean;
  /** When the schedule attempts again after this one; null when it does not. */
  next_attempt_at: Date | null;
}

/**
 * The delivery id of an event and an endpoint: dlv_ and a UUID (version 8)
 * whose first 48 bits are the event id's (its creation time, the event id
 * being a version 7: see newId) and whose rest comes from a SHA-256 of both
 * ids. The same pair always gives the same id (a republished event finds its
 * deliveries stored), and an event's deliveries sort by its time, so they are
 * appended to the `_id` index as the events are. (Deliveries stored before
 * this shape have all 128 bits from the hash: look deliveries up by event_id
 * and endpoint_id, not by recomputing their id.)
 */
export function deliveryId(eventId: string, endpointId: string): string {
  return `dlv_${uuidFromTimeAndName(eventId.slice(0, 8) + eventId.slice(9, 13), `${eventId}/${endpointId}`)}`;
}

/** Id of automatic attempt `n` (also of its claim). */
export function automaticAttemptId(delivery: string, n: number): string {
  return `${delivery}.${n}`;
}

/** Id of the `n`-th manual attempt. */
export function manualAttemptId(delivery: string, n: number): string {
  return `${delivery}.m${n}`;
}

/**
 * Inserts `docs` without stopping at duplicates; returns, per document,
 * true when inserted and false when its _id existed.
 *
 * @throws the driver's error for anything but duplicate keys.
 */
export async function insertNew<T extends { _id: string }>(collection: Collection<T>, docs: T[]): Promise<boolean[]> {
  const inserted = docs.map(() => true);
  if (docs.length === 0) return inserted;
  try {
    await collection.insertMany(docs as OptionalUnlessRequiredId<T>[], { ordered: false });
  } catch (err) {
    if (!(err instanceof MongoBulkWriteError)) throw err;
    const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
    if (errors.length === 0) throw err;
    for (const writeError of errors) {
      if (writeError.code !== 11000) throw err;
      inserted[writeError.index] = false;
    }
  }
  return inserted;
}

/** How an outcome changes its delivery (DeliveryStore.recordOutcomes). */
export type DeliveryChange =
  /** An automatic attempt under `lease`: its lease's change (renewed for the immediate retry, released for a later one, complete at the end); `status` when it ends the schedule. */
  | { kind: "automatic"; lease: string; change: LeaseChange; status?: "succeeded" | "failed" }
  /** A manual attempt: counted; a success settles the delivery (its automatic schedule and lease end). */
  | { kind: "manual"; succeeded: boolean };

/** An outcome to record: the attempt made and what it changes of its delivery. */
export interface OutcomeWrite {
  attempt: AttemptRecord;
  change: DeliveryChange;
}

/** The records of the engine (`webhook_deliveries`, `webhook_attempts`): every read and write goes through these operations. */
export interface DeliveryStore {
  /** Stores new deliveries; per delivery, true when stored and false when it existed (the same event published again). */
  insert(deliveries: DeliveryRecord[]): Promise<boolean[]>;
  /** The deliveries as a leased queue (the Dispatcher runs it). */
  queue<P>(options: Omit<LeasedQueueOptions<DeliveryRecord, P>, "collection">): LeasedQueue<DeliveryRecord, P>;
  /** A delivery by id, or null. */
  get(id: string): Promise<DeliveryRecord | null>;
  /** The workspace's deliveries of an endpoint and/or an event, newest first. */
  list(filter: { workspaceId: string; endpointId?: string; eventId?: string }, page: PageRequest): Promise<Page<DeliveryRecord>>;
  /** The deliveries to `endpointId` of events `eventIds` (status, attempts and test flag), for a recovery. */
  findForEvents(endpointId: string, eventIds: readonly string[]): Promise<Pick<DeliveryRecord, "_id" | "event_id" | "status" | "automatic_attempts" | "test">[]>;
  /** Failed deliveries pending again, due `now`, their schedules started afresh after their last attempt (compare-and-set on what was read); the count. */
  requeueFailed(failed: readonly Pick<DeliveryRecord, "_id" | "automatic_attempts">[], now: Date): Promise<number>;
  /** Deliveries waiting while their endpoint was disabled are pending, due `now`. */
  resumeEndpoint(endpointId: string, now: Date): Promise<void>;
  /** Deliveries of a deleted endpoint not yet settled end as canceled (out of the queue). */
  cancelEndpoint(endpointId: string, now: Date): Promise<void>;
  /** Ends a lease without an attempt, for its endpoint's rate limit: the same attempt due again at `at`, in its `slot`. */
  postpone(id: string, lease: string, at: Date, slot: Date, now: Date): Promise<void>;
  /** Ends a lease without an attempt: the delivery waits (`disabled`) or ends (`canceled`). */
  endWithoutAttempt(id: string, lease: string, status: "disabled" | "canceled", now: Date): Promise<void>;
  /** A delivery whose event was never stored: released, due at `dueAt`, or (`drop`) deleted. */
  unpublished(id: string, lease: string, drop: boolean, dueAt: Date): Promise<void>;
  /** Numbers the next manual attempt of a delivery (manual_attempts + 1). */
  numberManualAttempt(id: string): Promise<number | null>;
  /**
   * Records outcomes: every attempt in one insert (one already there is kept:
   * a repeat after a crash), then every delivery's new state in one
   * bulkWrite. An automatic outcome changes only a delivery still held by
   * its lease (a manual success or a deletion ends the lease: then the
   * attempt is recorded, the delivery stays as they left it).
   */
  recordOutcomes(outcomes: readonly OutcomeWrite[], now: Date): Promise<void>;
  /** An attempt by id, or null. */
  getAttempt(id: string): Promise<AttemptRecord | null>;
  /** A delivery's latest attempt, or null. */
  latestAttempt(deliveryId: string): Promise<AttemptRecord | null>;
  /** A delivery's attempts, newest first. */
  listAttempts(deliveryId: string, page: PageRequest): Promise<Page<AttemptRecord>>;
  /** Deliveries due and not claimed (the backlog gauge). */
  countDue(now: Date): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/** Creates the delivery store over `db`. */
export function createDeliveryStore(db: Db): DeliveryStore {
  const deliveries = db.collection<DeliveryRecord>("webhook_deliveries");
  const attempts = db.collection<AttemptRecord>("webhook_attempts");

  function deliveryUpdate({ attempt, change }: OutcomeWrite, now: Date): AnyBulkWriteOperation<DeliveryRecord> {
    const last = { last_attempt_at: attempt.started_at, last_http_status: attempt.http_status, last_error_kind: attempt.error_kind, updated_at: now };
    const $inc = { attempt_count: 1 };
    if (change.kind === "manual") {
      const update = change.succeeded ? leaseUpdate<DeliveryRecord>({ kind: "complete" }, { $set: { ...last, status: "succeeded" as const }, $inc }) : { $set: last, $inc };
      return { updateOne: { filter: { _id: attempt.delivery_id }, update } };
    }
    const set: Partial<DeliveryRecord> = { ...last, automatic_attempts: attempt.number, ...(change.status ? { status: change.status } : {}) };
    // A slot kept for the endpoint's rate limit was this attempt's.
    const update = leaseUpdate<DeliveryRecord>(change.change, { $set: set, $unset: { throttle_slot: "" }, $inc });
    return { updateOne: { filter: { _id: attempt.delivery_id, ...heldBy(change.lease) }, update } };
  }

  return {
    insert: (records) => insertNew(deliveries, records),
    queue: (options) => new LeasedQueue({ ...options, collection: deliveries }),
    get: (id) => deliveries.findOne({ _id: id }),
    list: ({ workspaceId, endpointId, eventId }, page) =>
      listPage(deliveries, { workspace_id: workspaceId, ...(endpointId ? { endpoint_id: endpointId } : {}), ...(eventId ? { event_id: eventId } : {}) }, page),
    findForEvents: (endpointId, eventIds) =>
      deliveries.find({ event_id: { $in: [...eventIds] }, endpoint_id: endpointId }, { projection: { event_id: 1, status: 1, automatic_attempts: 1, test: 1 } }).toArray(),
    async requeueFailed(failed, now) {
      if (failed.length === 0) return 0;
      const requeued = await deliveries.bulkWrite(
        failed.map((d) => ({
          updateOne: {
            filter: { _id: d._id, status: "failed" as const, automatic_attempts: d.automatic_attempts },
            update: { $set: { status: "pending" as const, ...waiting(now), schedule_start: d.automatic_attempts + 1, updated_at: now } },
          },
        })),
        { ordered: false },
      );
      return requeued.modifiedCount;
    },
    async resumeEndpoint(endpointId, now) {
      await deliveries.updateMany({ endpoint_id: endpointId, status: "disabled" }, { $set: { status: "pending", ...waiting(now), updated_at: now } });
    },
    async cancelEndpoint(endpointId, now) {
      await deliveries.updateMany({ endpoint_id: endpointId, status: { $in: ["pending", "disabled"] } }, leaseUpdate<DeliveryRecord>({ kind: "complete" }, { $set: { status: "canceled", updated_at: now } }));
    },
    async postpone(id, lease, at, slot, now) {
      await deliveries.updateOne(
        { _id: id, ...heldBy(lease), status: "pending" },
        leaseUpdate<DeliveryRecord>({ kind: "release", dueAt: at }, { $set: { throttle_slot: slot, updated_at: now } }),
      );
    },
    async endWithoutAttempt(id, lease, status, now) {
      await deliveries.updateOne({ _id: id, ...heldBy(lease), status: "pending" }, leaseUpdate<DeliveryRecord>({ kind: "complete" }, { $set: { status, updated_at: now } }));
    },
    async unpublished(id, lease, drop, dueAt) {
      if (drop) await deliveries.deleteOne({ _id: id, ...heldBy(lease) });
      else await deliveries.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate({ kind: "release", dueAt }));
    },
    async numberManualAttempt(id) {
      const numbered = await deliveries.findOneAndUpdate({ _id: id }, { $inc: { manual_attempts: 1 } }, { returnDocument: "after", projection: { manual_attempts: 1 } });
      return numbered?.manual_attempts ?? null;
    },
    async recordOutcomes(outcomes, now) {
      await insertNew(attempts, outcomes.map((o) => o.attempt));
      await deliveries.bulkWrite(outcomes.map((o) => deliveryUpdate(o, now)), { ordered: false });
    },
    getAttempt: (id) => attempts.findOne({ _id: id }),
    latestAttempt: (deliveryId) => attempts.find({ delivery_id: deliveryId }).sort({ started_at: -1, _id: -1 }).limit(1).next(),
    listAttempts: (deliveryId, page) => listPage(attempts, { delivery_id: deliveryId }, page, "started_at"),
    countDue: (now) => deliveries.countDocuments({ due_at: { $lte: now }, lease_owner: null }),
    async ensureIndexes() {
      // The claims' index (the queue's). Deliveries of earlier releases kept their due time in next_attempt_at: moved
      // to due_at while that field's index still exists, then the index dropped.
      await deliveries.createIndex({ due_at: 1 }, { name: "queue_due_at", sparse: true });
      await renameIndexedField(deliveries, "next_attempt_at", "due_at", "next_attempt_at_1");
      await deliveries.createIndex({ endpoint_id: 1, created_at: -1, _id: -1 });
      await deliveries.createIndex({ event_id: 1, created_at: -1, _id: -1 });
      await attempts.createIndex({ delivery_id: 1, started_at: -1, _id: -1 });
    },
  };
}
