import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { GroupCommit } from "../store/group-commit.js";
import { createRecordCache, RECORD_CACHE_TTL_MS } from "../store/record-cache.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";

/** A sender (a phone number messages are sent from) as stored in `senders`. */
export interface SenderRecord {
  /** Shape snd_<uuid>. */
  _id: string;
  workspace_id: string;
  /** Digits with country code. */
  phone_number: string;
  name: string;
  status: "active" | "archived";
  /** Phone number ID on the WhatsApp Cloud API, or null. */
  whatsapp_phone_number_id: string | null;
  created_at: Date;
  archived_at: Date | null;
  /** Messages per second the network takes from the number (README "Pacing"); absent on senders of earlier releases: DEFAULT_THROUGHPUT_MPS. */
  throughput_mps?: number;
  /** Where throughput_mps came from (ThroughputSource); absent on senders of earlier releases. */
  throughput_source?: ThroughputSource;
  /**
   * The network's refusals of this number's sends since it was created, by the network's error code ("130429",
   * "131056", …): how many, and the last one's time. Written only when a send is refused (countRefusal), shared by
   * every process; absent until the first.
   */
  network_refusals?: Record<string, { count: number; last_refused_at: Date }>;
  /** Last change by UpdateSender; absent until then. */
  updated_at?: Date;
}

/**
 * How soon a change of a sender (UpdateSender: its throughput) reaches dispatch, in ms: at once in the process
 * that made it, within the senders' cache's staleness bound in the others (README "Pacing").
 */
export const SENDER_CHANGE_DELAY_MS = RECORD_CACHE_TTL_MS;

/**
 * Where a sender's throughput came from (messaging.console.v1.ThroughputSource): "given" in CreateSender or
 * UpdateSender; "network", stated by the network adapter when the sender was created without one
 * (NetworkAdapter.readThroughput); "default", DEFAULT_THROUGHPUT_MPS, when the network stated none or could not be
 * asked.
 */
export type ThroughputSource = "given" | "network" | "default";

/** The fields UpdateSender changes (SenderStore.update); a throughput it changes is "given". */
export interface SenderChanges {
  name?: string;
  throughput_mps?: number;
  throughput_source?: ThroughputSource;
}

/** WhatsApp's default throughput of a business number, in messages per second. */
export const DEFAULT_THROUGHPUT_MPS = 80;

/** A sender's throughput in messages per second (its own, or WhatsApp's default). */
export function throughputOf(sender: Pick<SenderRecord, "throughput_mps">): number {
  return sender.throughput_mps ?? DEFAULT_THROUGHPUT_MPS;
}

/** Access to the `senders` collection. */
export interface SenderStore {
  readonly collection: Collection<SenderRecord>;
  /** Creates an active sender; the caller has validated the input. */
  create(input: {
    workspaceId: string;
    phoneNumber: string;
    name: string;
    whatsappPhoneNumberId: string | null;
    throughputMps: number;
    throughputSource: ThroughputSource;
  }): Promise<SenderRecord>;
  /** The sender with `id`, or null; cached (see createRecordCache): changes made elsewhere show within a second. */
  get(id: string): Promise<SenderRecord | null>;
  /** The sender with `id` as stored now, or null: not cached (GetSender shows its refusal counts as written). */
  getStored(id: string): Promise<SenderRecord | null>;
  /** An active sender of the workspace with this phone number, or null. */
  findActiveByPhone(workspaceId: string, phoneNumber: string): Promise<SenderRecord | null>;
  /**
   * The active sender an inbound message was addressed to: by WhatsApp
   * phone number ID when given, else by phone number (any workspace).
   */
  findInboundTarget(to: { phoneNumberId?: string; phoneNumber?: string }): Promise<SenderRecord | null>;
  /** A workspace's senders, newest first; only active ones when `activeOnly`. */
  list(workspaceId: string, page: PageRequest, activeOnly?: boolean): Promise<Page<SenderRecord>>;
  /** Archives (keeping the first archival time); null if unknown. */
  archive(id: string): Promise<SenderRecord | null>;
  /** Changes a sender's name or throughput (the caller has validated them); the sender after the change, null if unknown. Dispatch in this process sees it at once. */
  update(id: string, changes: SenderChanges): Promise<SenderRecord | null>;
  /**
   * Counts one refusal of a send of sender `id` by the network with error `code` at `at` (dispatch calls it for
   * every refusal with a code, and never for a send the network took). Refusals counted while a write runs share
   * the next one (one update a sender); resolves once this one is written.
   */
  countRefusal(id: string, code: number, at: Date): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Creates the sender store over `db`. */
export function createSenderStore(db: Db, clock: Clock): SenderStore {
  const collection = db.collection<SenderRecord>("senders");
  const cache = createRecordCache((id) => collection.findOne({ _id: id }));
  const refusals = new GroupCommit<{ id: string; code: number; at: Date }, void>(async (items) => {
    const bySender = new Map<string, { $inc: Record<string, number>; $max: Record<string, Date> }>();
    for (const { id, code, at } of items) {
      let update = bySender.get(id);
      if (!update) bySender.set(id, (update = { $inc: {}, $max: {} }));
      const field = `network_refusals.${code}`;
      update.$inc[`${field}.count`] = (update.$inc[`${field}.count`] ?? 0) + 1;
      const last = update.$max[`${field}.last_refused_at`];
      if (!last || at.getTime() > last.getTime()) update.$max[`${field}.last_refused_at`] = at;
    }
    await collection.bulkWrite(
      [...bySender].map(([id, update]) => ({ updateOne: { filter: { _id: id }, update } })),
      { ordered: false },
    );
    return items.map(() => undefined);
  }, 500);
  return {
    collection,
    async create(input) {
      const record: SenderRecord = {
        _id: newId("snd"),
        workspace_id: input.workspaceId,
        phone_number: input.phoneNumber,
        name: input.name,
        status: "active",
        whatsapp_phone_number_id: input.whatsappPhoneNumberId,
        created_at: clock.now(),
        archived_at: null,
        throughput_mps: input.throughputMps,
        throughput_source: input.throughputSource,
      };
      await collection.insertOne(record);
      return record;
    },
    get: (id) => cache.get(id),
    getStored: (id) => collection.findOne({ _id: id }),
    findActiveByPhone: (workspaceId, phoneNumber) =>
      collection.findOne({ workspace_id: workspaceId, phone_number: phoneNumber, status: "active" }),
    findInboundTarget(to) {
      if (to.phoneNumberId) return collection.findOne({ whatsapp_phone_number_id: to.phoneNumberId, status: "active" });
      if (to.phoneNumber) return collection.findOne({ phone_number: to.phoneNumber, status: "active" });
      return Promise.resolve(null);
    },
    list: (workspaceId, page, activeOnly = false) =>
      listPage(collection, activeOnly ? { workspace_id: workspaceId, status: "active" } : { workspace_id: workspaceId }, page),
    async archive(id) {
      await collection.updateOne({ _id: id, status: "active" }, { $set: { status: "archived", archived_at: clock.now() } });
      cache.forget(id);
      return collection.findOne({ _id: id });
    },
    async update(id, changes) {
      const record = await collection.findOneAndUpdate({ _id: id }, { $set: { ...changes, updated_at: clock.now() } }, { returnDocument: "after" });
      cache.forget(id);
      return record;
    },
    countRefusal: (id, code, at) => refusals.add({ id, code, at }),
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
      await collection.createIndex({ phone_number: 1, status: 1 });
      await collection.createIndex({ whatsapp_phone_number_id: 1, status: 1 });
    },
  };
}
