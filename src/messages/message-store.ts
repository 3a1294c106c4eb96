import type { AnyBulkWriteOperation, Db, Filter, UpdateFilter } from "mongodb";
import { heldBy, LeasedQueue, leaseUpdate, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import type { InboundContent, NetworkErrorInfo, StatusReport } from "../network/network.js";
import type { QueuedReason } from "./pacing.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { groupInserts, insertEach, type InsertOutcome } from "../store/insert-each.js";
import { dropIndexIfPresent } from "../store/indexes.js";

/** Statuses of outbound messages in their order once accepted ("scheduled" comes before); "failed" and "canceled" are final and outside it. */
export const STATUS_ORDER = ["accepted", "sent", "delivered", "read"] as const;

/**
 * Status of a stored message; inbound messages are "received". A scheduled
 * send is "scheduled" until dispatch takes it (markCalling makes it
 * "accepted"); "failed" and "canceled" are final (README "Scheduled sends,
 * cancellation and validity").
 */
export type StoredStatus = (typeof STATUS_ORDER)[number] | "scheduled" | "failed" | "canceled" | "received";

/** Statuses of a message not yet handed to the network: it may still be canceled or expire (while its dispatch is pending). */
export const WAITING_STATUSES = ["scheduled", "accepted"] as const satisfies readonly StoredStatus[];

/** The error of a message not handed to the network before its valid_until (failed, refunded). */
export const EXPIRED: NetworkErrorInfo = { code: 0, title: "The message was not handed to the network before its valid_until", reason: "expired" };

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
/** Failed or canceled, its credits not yet given back (src/messages/inbound.ts). */
export const REFUND_DUE = { refund_state: "due" } as const;
/** Not handed to the network yet (the messages sweep looks among them for those past their valid_until). */
export const DISPATCH_PENDING = { "dispatch.state": "pending" } as const;
/** Handed to the network and answered (sent, or refused for good), or stopped before (the index of what a sender sent lately). */
export const DISPATCH_DONE = { "dispatch.state": "done" } as const;

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
  /** While it waits for its turn (src/messages/pacing.ts): why, and when it is expected to leave. */
  queued_reason?: QueuedReason | null;
  estimated_send_at?: Date | null;
  /** Times the network refused it for the pair rate (131056): its backoff's step. */
  pair_refusals?: number;
}

/** A message that waits in the database for its turn under the network's limits (MessageStore.postponeDispatch). */
export interface Postponed {
  id: string;
  lease: string;
  /** When it is due again (a little before its turn). */
  at: Date;
  reason: QueuedReason;
  /** When it is expected to leave. */
  estimatedAt: Date;
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
  /** Outbound: the template's category when it was accepted ("marketing", "utility", "authentication"); absent before categories (utility). */
  template_category?: string;
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
  /** When it was canceled (CancelMessage); absent unless canceled. */
  canceled_at?: Date | null;
  /** Outbound: when to hand it to the network (a scheduled send's send_at); absent or null when at once. */
  send_at?: Date | null;
  /** Outbound: until when it may be handed to the network (created_at or send_at, plus the send's TTL); absent on messages of earlier releases. */
  valid_until?: Date | null;
  /** Statuses the network reported (each applied once; a repeat is a duplicate). */
  reports?: string[];
  /** Reports that repeated one already applied (and changed nothing). */
  duplicate_reports?: number;
  /** Statuses changed whose event is not yet stored (the sweep fires them after a crash). */
  events_pending?: string[];
  /** Last status change. */
  updated_at?: Date;
  /** Refund of a failed or canceled outbound message: "due" from the failure (or cancellation) until the refund is complete. */
  refund_state: "none" | "due" | "done";
  /** Outbound only. */
  send?: SendSnapshot;
  dispatch?: DispatchState;
  /** Inbound only: what was written and what it replies to. */
  content?: InboundContent;
  reply_to_message_id?: string | null;
}

/** Which message a status report names: ours (echoed by the network) or the network's id. */
export type ReportMatch = { _id: string } | { wa_message_id: string };

