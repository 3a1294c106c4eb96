import { LRUCache } from "lru-cache";
import { GroupCommit } from "../store/group-commit.js";
import type { Clock } from "../shared/clock.js";
import { refusal, type DescribedError } from "../shared/errors.js";
import type { Logger } from "../shared/logger.js";
import type { RequestState } from "../gateway/request-state.js";
import type { NodeRequest } from "../gateway/node-http.js";
import type { RateLimiter } from "../ratelimit/rate-limiter.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { hashSecret, secretShapeProblem } from "./api-key-secret.js";
import type { ApiKeyRecord, ApiKeyStore } from "./api-key-store.js";
import { isAddressAllowed, parseIpRange, type IpRange } from "./ip-allow-list.js";

/** A key as admission needs it, cached for at most KEY_CACHE_TTL_MS. */
interface CachedKey {
  record: ApiKeyRecord;
  ranges: IpRange[];
  workspaceSuspended: boolean;
}

/** Options of createAdmission. */
export interface AdmissionOptions {
  keys: ApiKeyStore;
  workspaces: WorkspaceStore;
  rateLimiter: RateLimiter;
  clock: Clock;
  logger: Logger;
  /** Longest time a key or workspace change may go unnoticed, in ms (at most 5000). */
  keyCacheTtlMs: number;
  /** Per-address budget per minute of requests without an accepted key. */
  unauthenticatedRateLimitPerMin: number;
}

/** Admission of public API requests. */
export interface Admission {
  /** Decides a request's principal or refusal and sets its rate-limit headers (never throws). */
  admit(state: RequestState, req: NodeRequest): Promise<void>;
  /** Forgets a cached key at once (after a revocation in this process). */
  forget(secretHash: string): void;
  /** Writes the buffered last-use times of keys. */
  flushUsage(): Promise<void>;
}

/**
 * Creates admission (spec §Authentication, §API key acceptance, §Limits):
 *
 * 1. The Authorization header must be `Bearer <secret>`; missing or malformed
 *    is invalid_key with a message saying what is wrong.
 * 2. The key is looked up by the SHA-256 of the secret, through a cache that
 *    holds answers (found or not) until the end of the KEY_CACHE_TTL_MS
 *    period they were read in (look-ups made together read together), so a revocation,
 *    expiry or suspension takes effect within a second everywhere (at once in
 *    the process that revoked the key: forget).
 * 3. Refusals in the spec's order: invalid_key, key_revoked, key_expired,
 *    workspace_suspended, ip_not_allowed.
 * 4. Rate limit: an accepted key spends its own budget; a request without
 *    an accepted key spends its client address's budget
 *    (UNAUTHENTICATED_RATE_LIMIT_PER_MIN), so refused keys cannot drain an
 *    owner's budget and key guessing is slowed. Over budget the answer is
 *    rate_limited (429, RESOURCE_EXHAUSTED) with Retry-After equal to
 *    RateLimit-Reset, whatever else was wrong.
 * 5. RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset are set on
 *    every response (headers, and gRPC response metadata).
 *
 * The scope check needs the method and runs later, in scopeInterceptor.
 */
