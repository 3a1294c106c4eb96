import { randomUUID } from "node:crypto";
import pLimit from "p-limit";
import type { Collection } from "mongodb";
import { createRunTracker } from "../jobs/run-tracker.js";
import { GroupCommit } from "../store/group-commit.js";
import { NetworkSendError, type NetworkAdapter, type NetworkErrorInfo } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Logger } from "../shared/logger.js";
import type { Inbound } from "./inbound.js";
import { DISPATCH_CLAIMED, DISPATCH_PENDING, DISPATCH_UNAPPLIED, type DispatchState, type MessageRecord } from "./message-store.js";

/** Retry rules of dispatch (DISPATCH_* configuration). */
export interface DispatchOptions {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  claimTimeoutMs: number;
}

/**
 * How long a process owns the messages it accepted (or took over) before
 * another process may take them over, in ms. The owner renews it with each
 * step, so only a process that died (or stalled this long) loses its
 * messages.
 */
export const DISPATCH_LEASE_MS = 10_000;

/**
 * How much of a lease must be left for a claim to be acted on, in ms: covers
 * the clocks of two processes differing (another process takes a message
 * over only once its lease has passed by that process's clock).
 */
export const DISPATCH_LEASE_MARGIN_MS = 3000;

/** Network calls one process has in flight at once (sends are pipelined, not one at a time). */
export const DISPATCH_CONCURRENCY = 64;

