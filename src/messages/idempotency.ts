import { hash } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Clock } from "../shared/clock.js";
import { apiError, isDuplicateKeyError } from "../shared/errors.js";

/** How long an Idempotency-Key is remembered, in ms (24 hours, as Stripe does). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** How long a request may hold its key before a retry may take it over, in ms. */
const IN_PROGRESS_TIMEOUT_MS = 60_000;

/** A remembered Idempotency-Key, in `idempotency_keys`. */
export interface IdempotencyRecord {
  /** "<api key id>:<Idempotency-Key>": keys are scoped to the API key. */
  _id: string;
  /** SHA-256 of the request's canonical form. */
  fingerprint: string;
  /**
   * The message the request creates (chosen before it is created, so a retry
   * after a crash finds it). The key is complete once that message exists:
   * no second write marks it.
   */
  message_id: string;
  created_at: Date;
  /** created_at + 24 h: the TTL index deletes the record after it; begin() treats it as free from then on. */
  expires_at: Date;
  /**
   * A batch send's key ("" in `message_id`): the ids of the messages its
   * items create, chosen before anything is created (a retry after a crash
   * creates those same messages), and once it answered, its results (a
   * replay answers them again).
   */
  batch?: { message_ids: string[]; results?: StoredBatchResult[] };
}

/** One item's outcome of a batch send, as its Idempotency-Key keeps it: the message created, or the error answered. */
export type StoredBatchResult = { message_id: string } | { error: { code: string; message: string; details: JsonObject } };

/** What a batch send with an Idempotency-Key should do. */
export type BatchIdempotencyDecision =
  /**
   * Go on and create the messages `messageIds` (by item); call complete()
   * with the results once answered, abandon() if the batch fails as a whole.
   */
  | { kind: "proceed"; messageIds: string[]; taken: boolean; complete(results: StoredBatchResult[]): Promise<void>; abandon(): Promise<void> }
  /** Answer these results again. */
  | { kind: "replay"; results: StoredBatchResult[] };

/** What a send with an Idempotency-Key should do. */
export type IdempotencyDecision =
  /** Go on and create message `messageId`; call abandon() if it cannot be created. */
  | { kind: "proceed"; messageId: string; abandon(): Promise<void> }
  /** Answer with the message already created. */
  | { kind: "replay"; messageId: string };

/** Hex SHA-256 of a JSON value with object keys sorted (key order does not change a request). */
export function fingerprintOf(value: unknown): string {
  const canonical = (v: unknown): unknown =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]))
      : v;
  return hash("sha256", JSON.stringify(canonical(value)), "hex");
}

/** The rule an Idempotency-Key must meet, as said in errors. */
export const IDEMPOTENCY_KEY_RULE = "must be 1 to 255 printable ASCII characters";

/** True when `key` meets IDEMPOTENCY_KEY_RULE. */
export function isValidIdempotencyKey(key: string): boolean {
  return /^[\x21-\x7e]{1,255}$/.test(key);
}

