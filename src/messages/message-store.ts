import type { Collection, Db, Filter } from "mongodb";
import { heldBy, LeasedQueue, leaseUpdate, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import type { InboundContent, NetworkErrorInfo } from "../network/network.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { groupInserts } from "../store/insert-each.js";
import { dropIndexIfPresent } from "../store/indexes.js";

/** Statuses of outbound messages in their order; "failed" is final and outside it. */
export const STATUS_ORDER = ["accepted", "sent", "delivered", "read"] as const;

/** Status of a stored message; inbound messages are "received". */
export type StoredStatus = (typeof STATUS_ORDER)[number] | "failed" | "received";

/** What dispatch hands the network, fixed at acceptance (later archival or edits do not change it). */
export interface SendSnapshot {
  from_phone_number: string;
  from_phone_number_id: string | null;
  template_name: string;
  language: string;
  parameters: { name: string; value: string }[];
  flow: { flow_id: string; token: string } | null;
  text: string;
}

/*
 * The states the sweeps look for, each the filter of a partial index and a
 * part of the sweep's query as written (MongoDB uses a partial index for the
 * queries that imply its filter; the embedded database, for those that hold
 * it as written). Dispatch is a leased queue (due_at), not a sweep.
 */
/** Filters of the partial indexes of dispatch in earlier releases (their records are moved to the queue at start-up). */
const EARLIER_DISPATCH_INDEXES = {
  dispatch_pending_by_lease: { "dispatch.state": "pending" },
  dispatch_claimed_by_claim: { "dispatch.state": "claimed" },
  dispatch_unapplied_by_claim: { status: "accepted", "dispatch.state": "done" },
} as const;
/** A status change marked until its event is stored: `events_pending` has an element (src/messages/inbound.ts). */
export const EVENTS_PENDING = { "events_pending.0": { $exists: true } } as const;
/** Failed, its credits not yet given back (src/messages/inbound.ts). */
export const REFUND_DUE = { refund_state: "due" } as const;

/**
 * Dispatch state of an outbound message (the outbox): "pending" until a
 * process calls the network, "claimed" while it does, "done" once the
 * network answered (accepted or refused for good). The message is queued
 * (its lease fields, src/jobs/leased-queue.ts) from acceptance until its
 * answer is applied.
 */
export interface DispatchState {
  state: "pending" | "claimed" | "done";
  attempts: number;
  claimed_at: Date | null;
  last_error: NetworkErrorInfo | null;
}
/** A message as stored in `messages`: outbound (sent by an API key) or inbound (a reply); queued (Queued) while its dispatch is under way. */
export interface MessageRecord extends Queued {
  /** Shape msg_<uuid>. */
  _id: string;
  workspace_id: string;
  direction: "outbound" | "inbound";
  /** Key that sent it (outbound); null for inbound. */
  api_key_id: string | null;
  /** Recipient (outbound) or the workspace's number written to (inbound). */
  to: string;
  /** The workspace's number (outbound) or the writer (inbound). */
  from: string;
  sender_id: string | null;
  template_id: string | null;
  flow_token: string | null;
  status: StoredStatus;
  wa_message_id: string | null;
  error: NetworkErrorInfo | null;
  /** Credits spent. */
  credits: number;
  created_at: Date;
  /** When a status was reached (the earliest report of it); absent until then. */
  sent_at?: Date | null;
  delivered_at?: Date | null;
  read_at?: Date | null;
  failed_at?: Date | null;
  /** Statuses the network reported (each applied once; a repeat is a duplicate). */
  reports?: string[];
  /** Reports that repeated one already applied (and changed nothing). */
  duplicate_reports?: number;
  /** Statuses changed whose event is not yet stored (the sweep fires them after a crash). */
  events_pending?: string[];
  /** Last status change. */
  updated_at?: Date;
  /** Refund of a failed outbound message: "due" from the failure until the refund is complete. */
  refund_state: "none" | "due" | "done";
  /** Outbound only. */
  send?: SendSnapshot;
  dispatch?: DispatchState;
  /** Inbound only: what was written and what it replies to. */
  content?: InboundContent;
  reply_to_message_id?: string | null;
}

/** Access to the `messages` collection. */
export interface MessageStore {
  readonly collection: Collection<MessageRecord>;
  /**
   * Stores a new message. Messages stored at about the same time share one
   * insertMany (group commit: whatever accumulated during the previous write),
   * each caller awaiting its own.
   *
   * @throws the server's error for this message (E11000 when its id exists), or what failed the whole write.
   */
  insert(record: MessageRecord): Promise<void>;
  /** Whether a message with `id` exists. */
  exists(id: string): Promise<boolean>;
  /** An outbound message sent by key `apiKeyId`, or null (also for another key's message). */
  getForKey(id: string, apiKeyId: string): Promise<MessageRecord | null>;
  /** Outbound messages of key `apiKeyId`, newest first, optionally by status and recipient. */
  listForKey(apiKeyId: string, filter: { status?: StoredStatus; to?: string }, page: PageRequest): Promise<Page<MessageRecord>>;
  /** Messages matching `filter` (the console's message log), newest first. */
  list(filter: Filter<MessageRecord>, page: PageRequest): Promise<Page<MessageRecord>>;
  /** The queue of outbound messages under dispatch (src/messages/dispatch.ts runs it). */
  dispatchQueue(options: Omit<LeasedQueueOptions<MessageRecord, undefined>, "collection">): LeasedQueue<MessageRecord>;
  /** Claims for the network call, many in one bulkWrite: pending → claimed (attempts + 1), each held by its lease until `until`. */
  markCalling(claims: readonly { id: string; lease: string; now: Date; until: Date }[]): Promise<void>;
  /** A retryable outage: the message is pending again, released, due at `at`. */
  scheduleRetry(id: string, lease: string, at: Date, error: NetworkErrorInfo): Promise<void>;
  /** A failure for good (refused, out of retries, interrupted): dispatch done with `error`; the lease is kept until the failure is applied. */
  recordDispatchFailure(id: string, lease: string, error: NetworkErrorInfo): Promise<void>;
  /** Dispatch is over (its outcome applied): out of the queue. */
  completeDispatch(id: string, lease: string): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Creates the message store over `db`. */
export function createMessageStore(db: Db): MessageStore {
  const collection = db.collection<MessageRecord>("messages");
  const inserts = groupInserts(collection);
  return {
    collection,
    async insert(record) {
      const outcome = await inserts.add(record);
      if (outcome === "duplicate") throw Object.assign(new Error(`message ${record._id} exists already`), { code: 11000 });
      if (outcome instanceof Error) throw outcome;
    },
    exists: async (id) => (await collection.findOne({ _id: id }, { projection: { _id: 1 } })) !== null,
    getForKey: (id, apiKeyId) => collection.findOne({ _id: id, api_key_id: apiKeyId, direction: "outbound" }),
    listForKey(apiKeyId, { status, to }, page) {
      const filter: Filter<MessageRecord> = { api_key_id: apiKeyId, direction: "outbound" };
      if (status) filter.status = status;
      if (to) filter.to = to;
      return listPage(collection, filter, page);
    },
    list: (filter, page) => listPage(collection, filter, page),
    dispatchQueue: (options) => new LeasedQueue({ ...options, collection }),
    async markCalling(claims) {
      await collection.bulkWrite(
        claims.map(({ id, lease, now, until }) => ({
          updateOne: {
            filter: { _id: id, "dispatch.state": "pending", ...heldBy(lease) },
            update: leaseUpdate<MessageRecord>({ kind: "renew", now, until }, { $set: { "dispatch.state": "claimed", "dispatch.claimed_at": now }, $inc: { "dispatch.attempts": 1 } }),
          },
        })),
        { ordered: false },
      );
    },
    async scheduleRetry(id, lease, at, error) {
      await collection.updateOne(
        { _id: id, "dispatch.state": "claimed", ...heldBy(lease) },
        leaseUpdate<MessageRecord>({ kind: "release", dueAt: at }, { $set: { "dispatch.state": "pending", "dispatch.claimed_at": null, "dispatch.last_error": error } }),
      );
    },
    async recordDispatchFailure(id, lease, error) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, { $set: { "dispatch.state": "done", "dispatch.last_error": error } });
    },
    async completeDispatch(id, lease) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<MessageRecord>({ kind: "complete" }));
    },
    async ensureIndexes() {
      await collection.createIndex({ api_key_id: 1, created_at: -1, _id: -1 });
      await collection.createIndex({ wa_message_id: 1 });
      await collection.createIndex({ workspace_id: 1, direction: 1, created_at: -1, _id: -1 });
      // Dispatch's queue: the messages under dispatch only (sparse), so that the index does not grow with the messages done.
      await collection.createIndex({ due_at: 1 }, { name: "queue_due_at", sparse: true });
      // Messages of earlier releases under dispatch, found by those releases' partial indexes: queued, due now (a
      // claimed one as its claim's time says), then the indexes dropped.
      for (const [name, filter] of Object.entries(EARLIER_DISPATCH_INDEXES)) {
        if (!(await collection.indexExists(name).catch(() => false))) continue;
        for (const m of await collection.find({ ...filter, due_at: { $exists: false } }, { projection: { dispatch: 1 } }).toArray()) {
          const claimedAt = (m.dispatch as { claimed_at?: Date | null } | undefined)?.claimed_at;
          await collection.updateOne({ _id: m._id }, { $set: { due_at: claimedAt ?? new Date(), lease_owner: null, leased_at: claimedAt ?? null }, $unset: { "dispatch.next_attempt_at": "", "dispatch.owner": "", "dispatch.lease_until": "" } });
        }
        await dropIndexIfPresent(collection, name);
      }
      // Refunds due (src/messages/inbound.ts, recover).
      await collection.createIndex({ failed_at: 1 }, { name: "refund_due_by_failure", partialFilterExpression: REFUND_DUE });
      // Whole-collection indexes of earlier releases, replaced by the partial ones above.
      for (const name of ["dispatch.state_1_dispatch.lease_until_1", "dispatch.state_1_dispatch.claimed_at_1", "refund_state_1"]) await dropIndexIfPresent(collection, name);
    },
  };
}
