import type { Db } from "mongodb";
import { heldBy, LeasedQueue, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import { GroupCommit } from "../store/group-commit.js";
import { groupInserts } from "../store/insert-each.js";
import type { NetworkErrorInfo, ReportedStatus, StatusReport } from "./network.js";

/**
 * A status report the simulated network will make, as kept in
 * `simulator_reports` until it is made (README "The network: simulator"):
 * a queued record (src/jobs/leased-queue.ts, README "Design" §11) due when the
 * network would report. Any worker process claims it when due and hands it to
 * the report sink; then it is deleted. A process that dies leaves it queued
 * (or leased, and its lease lapses): another makes the report, as a real
 * network's callback reaches whichever process is alive.
 */
export interface ScheduledReport extends Queued {
  /** "<network message id>:<status>": one record per report. */
  _id: string;
  network_message_id: string;
  /** Our message id, echoed as WhatsApp echoes biz_opaque_callback_data. */
  message_id: string;
  status: ReportedStatus;
  /** When it happened on the network side (the report says so, whenever it arrives). */
  occurred_at: Date;
  error: NetworkErrorInfo | null;
  /** How many times the report is made (2 for the "every report arrives twice" test number). */
  times: number;
}

/** The `simulator_reports` collection: every read and write of it goes through these operations. */
export interface SimulatorReportStore {
  /**
   * Stores reports to make, waiting until their `due_at`; a report stored
   * before (same id) is left as it is.
   *
   * @throws the database's error when they could not be stored (the send then counts as an outage).
   */
  schedule(reports: ScheduledReport[]): Promise<void>;
  /** The reports as a leased queue (the simulator runs it in worker processes). */
  queue(options: Omit<LeasedQueueOptions<ScheduledReport, undefined>, "collection">): LeasedQueue<ScheduledReport>;
  /** A report was made while `lease` held it: it is deleted (nothing happens when the lease was taken over). */
  done(id: string, lease: string): Promise<void>;
  /** Reports due at `now` and not made yet, waiting for a worker's claim: read by the queue's index. */
  countDue(now: Date): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/** The StatusReport a scheduled report makes. */
export function statusReportOf(record: ScheduledReport): StatusReport {
  return {
    kind: "status",
    networkMessageId: record.network_message_id,
    messageId: record.message_id,
    status: record.status,
    occurredAt: record.occurred_at,
    ...(record.error ? { error: record.error } : {}),
  };
}

/** Creates the store of the simulator's scheduled reports over `db`. */
export function createSimulatorReportStore(db: Db): SimulatorReportStore {
  const reports = db.collection<ScheduledReport>("simulator_reports");
  // The reports of messages accepted together go in one insert, the deletes of reports made together in one bulkWrite.
  const inserts = groupInserts(reports);
  const deletes = new GroupCommit<{ id: string; lease: string }, void>(async (items) => {
    await reports.bulkWrite(
      items.map(({ id, lease }) => ({ deleteOne: { filter: { _id: id, ...heldBy(lease) } } })),
      { ordered: false },
    );
    return items.map(() => undefined);
  });
  return {
    async schedule(records) {
      const outcomes = await Promise.all(records.map((r) => inserts.add(r)));
      const failed = outcomes.find((o): o is Error => o instanceof Error);
      if (failed) throw failed;
    },
    queue: (options) => new LeasedQueue({ ...options, collection: reports }),
    done: (id, lease) => deletes.add({ id, lease }),
    countDue: (now) => reports.countDocuments({ due_at: { $lte: now }, lease_owner: null }),
    async ensureIndexes() {
      await reports.createIndex({ due_at: 1 }, { name: "queue_due_at", sparse: true });
    },
  };
}
