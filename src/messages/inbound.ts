import type { Collection, Db } from "mongodb";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { MessageEventDataSchema } from "../../gen/messaging/v1/events_pb.js";
import type { CreditStore } from "../credits/credit-store.js";
import type { EventBus, EventType } from "../events/event-bus.js";
import { toRestJson } from "../gateway/rest-json.js";
import {
  inboundText,
  type InboundContent,
  type InboundMessageReport,
  type NetworkErrorInfo,
  type NetworkReport,
  type StatusReport,
} from "../network/network.js";
import type { SenderStore } from "../senders/sender-store.js";
import type { Clock } from "../shared/clock.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { STATUS_ORDER, type MessageRecord, type MessageStore } from "./message-store.js";

/**
 * A report as kept in `message_reports`: every distinct report the network
 * made, with when it happened and when it arrived. The id makes duplicates
 * visible: one row per network message and status (or "received").
 */
export interface ReportRecord {
  /** "<network message id or our message id>:<status>". */
  _id: string;
  /** Our message the report is about; null until it can be matched. */
  message_id: string | null;
  network_message_id: string;
  status: StatusReport["status"] | "received";
  occurred_at: Date;
  received_at: Date;
  error: NetworkErrorInfo | null;
  /** The inbound message (kind "message" reports only). */
  inbound: Omit<InboundMessageReport, "kind" | "occurredAt"> | null;
  /** When its effects (status, event) were applied; null until then. */
  applied_at: Date | null;
  /** When a process took it to apply it (so that two never apply it at once); null until then. */
  claimed_at: Date | null;
  /** How many more times the same report arrived (and was ignored). */
  duplicates: number;
}

/** The one way network reports enter the service (reconciliation, DESIGN.md §8). */
export interface Inbound {
  readonly reports: Collection<ReportRecord>;
  /**
   * Takes a report from any adapter (or from dispatch itself): stores it once
   * (a repeat only counts as a duplicate), then applies it when its message
   * is known. Status reports never move a message backwards (accepted < sent
   * < delivered < read; failed only from accepted or sent, and final), but
   * each distinct report sets its status time and fires its event
   * (message.sent/delivered/read/failed), late ones included: receivers
   * order by data.occurred_at (spec §Events). An inbound message becomes a
   * msg_<uuid> record (direction inbound) and fires message.received.
   * A failure before delivery refunds the message's credits.
   */
  handle(report: NetworkReport): Promise<void>;
  /**
   * Hands inbound messages whose content is of `type` to `handler` instead
   * of firing message.received (flow submissions fire flow.completed). The
   * handler runs after the inbound message is stored, and again when a crash
   * interrupted it (the report is applied anew), so it must be idempotent.
   */
  onInbound(type: InboundContent["type"], handler: (message: MessageRecord) => Promise<void>): void;
  /** Applies reports that arrived before dispatch recorded the network id `networkMessageId` of `messageId`. */
  attach(messageId: string, networkMessageId: string): Promise<void>;
  /** Refunds a failed message whose refund is due (idempotent). */
  refund(message: Pick<MessageRecord, "_id" | "workspace_id" | "credits">): Promise<void>;
  /**
   * Recovery after a crash: applies reports stored more than `olderThanMs`
   * ago but not applied, and completes due refunds. Resolves to the count.
   */
  recover(olderThanMs: number): Promise<number>;
  ensureIndexes(): Promise<void>;
}

const EVENT_OF: Record<string, EventType> = {
  sent: "message.sent",
  delivered: "message.delivered",
  read: "message.read",
  failed: "message.failed",
  received: "message.received",
};