/** A status report to apply to its outbound message (MessageStore.applyStatusReports). */
export interface StatusWrite {
  match: ReportMatch;
  status: StatusReport["status"];
  /** When it happened (network side). */
  at: Date;
  error: NetworkErrorInfo | null;
  /** Fields set along (a report by our id records the network's id). */
  set: Record<string, unknown>;
}

/** A message's follow-ups to write (MessageStore.writeFollowUps): event marks to clear, repeated reports to count. */
export interface FollowUp {
  published: string[];
  duplicates: number;
}

/** The `messages` collection: every read and write of it goes through these operations. */
export interface MessageStore {
  /**
   * Stores a new message. Messages stored at about the same time share one
   * insertMany (group commit: whatever accumulated during the previous write),
   * each caller awaiting its own.
   *
   * @throws the server's error for this message (E11000 when its id exists), or what failed the whole write.
   */
  insert(record: MessageRecord): Promise<void>;
  /**
   * Stores the messages of a batch send with one unordered insertMany (not
   * grouped with other sends: a batch is a group already) and answers each
   * message's fate, in order: inserted, a duplicate (a message with its id
   * exists: an earlier attempt of the same batch stored it), or the
   * server's error for it.
   *
   * @throws what failed the whole command (then no message's fate is known).
   */
  insertBatch(records: readonly MessageRecord[]): Promise<InsertOutcome[]>;
  /** The messages with these ids (unknown ids left out), without their send snapshot, in one find. */
  getMany(ids: readonly string[]): Promise<MessageRecord[]>;
  /** Whether a message with `id` exists. */
  exists(id: string): Promise<boolean>;
  /** A message by id, or null. */
  get(id: string): Promise<MessageRecord | null>;
  /** An outbound message by our id or the network's (and, when given, of `workspaceId`), or null. */
  findOutbound(match: ReportMatch, workspaceId?: string): Promise<MessageRecord | null>;
  /** The inbound message the network numbered `networkMessageId`, or null. */
  findInbound(networkMessageId: string): Promise<MessageRecord | null>;
  /** The workspace's outbound messages to `to` that carried flow token `flowToken`, newest first, at most 50 (forms' tracing). */
  findFormMessages(workspaceId: string, to: string, flowToken: string): Promise<MessageRecord[]>;
  /** Messages under dispatch that are due at `now` and wait for a claim (a retry due, or a lease that lapsed): read by the queue's index. */
  countDispatchDue(now: Date): Promise<number>;
  /** The console's counts of a workspace: outbound by status, outbound created since `since`, inbound received since. */
  countForStats(workspaceId: string, statuses: readonly StoredStatus[], since: Date): Promise<{ byStatus: number[]; outboundSince: number; inboundSince: number }>;
  /** Records an inbound message; one already recorded under its id is left as it is. */
  insertInbound(record: MessageRecord): Promise<void>;
  /**
   * Applies status reports, many at once (see statusUpdates): each report's
   * forward update, in one ordered bulkWrite; then the messages named read
   * (one find each way they are named); when some forward updates matched
   * nothing, the late update of those whose message does not hold the status
   * yet, in report order, and those messages read again. Answers each
   * report's message as it is after the writes (null: none matched).
   */
  applyStatusReports(items: readonly StatusWrite[], now: Date): Promise<(MessageRecord | null)[]>;
  /** Applies one status report (forward, else late, as two findOneAndUpdate); the message after it, or null when it changed nothing. */
  applyStatusReport(item: StatusWrite, now: Date): Promise<MessageRecord | null>;
  /**
   * Dispatch's "sent", many at once: per message the forward update
   * (accepted → sent), else the late one (only the time, the report and its
   * event mark), each with the dispatch's outcome (network id, done, out of
   * dispatch's queue), else the outcome alone ("sent" was reported already);
   * in two ordered bulkWrites, the second only when some first ones matched
   * nothing.
   */
  recordSent(items: readonly { messageId: string; networkMessageId: string; at: Date }[], now: Date): Promise<void>;
  /** Writes messages' follow-ups in one bulkWrite: event marks cleared ($pull), repeated reports counted. */
  writeFollowUps(entries: readonly [string, FollowUp][]): Promise<void>;
  /** A failed message's refund is done. */
  markRefunded(id: string): Promise<void>;
  /** Whether message `id` records its refund done (the credit store's recovery clears a refund left pending after it). */
  isRefunded(id: string): Promise<boolean>;
  /** Messages whose status change's event is not stored yet, changed before `before` (the sweep; at most 1,000). */
  withEventsPending(before: Date): Promise<MessageRecord[]>;
  /** Failed or canceled messages whose refund is due, failed or canceled before `before` (the sweep; at most 1,000 of each). */
  withRefundDue(before: Date): Promise<MessageRecord[]>;
  /**
   * Cancels outbound message `id` of key `apiKeyId` if it was not handed to
   * the network: one conditional update that matches only while its status
   * is scheduled or accepted, its dispatch pending and no lease holds it (or
   * its lease lapsed), so that dispatch, whose claim needs the lease, and
   * the cancellation never both win. Canceled: status canceled, canceled_at
   * `now`, refund due, its event marked, out of dispatch's queue.
   *
   * @returns the message after the update; or, when it was not canceled, the message as it is (null: no such message of the key) with `canceled: false`.
   */
  cancel(id: string, apiKeyId: string, now: Date): Promise<{ canceled: boolean; message: MessageRecord | null }>;
  /**
   * Fails as expired (EXPIRED, refund due, event marked, out of the queue)
   * the messages whose dispatch is pending and not leased (or whose lease
   * lapsed) and whose valid_until is before `now`, each with the same
   * conditional update as cancel (the sweep; at most 1,000).
   *
   * @returns the messages failed, after the update.
   */
  expireWaiting(now: Date): Promise<MessageRecord[]>;
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
  /**
   * Messages whose turn under the network's limits is later: each pending, released, due at its `at`, with its
   * reason and expected time (README "Pacing"); in one bulkWrite.
   */
  postponeDispatch(items: readonly Postponed[]): Promise<void>;
  /** Whether the message is held by `lease` with the claim written at `claimedAt` (markCalling) (one read by _id). */
  isClaimedBy(id: string, lease: string, claimedAt: Date): Promise<boolean>;
  /**
   * A limit was raised: the messages of a workspace (its messaging limit, reason `daily_limit`) or of a sender (its
   * throughput, reason `sender_rate`) that wait in the database for `reason` (pending, not held by a process) and are
   * due later than `at` are due at `at` instead of their old expected turn, and take a turn under the new limit at
   * the workers' next claims (README "Pacing"); one updateMany (a sender's read by `queue_by_sender`).
   *
   * @returns how many were made due.
   */
  releaseQueued(of: { workspaceId: string } | { senderId: string }, reason: QueuedReason, at: Date): Promise<number>;
  /**
   * The network refused a claimed message for one of its rate limits (130429, 131056): it is pending again and
   * stays held by `lease` until `until`, its attempt not counted (`pairRefused`: one more pair refusal counted).
   */
  refusedForRate(id: string, lease: string, now: Date, until: Date, error: NetworkErrorInfo, pairRefused: boolean): Promise<void>;
  /** A failure for good (refused, out of retries, interrupted): dispatch done with `error`; the lease is kept until the failure is applied. */
  recordDispatchFailure(id: string, lease: string, error: NetworkErrorInfo): Promise<void>;
  /** Dispatch is over (its outcome applied): out of the queue. */
  completeDispatch(id: string, lease: string): Promise<void>;
  /**
   * Sender `senderId`'s queue at `now` (README "Pacing", "A sender's queue"): its outbound messages whose dispatch is
   * pending, counted from the partial index `queue_by_sender` (a few counts and reads of one entry a reason: its cost
   * does not grow with the messages queued); null when it has none. A message is queued from its `send_at` (a
   * scheduled send) or its creation on, until it is handed to the network; a scheduled send not yet due is counted
   * apart (`scheduled`), not queued.
   */
  queuedBySender(now: Date, senderId: string): Promise<SenderQueueCounts | null>;
  /**
   * Every sender's queue depth and oldest queued time at `now` (the gauges of /metrics), for the senders with
   * messages queued: one aggregation over the pending messages (the partial index `queue_by_sender`), grouped by
   * sender. One pass whatever the number of senders: the embedded database scans for it (it ignores non-unique
   * indexes), and a read per sender made a scrape cost a pass per sender.
   */
  queueDepths(now: Date): Promise<Map<string, Pick<SenderQueueCounts, "depth" | "oldestQueuedAt">>>;
  /** Messages of sender `senderId` handed to the network at or after `since` (their `sent_at`): counted from the index `sent_by_sender`. */
  countSentSince(senderId: string, since: Date): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/** A sender's queue as MessageStore.queuedBySender reads it. */
export interface SenderQueueCounts {
  /** Messages queued: not handed to the network, due (a scheduled send from its send_at on). */
  depth: number;
  /** The earliest `send_at`, or creation time of a message sent at once, among those queued; null when none is. */
  oldestQueuedAt: Date | null;
  /** Queued messages by their `dispatch.queued_reason` (those never sent back to wait have none and are left out). */
  byReason: Map<QueuedReason, number>;
  /** Scheduled sends not yet due (not queued). */
  scheduled: number;
}

/** Creates the message store over `db`. */
export function createMessageStore(db: Db): MessageStore {
  const collection = db.collection<MessageRecord>("messages");
  const inserts = groupInserts(collection);
  // The send snapshot (template parameters and text) is dispatch's alone: not read back with a status.
  const withoutSnapshot = { projection: { send: 0 } } as const;
  const read = (filter: Filter<MessageRecord>, n: number) => collection.find(filter, { ...withoutSnapshot, batchSize: n }).toArray();
  /** Writes each item's `first`, then, only when some matched nothing, every item's `rest`, in order (see recordSent). */
  async function writeInTwoPasses(items: { first: AnyBulkWriteOperation<MessageRecord>; rest: AnyBulkWriteOperation<MessageRecord>[] }[]): Promise<void> {
    const forward = await collection.bulkWrite(items.map((i) => i.first), { ordered: true });
    if (forward.matchedCount < items.length) await collection.bulkWrite(items.flatMap((i) => i.rest), { ordered: true });
  }
  return {
    async insert(record) {
      const outcome = await inserts.add(record);
      if (outcome === "duplicate") throw Object.assign(new Error(`message ${record._id} exists already`), { code: 11000 });
      if (outcome instanceof Error) throw outcome;
    },
    insertBatch: (records) => insertEach(collection, [...records]),
    getMany: (ids) => (ids.length === 0 ? Promise.resolve([]) : read({ _id: { $in: [...ids] } }, ids.length)),
    exists: async (id) => (await collection.findOne({ _id: id }, { projection: { _id: 1 } })) !== null,
    get: (id) => collection.findOne({ _id: id }),
    findOutbound: (match, workspaceId) => collection.findOne({ ...match, ...(workspaceId ? { workspace_id: workspaceId } : {}), direction: "outbound" }),
    findInbound: (networkMessageId) => collection.findOne({ wa_message_id: networkMessageId, direction: "inbound" }),
    findFormMessages: (workspaceId, to, flowToken) =>
      collection.find({ workspace_id: workspaceId, direction: "outbound", flow_token: flowToken, to }).sort({ created_at: -1 }).limit(50).toArray(),
    countDispatchDue: (now) => collection.countDocuments({ due_at: { $lte: now }, lease_owner: null }),
    async countForStats(workspaceId, statuses, since) {
      // Counted from indexes, reading no message (README, "The console's stats"): by status from
      // {workspace_id, direction, status} in one read, so the counts of one answer add up to its total; each window
      // from {workspace_id, direction, created_at}.
      const [groups, outboundSince, inboundSince] = await Promise.all([
        collection
          .aggregate<{ _id: string; n: number }>([{ $match: { workspace_id: workspaceId, direction: "outbound" } }, { $group: { _id: "$status", n: { $sum: 1 } } }])
          .toArray(),
        collection.countDocuments({ workspace_id: workspaceId, direction: "outbound", created_at: { $gte: since } }),
        collection.countDocuments({ workspace_id: workspaceId, direction: "inbound", created_at: { $gte: since } }),
      ]);
      const byStatus = new Map(groups.map((g) => [g._id, g.n]));
      return { byStatus: statuses.map((status) => byStatus.get(status) ?? 0), outboundSince, inboundSince };
    },
    async insertInbound(record) {
      try {
        await collection.insertOne(record);
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    },
    async applyStatusReports(items, now) {
      const updates = items.map((item) => statusUpdates(item, now));
      const forward = await collection.bulkWrite(updates.map((u) => ({ updateOne: u.forward })), { ordered: true });
      const ours = items.flatMap(({ match }) => ("_id" in match ? [match._id] : []));
      const theirs = items.flatMap(({ match }) => ("wa_message_id" in match ? [match.wa_message_id] : []));
      // All at once (batchSize): MongoDB's first batch is otherwise 101 documents, and the rest a getMore.
      const found = (
        await Promise.all([
          ours.length ? read({ _id: { $in: ours }, direction: "outbound" }, ours.length) : [],
          theirs.length ? read({ wa_message_id: { $in: theirs }, direction: "outbound" }, theirs.length) : [],
        ])
      ).flat();
      const byId = new Map(found.map((m) => [m._id, m]));
      const byNetworkId = new Map(found.flatMap((m) => (m.wa_message_id ? [[m.wa_message_id, m] as const] : [])));
      const messageOf = (match: ReportMatch) => ("_id" in match ? byId.get(match._id) : byNetworkId.get(match.wa_message_id)) ?? null;
      if (forward.matchedCount < items.length) {
        const late = items.flatMap((item, i) => {
          const message = messageOf(item.match);
          return message && !message.reports?.includes(item.status) ? [{ message, update: updates[i]!.late }] : [];
        });
        if (late.length) {
          await collection.bulkWrite(late.map(({ update }) => ({ updateOne: update })), { ordered: true });
          const lateIds = [...new Set(late.map(({ message }) => message._id))];
          for (const message of await read({ _id: { $in: lateIds } }, lateIds.length)) {
            byId.set(message._id, message);
            if (message.wa_message_id) byNetworkId.set(message.wa_message_id, message);
          }
        }
      }
      return items.map(({ match }) => messageOf(match));
    },
    async applyStatusReport(item, now) {
      const { forward, late } = statusUpdates(item, now);
      const options = { returnDocument: "after", ...withoutSnapshot } as const;
      return (await collection.findOneAndUpdate(forward.filter, forward.update, options)) ?? (await collection.findOneAndUpdate(late.filter, late.update, options));
    },
    async recordSent(items, now) {
      await writeInTwoPasses(
        items.map(({ messageId, networkMessageId, at }) => {
          const outcome = { wa_message_id: networkMessageId, "dispatch.state": "done" as const, "dispatch.last_error": null };
          const unreported = { _id: messageId, direction: "outbound" as const, reports: { $ne: "sent" } };
          const record = { $addToSet: { reports: "sent", events_pending: "sent" }, $min: { sent_at: at } };
          const done = (update: UpdateFilter<MessageRecord>) => leaseUpdate<MessageRecord>({ kind: "complete" }, update);
          return {
            first: { updateOne: { filter: { ...unreported, status: "accepted" as const }, update: done({ $set: { status: "sent" as const, ...outcome, updated_at: now }, ...record }) } },
            rest: [
              { updateOne: { filter: unreported, update: done({ $set: { ...outcome, updated_at: now }, ...record }) } },
              { updateOne: { filter: { _id: messageId, "dispatch.state": { $ne: "done" as const } }, update: done({ $set: outcome }) } },
            ],
          };
        }),
      );
    },
    async writeFollowUps(entries) {
      await collection.bulkWrite(
        entries.map(([messageId, { published, duplicates }]) => ({
          updateOne: {
            filter: { _id: messageId },
            update: {
              ...(published.length ? { $pull: { events_pending: { $in: published } } } : {}),
              ...(duplicates ? { $inc: { duplicate_reports: duplicates } } : {}),
            },
          },
        })),
        { ordered: false },
      );
    },
    isRefunded: async (id) => (await collection.findOne({ _id: id, refund_state: "done" }, { projection: { _id: 1 } })) !== null,
    async markRefunded(id) {
      await collection.updateOne({ _id: id, refund_state: "due" }, { $set: { refund_state: "done" } });
    },
    withEventsPending: (before) => collection.find({ ...EVENTS_PENDING, updated_at: { $lt: before } }).limit(1000).toArray(),
    async withRefundDue(before) {
      const [failed, canceled] = await Promise.all([
        collection.find({ ...REFUND_DUE, failed_at: { $lt: before } }).limit(1000).toArray(),
        collection.find({ ...REFUND_DUE, canceled_at: { $lt: before } }).limit(1000).toArray(),
      ]);
      return [...failed, ...canceled];
    },
    async cancel(id, apiKeyId, now) {
      const canceled = await collection.findOneAndUpdate(
        { _id: id, api_key_id: apiKeyId, direction: "outbound", ...notHandedOver(now) },
        stopUpdate("canceled", now, { canceled_at: now }),
        { returnDocument: "after", ...withoutSnapshot },
      );
      if (canceled) return { canceled: true, message: canceled };
      return { canceled: false, message: await collection.findOne({ _id: id, api_key_id: apiKeyId, direction: "outbound" }, withoutSnapshot) };
    },
    async expireWaiting(now) {
      const due = await collection.find({ ...DISPATCH_PENDING, valid_until: { $lt: now } }, { projection: { _id: 1 } }).limit(1000).toArray();
      const expired: MessageRecord[] = [];
      for (const { _id } of due) {
        const message = await collection.findOneAndUpdate(
          { _id, direction: "outbound", valid_until: { $lt: now }, ...notHandedOver(now) },
          stopUpdate("failed", now, { failed_at: now, error: EXPIRED }),
          { returnDocument: "after", ...withoutSnapshot },
        );
        if (message) expired.push(message);
      }
      return expired;
    },
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
            // A scheduled message becomes accepted as it is handed over (pending and held, it is scheduled or accepted).
            update: leaseUpdate<MessageRecord>({ kind: "renew", now, until }, { $set: { status: "accepted", "dispatch.state": "claimed", "dispatch.claimed_at": now }, $inc: { "dispatch.attempts": 1 } }),
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
    async isClaimedBy(id, lease, claimedAt) {
      return (await collection.countDocuments({ _id: id, ...heldBy(lease), "dispatch.state": "claimed", "dispatch.claimed_at": claimedAt }, { limit: 1 })) === 1;
    },
    async releaseQueued(of, reason, at) {
      const owner = "workspaceId" in of ? { workspace_id: of.workspaceId } : { sender_id: of.senderId };
      const released = await collection.updateMany(
        { ...DISPATCH_PENDING, ...owner, lease_owner: null, "dispatch.queued_reason": reason, due_at: { $gt: at } },
        { $set: { due_at: at } },
      );
      return released.modifiedCount;
    },
    async postponeDispatch(items) {
      await collection.bulkWrite(
        items.map(({ id, lease, at, reason, estimatedAt }) => ({
          updateOne: {
            filter: { _id: id, ...heldBy(lease) },
            update: leaseUpdate<MessageRecord>(
              { kind: "release", dueAt: at },
              { $set: { "dispatch.state": "pending", "dispatch.claimed_at": null, "dispatch.queued_reason": reason, "dispatch.estimated_send_at": estimatedAt } },
            ),
          },
        })),
        { ordered: false },
      );
    },
    async refusedForRate(id, lease, now, until, error, pairRefused) {
      await collection.updateOne(
        { _id: id, "dispatch.state": "claimed", ...heldBy(lease) },
        leaseUpdate<MessageRecord>(
          { kind: "renew", now, until },
          {
            $set: { "dispatch.state": "pending", "dispatch.claimed_at": null, "dispatch.last_error": error },
            $inc: { "dispatch.attempts": -1, ...(pairRefused ? { "dispatch.pair_refusals": 1 } : {}) },
          },
        ),
      );
    },
    async recordDispatchFailure(id, lease, error) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, { $set: { "dispatch.state": "done", "dispatch.last_error": error } });
    },
    async completeDispatch(id, lease) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<MessageRecord>({ kind: "complete" }));
    },
    async queuedBySender(now, sender) {
      // Every read below is of the partial index queue_by_sender ({sender_id, dispatch.queued_reason, send_at,
      // created_at} of the messages whose dispatch is pending): counts by reason in one grouping, then per reason the
      // scheduled sends not yet due (a count of a range) and the oldest queued (two reads of one entry each). No read
      // goes through the queued messages themselves (README "Pacing", "A sender's queue").
      const order = { sender_id: 1, "dispatch.queued_reason": 1, send_at: 1, created_at: 1 } as const;
      const of = { ...DISPATCH_PENDING, sender_id: sender };
      const groups = await collection.aggregate<{ _id: QueuedReason | null; n: number }>([{ $match: of }, { $group: { _id: "$dispatch.queued_reason", n: { $sum: 1 } } }]).toArray();
      if (groups.length === 0) return null;
      const queue: SenderQueueCounts = { depth: 0, oldestQueuedAt: null, byReason: new Map(), scheduled: 0 };
      await Promise.all(
        groups.map(async ({ _id: reason, n }) => {
          const ofReason = { ...of, "dispatch.queued_reason": reason };
          const [notDue, atOnce, dueScheduled] = await Promise.all([
            collection.countDocuments({ ...ofReason, send_at: { $gt: now } }),
            collection.find({ ...ofReason, send_at: null }, { projection: { _id: 0, created_at: 1 } }).sort(order).limit(1).toArray(),
            collection.find({ ...ofReason, send_at: { $lte: now } }, { projection: { _id: 0, send_at: 1 } }).sort(order).limit(1).toArray(),
          ]);
          queue.scheduled += notDue;
          queue.depth += n - notDue;
          if (reason && n > notDue) queue.byReason.set(reason, n - notDue);
          for (const at of [atOnce[0]?.created_at, dueScheduled[0]?.send_at]) {
            if (at && (!queue.oldestQueuedAt || at.getTime() < queue.oldestQueuedAt.getTime())) queue.oldestQueuedAt = at;
          }
        }),
      );
      return queue;
    },
    async queueDepths(now) {
      // Queued from its send_at (a scheduled send) or its creation on: a send_at absent or null counts as now.
      const since = { $ifNull: ["$send_at", "$created_at"] };
      const groups = await collection
        .aggregate<{ _id: string; depth: number; oldest: Date | null }>([
          { $match: { ...DISPATCH_PENDING, sender_id: { $gt: "" } } },
          { $match: { $expr: { $lte: [{ $ifNull: ["$send_at", now] }, now] } } },
          { $group: { _id: "$sender_id", depth: { $sum: 1 }, oldest: { $min: since } } },
        ])
        .toArray();
      return new Map(groups.map((g) => [g._id, { depth: g.depth, oldestQueuedAt: g.oldest ?? null }]));
    },
    countSentSince: (senderId, since) => collection.countDocuments({ ...DISPATCH_DONE, sender_id: senderId, sent_at: { $gte: since } }),
    async ensureIndexes() {
      // A sender's queue (queuedBySender): the messages not handed to the network only, by sender.
      await collection.createIndex(
        { sender_id: 1, "dispatch.queued_reason": 1, send_at: 1, created_at: 1 },
        { name: "queue_by_sender", partialFilterExpression: DISPATCH_PENDING },
      );
      // What a sender handed to the network lately (countSentSince): the messages whose dispatch is done, by sender and sent_at.
      await collection.createIndex({ sender_id: 1, sent_at: 1 }, { name: "sent_by_sender", partialFilterExpression: DISPATCH_DONE });
      await collection.createIndex({ api_key_id: 1, created_at: -1, _id: -1 });
      await collection.createIndex({ wa_message_id: 1 });
      await collection.createIndex({ workspace_id: 1, direction: 1, created_at: -1, _id: -1 });
      // The console's counts by status (countForStats).
      await collection.createIndex({ workspace_id: 1, direction: 1, status: 1 });
      // Forms' tracing of a submission to the message that carried the form (findFormMessages).
      await collection.createIndex({ flow_token: 1, to: 1 });
      // The messages with an event to store (a partial index: only those), for the sweep (withEventsPending).
      await collection.createIndex({ updated_at: 1 }, { name: "events_pending_by_update", partialFilterExpression: EVENTS_PENDING });
      await dropIndexIfPresent(collection, "events_pending_1_updated_at_1"); // an earlier release's, of every message
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
      await collection.createIndex({ canceled_at: 1 }, { name: "refund_due_by_cancel", partialFilterExpression: REFUND_DUE });
      // Messages not handed to the network, by validity (expireWaiting): those done leave it.
      await collection.createIndex({ valid_until: 1 }, { name: "dispatch_pending_by_validity", partialFilterExpression: DISPATCH_PENDING });
      // Whole-collection indexes of earlier releases, replaced by the partial ones above.
      for (const name of ["dispatch.state_1_dispatch.lease_until_1", "dispatch.state_1_dispatch.claimed_at_1", "refund_state_1"]) await dropIndexIfPresent(collection, name);
    },
  };
}

