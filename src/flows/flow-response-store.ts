import type { Collection, Db, Filter, ObjectId } from "mongodb";
import { heldBy, LeasedQueue, leaseUpdate, waiting, type LeasedQueueOptions, type Queued } from "../jobs/leased-queue.js";
import { dropIndexIfPresent } from "../store/indexes.js";
import type { MediaReference } from "../network/network.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";

/** A file of a flow response as stored (FlowResponseFile, plus where its bytes are). */
export interface FlowFileRecord {
  /** Form field that holds it. */
  field: string;
  /** Position in the response's files, from 0. */
  index: number;
  file_name: string;
  mime_type: string;
  /** "pending" until fetched; then "stored" or "failed" (with `error`). */
  state: "pending" | "stored" | "failed";
  /** The network's reference; removed once the file is settled (it may hold decryption keys). */
  media: MediaReference | null;
  /** SHA-256 the submission stated (base64 or hex), checked after download; null if none. */
  stated_sha256: string | null;
  /**
   * GridFS id (bucket `flow_files`) of the bytes: set before an upload
   * begins, so that a retry after a crash deletes what a broken upload left.
   */
  gridfs_id: ObjectId | null;
  size_bytes: number | null;
  /** SHA-256 of the stored bytes, lowercase hex. */
  sha256: string | null;
  /** "<reason>: <explanation>" when not stored (file_too_large, type_not_allowed, unreadable). */
  error: string | null;
}

/** Fetch state of a response's files; the response is queued (its lease fields) while they are fetched. */
export interface FetchState {
  /** "pending" until flow.completed fired, then "done". */
  state: "pending" | "done";
  /** Fetch attempts begun. */
  attempts: number;
  /** Last retryable failure, for diagnosis. */
  last_error: string | null;
}

/** A form submission as stored in `flow_responses` (spec §Flow response data); queued (Queued) until its files are fetched. */
export interface FlowResponseRecord extends Queued {
  /** Shape frs_<uuid>. */
  _id: string;
  workspace_id: string;
  /** The inbound message of the submission (msg_<uuid>); unique. */
  message_id: string;
  /** Submitter, digits with country code. */
  from: string;
  flow_token: string;
  flow_id: string | null;
  source_message_id: string | null;
  template_id: string | null;
  /** The fields (without flow token and files) as JSON text, so that any key the form uses can be kept. */
  response_json: string;
  files: FlowFileRecord[];
  /** Time of submission (network side). */
  received_at: Date;
  created_at: Date;
  fetch: FetchState;
  /** When every file was settled: the response is visible through the API from then on. */
  ready_at: Date | null;
  /** When flow.completed was published. */
  published_at: Date | null;
}

/** Filters of ListFlowResponses. */
export interface FlowResponseFilter {
  flowId?: string;
  flowToken?: string;
  /** The response's own message or its form's message. */
  messageId?: string;
  receivedAfter?: Date;
  receivedBefore?: Date;
}

