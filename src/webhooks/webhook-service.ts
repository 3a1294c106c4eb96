import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { WebhookService } from "../../gen/messaging/v1/webhooks_pb.js";
import { principalOf } from "../gateway/request-state.js";
import type { EndpointStore } from "./endpoint-store.js";

/**
 * Handlers of messaging.v1.WebhookService: GET /v1/webhook (scope
 * webhooks:read) lists the calling key's workspace's endpoints with exactly
 * the spec's fields (§Webhook endpoint): never the secret, only its hint;
 * disabled_reason null unless disabled; last_success_at null or a
 * millisecond time. Newest first; no pagination (at most
 * MAX_ENDPOINTS_PER_WORKSPACE).
 */
export function createWebhookService(endpoints: EndpointStore): Partial<ServiceImpl<typeof WebhookService>> {
  return {
    async listWebhooks(_req, context) {
      const records = await endpoints.listAll(principalOf(context).workspaceId);
      return {
        object: "list",
        total: records.length,
        data: records.map((r) => ({
          id: r._id,
          object: "webhook",
          name: r.name,
          url: r.url,
          secretHint: r.secret_hint,
          events: r.events,
          enabled: r.enabled,
          disabledReason: r.disabled_reason ?? undefined,
          lastSuccessAt: r.last_success_at ? timestampFromDate(r.last_success_at) : undefined,
        })),
      };
    },
  };
}
