import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ApiKeySchema, ApiKeyStatus, type ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import type { Admission } from "../auth/admission.js";
import type { ApiKeyRecord, ApiKeyStore } from "../auth/api-key-store.js";
import type { Clock } from "../shared/clock.js";
import { apiError, invalidArgument, notFound, violationsError } from "../shared/errors.js";
import { requireWorkspaceAccess } from "./console-access.js";
import { readUpdate } from "../contract/field-rules.js";
import { isUuid } from "../shared/validation.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { requireWorkspace } from "./workspace-service.js";

/** Default per-key budget (spec §Limits); the largest, 100, is a rule of api_keys.proto. */
export const DEFAULT_RATE_LIMIT_PER_MIN = 30;

/** The console form of a key record: never the secret, nor its hash. */
export function apiKeyToProto(record: ApiKeyRecord, now: Date): MessageInitShape<typeof ApiKeySchema> {
  const status = record.revoked_at
    ? ApiKeyStatus.REVOKED
    : record.expires_at && record.expires_at.getTime() <= now.getTime()
      ? ApiKeyStatus.EXPIRED
      : ApiKeyStatus.ACTIVE;
  return {
    id: record._id,
    object: "api_key",
    workspaceId: record.workspace_id,
    name: record.name,
    scopes: record.scopes,
    secretPrefix: record.secret_prefix,
    ipAllowList: record.ip_allow_list,
    rateLimitPerMin: record.rate_limit_per_min,
    status,
    createdAt: timestampFromDate(record.created_at),
    expiresAt: record.expires_at ? timestampFromDate(record.expires_at) : undefined,
    revokedAt: record.revoked_at ? timestampFromDate(record.revoked_at) : undefined,
    lastUsedAt: record.last_used_at ? timestampFromDate(record.last_used_at) : undefined,
    ...(record.previous_secret_hash && record.previous_secret_expires_at && record.previous_secret_expires_at.getTime() > now.getTime()
      ? { previousSecretPrefix: record.previous_secret_prefix ?? undefined, previousSecretExpiresAt: timestampFromDate(record.previous_secret_expires_at) }
      : {}),
  };
}

/** Longest overlap of a rolled secret with its successor, in ms (as Stripe allows: 7 days). */
const MAX_ROLL_OVERLAP_MS = 7 * 86_400_000;

/** Fields UpdateApiKey may change (its update_mask paths). */
const UPDATABLE = ["name", "ip_allow_list", "rate_limit_per_min"] as const;

/**
 * Handlers of messaging.console.v1.ApiKeyService (spec §Authentication):
 * create with name (1 to 200 characters), scopes of the spec's table,
 * optional future expiry, IP allow-list (addresses or CIDR ranges, IPv4 or
 * IPv6, at most 100) and rate budget (default 30, at most 100 per minute:
 * more is refused, not cut down); list; update name, allow-list and budget
 * (AIP-134 update mask); revoke (idempotent). Changes reach every server
 * process within the key cache's staleness bound (1 s), this one at once.
 */
export function createApiKeyService(deps: {
  keys: ApiKeyStore;
  workspaces: WorkspaceStore;
  admission?: Admission;
  clock: Clock;
}): Partial<ServiceImpl<typeof ApiKeyService>> {
  const { keys, workspaces, clock } = deps;
  return {
    async createApiKey(req, context) {
      const now = clock.now();
      const name = req.name.trim();
      const expiresAt = req.expiresAt ? timestampDate(req.expiresAt) : null;
      // Rules of time are checked against the service's clock (protovalidate's `now` is the machine's).
      if (expiresAt !== null && expiresAt.getTime() <= now.getTime()) throw invalidArgument("expires_at", "must be in the future");
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      const { record, secret } = await keys.create({
        workspaceId: req.workspaceId,
        name,
        scopes: req.scopes,
        expiresAt,
        ipAllowList: req.ipAllowList,
        rateLimitPerMin: req.rateLimitPerMin === 0 ? DEFAULT_RATE_LIMIT_PER_MIN : req.rateLimitPerMin,
      });
      return { apiKey: apiKeyToProto(record, now), secret };
    },
    async listApiKeys(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await keys.list(req.workspaceId, req);
      const now = clock.now();
      return {
        object: "list",
        data: page.items.map((k) => apiKeyToProto(k, now)),
        total: page.total,
        nextPageToken: page.nextPageToken,
      };
    },
    async getApiKey(req, context) {
      const record = isUuid(req.id) ? await keys.get(req.id) : null;
      if (!record) throw notFound("api_key", req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { apiKey: apiKeyToProto(record, clock.now()) };
    },
    async updateApiKey(req, context) {
      const input = req.apiKey;
      const id = input?.id ?? "";
      const existing = isUuid(id) ? await keys.get(id) : null;
      if (!existing || !input) throw notFound("api_key", id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const { paths, violations } = readUpdate({ field: "api_key", schema: ApiKeySchema, resource: input, mask: req.updateMask, updatable: UPDATABLE });
      if (violations.length > 0) throw violationsError(violations);
      const changes: Parameters<ApiKeyStore["update"]>[1] = {};
      if (paths.includes("name")) changes.name = input.name.trim();
      if (paths.includes("rate_limit_per_min")) changes.rate_limit_per_min = input.rateLimitPerMin;
      if (paths.includes("ip_allow_list")) changes.ip_allow_list = input.ipAllowList;
      const record = await keys.update(id, changes);
      if (!record) throw notFound("api_key", id);
      deps.admission?.forget(record.secret_hash);
      return { apiKey: apiKeyToProto(record, clock.now()) };
    },
    async revokeApiKey(req, context) {
      const existing = isUuid(req.id) ? await keys.get(req.id) : null;
      if (!existing) throw notFound("api_key", req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const record = await keys.revoke(req.id);
      if (!record) throw notFound("api_key", req.id);
      deps.admission?.forget(record.secret_hash);
      if (record.previous_secret_hash) deps.admission?.forget(record.previous_secret_hash);
      return { apiKey: apiKeyToProto(record, clock.now()) };
    },
    async rollApiKey(req, context) {
      const existing = isUuid(req.id) ? await keys.get(req.id) : null;
      if (!existing) throw notFound("api_key", req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const now = clock.now();
      const until = req.previousSecretExpiresAt ? timestampDate(req.previousSecretExpiresAt) : null;
      if (until !== null && until.getTime() > now.getTime() + MAX_ROLL_OVERLAP_MS) throw invalidArgument("previous_secret_expires_at", "must be at most 7 days from now");
      if (existing.revoked_at) throw apiError("failed_precondition", "A revoked key cannot be rolled", { api_key_id: existing._id });
      if (existing.expires_at && existing.expires_at.getTime() <= now.getTime()) {
        throw apiError("failed_precondition", "An expired key cannot be rolled", { api_key_id: existing._id });
      }
      const rolled = await keys.roll(existing._id, until);
      if (!rolled) throw apiError("conflict", "The key changed while it was rolled (revoked or rolled at the same time); read it and try again", { api_key_id: existing._id });
      // Its cached entries in this process (the old secret's, and an older previous secret's) end now; other processes within the cache's bound.
      deps.admission?.forget(rolled.replacedHash);
      if (existing.previous_secret_hash) deps.admission?.forget(existing.previous_secret_hash);
      return { apiKey: apiKeyToProto(rolled.record, now), secret: rolled.secret };
    },
  };
}
