import type { Db, Filter } from "mongodb";
import { isDuplicateKeyError } from "../shared/errors.js";
import { GroupCommit } from "../store/group-commit.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";

/** What changed an entry of an opt-out list (README "Sending messages", "The opt-out list"). */
export type OptOutSource = "reply" | "network_error" | "console";

/**
 * A number of a workspace's opt-out list, as stored in `opt_outs`: one
 * document per workspace and number, updated in place by each change (kept
 * when the number is taken off again, as `opted_in`, so that calling systems
 * can sync removals too).
 */
export interface OptOutRecord {
  /** "<workspace id>:<phone number>". */
  _id: string;
  workspace_id: string;
  /** Digits only with country code. */
  phone_number: string;
  /** "opted_out" while on the list (sends are refused); "opted_in" once taken off. */
  status: "opted_out" | "opted_in";
  /** What made the last change. */
  source: OptOutSource;
  /** The reply's keyword as written (trimmed), for source reply; else null. */
  keyword: string | null;
  /** The network's error code, for source network_error; else null. */
  error_code: number | null;
  /** The reply or the failed message that made the last change; null for the console. */
  message_id: string | null;
  /** Who changed it in the console ("operator" or a user's email); null for other sources. */
  changed_by: string | null;
  /**
   * Names the last change (for example "msg_…:opted_out"): a change applied
   * again (a reply's report applied anew after a crash) finds its own id
   * and is known as the same change, so that its event and audit entry are
   * completed, not made twice.
   */
  change_id: string;
  /** When the number was first put on the list. */
  created_at: Date;
  /** When the last change was made. */
  updated_at: Date;
}

/** One change of an opt-out list (OptOutStore.optOut, optIn). */
export interface OptOutChange {
  workspaceId: string;
  phoneNumber: string;
  source: OptOutSource;
  keyword?: string | null;
  errorCode?: number | null;
  messageId?: string | null;
  changedBy?: string | null;
  /** Names the change (see OptOutRecord.change_id). */
  changeId: string;
  at: Date;
}

/** What a change did: made now, made earlier by the same change (applied again), or nothing (the number was there already). */
export type ChangeOutcome = { kind: "changed" | "repeated"; record: OptOutRecord } | { kind: "unchanged"; record: OptOutRecord | null };

/** The `opt_outs` collection: every read and write of it goes through these operations (README "Design" §14). */
export interface OptOutStore {
  /**
   * Puts a number on the list, with one conditional upsert (the entry is
   * created, or changed from opted_in): "changed"; "repeated" when the entry
   * holds this very change already; "unchanged" when the number is on the
   * list by another change.
   */
  optOut(change: OptOutChange): Promise<ChangeOutcome>;
  /** Takes a number off the list with one conditional update: as optOut; "unchanged" (record null) when it was never on it. */
  optIn(change: OptOutChange): Promise<ChangeOutcome>;
  /**
   * Whether `phoneNumber` is on the workspace's list now. Look-ups made
   * while one is being read share the next read (one find of their ids):
   * the sends of a busy moment cost one command together.
   */
  isListed(workspaceId: string, phoneNumber: string): Promise<boolean>;
  /** Which of `phoneNumbers` are on the workspace's list now, in one find (a batch send). */
  listedAmong(workspaceId: string, phoneNumbers: readonly string[]): Promise<Set<string>>;
  /** An entry, or null. */
  get(workspaceId: string, phoneNumber: string): Promise<OptOutRecord | null>;
  /**
   * A workspace's entries, most recently changed first: with `status` those
   * of that status; with `updatedAfter` every entry changed since (both
   * statuses unless `status` says); `phoneNumber` one number's.
   */
  list(workspaceId: string, filter: { status?: OptOutRecord["status"]; updatedAfter?: Date; phoneNumber?: string }, page: PageRequest): Promise<Page<OptOutRecord>>;
  ensureIndexes(): Promise<void>;
}

/** The id of a workspace's entry for `phoneNumber`. */
const idOf = (workspaceId: string, phoneNumber: string) => `${workspaceId}:${phoneNumber}`;

/** Creates the opt-out store over `db`. */
export function createOptOutStore(db: Db): OptOutStore {
  const collection = db.collection<OptOutRecord>("opt_outs");

  const lookups = new GroupCommit<string, boolean>(async (ids) => {
    const unique = [...new Set(ids)];
    const found = await collection.find({ _id: { $in: unique }, status: "opted_out" }, { projection: { _id: 1 }, batchSize: unique.length }).toArray();
    const listed = new Set(found.map((r) => r._id));
    return ids.map((id) => listed.has(id));
  }, 500);

  const fields = (change: OptOutChange, status: OptOutRecord["status"]) => ({
    status,
    source: change.source,
    keyword: change.keyword ?? null,
    error_code: change.errorCode ?? null,
    message_id: change.messageId ?? null,
    changed_by: change.changedBy ?? null,
    change_id: change.changeId,
    updated_at: change.at,
  });

  /** The entry after a change whose conditional write matched nothing: the same change applied before, or another. */
  async function afterNoMatch(change: OptOutChange): Promise<ChangeOutcome> {
    const record = await collection.findOne({ _id: idOf(change.workspaceId, change.phoneNumber) });
    return record?.change_id === change.changeId ? { kind: "repeated", record } : { kind: "unchanged", record };
  }

  return {
    async optOut(change) {
      const _id = idOf(change.workspaceId, change.phoneNumber);
      try {
        const record = await collection.findOneAndUpdate(
          { _id, status: { $ne: "opted_out" } },
          {
            $set: fields(change, "opted_out"),
            $setOnInsert: { workspace_id: change.workspaceId, phone_number: change.phoneNumber, created_at: change.at },
          },
          { upsert: true, returnDocument: "after" },
        );
        if (record) return { kind: "changed", record };
      } catch (err) {
        // The entry exists and is opted out already: the upsert's insert met its id.
        if (!isDuplicateKeyError(err)) throw err;
      }
      return afterNoMatch(change);
    },
    async optIn(change) {
      const record = await collection.findOneAndUpdate(
        { _id: idOf(change.workspaceId, change.phoneNumber), status: "opted_out" },
        { $set: fields(change, "opted_in") },
        { returnDocument: "after" },
      );
      return record ? { kind: "changed", record } : afterNoMatch(change);
    },
    isListed: (workspaceId, phoneNumber) => lookups.add(idOf(workspaceId, phoneNumber)),
    async listedAmong(workspaceId, phoneNumbers) {
      const ids = [...new Set(phoneNumbers)].map((n) => idOf(workspaceId, n));
      if (ids.length === 0) return new Set();
      const found = await collection.find({ _id: { $in: ids }, status: "opted_out" }, { projection: { phone_number: 1 }, batchSize: ids.length }).toArray();
      return new Set(found.map((r) => r.phone_number));
    },
    get: (workspaceId, phoneNumber) => collection.findOne({ _id: idOf(workspaceId, phoneNumber) }),
    list(workspaceId, { status, updatedAfter, phoneNumber }, page) {
      const filter: Filter<OptOutRecord> = { workspace_id: workspaceId };
      if (status) filter.status = status;
      else if (!updatedAfter) filter.status = "opted_out";
      if (updatedAfter) filter.updated_at = { $gte: updatedAfter };
      if (phoneNumber) filter.phone_number = phoneNumber;
      return listPage(collection, filter, page, "updated_at");
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, status: 1, updated_at: -1, _id: -1 });
      await collection.createIndex({ workspace_id: 1, updated_at: -1, _id: -1 });
    },
  };
}
