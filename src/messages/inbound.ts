import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { MessageEventDataSchema } from "../../gen/messaging/v1/events_pb.js";
import type { CreditStore } from "../credits/credit-store.js";
import type { EventBus, EventType } from "../events/event-bus.js";
import { toRestJson } from "../contract/rest-json.js";
import {
  inboundText,
  type InboundContent,
  type NetworkErrorInfo,
  type NetworkReport,
  type StatusReport,
} from "../network/network.js";
import type { SenderStore } from "../senders/sender-store.js";
import type { Clock } from "../shared/clock.js";
import { newId } from "../shared/ids.js";
import type { Logger } from "../shared/logger.js";
import { LRUCache } from "lru-cache";
import { GroupCommit } from "../store/group-commit.js";
import { waiting, type LeasedQueue, type Taken } from "../jobs/leased-queue.js";
import { MergedUpdates } from "../store/merged-updates.js";
import type { MessageRecord, MessageStore, ReportMatch, StatusWrite } from "./message-store.js";
import type { OptOuts } from "../optouts/opt-outs.js";
import type { ReportRecord, ReportStore } from "./report-store.js";

/** The one way network reports enter the service (reconciliation, README "Design" §8). */
export interface Inbound {
  /**
   * Takes a report from any adapter (or from dispatch itself): stores it once
   * (a repeat only counts as a duplicate), then applies it when its message
   * is known. Status reports never move a message backwards (accepted < sent
   * < delivered < read; failed only from accepted or sent, and final), but
   * each distinct report sets its status time and fires its event
   * (message.sent/delivered/read/failed), late ones included: receivers
   * order by data.occurred_at (spec §Events). An inbound message becomes a
   * msg_<uuid> record (direction inbound) and fires message.received.
   * A failure before delivery refunds the message's credits. A reply that
   * is an opt-out or opt-in keyword changes the workspace's opt-out list, as
   * does WhatsApp's 131050 on a marketing template (src/optouts/opt-outs.ts).
   */
  handle(report: NetworkReport): Promise<void>;
  /**
   * Hands inbound messages whose content is of `type` to `handler` instead
   * of firing message.received (flow submissions fire flow.completed). The
   * handler runs after the inbound message is stored, and again when a crash
   * interrupted it (the report is applied anew), so it must be idempotent.
   */
  onInbound(type: InboundContent["type"], handler: (message: MessageRecord) => Promise<void>): void;
  /**
   * Dispatch's answer from the network: records the network id and applies
   * "sent" to `message` in one update (and fires message.sent), dated `at`
   * (when the message was handed to the network).
   */
  dispatched(message: MessageRecord, networkMessageId: string, at: Date): Promise<void>;
  /**
   * What follows a status the service set itself on a message it stopped
   * before the network had it (MessageStore.cancel, expireWaiting): fires
   * its event (message.canceled, or message.failed with the message's error)
   * and gives its credits back. Idempotent; a crash in between is completed
   * by recover (the event mark and the refund due are on the message).
   */
  stopped(message: MessageRecord): Promise<void>;
  /** Refunds a failed or canceled message whose refund is due (idempotent). */
  refund(message: Pick<MessageRecord, "_id" | "workspace_id" | "credits">): Promise<void>;
  /**
   * Recovery after a crash: fails as expired the messages waiting for
   * dispatch past their valid_until (MessageStore.expireWaiting), fires the
   * events of status changes made more than `olderThanMs` ago whose event
   * was not recorded yet, and completes due refunds. Resolves to the count. (Reports not applied are a queue:
   * drain.)
   */
  recover(olderThanMs: number): Promise<number>;
  /** Starts claiming reports that wait (worker role): those whose message was not known yet, and those whose process stopped. */
  start(): void;
  /** Claims due reports now (the recurring claim job). */
  drain(): Promise<void>;
  /** Stops claiming and waits for the reports being applied, then writes the follow-ups held (event marks to clear, repeats to count) (graceful shutdown). */
  close(): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/**
 * How long a message's follow-ups (event marks to clear, repeats to count) wait for more of the same message,
 * in ms: its sent, delivered and read within this time cost one write for all of them.
 */
export const FOLLOW_UP_DELAY_MS = 1000;

const EVENT_OF: Record<string, EventType> = {
  sent: "message.sent",
  delivered: "message.delivered",
  read: "message.read",
  failed: "message.failed",
  canceled: "message.canceled",
  received: "message.received",
};

/** Creates the inbound path over `db`. */
export function createInbound(deps: {
  reports: ReportStore;
  messages: MessageStore;
  senders: SenderStore;
  credits: CreditStore;
  events: EventBus;
  clock: Clock;
  logger: Logger;
  /**
   * A report held longer than this and not applied is taken over (its
   * process stopped), and a report whose message is not known yet is tried
   * again after this, in ms (RECOVERY_AGE_MS).
   */
  claimTimeoutMs: number;
  /** Names this process in the reports' leases. */
  owner: string;
  /** How often a worker claims due reports, in ms (QUEUE_CLAIM_INTERVAL_MS). */
  claimIntervalMs: number;
  /** The opt-out lists, which replies and network failures change. */
  optOuts: Pick<OptOuts, "reply" | "networkFailure">;
}): Inbound {
  const { reports, messages, senders, credits, events, clock, logger, optOuts } = deps;
  const inboundHandlers = new Map<InboundContent["type"], (message: MessageRecord) => Promise<void>>();

  /**
   * Reports that wait (src/jobs/leased-queue.ts): each taken is applied
   * (appliedLater); one whose message is still unknown is tried again a
   * while later, for a day, then kept unapplied.
   */
  const queue: LeasedQueue<ReportRecord> = reports.queue({
    name: "network reports",
    owner: deps.owner,
    clock,
    logger,
    leaseMs: deps.claimTimeoutMs,
    maxInFlight: 200,
    intervalMs: deps.claimIntervalMs,
    run: (taken) => appliedLater(taken),
  });

  /** Marks a report applied (and its message), out of the queue, while `lease` holds it. */
  function markApplied(row: ReportRecord, lease: string, messageId?: string): Promise<void> {
    return reports.markApplied(row._id, lease, clock.now(), messageId);
  }

  async function appliedLater({ record: row, lease }: Taken<ReportRecord>): Promise<void> {
    if (row.status === "received") return applyInbound(row, lease);
    const match = row.message_id ? { _id: row.message_id } : { wa_message_id: row.network_message_id };
    const applied = (await applyStatus(match, row.status as StatusReport["status"], row.occurred_at, row.error)) ?? (await messages.findOutbound(match));
    if (applied) return markApplied(row, lease, applied._id);
    // Not ours (yet): tried again later, for a day after it arrived; then it stays, unapplied, out of the queue.
    const now = clock.now();
    const change = now.getTime() - row.received_at.getTime() < 86_400_000 ? ({ kind: "release", dueAt: new Date(now.getTime() + deps.claimTimeoutMs) } as const) : ({ kind: "complete" } as const);
    await reports.endLease(row._id, lease, change);
  }

  /** What an event says of its report; `dedupe` names the occurrence (the same name never fires twice). */
  interface Occurrence {
    status: string;
    occurred_at: Date;
    error: NetworkErrorInfo | null;
    network_message_id: string;
    dedupe: string;
  }

  async function publish(message: MessageRecord, row: Occurrence): Promise<void> {
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
      dedupeKey: row.dedupe, // a report applied again after a crash fires no second event
      dedupeAt: message.created_at,
    });
  }

  async function refund(message: Pick<MessageRecord, "_id" | "workspace_id" | "credits">): Promise<void> {
    await credits.refund(message.workspace_id, message._id, message.credits, async () => {
      await messages.markRefunded(message._id);
    });
  }

  /**
   * A message's follow-ups: the marks of its events stored since (`events_pending`, cleared) and the repeated
   * reports since (`duplicate_reports`, counted), held for FOLLOW_UP_DELAY_MS and merged: the clears of a
   * message's sent, delivered and read, and the network's repeat of the "sent" dispatch recorded, go in one
   * update when they come within that time; the due messages of many in one bulkWrite. A crash loses what is
   * held: the marks stay and the sweep fires their events again (the same events, their ids derived), and the
   * repeats go uncounted.
   */
  const followUps = new MergedUpdates<{ published: string[]; duplicates: number }>({
    delayMs: FOLLOW_UP_DELAY_MS,
    maxBatch: 1000,
    merge: (a, b) => ({ published: [...a.published, ...b.published], duplicates: a.duplicates + b.duplicates }),
    write: (entries) => messages.writeFollowUps(entries),
    onError: (err) => logger.warn({ err }, "clearing event marks failed; the sweep fires their events again"),
  });
  /**
   * Reports this process applied lately ("<message id>:<status>"): a repeat
   * (the network's own "sent" after dispatch recorded it, a redelivered
   * webhook) is known without a read and only counted, in the follow-ups.
   */
  const applied = new LRUCache<string, true>({ max: 100_000 });
  const countRepeat = (messageId: string) => followUps.add(messageId, { published: [], duplicates: 1 });
  /** Dispatch's "sent", many messages at once (MessageStore.recordSent). */
  const sentWrites = new GroupCommit<{ messageId: string; networkMessageId: string; at: Date }, void>(async (items) => {
    await messages.recordSent(items, clock.now());
    return items.map(() => undefined);
  }, 200);

  /** Fires the event of `status` of `message` (idempotent: its id is derived from both), then clears its mark (in the follow-ups). */
  async function publishStatus(message: MessageRecord, status: string, occurredAt: Date, error: NetworkErrorInfo | null): Promise<void> {
    await publish(message, { status, occurred_at: occurredAt, error, network_message_id: message.wa_message_id ?? "", dedupe: `status:${message._id}:${status}` });
    // A failure that says the recipient stopped marketing messages puts it on the opt-out list; before the mark is
    // cleared, so that the sweep repeats it (idempotent) should this process stop in between.
    if (status === "failed" && error) {
      await optOuts.networkFailure({
        workspaceId: message.workspace_id,
        to: message.to,
        errorCode: error.code,
        templateCategory: message.template_category ?? "utility",
        messageId: message._id,
        at: occurredAt,
      });
    }
    followUps.add(message._id, { published: [status], duplicates: 0 });
  }

  /** What follows a status change (`updated`: the message after it): its event, and the refund a failure makes due. */
  async function afterStatus(updated: MessageRecord, status: StatusReport["status"], at: Date, error: NetworkErrorInfo | null): Promise<void> {
    await publishStatus(updated, status, at, error);
    if (updated.status === "failed" && updated.refund_state === "due" && status === "failed") await refund(updated);
  }

  /** The event and refund of a message the service stopped itself (Inbound.stopped). */
  async function stopped(message: MessageRecord): Promise<void> {
    if (message.status !== "canceled" && message.status !== "failed") return;
    const at = (message.status === "canceled" ? message.canceled_at : message.failed_at) ?? clock.now();
    await publishStatus(message, message.status, at, message.status === "failed" ? message.error : null);
    if (message.refund_state === "due") await refund(message);
  }

  /**
   * Applies a status report (MessageStore.applyStatusReport) and what
   * follows it (the sweep's path). Resolves to the message after the update,
   * or null when the report changed nothing (a duplicate) or no message matched.
   */
  async function applyStatus(match: ReportMatch, status: StatusReport["status"], at: Date, error: NetworkErrorInfo | null): Promise<MessageRecord | null> {
    const updated = await messages.applyStatusReport({ match, status, at, error, set: {} }, clock.now());
    if (!updated) return null;
    applied.set(`${updated._id}:${status}`, true); // (a live batch marks its own: liveStatuses)
    await afterStatus(updated, status, at, error);
    return updated;
  }

  /**
   * Live status reports, many at once: each report's forward update
   * (statusUpdates) in one ordered bulkWrite, then one read of the messages
   * the batch names (two when it names some by our id and some by the
   * network's). When some forward updates matched nothing, the read tells
   * which reports are late (their message is found and does not hold their
   * status in `reports` yet): only those get their late update, in report
   * order, and their messages are read again. The same as writing each
   * report's forward then late update one after the other: a late update
   * never changes what a forward update matches (the status), and matches
   * nothing once its message holds its status (`reports` only grows), so the
   * reports left out are those whose late update would have changed nothing.
   *
   * Answers each report's message, and whether the report changed it: the
   * message holds the status in `reports` and its event mark in
   * `events_pending` (the mark stays until the event is stored, which is
   * after this read), and this process has not applied that status before
   * (`applied`: a repeat in the same batch, or in a later one while the
   * event is being stored). A repeat that another process applied a moment
   * ago (its mark not cleared yet: up to FOLLOW_UP_DELAY_MS) is taken as
   * applied: its event is the same event (the id is derived), and only its
   * count as a repeat is lost.
   */
  const liveStatuses = new GroupCommit<StatusWrite, { message: MessageRecord | null; changed: boolean }>(async (items) => {
    const found = await messages.applyStatusReports(items, clock.now());
    return items.map(({ status }, i) => {
      const message = found[i] ?? null;
      const key = `${message?._id}:${status}`;
      const changed = !!message && !applied.has(key) && !!message.reports?.includes(status) && !!message.events_pending?.includes(status);
      if (changed) applied.set(key, true);
      return { message, changed };
    });
  }, 200);

  /** Records an inbound message (once, under the id kept on its report row) and fires message.received; `lease` holds the row. */
  async function applyInbound(row: ReportRecord, lease: string): Promise<void> {
    const inbound = row.inbound;
    if (!inbound) return;
    const original = inbound.replyToNetworkMessageId
      ? await messages.findOutbound({ wa_message_id: inbound.replyToNetworkMessageId })
      : null;
    const sender = original?.sender_id ? await senders.get(original.sender_id) : await senders.findInboundTarget(inbound.to);
    const workspaceId = original?.workspace_id ?? sender?.workspace_id;
    if (!workspaceId) {
      logger.warn({ networkMessageId: row.network_message_id, to: inbound.to }, "inbound message for no known sender: kept, not attributed");
      return markApplied(row, lease);
    }
    const messageId = row.message_id ?? newId("msg");
    if (!row.message_id) await reports.setMessageId(row._id, lease, messageId);
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
    await messages.insertInbound(record);
    const handler = inboundHandlers.get(inbound.content.type);
    if (handler) await handler(record);
    else await publish(record, { status: "received", occurred_at: row.occurred_at, error: null, network_message_id: row.network_message_id, dedupe: `report:${row._id}` });
    // A keyword (STOP, START …) changes the workspace's opt-out list; applied again after a crash, the same change.
    const text = inboundText(inbound.content);
    if (text !== null) await optOuts.reply({ workspaceId, from: inbound.from, text, messageId, at: row.occurred_at });
    await markApplied(row, lease);
  }

  return {
    onInbound(type, handler) {
      inboundHandlers.set(type, handler);
    },
    async handle(report) {
      const now = clock.now();
      if (report.kind === "message") {
        const { kind: _kind, occurredAt, ...inbound } = report;
        const held = queue.held(now);
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
          ...held.fields,
          duplicates: 0,
        };
        if (await reports.insertOnce(row)) await applyInbound(row, held.lease);
        return;
      }
      if (report.messageId && applied.has(`${report.messageId}:${report.status}`)) return countRepeat(report.messageId);
      // Matched by our message id (echoed by the network) or else by the network's id.
      const match = report.messageId ? { _id: report.messageId } : report.networkMessageId ? { wa_message_id: report.networkMessageId } : null;
      if (!match) return;
      const set = report.messageId && report.networkMessageId ? { wa_message_id: report.networkMessageId } : {};
      const error = report.error ?? null;
      const { message, changed } = await liveStatuses.add({ match, status: report.status, at: report.occurredAt, error, set });
      if (message && changed) return afterStatus(message, report.status, report.occurredAt, error);
      // A duplicate: counted on the message, nothing else changes.
      if (message) return countRepeat(message._id);
      // Not ours yet (the network may report before dispatch recorded its id): kept, and applied from the queue later.
      await reports.insertOnce({
        _id: `${report.networkMessageId || report.messageId}:${report.status}`,
        message_id: report.messageId ?? null,
        network_message_id: report.networkMessageId,
        status: report.status,
        occurred_at: report.occurredAt,
        received_at: now,
        error: report.error ?? null,
        inbound: null,
        applied_at: null,
        ...waiting(new Date(now.getTime() + deps.claimTimeoutMs)),
        duplicates: 0,
      });
      queue.wakeAt(new Date(now.getTime() + deps.claimTimeoutMs));
    },
    refund,
    stopped,
    async dispatched(message, networkMessageId, at) {
      // Marked before the write: the network's own "sent", often on its way already, is then known as a repeat.
      const first = !applied.has(`${message._id}:sent`);
      applied.set(`${message._id}:sent`, true);
      await sentWrites.add({ messageId: message._id, networkMessageId, at });
      // The event is stored once whoever fires it (its id is derived from message and status).
      if (first) await publishStatus({ ...message, wa_message_id: networkMessageId }, "sent", at, null);
    },
    async recover(olderThanMs) {
      const cutoff = new Date(clock.now().getTime() - olderThanMs);
      let done = 0;
      // Messages that waited past their validity (a retry due later, a backlog): failed as expired, refunded.
      for (const message of await messages.expireWaiting(clock.now())) {
        await stopped(message);
        done++;
      }
      // Status changes whose event a stopped process did not record: fire it now (its id makes a repeat harmless).
      const unpublished = await messages.withEventsPending(cutoff);
      for (const message of unpublished) {
        for (const status of message.events_pending ?? []) {
          const at = message[`${status}_at` as "sent_at" | "canceled_at"] ?? message.updated_at ?? clock.now();
          await publishStatus(message, status, at, status === "failed" ? message.error : null);
          done++;
        }
      }
      const due = await messages.withRefundDue(cutoff);
      for (const message of due) {
        await refund(message);
        done++;
      }
      return done;
    },
    start() {
      queue.start();
      queue.poke();
    },
    drain: () => queue.drain(),
    async close() {
      await queue.stop();
      await followUps.flush();
    },
    async ensureIndexes() {
      await reports.ensureIndexes(clock.now());
    },
  };
}
