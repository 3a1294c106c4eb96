import type { ServiceImpl } from "@connectrpc/connect";
import type { AccountService } from "../../gen/messaging/v1/account_pb.js";
import { principalOf } from "../gateway/request-state.js";

/**
 * Handlers of messaging.v1.AccountService. GetMe (spec §GET /v1/me) answers
 * from the authenticated principal alone: no database read, so it is as
 * cheap as a call can be and suited to health checks of a client's setup.
 */
export function createAccountService(): Partial<ServiceImpl<typeof AccountService>> {
  return {
    getMe(_request, context) {
      const principal = principalOf(context);
      return {
        accountId: principal.workspaceId,
        key: { id: principal.apiKeyId, name: principal.apiKeyName, scopes: [...principal.scopes] },
        rateLimitPerMin: principal.rateLimitPerMin,
      };
    },
  };
}
