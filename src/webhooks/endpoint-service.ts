import type { ServiceImpl } from "@connectrpc/connect";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WebhookEndpointSchema, type WebhookEndpointService } from "../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { readUpdate } from "../contract/field-rules.js";
import { apiError, invalidArgument, notFound, violationsError } from "../shared/errors.js";
import type { Clock } from "../shared/clock.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { Dispatcher } from "./dispatcher.js";
import { MAX_ENDPOINTS_PER_WORKSPACE, type EndpointRecord, type EndpointStore } from "./endpoint-store.js";
import { checkEndpointUrl, type TargetPolicy } from "./target-policy.js";

const ts = (date: Date | null) => (date ? timestampFromDate(date) : undefined);

/** Longest overlap of a rotated signing secret with its successor, in ms (as for API keys). */
export const MAX_ROTATION_OVERLAP_MS = 7 * 86_400_000;
/** Overlap of a rotated signing secret when none is given, in ms. */
export const DEFAULT_ROTATION_OVERLAP_MS = 86_400_000;

/** The console form of an endpoint at `now`: never the secret, only its hint. */
export function endpointToProto(r: EndpointRecord, now = new Date()): MessageInitShape<typeof WebhookEndpointSchema> {
  const previousUntil = r.previous_secret_expires_at && r.previous_secret_expires_at.getTime() > now.getTime() ? r.previous_secret_expires_at : null;
  return {
    id: r._id,
    object: "webhook",
    workspaceId: r.workspace_id,
    name: r.name,
    url: r.url,
    secretHint: r.secret_hint,
    events: r.events,
    enabled: r.enabled,
    disabledReason: r.disabled_reason ?? undefined,
    disabledAt: ts(r.disabled_at),
    consecutiveFailures: r.consecutive_failures,
    lastSuccessAt: ts(r.last_success_at),
    lastFailureAt: ts(r.last_failure_at),
    createdAt: ts(r.created_at),
    updatedAt: ts(r.updated_at),
    previousSecretExpiresAt: ts(previousUntil),
    rateLimit: r.rate_limit ?? undefined,
  };
}

const ENDPOINT_ID = /^whk_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Loads an endpoint by id or throws not_found (also for an id of the wrong shape). */
export async function requireEndpoint(endpoints: EndpointStore, id: string): Promise<EndpointRecord> {
  const record = ENDPOINT_ID.test(id) ? await endpoints.get(id) : null;
  if (!record) throw notFound("webhook_endpoint", id);
  return record;
}

/** Fields UpdateWebhookEndpoint may change (its update_mask paths). */
const UPDATABLE = ["name", "url", "events", "rate_limit"] as const;

/**
 * Handlers of messaging.console.v1.WebhookEndpointService (spec §Webhook
 * endpoint, §States and transitions). Create validates every field at once
 * (name 1 to 200 characters; URL by checkEndpointUrl; events at least one of
 * the spec's types, no repeats; at most MAX_ENDPOINTS_PER_WORKSPACE per
 * workspace) and answers the secret once; a rotation answers the new one
 * once and keeps the old one verifying for an overlap. Enable resumes the deliveries
 * paused while disabled; disable keeps the first reason; delete cancels the
 * pending deliveries. Changes reach the engine of this process at once and
 * other processes within a second.
 */
