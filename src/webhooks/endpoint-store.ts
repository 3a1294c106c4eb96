import type { Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";
import { encryptSecret, generateSigningSecret, secretHint, type EncryptedSecret } from "./signing-secret.js";

/** Consecutive failed attempts that disable an endpoint (spec §States and transitions, §Limits). */
export const DISABLE_AFTER_FAILURES = 20;

/** A webhook endpoint as stored in `webhook_endpoints` (spec §Webhook endpoint). */
export interface EndpointRecord {
  /** Shape whk_<uuid>. */
  _id: string;
  workspace_id: string;
  name: string;
  url: string;
  /** Event types it receives. */
  events: string[];
  /** The signing secret, encrypted (never in clear, README "Design" §7). */
  secret: EncryptedSecret;
  /** whsec_ prefix, first four characters, ellipsis, last four. */
  secret_hint: string;
  /** The secret the last rotation replaced, encrypted, while it keeps verifying; absent or null otherwise. */
  previous_secret?: EncryptedSecret | null;
  /** Until when previous_secret is used; absent or null when there is none. */
  previous_secret_expires_at?: Date | null;
  /** Most automatic attempts per second; absent or null when unlimited. */
  rate_limit?: number | null;
  enabled: boolean;
  /** Why it was disabled; null while enabled. */
  disabled_reason: string | null;
  disabled_at: Date | null;
  /** Failed attempts in a row, across its deliveries; 0 to DISABLE_AFTER_FAILURES. */
  consecutive_failures: number;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What a failure to count is: when it happened and what it was, for disabled_reason. */
export interface CountedFailure {
  at: Date;
  /** For people, for example "Answered 500" or "No complete answer within 10000 ms". */
  summary: string;
}

/** Access to `webhook_endpoints`. Every state change is one atomic single-document update. */
export interface EndpointStore {
  /** Endpoints disabled (by hand or after 20 failures in a row), for the gauge. */
  countDisabled(): Promise<number>;
  /** Creates an enabled endpoint with a new secret; returns it and the secret (the only time it exists in clear). */
  create(input: { workspaceId: string; name: string; url: string; events: string[]; rateLimit: number | null }): Promise<{ record: EndpointRecord; secret: string }>;
  get(id: string): Promise<EndpointRecord | null>;
  /** A workspace's endpoints, newest first, a page at a time. */
  list(workspaceId: string, page: PageRequest): Promise<Page<EndpointRecord>>;
  /** All of a workspace's endpoints, newest first (a workspace has at most MAX_ENDPOINTS_PER_WORKSPACE). */
  listAll(workspaceId: string): Promise<EndpointRecord[]>;
  count(workspaceId: string): Promise<number>;
  /** Changes name, URL, events or rate limit; null when unknown. */
  update(id: string, changes: Partial<Pick<EndpointRecord, "name" | "url" | "events" | "rate_limit">>): Promise<EndpointRecord | null>;
  /** Enables: count back to 0, reason cleared. Null when unknown. */
  enable(id: string): Promise<EndpointRecord | null>;
  /** Disables with `reason` unless already disabled (the first reason stays). Null when unknown. */
  disable(id: string, reason: string): Promise<EndpointRecord | null>;
  /** Deletes; false when unknown. */
  delete(id: string): Promise<boolean>;
  /**
   * Replaces the signing secret with a new one; the replaced one stays as
   * previous_secret until `previousUntil` (none when null or not after now;
   * an older previous secret ends at once). Null when unknown, or when the
   * secret changed meanwhile (a rotation at the same time).
   */
  rotateSecret(id: string, previousUntil: Date | null): Promise<{ record: EndpointRecord; secret: string } | null>;
  /**
   * Counts `failures` (in the order they happened) against an enabled
   * endpoint with compare-and-set updates of its count, so that concurrent
   * callers in any process add up exactly: the update that reaches
   * DISABLE_AFTER_FAILURES also disables the endpoint, once, recording the
   * failure that did it in disabled_reason; failures beyond it, or against a
   * disabled endpoint, are not counted. Returns the index in `failures` of
   * the one that disabled the endpoint, if any.
   */
  countFailures(id: string, failures: CountedFailure[]): Promise<number | undefined>;
  /** Records a success: the count goes back to 0 (while enabled) and last_success_at moves forward. */
  recordSuccess(id: string, at: Date): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Most endpoints one workspace may have (a bound on the fan-out of one event). */
export const MAX_ENDPOINTS_PER_WORKSPACE = 20;

/** Creates the endpoint store; `secretKey` encrypts the signing secrets. */
export function createEndpointStore(db: Db, clock: Clock, secretKey: Buffer): EndpointStore {
  const collection = db.collection<EndpointRecord>("webhook_endpoints");
  const after = { returnDocument: "after" as const };
  return {
    countDisabled: () => collection.countDocuments({ enabled: false }),
    async create({ workspaceId, name, url, events, rateLimit }) {
      const id = newId("whk");
      const secret = generateSigningSecret();
      const now = clock.now();
      const record: EndpointRecord = {
        _id: id,
        workspace_id: workspaceId,
        name,
        url,
        events,
        secret: encryptSecret(secretKey, secret, id),
        secret_hint: secretHint(secret),
        rate_limit: rateLimit,
        enabled: true,
        disabled_reason: null,
        disabled_at: null,
        consecutive_failures: 0,
        last_success_at: null,
        last_failure_at: null,
        created_at: now,
        updated_at: now,
      };
      await collection.insertOne(record);
      return { record, secret };
    },
    get: (id) => collection.findOne({ _id: id }),
    list: (workspaceId, page) => listPage(collection, { workspace_id: workspaceId }, page),
    listAll: (workspaceId) => collection.find({ workspace_id: workspaceId }).sort({ created_at: -1, _id: -1 }).toArray(),
    count: (workspaceId) => collection.countDocuments({ workspace_id: workspaceId }),
    update: (id, changes) => collection.findOneAndUpdate({ _id: id }, { $set: { ...changes, updated_at: clock.now() } }, after),
    enable: (id) =>
      collection.findOneAndUpdate(
        { _id: id },
        { $set: { enabled: true, disabled_reason: null, disabled_at: null, consecutive_failures: 0, updated_at: clock.now() } },
        after,
      ),
    async disable(id, reason) {
      const now = clock.now();
      await collection.updateOne({ _id: id, enabled: true }, { $set: { enabled: false, disabled_reason: reason, disabled_at: now, updated_at: now } });
      return collection.findOne({ _id: id });
    },
    async delete(id) {
      return (await collection.deleteOne({ _id: id })).deletedCount === 1;
    },
    async rotateSecret(id, previousUntil) {
      const existing = await collection.findOne({ _id: id });
      if (!existing) return null;
      const secret = generateSigningSecret();
      const now = clock.now();
      const keeps = previousUntil !== null && previousUntil.getTime() > now.getTime();
      // Compare-and-set on the secret read: of two rotations at once, one wins and the other is told.
      const record = await collection.findOneAndUpdate(
        { _id: id, "secret.ciphertext": existing.secret.ciphertext },
        {
          $set: {
            secret: encryptSecret(secretKey, secret, id),
            secret_hint: secretHint(secret),
            previous_secret: keeps ? existing.secret : null,
            previous_secret_expires_at: keeps ? previousUntil : null,
            updated_at: now,
          },
        },
        after,
      );
      return record ? { record, secret } : null;
    },
    async countFailures(id, failures) {
      const last = failures[failures.length - 1];
      if (!last) return undefined;
      for (;;) {
        const current = await collection.findOne({ _id: id }, { projection: { enabled: 1, consecutive_failures: 1 } });
        if (!current?.enabled) return undefined;
        const count = current.consecutive_failures;
        // Compare-and-set on the count read: a concurrent change makes it miss, and we read again.
        const unchanged = { _id: id, enabled: true, consecutive_failures: count };
        if (count + failures.length < DISABLE_AFTER_FAILURES) {
          const res = await collection.updateOne(unchanged, {
            $set: { consecutive_failures: count + failures.length },
            $max: { last_failure_at: last.at },
          });
          if (res.matchedCount === 1) return undefined;
          continue;
        }
        const tipping = DISABLE_AFTER_FAILURES - count - 1;
        const failure = failures[tipping] as CountedFailure;
        const res = await collection.updateOne(unchanged, {
          $set: {
            consecutive_failures: DISABLE_AFTER_FAILURES,
            enabled: false,
            disabled_at: clock.now(),
            disabled_reason:
              `Disabled after ${DISABLE_AFTER_FAILURES} consecutive failed attempts; ` +
              `the last at ${failure.at.toISOString()}: ${failure.summary}`,
          },
          $max: { last_failure_at: failure.at },
        });
        if (res.matchedCount === 1) return tipping;
      }
    },
    async recordSuccess(id, at) {
      const res = await collection.updateOne({ _id: id, enabled: true }, { $set: { consecutive_failures: 0 }, $max: { last_success_at: at } });
      if (res.matchedCount === 0) await collection.updateOne({ _id: id }, { $max: { last_success_at: at } });
    },
    async ensureIndexes() {
      await collection.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
    },
  };
}
