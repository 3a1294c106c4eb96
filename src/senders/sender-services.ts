import type { ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  SenderSchema as ConsoleSenderSchema,
  SenderStatus as ConsoleSenderStatus,
  ThroughputSource as ConsoleThroughputSource,
  type SenderQueueSchema,
  type SenderService as ConsoleSenderService,
} from "../../gen/messaging/console/v1/senders_pb.js";
import { QueuedReasonSchema } from "../../gen/messaging/v1/messages_pb.js";
import { SenderStatus, type SenderSchema, type SenderService } from "../../gen/messaging/v1/senders_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { principalOf } from "../gateway/request-state.js";
import { readUpdate } from "../contract/field-rules.js";
import { enumValueFromJson } from "../contract/rest-json.js";
import type { MessageStore } from "../messages/message-store.js";
import type { BusinessNumber, NetworkAdapter } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { apiError, notFound, violationsError } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import {
  DEFAULT_THROUGHPUT_MPS,
  SENDER_CHANGE_DELAY_MS,
  throughputOf,
  type SenderChanges,
  type SenderRecord,
  type SenderStore,
  type ThroughputSource,
} from "./sender-store.js";

/** Fields UpdateSender may change (its update_mask paths). */
const UPDATABLE = ["name", "throughput_mps"] as const;

/** The range of a sender's throughput (messaging.console.v1.Sender.throughput_mps), in messages per second. */
export const THROUGHPUT_MPS_RANGE = { min: 1, max: 1000 } as const;

/** The console form of a ThroughputSource. */
const THROUGHPUT_SOURCES: Record<ThroughputSource, ConsoleThroughputSource> = {
  given: ConsoleThroughputSource.GIVEN,
  network: ConsoleThroughputSource.NETWORK,
  default: ConsoleThroughputSource.DEFAULT,
};

/**
 * The throughput a sender created without one starts with (README "A sender's throughput"): the figure `network` states for its
 * number (NetworkAdapter.readThroughput; with WhatsApp the number's throughput level), brought into
 * THROUGHPUT_MPS_RANGE (a whole number, 1 to 1,000), source "network"; else WhatsApp's default,
 * DEFAULT_THROUGHPUT_MPS, source "default". Never throws: a read that fails, or states none or no finite figure,
 * is logged as a warning and gives the default, so that the network's answer never fails a sender's creation. An
 * adapter without readThroughput states none, silently.
 */
export async function initialThroughput(
  network: Pick<NetworkAdapter, "name" | "readThroughput">,
  number: BusinessNumber,
  logger: Logger,
): Promise<{ throughputMps: number; source: ThroughputSource }> {
  const fallback = { throughputMps: DEFAULT_THROUGHPUT_MPS, source: "default" as const };
  if (!network.readThroughput) return fallback;
  const where = { network: network.name, phoneNumber: number.phoneNumber, phoneNumberId: number.phoneNumberId, defaultMps: DEFAULT_THROUGHPUT_MPS };
  let stated: number | null;
  try {
    stated = await network.readThroughput(number);
  } catch (err) {
    logger.warn({ ...where, err }, "sender created at the default throughput: the network's throughput of the number could not be read");
    return fallback;
  }
  if (stated === null || !Number.isFinite(stated)) {
    logger.warn({ ...where, stated }, "sender created at the default throughput: the network states no throughput for the number");
    return fallback;
  }
  const throughputMps = Math.min(THROUGHPUT_MPS_RANGE.max, Math.max(THROUGHPUT_MPS_RANGE.min, Math.floor(stated)));
  return { throughputMps, source: "network" };
}

/** The window of a sender's rate actually sent (SenderQueue.sent_last_minute_count), in ms. */
export const SENT_RATE_WINDOW_MS = 60_000;

/**
 * A sender's queue at `now` (messaging.console.v1.SenderQueue, README "Pacing", "A sender's queue"): its queued
 * messages (one read of the messages' `queue_by_sender` index), what it handed to the network in the last minute
 * (a count of the `sent_by_sender` index) and the network's refusals recorded on the sender, most frequent first.
 */
export async function readSenderQueue(
  messages: Pick<MessageStore, "queuedBySender" | "countSentSince">,
  sender: SenderRecord,
  now: Date,
): Promise<MessageInitShape<typeof SenderQueueSchema>> {
  const [queue, sent] = await Promise.all([
    messages.queuedBySender(now, sender._id),
    messages.countSentSince(sender._id, new Date(now.getTime() - SENT_RATE_WINDOW_MS)),
  ]);
  const oldest = queue?.oldestQueuedAt ?? null;
  return {
    messageCount: queue?.depth ?? 0,
    oldestQueuedAt: oldest ? timestampFromDate(oldest) : undefined,
    oldestWaitSeconds: oldest ? Math.max(0, now.getTime() - oldest.getTime()) / 1000 : 0,
    reasons: [...(queue?.byReason ?? [])].map(([reason, n]) => ({ reason: enumValueFromJson(QueuedReasonSchema, reason) ?? 0, messageCount: n })),
    scheduledCount: queue?.scheduled ?? 0,
    sentLastMinuteCount: sent,
    sentLastMinuteMps: sent / (SENT_RATE_WINDOW_MS / 1000),
    networkRefusals: Object.entries(sender.network_refusals ?? {})
      .map(([code, { count, last_refused_at }]) => ({ code: Number(code), count, lastRefusedAt: timestampFromDate(last_refused_at) }))
      .sort((a, b) => b.count - a.count || a.code - b.code),
  };
}

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