export function createEndpointService(deps: {
  endpoints: EndpointStore;
  clock: Clock;
  workspaces: WorkspaceStore;
  dispatcher: Dispatcher;
  policy: TargetPolicy;
}): Partial<ServiceImpl<typeof WebhookEndpointService>> {
  const { endpoints, workspaces, dispatcher, policy, clock } = deps;
  const changed = (r: EndpointRecord) => dispatcher.cache.invalidate(r._id, r.workspace_id);

  return {
    async createWebhookEndpoint(req, context) {
      const name = req.name.trim();
      // name and events are rules of the contract (webhook_endpoints.proto); the URL's depend on the service's policy.
      const urlRule = checkEndpointUrl(req.url, policy);
      if (urlRule !== undefined) throw violationsError([{ field: "url", description: urlRule }]);
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      if ((await endpoints.count(req.workspaceId)) >= MAX_ENDPOINTS_PER_WORKSPACE) {
        throw apiError("failed_precondition", `A workspace has at most ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints; delete one first`, {
          limit: String(MAX_ENDPOINTS_PER_WORKSPACE),
        });
      }
      const { record, secret } = await endpoints.create({ workspaceId: req.workspaceId, name, url: req.url, events: [...req.events], rateLimit: req.rateLimit ?? null });
      changed(record);
      return { webhookEndpoint: endpointToProto(record), secret };
    },
    async getWebhookEndpoint(req, context) {
      const record = await requireEndpoint(endpoints, req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { webhookEndpoint: endpointToProto(record) };
    },
    async listWebhookEndpoints(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await endpoints.list(req.workspaceId, req);
      return { object: "list", data: page.items.map((r) => endpointToProto(r)), total: page.total, nextPageToken: page.nextPageToken };
    },
    async updateWebhookEndpoint(req, context) {
      const input = req.webhookEndpoint ?? create(WebhookEndpointSchema);
      const existing = await requireEndpoint(endpoints, input.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const { paths, violations } = readUpdate({ field: "webhook_endpoint", schema: WebhookEndpointSchema, resource: input, mask: req.updateMask, updatable: UPDATABLE });
      const urlRule = paths.includes("url") ? checkEndpointUrl(input.url, policy) : undefined;
      if (urlRule !== undefined) violations.push({ field: "webhook_endpoint.url", description: urlRule });
      if (violations.length > 0) throw violationsError(violations);
      const record = await endpoints.update(existing._id, {
        ...(paths.includes("name") ? { name: input.name.trim() } : {}),
        ...(paths.includes("url") ? { url: input.url } : {}),
        ...(paths.includes("events") ? { events: [...input.events] } : {}),
        ...(paths.includes("rate_limit") ? { rate_limit: input.rateLimit ?? null } : {}),
      });
      if (!record) throw notFound("webhook_endpoint", existing._id);
      changed(record);
      return { webhookEndpoint: endpointToProto(record) };
    },
    async enableWebhookEndpoint(req, context) {
      const existing = await requireEndpoint(endpoints, req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const record = existing.enabled ? existing : await endpoints.enable(req.id);
      if (!record) throw notFound("webhook_endpoint", req.id);
      changed(record);
      await dispatcher.resume(record._id);
      return { webhookEndpoint: endpointToProto(record) };
    },
    async disableWebhookEndpoint(req, context) {
      const reason = req.reason.trim();
      const existing = await requireEndpoint(endpoints, req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const record = await endpoints.disable(req.id, reason === "" ? "Disabled in the console" : reason);
      if (!record) throw notFound("webhook_endpoint", req.id);
      changed(record);
      return { webhookEndpoint: endpointToProto(record) };
    },
    async rotateWebhookEndpointSecret(req, context) {
      const existing = await requireEndpoint(endpoints, req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const now = clock.now();
      const until = req.previousSecretExpiresAt ? timestampDate(req.previousSecretExpiresAt) : new Date(now.getTime() + DEFAULT_ROTATION_OVERLAP_MS);
      if (until.getTime() > now.getTime() + MAX_ROTATION_OVERLAP_MS) throw invalidArgument("previous_secret_expires_at", "must be at most 7 days from now");
      const rotated = await endpoints.rotateSecret(existing._id, until);
      if (!rotated) throw apiError("conflict", "The endpoint changed while its secret was rotated (deleted or rotated at the same time); read it and try again", { endpoint_id: existing._id });
      changed(rotated.record);
      return { webhookEndpoint: endpointToProto(rotated.record, now), secret: rotated.secret };
    },
    async deleteWebhookEndpoint(req, context) {
      const existing = await requireEndpoint(endpoints, req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      if (!(await endpoints.delete(req.id))) throw notFound("webhook_endpoint", req.id);
      changed(existing);
      // Its deliveries not yet settled end as canceled.
      await dispatcher.cancel(existing._id);
      return {};
    },
  };
}
