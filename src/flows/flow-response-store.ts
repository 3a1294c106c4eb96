import type { Collection, Db, Filter, ObjectId } from "mongodb";
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

/** Fetch state of a response's files (the outbox of the flows.fetch_files job). */
export interface FetchState {
  /** "pending" until a job claims it, "claimed" while files are fetched, "done" once flow.completed fired. */
  state: "pending" | "claimed" | "done";
  attempts: number;
  next_attempt_at: Date;
  claimed_at: Date | null;
  /** Last retryable failure, for diagnosis. */
  last_error: string | null;
}

/** A form submission as stored in `flow_responses` (spec §Flow response data). */
export interface FlowResponseRecord {
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
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, received_at: -1, _id: -1 });
      await collection.createIndex({ message_id: 1 }, { unique: true });
      await collection.createIndex({ source_message_id: 1 });
      await collection.createIndex({ "fetch.state": 1, "fetch.next_attempt_at": 1 });
    },
  };
}
