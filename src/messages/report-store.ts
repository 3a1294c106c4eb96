import type { Db } from "mongodb";
import { heldBy, LeasedQueue, leaseUpdate, waiting, type LeaseChange, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import type { InboundMessageReport, NetworkErrorInfo, StatusReport } from "../network/network.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import { dropIndexIfPresent } from "../store/indexes.js";

/**
 * A report as kept in `message_reports`: every distinct report the network
 * made, with when it happened and when it arrived. The id makes duplicates
 * visible: one row per network message and status (or "received"). A row is
 * queued (src/jobs/leased-queue.ts) until it is applied: an inbound message
 * held by the process that received it, a status report whose message is
 * not known yet due a while later (the network may report before dispatch
 * recorded its id).
 */
export interface ReportRecord extends Queued {
  /** "<network message id or our message id>:<status>". */
  _id: string;
  /** Our message the report is about; null until it can be matched. */
  message_id: string | null;
  network_message_id: string;
  status: StatusReport["status"] | "received";
  occurred_at: Date;
  received_at: Date;
  error: NetworkErrorInfo | null;
  /** The inbound message (kind "message" reports only). */
  inbound: Omit<InboundMessageReport, "kind" | "occurredAt"> | null;
  /** When its effects (status, event) were applied; null until then. */
  applied_at: Date | null;
  /** How many more times the same report arrived (and was ignored). */
  duplicates: number;
}

/** The `message_reports` collection: every read and write of it goes through these operations. */
export interface ReportStore {
  /** Stores a report once; false (and the repeat counted on the stored one) when it was stored before. */
  insertOnce(row: ReportRecord): Promise<boolean>;
  /** The reports that wait as a leased queue (src/messages/inbound.ts runs it). */
  queue(options: Omit<LeasedQueueOptions<ReportRecord, undefined>, "collection">): LeasedQueue<ReportRecord>;
  /** Records the message a report made (an inbound message's id), while `lease` holds it. */
  setMessageId(id: string, lease: string, messageId: string): Promise<void>;
  /** A report is applied (and to which message): out of the queue. */
  markApplied(id: string, lease: string, at: Date, messageId?: string): Promise<void>;
  /** Ends the lease of a report not applied: released to be tried again, or (complete) left unapplied out of the queue. */
  endLease(id: string, lease: string, change: LeaseChange): Promise<void>;
  ensureIndexes(now: Date): Promise<void>;
}

/** Creates the report store over `db`. */
export function createReportStore(db: Db): ReportStore {
  const reports = db.collection<ReportRecord>("message_reports");
  return {
    async insertOnce(row) {
      try {
        await reports.insertOne(row);
        return true;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        await reports.updateOne({ _id: row._id }, { $inc: { duplicates: 1 } });
        return false;
      }
    },
    queue: (options) => new LeasedQueue({ ...options, collection: reports }),
    async setMessageId(id, lease, messageId) {
      await reports.updateOne({ _id: id, ...heldBy(lease) }, { $set: { message_id: messageId } });
    },
    async markApplied(id, lease, at, messageId) {
      await reports.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<ReportRecord>({ kind: "complete" }, { $set: { applied_at: at, ...(messageId ? { message_id: messageId } : {}) } }));
    },
    async endLease(id, lease, change) {
      await reports.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<ReportRecord>(change));
    },
    async ensureIndexes(now) {
      await reports.createIndex({ network_message_id: 1, applied_at: 1 });
      await reports.createIndex({ due_at: 1 }, { name: "queue_due_at", sparse: true });
      // Reports of earlier releases not applied, found by that release's index: queued, due now; then the index dropped.
      if (await reports.indexExists("applied_at_1_received_at_1").catch(() => false)) {
        await reports.updateMany({ applied_at: null, due_at: { $exists: false } }, { $set: waiting(now), $unset: { claimed_at: "" } });
        await dropIndexIfPresent(reports, "applied_at_1_received_at_1");
      }
    },
  };
}
