import type { BatchItem } from "./delivery-store.js";
import type { AttemptOutcome } from "./http-sender.js";

/**
 * One automatic attempt to make: attempt `number` of the delivery of an
 * event to an endpoint, on behalf of `work`, the durable record that
 * answers for it until it is done: "event:<id>" (an event not yet marked
 * fanned out, which the sweep redoes after a crash) or "batch:<id>" (a
 * retry batch, which Agenda runs again when its worker dies).
 */
export interface WorkItem {
  deliveryId: string;
  workspaceId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  /** The event's stored envelope: the bytes sent and signed. */
  body: string;
  number: number;
  work: string;
  /** A claim made by this work is our own earlier, interrupted try (see Dispatcher). */
  recover?: string;
}

/** True for work that answers for a new event: it goes ahead of retries. */
export const isUrgent = (item: WorkItem): boolean => item.work.startsWith("event:");

/** The item as kept in a retry batch. */
export const toBatchItem = (i: WorkItem): BatchItem => ({
  d: i.deliveryId,
  w: i.workspaceId,
  e: i.endpointId,
  v: i.eventId,
  t: i.eventType,
  b: i.body,
  n: i.number,
  ...(i.recover ? { r: i.recover } : {}),
});

/** An item of a batch, taken on by `work`. */
export const fromBatchItem = (b: BatchItem, work: string): WorkItem => ({
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

/** The outcome recorded for an attempt whose worker stopped before its outcome was known. */
export function interruptedOutcome(claimedAt: Date): AttemptOutcome {
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
export async function forEachSettled<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
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
