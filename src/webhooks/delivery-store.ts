import { createHash } from "node:crypto";
import { MongoBulkWriteError, type Collection, type Db, type OptionalUnlessRequiredId } from "mongodb";
import type { AttemptErrorKind } from "./http-sender.js";

/*
 * The records of the delivery engine. Deliveries, claims and attempts are
 * only ever inserted, never updated: a batch of inserts is one command, and an
 * insert with a known _id is an atomic "first one wins".
 * A delivery's state is read from its attempts.
 *
 * - webhook_deliveries: one per event and endpoint, _id derived from both,
 *   inserted right before the first attempt (it is that attempt's claim).
 * - webhook_claims: one per later automatic attempt (_id <delivery>.<n>),
 *   inserted right before it is sent: whoever inserts it makes attempt n,
 *   nobody else does.
 * - webhook_attempts: one per attempt made (_id <delivery>.<n> or
 *   <delivery>.m<n> for manual ones), with its outcome.
 * - webhook_batches: retries waiting for their time (and deliveries paused
 *   while their endpoint is disabled), each run by one Agenda job; deleted
 *   once done. Small headers, so that the sweep can read them all; the items
 *   (with the bytes to send) are in webhook_batch_items under the same _id.
 */

/** A delivery as stored in `webhook_deliveries`. Never updated. */
export interface DeliveryRecord {
  /** dlv_<uuid> derived from event and endpoint (deliveryId). */
  _id: string;
  workspace_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** When the first attempt was claimed (the delivery's creation). */
  created_at: Date;
  /** The work that claimed the first attempt (see ClaimRecord.work). */
  work: string;
}

/** The claim of automatic attempt n ≥ 2 of a delivery, in `webhook_claims`. Never updated. */
export interface ClaimRecord {
  /** <delivery id>.<n>, the id of the attempt it claims. */
  _id: string;
  delivery_id: string;
  /**
   * Which durable piece of work made the claim: "event:<id>" (the fan-out of
   * an event, until the event is marked), "batch:<id>" (a retry batch), or
   * "superseded:<attempt id>" (a manual success ended the schedule).
   */
  work: string;
  created_at: Date;
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

/** An automatic attempt to make, as kept in a batch (short names: batches can hold hundreds). */
export interface BatchItem {
  /** Delivery id. */
  d: string;
  /** Workspace id. */
  w: string;
  /** Endpoint id. */
  e: string;
  /** Event id. */
  v: string;
  /** Event type. */
  t: string;
  /** The event's stored envelope (the bytes to send). */
  b: string;
  /** Automatic attempt number. */
  n: number;
  /** A claim by this work is our own earlier try (see Dispatcher). */
  r?: string;
}

/** Retries due at one time, or deliveries paused for a disabled endpoint, in `webhook_batches`. */
export interface BatchRecord {
  /** UUID. */
  _id: string;
  /** Items in webhook_batch_items. */
  size: number;
  /** When its job runs; null while paused. */
  due_at: Date | null;
  /** Set while paused: the disabled endpoint the items wait for. */
  paused_endpoint_id: string | null;
  created_at: Date;
}

/** The items of a batch, in `webhook_batch_items` under the batch's _id. */
export interface BatchItemsRecord {
  _id: string;
  items: BatchItem[];
}

/** The delivery id of an event and an endpoint: dlv_ and a UUID (version 8) made from a SHA-256 of both. */
export function deliveryId(eventId: string, endpointId: string): string {
  const hex = createHash("sha256").update(`${eventId}/${endpointId}`).digest("hex");
  const variant = ((parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `dlv_${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
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
  readonly claims: Collection<ClaimRecord>;
  readonly attempts: Collection<AttemptRecord>;
  readonly batches: Collection<BatchRecord>;
  readonly batchItems: Collection<BatchItemsRecord>;
  ensureIndexes(): Promise<void>;
}

/** Creates the delivery store over `db`. */
export function createDeliveryStore(db: Db): DeliveryStore {
  const deliveries = db.collection<DeliveryRecord>("webhook_deliveries");
  const claims = db.collection<ClaimRecord>("webhook_claims");
  const attempts = db.collection<AttemptRecord>("webhook_attempts");
  const batches = db.collection<BatchRecord>("webhook_batches");
  const batchItems = db.collection<BatchItemsRecord>("webhook_batch_items");
  return {
    deliveries,
    claims,
    attempts,
    batches,
    batchItems,
    async ensureIndexes() {
      await deliveries.createIndex({ endpoint_id: 1, created_at: -1, _id: -1 });
      await deliveries.createIndex({ event_id: 1, created_at: -1, _id: -1 });
      await attempts.createIndex({ delivery_id: 1, started_at: -1, _id: -1 });
      await batches.createIndex({ paused_endpoint_id: 1 });
    },
  };
}
