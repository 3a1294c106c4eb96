import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { createRecordCache } from "../store/record-cache.js";
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
  create(input: { workspaceId: string; phoneNumber: string; name: string; whatsappPhoneNumberId: string | null; throughputMps: number }): Promise<SenderRecord>;
  /** The sender with `id`, or null; cached (see createRecordCache): changes made elsewhere show within a second. */
  get(id: string): Promise<SenderRecord | null>;
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
  ensureIndexes(): Promise<void>;
}

/** Creates the sender store over `db`. */
export function createSenderStore(db: Db, clock: Clock): SenderStore {
  const collection = db.collection<SenderRecord>("senders");
  const cache = createRecordCache((id) => collection.findOne({ _id: id }));
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
      };
      await collection.insertOne(record);
      return record;
    },
    get: (id) => cache.get(id),
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
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
      await collection.createIndex({ phone_number: 1, status: 1 });
      await collection.createIndex({ whatsapp_phone_number_id: 1, status: 1 });
    },
  };
}