/** Wait before attempt `attempt + 1` after `attempt` failed: base·2^(attempt-1), capped. */
export function backoffMs(options: DispatchOptions, attempt: number): number {
  return Math.min(options.retryMaxMs, options.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}

/** Error recorded when retries run out without a network answer. */
const OUT_OF_RETRIES = (last: NetworkErrorInfo | null): NetworkErrorInfo => last ?? { code: 0, title: "The network could not be reached" };

/** Error recorded when a dispatch was interrupted while the network was being called. */
export const INTERRUPTED: NetworkErrorInfo = { code: 0, title: "Dispatch was interrupted while the network was called; not retried, to never send twice" };

/** Dispatch of accepted messages to the network: the message is its own queue entry (no job per message). */
export interface Dispatcher {
  /** This process's id as a lease owner. */
  readonly owner: string;
  /** The dispatch state a message accepted by this process starts with: pending, leased to this process. */
  initialState(now: Date): DispatchState;
  /** Starts dispatch of a message this process just stored (no database read, no polling wait). */
  dispatch(message: MessageRecord): void;
  /**
   * Recovery (the messages sweep): takes over pending messages whose owner's
   * lease expired (it died) and dispatches them here; fails messages claimed
   * longer than DISPATCH_CLAIM_TIMEOUT_MS ago without an answer (the network
   * may have them: never sent again); finishes dispatches whose process
   * stopped after recording the network's answer but before applying it.
   * Resolves to the count.
   */
  recover(): Promise<number>;
  /**
   * Graceful shutdown: attempts not yet begun are skipped (the message stays
   * pending; its lease expires and another process takes it over) and
   * running ones are awaited, so that a stop never leaves a claim behind.
   */
  stop(): Promise<void>;
}

/**
 * Creates dispatch. A message is stored pending and leased to the process
 * that accepted it, which dispatches it at once:
 *
 * 1. claims it (pending, owned by this process → claimed, attempts + 1), the
 *    claims of many messages in one bulkWrite; it calls the network only if
 *    its lease had DISPATCH_LEASE_MARGIN_MS left when the claim was written:
 *    no other process can have taken the message over by then, so the claim
 *    was this process's and only it ever calls the network for the message;
 * 2. calls the network with what was fixed at acceptance (at most
 *    DISPATCH_CONCURRENCY calls in flight per process);
 * 3. accepted: records the network's id and "sent" in one update (through
 *    the inbound path, which fires message.sent);
 * 4. permanent refusal: "failed" with the network's error (refunded);
 * 5. outage (retryable): back to pending with next_attempt_at after the
 *    backoff, leased until then plus DISPATCH_LEASE_MS, and retried by this
 *    process then; after DISPATCH_MAX_ATTEMPTS it fails (refunded).
 *
 * A process that stops during 2 leaves a claim without a network answer: the
 * network may or may not have the message, so it is never sent again; the
 * recovery fails it after DISPATCH_CLAIM_TIMEOUT_MS (refunded).
 */
export function createDispatcher(deps: {
  messages: Collection<MessageRecord>;
  network: NetworkAdapter;
  inbound: Inbound;
  clock: Clock;
  logger: Logger;
  options: DispatchOptions;
  metrics: Pick<Metrics, "messagesDispatched" | "dispatchLag">;
}): Dispatcher {
  const { messages, network, inbound, clock, logger, options, metrics } = deps;
  const owner = `dsp_${randomUUID()}`;
  const runs = createRunTracker();
  const limit = pLimit(DISPATCH_CONCURRENCY);
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const leaseFrom = (at: Date) => new Date(at.getTime() + DISPATCH_LEASE_MS);
  /** Claims written together; each is acted on only if its lease was still good when it was written (see attempt). */
  const claims = new GroupCommit<MessageRecord, void>(async (items) => {
    await messages.bulkWrite(
      items.map((m) => ({
        updateOne: {
          filter: { _id: m._id, "dispatch.state": "pending", "dispatch.owner": owner },
          update: {
            $set: { "dispatch.state": "claimed", "dispatch.claimed_at": m.dispatch!.claimed_at, "dispatch.lease_until": m.dispatch!.lease_until },
            $inc: { "dispatch.attempts": 1 },
          },
        },
      })),
      { ordered: false },
    );
    return items.map(() => undefined);
  }, 200);
  const leaseLeft = (lease: Date) => lease.getTime() - DISPATCH_LEASE_MARGIN_MS - clock.now().getTime();

  function schedule(message: MessageRecord, at: Date): void {
    if (stopped) return;
    const delay = at.getTime() - clock.now().getTime();
    if (delay <= 0) {
      void runs.run(() => limit(() => attempt(message))).catch((err: unknown) => logger.error({ err, messageId: message._id }, "dispatch failed; the sweep retries"));
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      schedule(message, at);
    }, delay);
    timers.add(timer);
  }

  async function attempt(pending: MessageRecord): Promise<void> {
    if (stopped || !pending.send || !pending.dispatch || pending.dispatch.state !== "pending" || pending.dispatch.owner !== owner) return;
    const lease = pending.dispatch.lease_until;
    if (leaseLeft(lease) <= 0) return; // too late to be sure of it: the sweep takes it over once the lease has passed
    const now = clock.now();
    const message: MessageRecord = {
      ...pending,
      dispatch: { ...pending.dispatch, state: "claimed", claimed_at: now, lease_until: leaseFrom(now), attempts: pending.dispatch.attempts + 1 },
    };
    await claims.add(message);
    if (leaseLeft(lease) <= 0) return; // written late: another process may own it now; unsent, it fails as interrupted
    if (!message.send || !message.dispatch) return;
    const send = message.send;
    let networkId: string;
    try {
      networkId = await network.send({
        messageId: message._id,
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
      metrics.messagesDispatched.inc({ outcome: refused.retryable ? "retry" : "refused" });
      if (!refused.retryable) {
        logger.info({ messageId: message._id, error: refused.info }, "network refused the message");
        return fail(message, refused.info);
      }
      if (message.dispatch.attempts >= options.maxAttempts) {
        logger.warn({ messageId: message._id, error: refused.info, attempts: message.dispatch.attempts }, "dispatch out of retries");
        return fail(message, OUT_OF_RETRIES(refused.info));
      }
      const next = new Date(clock.now().getTime() + backoffMs(options, message.dispatch.attempts));
      const retried = await messages.findOneAndUpdate(
        { _id: message._id, "dispatch.state": "claimed", "dispatch.owner": owner },
        {
          $set: {
            "dispatch.state": "pending",
            "dispatch.next_attempt_at": next,
            "dispatch.lease_until": leaseFrom(next),
            "dispatch.claimed_at": null,
            "dispatch.last_error": refused.info,
          },
        },
        { returnDocument: "after" },
      );
      logger.info({ messageId: message._id, error: refused.info, retryAt: next }, "network unavailable; dispatch retried later");
      if (retried) schedule(retried, next);
      return;
    }
    const answeredAt = clock.now();
    metrics.messagesDispatched.inc({ outcome: "sent" });
    metrics.dispatchLag.observe((answeredAt.getTime() - message.created_at.getTime()) / 1000);
    await inbound.dispatched(message, networkId, answeredAt);
  }

  async function fail(message: MessageRecord, error: NetworkErrorInfo): Promise<void> {
    await messages.updateOne({ _id: message._id }, { $set: { "dispatch.state": "done", "dispatch.last_error": error } });
    await inbound.handle({ kind: "status", networkMessageId: "", messageId: message._id, status: "failed", occurredAt: clock.now(), error });
  }

  return {
    owner,
    initialState(now) {
      return { state: "pending", attempts: 0, next_attempt_at: now, owner, lease_until: leaseFrom(now), claimed_at: null, last_error: null };
    },
    dispatch(message) {
      schedule(message, message.dispatch?.next_attempt_at ?? clock.now());
    },
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      limit.clearQueue();
      await runs.stop();
    },
    async recover() {
      const now = clock.now();
      let count = 0;
      // Pending messages whose owner's lease ran out: take them over, one conditional update each.
      const orphaned = await messages
        .find({ ...DISPATCH_PENDING, "dispatch.lease_until": { $lt: now } }, { projection: { _id: 1, dispatch: 1 } })
        .limit(1000)
        .toArray();
      for (const { _id, dispatch } of orphaned) {
        const taken = await messages.findOneAndUpdate(
          { _id, "dispatch.state": "pending", "dispatch.lease_until": dispatch?.lease_until },
          { $set: { "dispatch.owner": owner, "dispatch.lease_until": leaseFrom(dispatch && dispatch.next_attempt_at > now ? dispatch.next_attempt_at : now) } },
          { returnDocument: "after" },
        );
        if (!taken) continue;
        schedule(taken, taken.dispatch?.next_attempt_at ?? now);
        count++;
      }
      // Recorded but not applied: the network's answer is on the message, its status is not.
      const unapplied = await messages
        .find({ ...DISPATCH_UNAPPLIED, "dispatch.claimed_at": { $lt: new Date(now.getTime() - options.claimTimeoutMs) } })
        .limit(1000)
        .toArray();
      for (const message of unapplied) {
        if (message.wa_message_id) await inbound.dispatched(message, message.wa_message_id, now);
        else await inbound.handle({ kind: "status", networkMessageId: "", messageId: message._id, status: "failed", occurredAt: now, error: message.dispatch?.last_error ?? INTERRUPTED });
        count++;
      }
      // Claimed without an answer for too long: the network may have it, so it is failed, never sent again.
      const stale = await messages
        .find({ ...DISPATCH_CLAIMED, "dispatch.claimed_at": { $lt: new Date(now.getTime() - options.claimTimeoutMs) } })
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
