import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  SenderStatus as ConsoleSenderStatus,
  type SenderSchema as ConsoleSenderSchema,
  type SenderService as ConsoleSenderService,
} from "../../gen/messaging/console/v1/senders_pb.js";
import { SenderStatus, type SenderSchema, type SenderService } from "../../gen/messaging/v1/senders_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { principalOf } from "../gateway/request-state.js";
import { apiError, notFound } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import { DEFAULT_THROUGHPUT_MPS, throughputOf, type SenderRecord, type SenderStore } from "./sender-store.js";

/** The public form of a sender (messaging.v1.Sender). */
export function senderToProto(record: SenderRecord): MessageInitShape<typeof SenderSchema> {
  return {
    id: record._id,
    object: "sender",
    phoneNumber: record.phone_number,
    name: record.name,
    status: record.status === "active" ? SenderStatus.ACTIVE : SenderStatus.ARCHIVED,
    createdAt: timestampFromDate(record.created_at),
  };
}

/** The console form of a sender (messaging.console.v1.Sender). */
export function consoleSenderToProto(record: SenderRecord): MessageInitShape<typeof ConsoleSenderSchema> {
  return {
    id: record._id,
    object: "sender",
    workspaceId: record.workspace_id,
    phoneNumber: record.phone_number,
    name: record.name,
    status: record.status === "active" ? ConsoleSenderStatus.ACTIVE : ConsoleSenderStatus.ARCHIVED,
    whatsappPhoneNumberId: record.whatsapp_phone_number_id ?? undefined,
    createdAt: timestampFromDate(record.created_at),
    archivedAt: record.archived_at ? timestampFromDate(record.archived_at) : undefined,
    throughputMps: throughputOf(record),
  };
}

/**
 * GET /v1/senders (scope senders:read): the workspace's active senders,
 * newest first, paged. Archived senders are left out: they cannot be used.
 */
export function createPublicSenderService(senders: SenderStore): Partial<ServiceImpl<typeof SenderService>> {
  return {
    async listSenders(req, context) {
      const page = await senders.list(principalOf(context).workspaceId, req, true);
      return { object: "list", data: page.items.map(senderToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}

/**
 * Handlers of messaging.console.v1.SenderService: create (phone number 8 to
 * 15 digits with country code, unique among the workspace's active senders;
 * name 1 to 200 characters; optional WhatsApp phone number ID of digits;
 * throughput 1 to 1,000 messages per second, 80 unless given),
 * list, archive (idempotent).
 */
export function createConsoleSenderService(deps: {
  senders: SenderStore;
  workspaces: WorkspaceStore;
}): Partial<ServiceImpl<typeof ConsoleSenderService>> {
  const { senders, workspaces } = deps;
  return {
    async createSender(req, context) {
      const name = req.name.trim();
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      if (await senders.findActiveByPhone(req.workspaceId, req.phoneNumber)) {
        throw apiError("conflict", `The workspace already has an active sender with phone number ${req.phoneNumber}`, {
          field: "phone_number",
        });
      }
      const record = await senders.create({
        workspaceId: req.workspaceId,
        phoneNumber: req.phoneNumber,
        name,
        whatsappPhoneNumberId: req.whatsappPhoneNumberId || null,
        throughputMps: req.throughputMps || DEFAULT_THROUGHPUT_MPS,
      });
      return { sender: consoleSenderToProto(record) };
    },
    async listSenders(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await senders.list(req.workspaceId, req);
      return { object: "list", data: page.items.map(consoleSenderToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getSender(req, context) {
      const record = await senders.get(req.id);
      if (!record) throw notFound("sender", req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { sender: consoleSenderToProto(record) };
    },
    async archiveSender(req, context) {
      const existing = await senders.get(req.id);
      if (!existing) throw notFound("sender", req.id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const record = await senders.archive(req.id);
      if (!record) throw notFound("sender", req.id);
      return { sender: consoleSenderToProto(record) };
    },
  };
}
