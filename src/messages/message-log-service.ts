import type { ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Filter } from "mongodb";
import type { MessageLogService } from "../../gen/messaging/console/v1/messages_pb.js";
import { MessageStatus } from "../../gen/messaging/v1/messages_pb.js";
import { consoleActorOf, mayRead, requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { ledgerEntryToProto } from "../credits/credit-service.js";
import type { CreditStore } from "../credits/credit-store.js";
import type { EventBus, StoredEvent } from "../events/event-bus.js";
import { notFound } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { messageToProto, statusFromProto } from "./message-proto.js";
import type { MessageRecord, MessageStore } from "./message-store.js";

/** Most events GetMessage lists for one message (its status events are at most four; replies to it add one each). */
const MAX_EVENTS_PER_MESSAGE = 100;

/** The console form of a stored event (messaging.console.v1.Event). */
function eventToProto(event: StoredEvent) {
  return {
    id: event._id,
    object: "event",
    workspaceId: event.workspace_id,
    type: event.type,
    createdAt: timestampFromDate(event.created_at),
    data: event.data,
  };
}

/** The statuses a message reached, in order of time (accepted first). */
function timeline(record: MessageRecord) {
  const reached: [MessageStatus, Date | null | undefined][] = [
    [MessageStatus.ACCEPTED, record.created_at],
    [MessageStatus.SENT, record.sent_at],
    [MessageStatus.DELIVERED, record.delivered_at],
    [MessageStatus.READ, record.read_at],
    [MessageStatus.FAILED, record.failed_at],
    [MessageStatus.CANCELED, record.canceled_at],
  ];
  return reached
    .filter((entry): entry is [MessageStatus, Date] => entry[1] instanceof Date)
    .sort((a, b) => a[1].getTime() - b[1].getTime() || a[0] - b[0])
    .map(([status, at]) => ({ status, at: timestampFromDate(at) }));
}

/**
 * Handlers of messaging.console.v1.MessageLogService: the console's message
 * log of a workspace (outbound messages of every key, filtered by status,
 * recipient and creation time), one message with its status timeline, its
 * credit spend and refund and the events it caused, and one event with its
 * payload. Viewers and admins of the workspace may read it; a message or
 * event may be read by its id alone (ids are unique across workspaces).
 *
 * Errors: not_found for an unknown workspace, message or event (also one of
 * another workspace); permission_denied without access to the workspace;
 * invalid_argument for a bad page_size or page_token.
 */
export function createMessageLogService(deps: {
  messages: MessageStore;
  credits: CreditStore;
  events: EventBus;
  workspaces: WorkspaceStore;
}): Partial<ServiceImpl<typeof MessageLogService>> {
  const { messages, credits, events, workspaces } = deps;
  const authorize = async (workspaceId: string, context: Parameters<typeof requireWorkspaceAccess>[0]) => {
    await requireWorkspace(workspaces, workspaceId);
    requireWorkspaceAccess(context, workspaceId, "read");
  };
  /**
   * A record of a Get by id: in `workspaceId` when given (authorized as a
   * list is), else in its own workspace, which the caller must be able to
   * read (not_found otherwise, as for an unknown id).
   */
  const readable = async <R extends { workspace_id: string }>(
    workspaceId: string,
    context: Parameters<typeof requireWorkspaceAccess>[0],
    find: (workspaceId: string | undefined) => Promise<R | null>,
  ): Promise<R | null> => {
    if (workspaceId) {
      await authorize(workspaceId, context);
      return find(workspaceId);
    }
    const record = await find(undefined);
    if (!record || !mayRead(consoleActorOf(context), record.workspace_id)) return null;
    requireWorkspaceAccess(context, record.workspace_id, "read");
    return record;
  };
  return {
    async listMessages(req, context) {
      await authorize(req.workspaceId, context);
      const filter: Filter<MessageRecord> = { workspace_id: req.workspaceId, direction: "outbound" };
      const status = statusFromProto(req.status);
      if (status) filter.status = status;
      if (req.to) filter.to = req.to;
      if (req.createdAfter || req.createdBefore) {
        filter.created_at = {
          ...(req.createdAfter ? { $gte: timestampDate(req.createdAfter) } : {}),
          ...(req.createdBefore ? { $lt: timestampDate(req.createdBefore) } : {}),
        };
      }
      const page = await messages.list(filter, req);
      return { object: "list", data: page.items.map(messageToProto), total: page.total, nextPageToken: page.nextPageToken };
    },

    async getMessage(req, context) {
      const record = await readable(req.workspaceId, context, (workspaceId) => messages.findOutbound({ _id: req.id }, workspaceId));
      if (!record) throw notFound("message", req.id);
      const [charge, refund, about] = await Promise.all([
        credits.getEntry(`spend:${record._id}`),
        credits.getEntry(`refund:${record._id}`),
        events.aboutMessage(record._id, MAX_EVENTS_PER_MESSAGE),
      ]);
      const eventsCaused = about.filter((event) => event.workspace_id === record.workspace_id).slice(0, MAX_EVENTS_PER_MESSAGE);
      return {
        message: messageToProto(record),
        apiKeyId: record.api_key_id ?? "",
        timeline: timeline(record),
        charge: charge ? ledgerEntryToProto(charge) : undefined,
        refund: refund ? ledgerEntryToProto(refund) : undefined,
        events: eventsCaused.map(eventToProto),
      };
    },

    async getEvent(req, context) {
      const event = await readable(req.workspaceId, context, (workspaceId) => events.get(req.id, workspaceId));
      if (!event) throw notFound("event", req.id);
      return { event: eventToProto(event) };
    },
  };
}