/** Creates the inbound path over `db`. */
export function createInbound(deps: {
  db: Db;
  messages: MessageStore;
  senders: SenderStore;
  credits: CreditStore;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /** A report claimed longer ago than this and not applied is taken over (its process stopped), in ms (RECOVERY_AGE_MS). */
  claimTimeoutMs: number;
}): Inbound {
  const { messages, senders, credits, events, clock, logger } = deps;
  const reports = deps.db.collection<ReportRecord>("message_reports");
  const col = messages.collection;
  const inboundHandlers = new Map<InboundContent["type"], (message: MessageRecord) => Promise<void>>();

  /** Takes a stored row to apply it; false when another process applies it (or did). */
  async function claim(id: string): Promise<boolean> {
    const now = clock.now();
    const stale = new Date(now.getTime() - deps.claimTimeoutMs);
    const taken = await reports.findOneAndUpdate(
      { _id: id, applied_at: null, $or: [{ claimed_at: null }, { claimed_at: { $lt: stale } }] },
      { $set: { claimed_at: now } },
    );
    return taken !== null;
  }

  async function store(row: ReportRecord): Promise<boolean> {
    try {
      await reports.insertOne(row);
      return true;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      await reports.updateOne({ _id: row._id }, { $inc: { duplicates: 1 } });
      return false;
    }
  }

  async function publish(message: MessageRecord, row: ReportRecord): Promise<void> {
    const data = create(MessageEventDataSchema, {
      messageId: message._id,
      to: message.to,
      status: row.status,
      waMessageId: row.network_message_id || message.wa_message_id || "",
      occurredAt: timestampFromDate(row.occurred_at),
      error: row.error ?? undefined,
      from: message.direction === "inbound" ? message.from : undefined,
      text: message.content ? (inboundText(message.content) ?? undefined) : undefined,
      replyToMessageId: message.reply_to_message_id ?? undefined,
    });
    await events.publish({
      workspaceId: message.workspace_id,
      type: EVENT_OF[row.status] as EventType,
      data: toRestJson(MessageEventDataSchema, data),
      dedupeKey: `report:${row._id}`, // a report applied again after a crash fires no second event
    });
  }

  async function refund(message: Pick<MessageRecord, "_id" | "workspace_id" | "credits">): Promise<void> {
    await credits.refund(message.workspace_id, message._id, message.credits, async () => {
      await col.updateOne({ _id: message._id, refund_state: "due" }, { $set: { refund_state: "done" } });
    });
  }

  /**
   * Applies a status report to its outbound message: times, status, refund,
   * event. The message is read, the change computed, and written with one
   * update guarded by the values read (re-read and recomputed if another
   * report changed the message meanwhile).
   */
  async function applyStatus(row: ReportRecord, message: MessageRecord): Promise<void> {
    const at = row.occurred_at;
    const status = row.status;
    // A later status implies the earlier ones (Meta sends no "delivered" when a message is read at once).
    const times = status === "failed" ? ["failed"] : STATUS_ORDER.slice(1, STATUS_ORDER.indexOf(status as never) + 1);
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await col.findOne({ _id: message._id });
      if (!current) break;
      const set: Record<string, unknown> = {};
      const guard: Record<string, unknown> = { _id: current._id, status: current.status };
      for (const s of times) {
        const field = `${s}_at` as "sent_at" | "delivered_at" | "read_at" | "failed_at";
        const existing = current[field];
        // A status's own report gives its time (the earliest if several); an implied one only fills a gap.
        if (existing === null || (s === status && existing.getTime() > at.getTime())) {
          set[field] = at;
          guard[field] = existing;
        }
      }
      const failsNow = status === "failed" && (current.status === "accepted" || current.status === "sent");
      if (failsNow) Object.assign(set, { status: "failed", error: row.error, refund_state: "due" });
      const rank = STATUS_ORDER.indexOf(current.status as never);
      if (status !== "failed" && rank >= 0 && rank < STATUS_ORDER.indexOf(status as never)) set.status = status;
      if (Object.keys(set).length > 0 && (await col.updateOne(guard, { $set: set })).matchedCount === 0) continue;
      if (failsNow) await refund(current);
      break;
    }
    await publish(message, row);
    await reports.updateOne({ _id: row._id }, { $set: { applied_at: clock.now(), message_id: message._id } });
  }

  /** Records an inbound message (once, under the id kept on its report row) and fires message.received. */
  async function applyInbound(row: ReportRecord): Promise<void> {
    const inbound = row.inbound;
    if (!inbound) return;
    const original = inbound.replyToNetworkMessageId
      ? await col.findOne({ wa_message_id: inbound.replyToNetworkMessageId, direction: "outbound" })
      : null;
    const sender = original?.sender_id ? await senders.get(original.sender_id) : await senders.findInboundTarget(inbound.to);
    const workspaceId = original?.workspace_id ?? sender?.workspace_id;
    if (!workspaceId) {
      logger.warn({ networkMessageId: row.network_message_id, to: inbound.to }, "inbound message for no known sender: kept, not attributed");
      await reports.updateOne({ _id: row._id }, { $set: { applied_at: clock.now() } });
      return;
    }
    const messageId = row.message_id ?? newId("msg");
    if (!row.message_id) await reports.updateOne({ _id: row._id }, { $set: { message_id: messageId } });
    const record: MessageRecord = {
      _id: messageId,
      workspace_id: workspaceId,
      direction: "inbound",
      api_key_id: null,
      to: sender?.phone_number ?? original?.from ?? inbound.to.phoneNumber ?? "",
      from: inbound.from,
      sender_id: sender?._id ?? original?.sender_id ?? null,
      template_id: null,
      flow_token: null,
      status: "received",
      wa_message_id: row.network_message_id,
      error: null,
      credits: 0,
      created_at: row.occurred_at,
      sent_at: null,
      delivered_at: null,
      read_at: null,
      failed_at: null,
      refund_state: "none",
      content: inbound.content,
      reply_to_message_id: original?._id ?? null,
    };
    try {
      await col.insertOne(record);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    const handler = inboundHandlers.get(inbound.content.type);
    if (handler) await handler(record);
    else await publish(record, row);
    await reports.updateOne({ _id: row._id }, { $set: { applied_at: clock.now() } });
  }

  async function findFor(row: ReportRecord, messageId?: string): Promise<MessageRecord | null> {
    if (messageId ?? row.message_id) return col.findOne({ _id: (messageId ?? row.message_id) as string, direction: "outbound" });
    return row.network_message_id ? col.findOne({ wa_message_id: row.network_message_id, direction: "outbound" }) : null;
  }

  return {
    reports,
    onInbound(type, handler) {
      inboundHandlers.set(type, handler);
    },
    async handle(report) {
      const now = clock.now();
      if (report.kind === "message") {
        const { kind: _kind, occurredAt, ...inbound } = report;
        const row: ReportRecord = {
          _id: `${report.networkMessageId}:received`,
          message_id: null,
          network_message_id: report.networkMessageId,
          status: "received",
          occurred_at: occurredAt,
          received_at: now,
          error: null,
          inbound,
          applied_at: null,
          claimed_at: now,
          duplicates: 0,
        };
        if (await store(row)) await applyInbound(row);
        return;
      }
      const row: ReportRecord = {
        _id: `${report.networkMessageId || report.messageId}:${report.status}`,
        message_id: null,
        network_message_id: report.networkMessageId,
        status: report.status,
        occurred_at: report.occurredAt,
        received_at: now,
        error: report.error ?? null,
        inbound: null,
        applied_at: null,
        claimed_at: null,
        duplicates: 0,
      };
      const message = await findFor(row, report.messageId);
      row.message_id = message?._id ?? null;
      if (message) row.claimed_at = now; // this call applies it
      if (!(await store(row))) return;
      if (message) await applyStatus(row, message);
    },
    async attach(messageId, networkMessageId) {
      const message = await col.findOne({ _id: messageId });
      if (!message) return;
      const waiting = await reports.find({ network_message_id: networkMessageId, applied_at: null }).sort({ occurred_at: 1 }).toArray();
      for (const row of waiting) if (await claim(row._id)) await applyStatus(row, message);
    },
    refund,
    async recover(olderThanMs) {
      const cutoff = new Date(clock.now().getTime() - olderThanMs);
      let done = 0;
      // Reports about messages that are not ours stay unmatched; they are retried for a day.
      const dayAgo = new Date(clock.now().getTime() - 86_400_000);
      const waiting = await reports.find({ applied_at: null, received_at: { $lt: cutoff, $gt: dayAgo } }).sort({ received_at: 1 }).limit(1000).toArray();
      for (const row of waiting) {
        if (!(await claim(row._id))) continue;
        if (row.status === "received") {
          await applyInbound(row);
          done++;
          continue;
        }
        const message = await findFor(row);
        if (message) {
          await applyStatus(row, message);
          done++;
        }
      }
      const due = await col.find({ refund_state: "due", failed_at: { $lt: cutoff } }).limit(1000).toArray();
      for (const message of due) {
        await refund(message);
        done++;
      }
      return done;
    },
    async ensureIndexes() {
      await reports.createIndex({ network_message_id: 1, applied_at: 1 });
      await reports.createIndex({ applied_at: 1, received_at: 1 });
    },
  };
}