/** The console form of a sender (messaging.console.v1.Sender); `queue` only from GetSender. */
export function consoleSenderToProto(record: SenderRecord, queue?: MessageInitShape<typeof SenderQueueSchema>): MessageInitShape<typeof ConsoleSenderSchema> {
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
    throughputSource: record.throughput_source ? THROUGHPUT_SOURCES[record.throughput_source] : ConsoleThroughputSource.UNSPECIFIED,
    queue,
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
 * throughput 1 to 1,000 messages per second: unless given, the network's
 * figure for the number, else 80 (initialThroughput)),
 * list, get (with its queue, readSenderQueue), update of name and throughput
 * (AIP-134 update mask; dispatch in other processes sees it within
 * SENDER_CHANGE_DELAY_MS; a raised throughput makes the messages sent back
 * to wait under the old one due once every process has it), archive
 * (idempotent). `network` is the adapter NETWORK chooses: the one asked for
 * a new number's throughput.
 */
export function createConsoleSenderService(deps: {
  senders: SenderStore;
  messages: Pick<MessageStore, "queuedBySender" | "countSentSince" | "releaseQueued">;
  workspaces: WorkspaceStore;
  network: Pick<NetworkAdapter, "name" | "readThroughput">;
  clock: Clock;
  logger: Logger;
}): Partial<ServiceImpl<typeof ConsoleSenderService>> {
  const { senders, workspaces, messages, network, clock, logger } = deps;
  return {
    async createSender(req, context) {
      const name = req.name.trim();
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      const whatsappPhoneNumberId = req.whatsappPhoneNumberId || null;
      // A throughput given wins; without one, the network's figure for the number (README "A sender's throughput"),
      // read before the check of the number's uniqueness so that the read's wait does not stand between the check
      // and the insert.
      const { throughputMps, source } = req.throughputMps
        ? { throughputMps: req.throughputMps, source: "given" as const }
        : await initialThroughput(network, { phoneNumber: req.phoneNumber, phoneNumberId: whatsappPhoneNumberId }, logger);
      if (await senders.findActiveByPhone(req.workspaceId, req.phoneNumber)) {
        throw apiError("conflict", `The workspace already has an active sender with phone number ${req.phoneNumber}`, {
          field: "phone_number",
        });
      }
      const record = await senders.create({
        workspaceId: req.workspaceId,
        phoneNumber: req.phoneNumber,
        name,
        whatsappPhoneNumberId,
        throughputMps,
        throughputSource: source,
      });
      return { sender: consoleSenderToProto(record) };
    },
    async listSenders(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await senders.list(req.workspaceId, req);
      return { object: "list", data: page.items.map((r) => consoleSenderToProto(r)), total: page.total, nextPageToken: page.nextPageToken };
    },
    async getSender(req, context) {
      const record = await senders.getStored(req.id);
      if (!record) throw notFound("sender", req.id);
      requireWorkspaceAccess(context, record.workspace_id, "read");
      return { sender: consoleSenderToProto(record, await readSenderQueue(messages, record, clock.now())) };
    },
    async updateSender(req, context) {
      const input = req.sender;
      const id = input?.id ?? "";
      const existing = id ? await senders.get(id) : null;
      if (!existing || !input) throw notFound("sender", id);
      requireWorkspaceAccess(context, existing.workspace_id, "write");
      const { paths, violations } = readUpdate({ field: "sender", schema: ConsoleSenderSchema, resource: input, mask: req.updateMask, updatable: UPDATABLE });
      if (violations.length > 0) throw violationsError(violations);
      const changes: SenderChanges = {};
      if (paths.includes("name")) changes.name = input.name.trim();
      if (paths.includes("throughput_mps")) {
        changes.throughput_mps = input.throughputMps;
        changes.throughput_source = "given";
      }
      const record = await senders.update(id, changes);
      if (!record) throw notFound("sender", id);
      // A raised rate: the messages waiting for a turn under the old one take a turn at the new one, once every
      // process's cache has it (README "Pacing", "A sender's queue").
      if (changes.throughput_mps !== undefined && changes.throughput_mps > throughputOf(existing)) {
        await messages.releaseQueued({ senderId: id }, "sender_rate", new Date(clock.now().getTime() + SENDER_CHANGE_DELAY_MS));
      }
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
