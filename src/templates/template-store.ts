import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { createRecordCache } from "../store/record-cache.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";

/** A variable of a template as stored. */
export interface TemplateVariableRecord {
  name: string;
  required: boolean;
  example: string;
}

/** WhatsApp's categories of templates. */
export type TemplateCategoryName = "marketing" | "utility" | "authentication";

/** A template's category, "utility" for one made before categories. */
export function categoryOf(template: Pick<TemplateRecord, "category">): TemplateCategoryName {
  return template.category ?? "utility";
}

/** A message template as stored in `templates`. */
export interface TemplateRecord {
  /** Shape tpl_<uuid>. */
  _id: string;
  workspace_id: string;
  /** Name as approved on the network, for example "order_update". */
  name: string;
  /** Language code, for example "en". */
  language: string;
  status: "active" | "archived";
  /** Body with {{variables}}. */
  body: string;
  /** Variables in order of first use. */
  variables: TemplateVariableRecord[];
  /** Form (flow) the template carries, or null. */
  flow_id: string | null;
  /** WhatsApp's category; absent in templates made before categories: utility. */
  category?: TemplateCategoryName;
  created_at: Date;
  archived_at: Date | null;
}

/** Access to the `templates` collection. */
export interface TemplateStore {
  readonly collection: Collection<TemplateRecord>;
  /** Creates an active template; the caller has validated the input. */
  create(input: Omit<TemplateRecord, "_id" | "status" | "created_at" | "archived_at">): Promise<TemplateRecord>;
  /** The template with `id`, or null; cached (see createRecordCache): changes made elsewhere show within a second. */
  get(id: string): Promise<TemplateRecord | null>;
  /** An active template of the workspace with this name and language, or null. */
  findActive(workspaceId: string, name: string, language: string): Promise<TemplateRecord | null>;
  /** A workspace's templates, newest first; only active ones when `activeOnly`. */
  list(workspaceId: string, page: PageRequest, activeOnly?: boolean): Promise<Page<TemplateRecord>>;
  /** Archives (keeping the first archival time); null if unknown. */
  archive(id: string): Promise<TemplateRecord | null>;
  ensureIndexes(): Promise<void>;
}

/** Creates the template store over `db`. */
export function createTemplateStore(db: Db, clock: Clock): TemplateStore {
  const collection = db.collection<TemplateRecord>("templates");
  const cache = createRecordCache((id) => collection.findOne({ _id: id }));
  return {
    collection,
    async create(input) {
      const record: TemplateRecord = { _id: newId("tpl"), ...input, status: "active", created_at: clock.now(), archived_at: null };
      await collection.insertOne(record);
      return record;
    },
    get: (id) => cache.get(id),
    findActive: (workspaceId, name, language) => collection.findOne({ workspace_id: workspaceId, name, language, status: "active" }),
    list: (workspaceId, page, activeOnly = false) =>
      listPage(collection, activeOnly ? { workspace_id: workspaceId, status: "active" } : { workspace_id: workspaceId }, page),
    async archive(id) {
      await collection.updateOne({ _id: id, status: "active" }, { $set: { status: "archived", archived_at: clock.now() } });
      cache.forget(id);
      return collection.findOne({ _id: id });
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
      await collection.createIndex({ workspace_id: 1, name: 1, language: 1, status: 1 });
    },
  };
}