/** Access to `flow_responses`. */
export interface FlowResponseStore {
  readonly collection: Collection<FlowResponseRecord>;
  /** A ready response of the workspace, or null (unknown, another workspace's, or files still being fetched). */
  get(workspaceId: string, id: string): Promise<FlowResponseRecord | null>;
  /** A ready response of any workspace by its id alone (for the console, which checks the workspace), or null. */
  find(id: string): Promise<FlowResponseRecord | null>;
  /** Ready responses of the workspace, newest first by received_at. */
  list(workspaceId: string, filter: FlowResponseFilter, page: PageRequest): Promise<Page<FlowResponseRecord>>;
  /** The response recorded for inbound message `messageId`, ready or not, or null. */
  findByMessage(messageId: string): Promise<FlowResponseRecord | null>;
  /** Records a new response (queued: its fields say how). @throws E11000 when one is recorded for its message already. */
  insert(record: FlowResponseRecord): Promise<void>;
  /** The queue of responses whose files are fetched (src/flows/file-fetch.ts runs it). */
  fetchQueue(options: Omit<LeasedQueueOptions<FlowResponseRecord, undefined>, "collection">): LeasedQueue<FlowResponseRecord>;
  /** Writes the files' state of a fetch under `lease`, counting an attempt when `attempt` is set; false when the lease was taken over. */
  saveFiles(id: string, lease: string, files: FlowFileRecord[], attempt?: boolean): Promise<boolean>;
  /** A fetch to try again at `at` (files kept as they are), released. */
  scheduleRetry(id: string, lease: string, files: FlowFileRecord[], at: Date, error: string): Promise<void>;
  /** Every file settled: the response becomes visible (ready_at = `at`, its first readiness); answers it, or null when the lease was taken over. */
  markReady(id: string, lease: string, files: FlowFileRecord[], at: Date): Promise<FlowResponseRecord | null>;
  /** flow.completed was published: done, out of the queue. */
  markPublished(id: string, lease: string, at: Date): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Creates the flow response store over `db`. */
export function createFlowResponseStore(db: Db): FlowResponseStore {
  const collection = db.collection<FlowResponseRecord>("flow_responses");
  return {
    collection,
    get: (workspaceId, id) => collection.findOne({ _id: id, workspace_id: workspaceId, ready_at: { $ne: null } }),
    find: (id) => collection.findOne({ _id: id, ready_at: { $ne: null } }),
    list(workspaceId, f, page) {
      const filter: Filter<FlowResponseRecord> = { workspace_id: workspaceId, ready_at: { $ne: null } };
      if (f.flowId) filter.flow_id = f.flowId;
      if (f.flowToken) filter.flow_token = f.flowToken;
      if (f.messageId) filter.$or = [{ message_id: f.messageId }, { source_message_id: f.messageId }];
      if (f.receivedAfter || f.receivedBefore) {
        filter.received_at = { ...(f.receivedAfter ? { $gte: f.receivedAfter } : {}), ...(f.receivedBefore ? { $lt: f.receivedBefore } : {}) };
      }
      return listPage(collection, filter, page, "received_at");
    },
    findByMessage: (messageId) => collection.findOne({ message_id: messageId }),
    async insert(record) {
      await collection.insertOne(record);
    },
    fetchQueue: (options) => new LeasedQueue({ ...options, collection }),
    async saveFiles(id, lease, files, attempt) {
      const update = { $set: { files }, ...(attempt ? { $inc: { "fetch.attempts": 1 } } : {}) };
      return (await collection.updateOne({ _id: id, ...heldBy(lease) }, update)).matchedCount === 1;
    },
    async scheduleRetry(id, lease, files, at, error) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<FlowResponseRecord>({ kind: "release", dueAt: at }, { $set: { files, "fetch.last_error": error } }));
    },
    markReady: (id, lease, files, at) => collection.findOneAndUpdate({ _id: id, ...heldBy(lease) }, { $set: { files, ready_at: at } }, { returnDocument: "after" }),
    async markPublished(id, lease, at) {
      await collection.updateOne({ _id: id, ...heldBy(lease) }, leaseUpdate<FlowResponseRecord>({ kind: "complete" }, { $set: { "fetch.state": "done", "fetch.last_error": null, published_at: at } }));
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, received_at: -1, _id: -1 });
      await collection.createIndex({ message_id: 1 }, { unique: true });
      await collection.createIndex({ source_message_id: 1 });
      await collection.createIndex({ due_at: 1 }, { name: "queue_due_at", sparse: true });
      // Responses of earlier releases whose files were not fetched (found by that release's index): queued, due now.
      if (await collection.indexExists("fetch.state_1_fetch.next_attempt_at_1").catch(() => false)) {
        await collection.updateMany(
          { "fetch.state": { $in: ["pending", "claimed"] } as never, due_at: { $exists: false } },
          { $set: { ...waiting(new Date()), "fetch.state": "pending" }, $unset: { "fetch.next_attempt_at": "", "fetch.claimed_at": "" } },
        );
        await dropIndexIfPresent(collection, "fetch.state_1_fetch.next_attempt_at_1");
      }
    },
  };
}
