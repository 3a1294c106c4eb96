import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ApiKeyStatus, type ApiKeySchema, type ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import type { Admission } from "../auth/admission.js";
import type { ApiKeyRecord, ApiKeyStore } from "../auth/api-key-store.js";
import { validateAllowList } from "../auth/ip-allow-list.js";
import { isScope, SCOPES } from "../auth/scopes.js";
import type { Clock } from "../shared/clock.js";
import { apiError, notFound } from "../shared/errors.js";
import { requireWorkspaceAccess } from "./console-access.js";
import { charLength, isUuid, Violations } from "../shared/validation.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { requireWorkspace } from "./workspace-service.js";

/** Default and largest per-key budgets (spec §Limits). */
export const DEFAULT_RATE_LIMIT_PER_MIN = 30;
export const MAX_RATE_LIMIT_PER_MIN = 100;

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
export const MAX_ROLL_OVERLAP_MS = 7 * 86_400_000;

/** Fields UpdateApiKey may change (its update_mask paths). */
const UPDATABLE = ["name", "ip_allow_list", "rate_limit_per_min"] as const;

function checkName(violations: Violations, name: string): void {
  violations.addIf(name === "" || charLength(name) > 200, "name", "must be 1 to 200 characters");
}

function checkRateLimit(violations: Violations, value: number, zeroMeansDefault: boolean): void {
  const min = zeroMeansDefault ? 0 : 1;
  violations.addIf(
    value < min || value > MAX_RATE_LIMIT_PER_MIN,
    "rate_limit_per_min",
    `must be from 1 to ${MAX_RATE_LIMIT_PER_MIN} requests per minute${zeroMeansDefault ? ` (0 means the default of ${DEFAULT_RATE_LIMIT_PER_MIN})` : ""}`,
  );
}

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
      const violations = new Violations();
      checkName(violations, name);
      checkRateLimit(violations, req.rateLimitPerMin, true);
      req.scopes.forEach((scope, i) => {
        violations.addIf(!isScope(scope), `scopes[${i}]`, `must be one of ${SCOPES.join(", ")} (got ${JSON.stringify(scope)})`);
      });
      violations.addIf(new Set(req.scopes).size !== req.scopes.length, "scopes", "must not repeat a scope");
      const expiresAt = req.expiresAt ? timestampDate(req.expiresAt) : null;
      violations.addIf(expiresAt !== null && expiresAt.getTime() <= now.getTime(), "expires_at", "must be in the future");
      violations.addAll(validateAllowList(req.ipAllowList));
      violations.check();
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
      const implied = UPDATABLE.filter((f) =>
        f === "name" ? input.name !== "" : f === "ip_allow_list" ? input.ipAllowList.length > 0 : input.rateLimitPerMin !== 0,
      );
      const paths = req.updateMask?.paths.length ? req.updateMask.paths : implied;
      const violations = new Violations();
      paths.forEach((path, i) => {
        violations.addIf(!(UPDATABLE as readonly string[]).includes(path), `update_mask[${i}]`, `must be one of ${UPDATABLE.join(", ")} (got ${JSON.stringify(path)})`);
      });
      violations.addIf(paths.length === 0, "update_mask", `names no field to change (${UPDATABLE.join(", ")})`);
      const changes: Parameters<ApiKeyStore["update"]>[1] = {};
      if (paths.includes("name")) checkName(violations, (changes.name = input.name.trim()));
      if (paths.includes("rate_limit_per_min")) checkRateLimit(violations, (changes.rate_limit_per_min = input.rateLimitPerMin), false);
      if (paths.includes("ip_allow_list")) violations.addAll(validateAllowList((changes.ip_allow_list = input.ipAllowList)));
      violations.check();
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
      new Violations()
        .addIf(until !== null && until.getTime() > now.getTime() + MAX_ROLL_OVERLAP_MS, "previous_secret_expires_at", "must be at most 7 days from now")
        .check();
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