export function createAdmission(options: AdmissionOptions): Admission {
  const ttl = options.keyCacheTtlMs;
  const cache =
    ttl > 0
      ? new LRUCache<string, { key: CachedKey | null }>({
          max: 50_000,
          ttl,
          fetchMethod: async (hash, _stale, { options: entry }) => {
            // Every entry read in one period of the TTL expires at its end: the keys in use are read again
            // together, and their reads share batches (loads), where each key's own expiry spread them out.
            // A change is still seen within the TTL of when it was made.
            const periodEnd = Math.floor(Date.now() / ttl) * ttl + ttl;
            const key = await loads.add(hash);
            entry.ttl = Math.max(1, periodEnd - Date.now());
            return { key };
          },
        })
      : undefined;
  const lastUse = new Map<string, Date>();
  /** Key look-ups asked for while one is read go into the next read (two queries of keys, one of workspaces). */
  const loads = new GroupCommit<string, CachedKey | null>(loadMany, 500);

  async function loadMany(hashes: string[]): Promise<(CachedKey | null)[]> {
    const records = await options.keys.findBySecretHashes(hashes);
    const workspaces = records.size ? await options.workspaces.getMany([...records.values()].map((r) => r.workspace_id)) : new Map();
    return hashes.map((hash) => {
      const record = records.get(hash);
      if (!record) return null;
      return {
        record,
        ranges: record.ip_allow_list.map(parseIpRange).filter((r): r is IpRange => r !== undefined),
        workspaceSuspended: workspaces.get(record.workspace_id)?.status !== "active",
      };
    });
  }

  async function lookUp(hash: string): Promise<CachedKey | null> {
    if (!cache) return loads.add(hash);
    return (await cache.fetch(hash))?.key ?? null;
  }

  /** The refusal of the presented key, or the accepted key. */
  async function authenticate(state: RequestState, header: string | undefined): Promise<DescribedError | CachedKey> {
    if (header === undefined || header === "") {
      return refusal("invalid_key", "Missing Authorization header; send 'Authorization: Bearer <API key>'");
    }
    const match = /^(\S+)\s+(\S*)$/.exec(header.trim());
    if (!match || (match[1] as string).toLowerCase() !== "bearer") {
      return refusal("invalid_key", "The Authorization header must use the Bearer scheme: 'Authorization: Bearer <API key>'");
    }
    const secret = match[2] as string;
    const problem = secretShapeProblem(secret);
    if (problem) return refusal("invalid_key", `The API key is malformed: ${problem}`);
    const hash = hashSecret(secret);
    const key = await lookUp(hash);
    if (!key) return refusal("invalid_key", "The API key is not recognised");
    const { record } = key;
    state.workspaceId = record.workspace_id;
    state.apiKeyId = record._id;
    if (record.revoked_at) return refusal("key_revoked", "The API key was revoked", { api_key_id: record._id });
    const now = options.clock.now();
    // A secret replaced by a roll works until its own expiry.
    if (record.secret_hash !== hash) {
      const until = record.previous_secret_hash === hash ? record.previous_secret_expires_at : null;
      if (!until || until.getTime() <= now.getTime()) {
        return refusal("key_expired", "This secret of the API key was replaced by a roll and no longer works; use the new secret", {
          api_key_id: record._id,
          ...(until ? { expired_at: until.toISOString() } : {}),
        });
      }
    }
    if (record.expires_at && record.expires_at.getTime() <= now.getTime()) {
      return refusal("key_expired", `The API key expired at ${record.expires_at.toISOString()}`, {
        api_key_id: record._id,
        expired_at: record.expires_at.toISOString(),
      });
    }
    if (key.workspaceSuspended) {
      return refusal("workspace_suspended", "The workspace is suspended", { account_id: record.workspace_id });
    }
    if (!isAddressAllowed(state.clientAddress, key.ranges)) {
      return refusal("ip_not_allowed", `Requests from ${state.clientAddress} are not in the key's IP allow-list`, {
        client_address: state.clientAddress,
      });
    }
    return key;
  }

  return {
    async admit(state, req) {
      try {
        const header = req.headers.authorization;
        const outcome = await authenticate(state, Array.isArray(header) ? header[0] : header);
        const key = "record" in outcome ? outcome : undefined;
        if (key) {
          state.principal = {
            workspaceId: key.record.workspace_id,
            apiKeyId: key.record._id,
            apiKeyName: key.record.name,
            scopes: key.record.scopes,
            rateLimitPerMin: key.record.rate_limit_per_min,
          };
          lastUse.set(key.record._id, state.receivedAt);
        } else {
          state.refusal = outcome as DescribedError;
        }
        const decision = key
          ? await options.rateLimiter.consume(`key:${key.record._id}`, key.record.rate_limit_per_min)
          : await options.rateLimiter.consume(`addr:${state.clientAddress}`, options.unauthenticatedRateLimitPerMin);
        state.setHeader("ratelimit-limit", String(decision.limit));
        state.setHeader("ratelimit-remaining", String(decision.remaining));
        state.setHeader("ratelimit-reset", String(decision.resetSeconds));
        if (!decision.allowed) {
          state.setHeader("retry-after", String(decision.resetSeconds));
          state.refusal = refusal(
            "rate_limited",
            `Rate limit of ${decision.limit} requests per minute exceeded; retry after ${decision.resetSeconds} s`,
            { limit: String(decision.limit), retry_after_seconds: String(decision.resetSeconds) },
          );
        }
      } catch (err) {
        options.logger.error({ err, requestId: state.requestId }, "admission failed");
        state.refusal = refusal("unavailable", "The service cannot check credentials right now; retry shortly");
      }
    },
    forget(secretHash) {
      cache?.delete(secretHash);
    },
    async flushUsage() {
      if (lastUse.size === 0) return;
      const batch = new Map(lastUse);
      lastUse.clear();
      await options.keys.recordUse(batch);
    },
  };
}
