import type { Queued } from "../jobs/leased-queue.js";
import { uuidFromTimeAndName } from "../shared/ids.js";
import { renameIndexedField } from "../store/indexes.js";
import { MongoBulkWriteError, type Collection, type Db, type OptionalUnlessRequiredId } from "mongodb";
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
   * it waits in the database for its turn (EndpointThrottle); absent
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

/** The collections of the engine. */
export interface DeliveryStore {
  readonly deliveries: Collection<DeliveryRecord>;
  readonly attempts: Collection<AttemptRecord>;
  ensureIndexes(): Promise<void>;
}

/** Creates the delivery store over `db`. */
export function createDeliveryStore(db: Db): DeliveryStore {
  const deliveries = db.collection<DeliveryRecord>("webhook_deliveries");
  const attempts = db.collection<AttemptRecord>("webhook_attempts");
  return {
    deliveries,
    attempts,
    async ensureIndexes() {
      // The claims' index (due_at) is the queue's (Dispatcher). Deliveries of earlier releases kept their due time in
      // next_attempt_at: moved to due_at while that field's index still exists, then the index dropped.
      await renameIndexedField(deliveries, "next_attempt_at", "due_at", "next_attempt_at_1");
      await deliveries.createIndex({ endpoint_id: 1, created_at: -1, _id: -1 });
      await deliveries.createIndex({ event_id: 1, created_at: -1, _id: -1 });
      await attempts.createIndex({ delivery_id: 1, started_at: -1, _id: -1 });
    },
  };
}