/**
 * The filter of a message not handed to the network at `now`: scheduled or
 * accepted, its dispatch pending, and no lease holding it (a lease that
 * lapsed holds nothing: its holder calls the network only with
 * DISPATCH_LEASE_MARGIN_MS of it left, src/messages/dispatch.ts).
 */
function notHandedOver(now: Date): Filter<MessageRecord> {
  return { status: { $in: [...WAITING_STATUSES] }, ...DISPATCH_PENDING, $or: [{ lease_owner: null }, { due_at: { $lte: now } }] };
}

/** The update of a message the service stops itself before it is handed over (canceled, failed as expired): final, refund due, its event marked, out of the queue. */
function stopUpdate(status: "canceled" | "failed", now: Date, set: Partial<MessageRecord>): UpdateFilter<MessageRecord> {
  return leaseUpdate<MessageRecord>(
    { kind: "complete" },
    { $set: { status, ...set, refund_state: "due", "dispatch.state": "done", updated_at: now }, $addToSet: { reports: status, events_pending: status } },
  );
}

/**
 * The two conditional updates that apply a status report to its outbound
 * message, in this order, never reading it first:
 *
 * - forward: the status moves only forward (accepted < sent < delivered <
 *   read); failed only from scheduled, accepted or sent, and is final, with the error
 *   and a refund due;
 * - late (when forward matched nothing): the status is further on already,
 *   so only the times, the report and its event mark;
 * - deduplicated by status: the message keeps the statuses reported
 *   (`reports`), and a report of one already there matches neither;
 * - times: each status's time is the earliest reported (`$min`), and a later
 *   status also dates the earlier ones it implies where they are later or
 *   missing (a message cannot be read before it was delivered);
 * - the event: the update adds the status to `events_pending`; the event is
 *   stored (its id derived from message and status), then the mark is
 *   cleared with the message's other follow-ups (writeFollowUps). A crash in
 *   between leaves the mark, and the sweep fires the event: a change never
 *   goes without its event.
 */
function statusUpdates({ match, status, at, error, set }: StatusWrite, now: Date) {
  const times = status === "failed" ? ["failed"] : STATUS_ORDER.slice(1, STATUS_ORDER.indexOf(status) + 1);
  const min = Object.fromEntries(times.map((t) => [`${t}_at`, at]));
  const filter = { ...match, direction: "outbound" as const, reports: { $ne: status } };
  const record = { $addToSet: { reports: status, events_pending: status } };
  // A scheduled message fails before it is accepted when dispatch finds it expired.
  const earlier = status === "failed" ? ["scheduled", "accepted", "sent"] : STATUS_ORDER.slice(0, STATUS_ORDER.indexOf(status));
  const forward: Partial<MessageRecord> = status === "failed" ? { status: "failed", error, refund_state: "due" } : { status };
  return {
    forward: { filter: { ...filter, status: { $in: earlier as StoredStatus[] } }, update: { $set: { ...forward, ...set, updated_at: now }, $min: min, ...record } },
    late: { filter, update: { $set: { ...set, updated_at: now }, $min: min, ...record } },
  };
}
