import { ApiKeyService } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { WorkspaceService } from "../../gen/messaging/console/v1/workspaces_pb.js";
import type { Capability, Platform } from "../capability.js";
import { registerService } from "../gateway/services.js";
import { createApiKeyService } from "./api-key-service.js";
import { createWorkspaceService } from "./workspace-service.js";

/** Console management of workspaces and their API keys. */
export function createTenancyCapability(platform: Platform): Capability {
  const { workspaces, keys, admission, clock } = platform;
  return {
    name: "tenancy",
    consoleServices: [
      registerService(
        WorkspaceService,
        createWorkspaceService(workspaces, {
          // A raised messaging limit lets the messages waiting for it go (at the workers' next claims).
          raised: (id) => platform.stores.messages.releaseQueued({ workspaceId: id }, "daily_limit", clock.now()),
          inWindow: (id) => platform.stores.messagingLimit.inWindow(id),
        }),
      ),
      registerService(ApiKeyService, createApiKeyService({ keys, workspaces, admission, clock })),
    ],
  };
}
