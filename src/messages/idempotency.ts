import { hash, randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Clock } from "../shared/clock.js";
import { apiError, isDuplicateKeyError } from "../shared/errors.js";

/** How long an Idempotency-Key is remembered, in ms (24 hours, as Stripe does). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * The term of the lease by which a request in progress holds its key, in ms
 * (at most IDEMPOTENCY_HOLD_MS): renewed every third of it while the request
 * runs, so a retry finds the key free at most this long after the accepting
 * process died.
 */
export const IDEMPOTENCY_LEASE_TERM_MS = 5000;

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
  /**
   * The request in progress that holds the key ("<process>:<request>"), as a
   * lease: until `leased_until`, renewed while the request runs and never past
   * `created_at` + IDEMPOTENCY_HOLD_MS. Absent on keys written before leases
   * (those are held until created_at + IDEMPOTENCY_HOLD_MS).
   */
  lease_owner?: string;
  /** The lease's end: past it (its process died, or it held the key longer than IDEMPOTENCY_HOLD_MS) a retry takes the key over. */
  leased_until?: Date;
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
  /**
   * Go on and create message `messageId` while the key is held (its lease
   * renewed); call done() once the message is stored, abandon() if it cannot be.
   */
  | { kind: "proceed"; messageId: string; done(): void; abandon(): Promise<void> }
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

/**
 * Creates the idempotency store over `db`. `holdMs` (IDEMPOTENCY_HOLD_MS) is
 * the longest a request in progress holds its key: its lease (a term of
 * IDEMPOTENCY_LEASE_TERM_MS at most, renewed while the request runs) ends
 * then even if its process lives on (README "Idempotency-Key").
 */
export function createIdempotencyStore(db: Db, clock: Clock, holdMs: number): IdempotencyStore {
  const collection = db.collection<IdempotencyRecord>("idempotency_keys");
  /** Names this process in the keys' leases. */
  const processId = randomUUID();
  const term = Math.min(IDEMPOTENCY_LEASE_TERM_MS, holdMs);

  /** The lease of a request taking the key at `now` (held since `since`): its owner and end. */
  const lease = (now: Date, since: Date) => ({
    lease_owner: `${processId}:${randomUUID()}`,
    leased_until: new Date(Math.min(now.getTime() + term, since.getTime() + holdMs)),
  });

  /**
   * Renews the lease `owner` holds on key `id` (taken at `since`) every third
   * of its term, never past the longest hold; the returned function stops it
   * (once the request stored what it creates).
   */
  const renew = (id: string, owner: string, since: Date): (() => void) => {
    const renewal = setInterval(() => {
      const now = clock.now().getTime();
      const until = Math.min(now + term, since.getTime() + holdMs);
      if (until <= now) return clearInterval(renewal);
      collection.updateOne({ _id: id, lease_owner: owner }, { $set: { leased_until: new Date(until) } }).catch(() => undefined);
    }, Math.max(1, Math.floor(term / 3)));
    renewal.unref();
    return () => clearInterval(renewal);
  };

  /** When the lease of `existing` ends (keys of earlier releases: their longest hold). */
  const leaseEnd = (existing: IdempotencyRecord) => existing.leased_until ?? new Date(existing.created_at.getTime() + holdMs);

  type Claim =
    /** The key is this request's now (`taken`: from a holder whose lease ended, `record` as that holder left it). */
    | { kind: "held"; record: IdempotencyRecord; taken: boolean; owner: string; stop: () => void }
    /** The first request with the key finished: answer what it made. */
    | { kind: "finished"; record: IdempotencyRecord };

  /**
   * The one claim of a key, for single and batch sends alike: insert it
   * held by a lease of this request; or, when it exists, refuse another body
   * or kind (conflict), report it finished, refuse it while its holder's
   * lease runs (conflict, in progress), or take it over once that lease
   * ended. An expired key not yet pruned is free again.
   */
  async function claim(
    apiKeyId: string,
    key: string,
    fresh: Pick<IdempotencyRecord, "fingerprint" | "message_id" | "batch">,
    isBatch: boolean,
    finished: (existing: IdempotencyRecord) => Promise<boolean>,
  ): Promise<Claim> {
    const id = `${apiKeyId}:${key}`;
    const now = clock.now();
    for (let attempt = 0; attempt < 3; attempt++) {
      const held = lease(now, now);
      const record: IdempotencyRecord = { _id: id, ...fresh, created_at: now, ...held, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) };
      try {
        await collection.insertOne(record);
        return { kind: "held", record, taken: false, owner: held.lease_owner, stop: renew(id, held.lease_owner, now) };
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
      const existing = await collection.findOne({ _id: id });
      if (!existing) continue; // abandoned meanwhile: try again
      if (now.getTime() - existing.created_at.getTime() >= IDEMPOTENCY_TTL_MS) {
        await collection.deleteOne({ _id: id, created_at: existing.created_at });
        continue;
      }
      if (existing.fingerprint !== fresh.fingerprint || Boolean(existing.batch) !== isBatch) {
        throw apiError("conflict", "This Idempotency-Key was already used with a different request body", { idempotency_key: key });
      }
      if (await finished(existing)) return { kind: "finished", record: existing };
      if (leaseEnd(existing) > now) break;
      // The holder's lease ended (its process died, or it held the key past IDEMPOTENCY_HOLD_MS) before it
      // finished: take the key over, keeping what it chose (its message ids).
      const taken = await collection.findOneAndUpdate(
        { _id: id, created_at: existing.created_at, lease_owner: existing.lease_owner ?? { $exists: false } } as never,
        { $set: { created_at: now, ...held, expires_at: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) } },
      );
      if (taken) return { kind: "held", record: existing, taken: true, owner: held.lease_owner, stop: renew(id, held.lease_owner, now) };
    }
    throw apiError("conflict", "A request with this Idempotency-Key is still in progress; retry shortly", { idempotency_key: key });
  }

  return {
    collection,
    async begin(apiKeyId, key, fingerprint, messageId, messageExists) {
      const claimed = await claim(apiKeyId, key, { fingerprint, message_id: messageId }, false, (existing) => messageExists(existing.message_id));
      if (claimed.kind === "finished") return { kind: "replay", messageId: claimed.record.message_id };
      const { record, owner, stop } = claimed;
      return {
        kind: "proceed",
        messageId: record.message_id,
        done: stop,
        abandon: async () => {
          stop();
          await collection.deleteOne({ _id: record._id, lease_owner: owner });
        },
      };
    },
    async beginBatch(apiKeyId, key, fingerprint, messageIds) {
      const claimed = await claim(apiKeyId, key, { fingerprint, message_id: "", batch: { message_ids: messageIds } }, true, async (existing) =>
        Boolean(existing.batch?.results),
      );
      if (claimed.kind === "finished") return { kind: "replay", results: claimed.record.batch?.results ?? [] };
      const { record, taken, owner, stop } = claimed;
      return {
        kind: "proceed",
        messageIds: record.batch?.message_ids ?? messageIds,
        taken,
        complete: async (results) => {
          stop();
          await collection.updateOne({ _id: record._id, lease_owner: owner }, { $set: { "batch.results": results } });
        },
        abandon: async () => {
          stop();
          await collection.deleteOne({ _id: record._id, lease_owner: owner });
        },
      };
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
