import type { Collection } from "mongodb";
import { createRunTracker } from "../jobs/run-tracker.js";
import type { JobSpec, Scheduler } from "../jobs/scheduler.js";
import { NetworkSendError, type NetworkAdapter, type NetworkErrorInfo } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { Inbound } from "./inbound.js";
import type { MessageRecord } from "./message-store.js";

/** Name of the job that hands one message to the network. */
export const DISPATCH_JOB = "messages.dispatch";

/**
 * How long Agenda keeps a dispatch run locked, in ms. A run held by a process
 * that died is taken over once its lock is this old (Agenda's default is 10
 * minutes). A run that outlives its lock in a live process is harmless: the
 * message's own claim (dispatch.state) lets only one run call the network.
 */
export const DISPATCH_LOCK_MS = 10_000;

/** Retry rules of dispatch (DISPATCH_* configuration). */
export interface DispatchOptions {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  claimTimeoutMs: number;
}

/** Wait before attempt `attempt + 1` after `attempt` failed: base·2^(attempt-1), capped. */
export function backoffMs(options: DispatchOptions, attempt: number): number {
  return Math.min(options.retryMaxMs, options.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}

/** Error recorded when retries run out without a network answer. */
const OUT_OF_RETRIES = (last: NetworkErrorInfo | null): NetworkErrorInfo => last ?? { code: 0, title: "The network could not be reached" };

/** Error recorded when a dispatch was interrupted while the network was being called. */
export const INTERRUPTED: NetworkErrorInfo = { code: 0, title: "Dispatch was interrupted while the network was called; not retried, to never send twice" };

/** Dispatch of accepted messages to the network. */
export interface Dispatcher {
  /** The Agenda job: `{ message_id }` → one attempt. */
  readonly job: JobSpec<{ message_id: string }>;
  /** Schedules an attempt now (or at `at`). */
  enqueue(messageId: string, at?: Date): Promise<void>;
  /**
   * Recovery: schedules pending messages that are due and have no live
   * job (their job was lost), fails messages whose claim outlived
   * DISPATCH_CLAIM_TIMEOUT_MS, and finishes dispatches whose process
   * stopped after recording the network's answer but before applying it
   * (status still accepted: "sent" with the network id, or "failed" with
   * the recorded error). Resolves to the count.
   */
  recover(): Promise<number>;
  /**
   * Graceful shutdown: attempts not yet begun are skipped (the message stays
   * pending for the next worker or the sweep) and running ones are awaited,
   * so that a stop never leaves a claim behind.
   */
  stop(): Promise<void>;
}

/**
 * Creates dispatch. An attempt:
 *
 * 1. claims the message with one conditional update (pending and due →
 *    claimed, attempts + 1): only one worker ever calls the network for it;
 * 2. calls the network with what was fixed at acceptance;
 * 3. accepted: records the network's id, then reports "sent" through the
 *    inbound path (message.sent) and applies reports that came earlier;
 * 4. permanent refusal: reports "failed" with the network's error (the
 *    message fails and is refunded);
 * 5. outage (retryable): back to pending with next_attempt_at after the
 *    backoff and a job scheduled then; after DISPATCH_MAX_ATTEMPTS it fails
 *    (refunded).
 *
 * A process that stops during 2 leaves a claim without a network id: the
 * network may or may not have the message, so it is never sent again; the
 * recovery fails it after DISPATCH_CLAIM_TIMEOUT_MS (refunded). A late
 * report matched through the echoed message id still fires its event.
 */
export function createDispatcher(deps: {
  messages: Collection<MessageRecord>;
  jobs: Collection;
  scheduler: Scheduler;
  network: NetworkAdapter;
  inbound: Inbound;
  clock: Clock;
  logger: Logger;
  options: DispatchOptions;
}): Dispatcher {
  const { messages, scheduler, network, inbound, clock, logger, options } = deps;
  const runs = createRunTracker();

  async function fail(message: MessageRecord, error: NetworkErrorInfo): Promise<void> {
    await messages.updateOne({ _id: message._id }, { $set: { "dispatch.state": "done", "dispatch.last_error": error } });
    await inbound.handle({ kind: "status", networkMessageId: "", messageId: message._id, status: "failed", occurredAt: clock.now(), error });
  }

  async function enqueue(messageId: string, at?: Date): Promise<void> {
    if (at && at.getTime() > clock.now().getTime()) await scheduler.agenda.schedule(at, DISPATCH_JOB, { message_id: messageId });
    else await scheduler.agenda.now(DISPATCH_JOB, { message_id: messageId });
  }

  async function attempt(messageId: string): Promise<void> {
    const now = clock.now();
    const message = await messages.findOneAndUpdate(
      { _id: messageId, "dispatch.state": "pending", "dispatch.next_attempt_at": { $lte: now } },
      { $set: { "dispatch.state": "claimed", "dispatch.claimed_at": now }, $inc: { "dispatch.attempts": 1 } },
      { returnDocument: "after" },
    );
    if (!message?.send || !message.dispatch) return; // done, claimed elsewhere, or not due yet
    const send = message.send;
    let networkId: string;
    try {
      networkId = await network.send({
        messageId,
        to: message.to,
        fromPhoneNumber: send.from_phone_number,
        fromPhoneNumberId: send.from_phone_number_id,
        templateName: send.template_name,
        language: send.language,
        parameters: send.parameters,
        flow: send.flow ? { flowId: send.flow.flow_id, token: send.flow.token } : null,
        text: send.text,
      });
    } catch (err) {
      const refused = err instanceof NetworkSendError ? err : new NetworkSendError({ code: 0, title: String((err as Error)?.message ?? err) }, true);
      if (!refused.retryable) {
        logger.info({ messageId, error: refused.info }, "network refused the message");
        return fail(message, refused.info);
      }
      if (message.dispatch.attempts >= options.maxAttempts) {
        logger.warn({ messageId, error: refused.info, attempts: message.dispatch.attempts }, "dispatch out of retries");
        return fail(message, OUT_OF_RETRIES(refused.info));
      }
      const next = new Date(clock.now().getTime() + backoffMs(options, message.dispatch.attempts));
      await messages.updateOne(
        { _id: messageId, "dispatch.state": "claimed" },
        { $set: { "dispatch.state": "pending", "dispatch.next_attempt_at": next, "dispatch.claimed_at": null, "dispatch.last_error": refused.info } },
      );
      logger.info({ messageId, error: refused.info, retryAt: next }, "network unavailable; dispatch retried later");
      await enqueue(messageId, next);
      return;
    }
    await messages.updateOne({ _id: messageId }, { $set: { wa_message_id: networkId, "dispatch.state": "done", "dispatch.last_error": null } });
    await inbound.handle({ kind: "status", networkMessageId: networkId, messageId, status: "sent", occurredAt: clock.now() });
    await inbound.attach(messageId, networkId);
  }

  return {
    job: {
      name: DISPATCH_JOB,
      concurrency: 20,
      lockLifetimeMs: DISPATCH_LOCK_MS,
      removeOnComplete: true,
      run: (data) => runs.run(() => attempt(data.message_id)),
    },
    enqueue,
    stop: () => runs.stop(),
    async recover() {
      const now = clock.now();
      let count = 0;
      const due = await messages
        .find({ "dispatch.state": "pending", "dispatch.next_attempt_at": { $lte: now } }, { projection: { _id: 1 } })
        .limit(1000)
        .toArray();
      if (due.length > 0) {
        const live = await deps.jobs
          .find({ name: DISPATCH_JOB, "data.message_id": { $in: due.map((m) => m._id) }, $or: [{ nextRunAt: { $ne: null } }, { lockedAt: { $ne: null } }] })
          .project<{ data: { message_id: string } }>({ data: 1 })
          .toArray();
        const scheduled = new Set(live.map((j) => j.data.message_id));
        for (const { _id } of due) {
          if (scheduled.has(_id)) continue;
          await enqueue(_id);
          count++;
        }
      }
      const unapplied = await messages
        .find({ status: "accepted", "dispatch.state": "done", "dispatch.claimed_at": { $lt: new Date(now.getTime() - options.claimTimeoutMs) } })
        .limit(1000)
        .toArray();
      for (const message of unapplied) {
        if (message.wa_message_id) {
          await inbound.handle({ kind: "status", networkMessageId: message.wa_message_id, messageId: message._id, status: "sent", occurredAt: now });
          await inbound.attach(message._id, message.wa_message_id);
        } else {
          await inbound.handle({ kind: "status", networkMessageId: "", messageId: message._id, status: "failed", occurredAt: now, error: message.dispatch?.last_error ?? INTERRUPTED });
        }
        count++;
      }
      const stale = await messages
        .find({ "dispatch.state": "claimed", "dispatch.claimed_at": { $lt: new Date(now.getTime() - options.claimTimeoutMs) } })
        .limit(1000)
        .toArray();
      for (const message of stale) {
        const claimed = await messages.findOneAndUpdate(
          { _id: message._id, "dispatch.state": "claimed", "dispatch.claimed_at": message.dispatch?.claimed_at },
          { $set: { "dispatch.state": "done" } },
        );
        if (!claimed) continue;
        logger.warn({ messageId: message._id }, "dispatch interrupted during the network call; failing the message");
        await fail(message, INTERRUPTED);
        count++;
      }
      return count;
    },
  };
}