/** Idempotency-Key bookkeeping (scoped to the API key, kept 24 h: a TTL index deletes the record, begin() checks its age itself, and the sweep prunes it on servers without a TTL monitor). */
export interface IdempotencyStore {
  readonly collection: Collection<IdempotencyRecord>;
  /**
   * Claims `key` for a request of `fingerprint`, proposing `messageId`.
   *
   * @throws ConnectError conflict when the key was used with another body,
   *   or when a request with the key is still in progress.
   */
  begin(apiKeyId: string, key: string, fingerprint: string, messageId: string, messageExists: (id: string) => Promise<boolean>): Promise<IdempotencyDecision>;
  /**
   * Claims `key` for a batch send of `fingerprint` (README "Sending messages",
   * Batch sends), proposing `messageIds` (one per item): proceed with them
   * (or, taking over a key whose first request stopped, with that request's
   * ids: `taken`), or replay the stored results.
   *
   * @throws ConnectError conflict when the key was used with another body (or
   *   by a single send), or when a request with the key is still in progress.
   */
  beginBatch(apiKeyId: string, key: string, fingerprint: string, messageIds: string[]): Promise<BatchIdempotencyDecision>;
  /** Deletes keys older than 24 h; resolves to the count. */
  prune(): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/** Creates the idempotency store over `db`. */
export function createIdempotencyStore(db: Db, clock: Clock): IdempotencyStore {
  const collection = db.collection<IdempotencyRecord>("idempotency_keys");

  const proceed = (id: string, messageId: string): IdempotencyDecision => ({
    kind: "proceed",
    messageId,
    abandon: async () => {
      await collection.deleteOne({ _id: id, message_id: messageId });
    },
  });

  return {
    collection,
    async begin(apiKeyId, key, fingerprint, messageId, messageExists) {
      const id = `${apiKeyId}:${key}`;
      const now = clock.now();
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await collection.insertOne({ _id: id, fingerprint, message_id: messageId, created_at: now, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) });
          return proceed(id, messageId);
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
        }
        const existing = await collection.findOne({ _id: id });
        if (!existing) continue; // abandoned meanwhile: try again
        const age = now.getTime() - existing.created_at.getTime();
        if (age >= IDEMPOTENCY_TTL_MS) {
          // Expired but not yet pruned: the key is free again.
          await collection.deleteOne({ _id: id, created_at: existing.created_at });
          continue;
        }
        if (existing.fingerprint !== fingerprint || existing.batch) {
          throw apiError("conflict", "This Idempotency-Key was already used with a different request body", { idempotency_key: key });
        }
        if (await messageExists(existing.message_id)) return { kind: "replay", messageId: existing.message_id };
        if (age < IN_PROGRESS_TIMEOUT_MS) {
          throw apiError("conflict", "A request with this Idempotency-Key is still in progress; retry shortly", { idempotency_key: key });
        }
        // The first request stopped before storing its message: take the key over, keeping its message id.
        const taken = await collection.findOneAndUpdate(
          { _id: id, created_at: existing.created_at },
          { $set: { created_at: now, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) } },
        );
        if (taken) return proceed(id, existing.message_id);
      }
      throw apiError("conflict", "A request with this Idempotency-Key is still in progress; retry shortly", { idempotency_key: key });
    },
    async beginBatch(apiKeyId, key, fingerprint, messageIds) {
      const id = `${apiKeyId}:${key}`;
      const now = clock.now();
      const proceed = (ids: string[], createdAt: Date, taken: boolean): BatchIdempotencyDecision => ({
        kind: "proceed",
        messageIds: ids,
        taken,
        complete: async (results) => {
          await collection.updateOne({ _id: id, created_at: createdAt }, { $set: { "batch.results": results } });
        },
        abandon: async () => {
          await collection.deleteOne({ _id: id, created_at: createdAt });
        },
      });
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await collection.insertOne({
            _id: id,
            fingerprint,
            message_id: "",
            batch: { message_ids: messageIds },
            created_at: now,
            expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
          });
          return proceed(messageIds, now, false);
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
        }
        const existing = await collection.findOne({ _id: id });
        if (!existing) continue; // abandoned meanwhile: try again
        const age = now.getTime() - existing.created_at.getTime();
        if (age >= IDEMPOTENCY_TTL_MS) {
          await collection.deleteOne({ _id: id, created_at: existing.created_at });
          continue;
        }
        if (existing.fingerprint !== fingerprint || !existing.batch) {
          throw apiError("conflict", "This Idempotency-Key was already used with a different request body", { idempotency_key: key });
        }
        if (existing.batch.results) return { kind: "replay", results: existing.batch.results };
        if (age < IN_PROGRESS_TIMEOUT_MS) {
          throw apiError("conflict", "A request with this Idempotency-Key is still in progress; retry shortly", { idempotency_key: key });
        }
        // The first request stopped before it answered: take the key over, with its message ids.
        const taken = await collection.findOneAndUpdate(
          { _id: id, created_at: existing.created_at },
          { $set: { created_at: now, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) } },
        );
        if (taken) return proceed(existing.batch.message_ids, now, true);
      }
      throw apiError("conflict", "A request with this Idempotency-Key is still in progress; retry shortly", { idempotency_key: key });
    },
    async prune() {
      const result = await collection.deleteMany({ expires_at: { $lte: clock.now() } });
      return result.deletedCount;
    },
    async ensureIndexes() {
      await collection.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },
  };
}
