import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageStatsService } from "../../gen/messaging/console/v1/message_stats_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import type { Clock } from "../shared/clock.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { MessageStore } from "./message-store.js";

const STATUSES = ["scheduled", "accepted", "sent", "delivered", "read", "failed", "canceled"] as const;

/**
 * Handlers of messaging.console.v1.MessageStatsService: a workspace's
 * outbound messages counted by current status, and the messages and replies
 * of a recent window (the last 24 hours unless `since` is given), for the
 * console's overview. Viewers and admins of the workspace may read it.
 */
export function createMessageStatsService(deps: {
  messages: MessageStore;
  workspaces: WorkspaceStore;
  clock: Clock;
}): Partial<ServiceImpl<typeof MessageStatsService>> {
  const { messages, workspaces, clock } = deps;
  return {
    async getMessageStats(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const since = req.since ? timestampDate(req.since) : new Date(clock.now().getTime() - 86_400_000);
      const { byStatus: counts, outboundSince: recent, inboundSince: recentReplies } = await messages.countForStats(req.workspaceId, STATUSES, since);
      const byStatus = Object.fromEntries(STATUSES.map((s, i) => [s, counts[i] as number]).filter(([, n]) => (n as number) > 0));
      return {
        byStatus,
        total: counts.reduce((a, b) => a + b, 0),
        recent,
        recentReplies,
        since: timestampFromDate(since),
      };
    },
  };
}
