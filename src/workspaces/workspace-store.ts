import type { Collection, Db } from "mongodb";
import type { CreditStore } from "../credits/credit-store.js";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { createRecordCache } from "../store/record-cache.js";

/**
 * The WhatsApp messaging limit tiers of a business portfolio: unique recipients in a moving 24 hours (README
 * "Pacing", the messaging limit). The proto enum MessagingLimit in its JSON form.
 */
export const MESSAGING_LIMITS = { tier_250: 250, tier_2k: 2_000, tier_10k: 10_000, tier_100k: 100_000, unlimited: Infinity } as const;

/** A messaging limit tier ("unlimited" when a workspace has none set). */
export type MessagingLimit = keyof typeof MESSAGING_LIMITS;

/** A workspace as stored in the `workspaces` collection. */
export interface WorkspaceRecord {
  /** Workspace id (the account_id). Shape: UUID. */
  _id: string;
  name: string;
  status: "active" | "suspended";
  /** Credits available for sends. */
  credit_balance: number;
  created_at: Date;
  suspended_at: Date | null;
  /** True for the demo workspace `npm start` creates. */
  demo?: boolean;
  /** Reply keywords that put the writer on the opt-out list (upper case); absent: OPT_OUT_KEYWORDS. */
  opt_out_keywords?: string[];
  /** Reply keywords that take the writer off it (upper case); absent: OPT_IN_KEYWORDS. */
  opt_in_keywords?: string[];
  /** The portfolio's messaging limit; absent: unlimited. */
  messaging_limit?: MessagingLimit;
}

/** Access to the `workspaces` collection. */
export interface WorkspaceStore {
  readonly collection: Collection<WorkspaceRecord>;
  /**
   * Creates an active workspace with an opening credit balance, which has its
   * top-up entry in the credit ledger like every other change of balance.
   */
  create(input: { name: string; credits: number; demo?: boolean; messagingLimit?: MessagingLimit }): Promise<WorkspaceRecord>;
  /** The workspace with `id`, or null. */
  get(id: string): Promise<WorkspaceRecord | null>;
  /** The workspace with `id`, or null; cached (see createRecordCache): changes made elsewhere show within a second. */
  getCached(id: string): Promise<WorkspaceRecord | null>;
  /** The workspaces with these ids, by id (unknown ids left out), in one query. */
  getMany(ids: string[]): Promise<Map<string, WorkspaceRecord>>;
  /** The demo workspace, or null. */
  findDemo(): Promise<WorkspaceRecord | null>;
  /** Workspaces newest first. */
  list(page: PageRequest): Promise<Page<WorkspaceRecord>>;
  /** Suspends or resumes; returns the updated workspace or null if unknown. */
  setStatus(id: string, status: WorkspaceRecord["status"]): Promise<WorkspaceRecord | null>;
  /** Sets the workspace's own opt-out and opt-in keywords (those given); returns the updated workspace or null if unknown. */
  setOptOutKeywords(id: string, keywords: { optOut?: string[]; optIn?: string[] }): Promise<WorkspaceRecord | null>;
  /** Sets the portfolio's messaging limit; returns the updated workspace or null if unknown. */
  setMessagingLimit(id: string, limit: MessagingLimit): Promise<WorkspaceRecord | null>;
  /** Creates the collection's indexes. */
  ensureIndexes(): Promise<void>;
}

/** Creates the workspace store over `db`; `creditStore` gives a new workspace its opening balance. */
export function createWorkspaceStore(db: Db, clock: Clock, creditStore: Pick<CreditStore, "opening">): WorkspaceStore {
  const collection = db.collection<WorkspaceRecord>("workspaces");
  const cache = createRecordCache((id) => collection.findOne({ _id: id }));
  return {
    collection,
    async create({ name, credits, demo, messagingLimit }) {
      const record: WorkspaceRecord = {
        _id: newId(),
        name,
        status: "active",
        credit_balance: credits,
        created_at: clock.now(),
        suspended_at: null,
        ...(demo ? { demo: true } : {}),
        ...(messagingLimit && messagingLimit !== "unlimited" ? { messaging_limit: messagingLimit } : {}),
      };
      const opening = creditStore.opening(credits);
      await collection.insertOne({ ...record, ...opening.fields });
      await opening.settle(record._id);
      return record;
    },
    get: (id) => collection.findOne({ _id: id }),
    getCached: (id) => cache.get(id),
    async getMany(ids) {
      const wanted = [...new Set(ids)];
      const found = await collection.find({ _id: { $in: wanted } }, { batchSize: wanted.length }).toArray();
      return new Map(found.map((w) => [w._id, w]));
    },
    findDemo: () => collection.findOne({ demo: true }),
    list: (page) => listPage(collection, {}, page),
    setStatus: (id, status) =>
      collection.findOneAndUpdate(
        { _id: id },
        { $set: { status, suspended_at: status === "suspended" ? clock.now() : null } },
        { returnDocument: "after" },
      ),
    setOptOutKeywords: (id, { optOut, optIn }) =>
      collection.findOneAndUpdate(
        { _id: id },
        { $set: { ...(optOut ? { opt_out_keywords: optOut } : {}), ...(optIn ? { opt_in_keywords: optIn } : {}) } },
        { returnDocument: "after" },
      ),
    async setMessagingLimit(id, limit) {
      const updated = await collection.findOneAndUpdate(
        { _id: id },
        limit === "unlimited" ? { $unset: { messaging_limit: "" } } : { $set: { messaging_limit: limit } },
        { returnDocument: "after" },
      );
      cache.forget(id);
      return updated;
    },
    async ensureIndexes() {
      await collection.createIndex({ created_at: -1, _id: -1 });
      await collection.createIndex({ demo: 1 });
    },
  };
}
