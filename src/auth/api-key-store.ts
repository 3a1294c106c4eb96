import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { generateSecret, hashSecret, secretPrefixOf } from "./api-key-secret.js";

/** An API key as stored in the `api_keys` collection: never the secret itself. */
export interface ApiKeyRecord {
  /** Key id. Shape: UUID. */
  _id: string;
  workspace_id: string;
  name: string;
  scopes: string[];
  /** Lowercase hex SHA-256 of the secret; unique; the look-up key. */
  secret_hash: string;
  /** "sk_" and four characters, to recognise the key in the console. */
  secret_prefix: string;
  /** Addresses or CIDR ranges; empty means any. */
  ip_allow_list: string[];
  /** Requests per minute, 1 to 100. */
  rate_limit_per_min: number;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  /**
   * After a roll: the hash and prefix of the secret it replaced, which keeps
   * working until previous_secret_expires_at. Absent (or null) when the key
   * was never rolled or the roll ended the old secret at once.
   */
  previous_secret_hash?: string | null;
  previous_secret_prefix?: string | null;
  previous_secret_expires_at?: Date | null;
}

/** What a new key is made of; validated by the caller. */
export interface NewApiKey {
  workspaceId: string;
  name: string;
  scopes: string[];
  expiresAt: Date | null;
  ipAllowList: string[];
  rateLimitPerMin: number;
}

/** Access to the `api_keys` collection. */
export interface ApiKeyStore {
  readonly collection: Collection<ApiKeyRecord>;
  /** Creates a key; returns the record and the secret (the only time it exists in clear). */
  create(input: NewApiKey): Promise<{ record: ApiKeyRecord; secret: string }>;
  /** The key whose secret (or previous secret, after a roll) hashes to `secretHash`, or null. */
  findBySecretHash(secretHash: string): Promise<ApiKeyRecord | null>;
  /**
   * The keys of many secret hashes at once (findBySecretHash for each, in two
   * queries at most): hash → key, hashes of no key left out.
   */
  findBySecretHashes(secretHashes: string[]): Promise<Map<string, ApiKeyRecord>>;
  /**
   * Rolls a key that is not revoked: a new secret replaces the current one,
   * which becomes the previous secret until `previousExpiresAt` (null: it
   * stops at once). Returns the record after the roll and the new secret, or
   * null when the key is unknown or revoked.
   */
  roll(id: string, previousExpiresAt: Date | null): Promise<{ record: ApiKeyRecord; secret: string; replacedHash: string } | null>;
  /** The key with `id`, or null. */
  get(id: string): Promise<ApiKeyRecord | null>;
  /** A workspace's keys, newest first. */
  list(workspaceId: string, page: PageRequest): Promise<Page<ApiKeyRecord>>;
  /** Changes the given fields of a key; returns it after the change, or null if unknown. */
  update(id: string, changes: Partial<Pick<ApiKeyRecord, "name" | "ip_allow_list" | "rate_limit_per_min">>): Promise<ApiKeyRecord | null>;
  /** Revokes a key (keeping the first revocation time); null if unknown. */
  revoke(id: string): Promise<ApiKeyRecord | null>;
  /** Records that keys were used at the given times (never moves a time back), all in one bulkWrite. */
  recordUse(lastUse: Map<string, Date>): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Creates the API key store over `db`. */
export function createApiKeyStore(db: Db, clock: Clock): ApiKeyStore {
  const collection = db.collection<ApiKeyRecord>("api_keys");
  // Two queries, each an $in on exactly an index's key (every MongoDB-wire server plans those by the index);
  // the second only for hashes the first did not find (a secret replaced by a roll, or no key).
  async function findBySecretHashes(secretHashes: string[]): Promise<Map<string, ApiKeyRecord>> {
    const found = new Map<string, ApiKeyRecord>();
    const wanted = [...new Set(secretHashes)];
    for (const record of await collection.find({ secret_hash: { $in: wanted } }, { batchSize: wanted.length }).toArray()) found.set(record.secret_hash, record);
    const rest = wanted.filter((hash) => !found.has(hash));
    if (rest.length === 0) return found;
    for (const record of await collection.find({ previous_secret_hash: { $in: rest } }, { batchSize: rest.length }).toArray()) {
      if (record.previous_secret_hash) found.set(record.previous_secret_hash, record);
    }
    return found;
  }

  return {
    collection,
    async create(input) {
      const secret = generateSecret();
      const record: ApiKeyRecord = {
        _id: newId(),
        workspace_id: input.workspaceId,
        name: input.name,
        scopes: input.scopes,
        secret_hash: hashSecret(secret),
        secret_prefix: secretPrefixOf(secret),
        ip_allow_list: input.ipAllowList,
        rate_limit_per_min: input.rateLimitPerMin,
        created_at: clock.now(),
        expires_at: input.expiresAt,
        revoked_at: null,
        last_used_at: null,
      };
      await collection.insertOne(record);
      return { record, secret };
    },
    findBySecretHash: async (secretHash) => (await findBySecretHashes([secretHash])).get(secretHash) ?? null,
    findBySecretHashes,
    async roll(id, previousExpiresAt) {
      const current = await collection.findOne({ _id: id, revoked_at: null });
      if (!current) return null;
      const secret = generateSecret();
      const keepPrevious = previousExpiresAt !== null && previousExpiresAt.getTime() > clock.now().getTime();
      // Conditional on the secret it replaces: of two concurrent rolls, one wins and the other is told the key is gone.
      const record = await collection.findOneAndUpdate(
        { _id: id, revoked_at: null, secret_hash: current.secret_hash },
        {
          $set: {
            secret_hash: hashSecret(secret),
            secret_prefix: secretPrefixOf(secret),
            previous_secret_hash: keepPrevious ? current.secret_hash : null,
            previous_secret_prefix: keepPrevious ? current.secret_prefix : null,
            previous_secret_expires_at: keepPrevious ? previousExpiresAt : null,
          },
        },
        { returnDocument: "after" },
      );
      return record ? { record, secret, replacedHash: current.secret_hash } : null;
    },
    get: (id) => collection.findOne({ _id: id }),
    list: (workspaceId, page) => listPage(collection, { workspace_id: workspaceId }, page),
    update: (id, changes) => collection.findOneAndUpdate({ _id: id }, { $set: changes }, { returnDocument: "after" }),
    async revoke(id) {
      await collection.updateOne({ _id: id, revoked_at: null }, { $set: { revoked_at: clock.now() } });
      return collection.findOne({ _id: id });
    },
    async recordUse(lastUse) {
      if (lastUse.size === 0) return;
      await collection.bulkWrite(
        [...lastUse].map(([id, at]) => ({ updateOne: { filter: { _id: id }, update: { $max: { last_used_at: at } } } })),
        { ordered: false },
      );
    },
    async ensureIndexes() {
      await collection.createIndex({ secret_hash: 1 }, { unique: true });
      await collection.createIndex({ previous_secret_hash: 1 });
      await collection.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
    },
  };
}
