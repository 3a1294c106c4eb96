import { randomUUID } from "node:crypto";
import pLimit from "p-limit";
import { waiting, type LeasedQueue, type Queued, type Taken } from "../jobs/leased-queue.js";
import { GroupCommit } from "../store/group-commit.js";
import { NetworkSendError, type NetworkAdapter, type NetworkErrorInfo } from "../network/network.js";
import type { Clock } from "../shared/clock.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Logger } from "../shared/logger.js";
import { Throttle } from "../ratelimit/throttle.js";
import type { RateLimiter } from "../ratelimit/rate-limiter.js";
import { throughputOf, type SenderStore } from "../senders/sender-store.js";
import type { Inbound } from "./inbound.js";
import { EXPIRED, type DispatchState, type MessageRecord, type MessageStore, type Postponed } from "./message-store.js";
import { Pacer, type PacingOptions } from "./pacing.js";
import type { MessagingLimitBudget } from "./messaging-limit.js";
import { MESSAGING_LIMITS, type WorkspaceStore } from "../workspaces/workspace-store.js";

/** Retry rules of dispatch (DISPATCH_* configuration). */
export interface DispatchOptions {
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** A claim without the network's answer for this long counts as interrupted, in ms (the lease of a network call). */
  claimTimeoutMs: number;
  /** How often a worker claims due messages, in ms (QUEUE_CLAIM_INTERVAL_MS). */
  claimIntervalMs: number;
}

/**
 * How long a process holds a message that waits for its network call (new,
 * or taken for a retry), in ms: past it, another process takes it over. The
 * holder calls the network within it, so only a process that died (or
 * stalled this long) loses its messages. A network call itself is held for
 * DISPATCH_CLAIM_TIMEOUT_MS.
 */
export const DISPATCH_LEASE_MS = 10_000;

/**
 * How much of a lease must be left for a claim to be acted on, in ms: covers
 * the clocks of two processes differing (another process takes a message
 * over only once its lease has passed by that process's clock).
 */
export const DISPATCH_LEASE_MARGIN_MS = 3000;

/**
 * Attempts one process has in flight at once (sends are pipelined, not one at a time). An attempt holds its slot
 * for the claim's write, the network call and the writes of its answer: on a busy database those take half a second
 * or more, and 64 slots capped dispatch at 115 to 155 a second, under ten numbers allowed 200 in all (README
 * "Pacing"); a slot costs only a pending promise.
 */
export const DISPATCH_CONCURRENCY = 128;

/**
 * Messages in progress in one process, at most (past it, claims wait, and a batch's further messages are stored
 * waiting for a claim). Small enough that a message taken waits for one of the DISPATCH_CONCURRENCY slots well
 * within its lease (DISPATCH_LEASE_MS less the margin): with thousands queued at once (a batch, a backlog), the
 * last ones' leases ran out before their turn, and they went round again.
 */
export const DISPATCH_MAX_IN_FLIGHT = 512;

/**
 * Longest wait for a message's turn under the network's limits with its lease held, in ms (README "Pacing"): well
 * within the lease less its margin; a later turn sends the message back to the database until then.
 */
export const PACING_HOLD_MS = (DISPATCH_LEASE_MS - DISPATCH_LEASE_MARGIN_MS) / 2;

/** Longest wait of a claimed message at the hand-over to the network (Pacer.handOver), in ms, unless the claim's timeout is short. */
export const HAND_OVER_MAX_WAIT_MS = 5_000;

/** The network's refusals for its rate limits: the message goes again at its turn, the attempt not counted. */
const THROUGHPUT_REFUSED = 130429;
const PAIR_RATE_REFUSED = 131056;

/** Wait before attempt `attempt + 1` after `attempt` failed: base·2^(attempt-1), capped. */
export function backoffMs(options: Pick<DispatchOptions, "retryBaseMs" | "retryMaxMs">, attempt: number): number {
  return Math.min(options.retryMaxMs, options.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}

/** Error recorded when retries run out without a network answer. */
const OUT_OF_RETRIES = (last: NetworkErrorInfo | null): NetworkErrorInfo => last ?? { code: 0, title: "The network could not be reached" };

/** Error recorded when a dispatch was interrupted while the network was being called. */
export const INTERRUPTED: NetworkErrorInfo = { code: 0, title: "Dispatch was interrupted while the network was called; not retried, to never send twice" };

/** Dispatch of accepted messages to the network: the message is its own queue entry (no job per message). */
export interface Dispatcher {
  /** The dispatch fields of a message this process accepts now: pending, held here to dispatch at once, and its lease. */
  newDispatch(now: Date): { fields: { dispatch: DispatchState } & Required<Queued>; lease: string };
  /** Starts dispatch of a message this process just stored with newDispatch's fields (no database read, no polling wait). */
  dispatch(message: MessageRecord, lease: string): void;
  /**
   * The dispatch fields of `count` messages this process accepts now (a
   * batch): as many held here as this process has room for
   * (DISPATCH_MAX_IN_FLIGHT), with their leases; the others pending and due
   * now, without a lease, for the claims (dispatchWaiting) of this process
   * or of any worker.
   */
  newDispatches(now: Date, count: number): { fields: { dispatch: DispatchState } & Required<Queued>; lease: string | null }[];
  /** Claims now the messages stored waiting (a batch's beyond the room), in a worker process; others leave them to the workers' claims. */
  dispatchWaiting(): void;
  /**
   * The dispatch fields of a scheduled send (README "Scheduled sends,
   * cancellation and validity"): pending, waiting without a lease until
   * `sendAt`, when the workers' claims take it.
   */
  newScheduledDispatch(sendAt: Date): { dispatch: DispatchState } & Required<Queued>;
  /** A message was stored waiting until `at` (a scheduled send): a wake-up then, in a worker process, when it comes before the next claim. */
  wakeAt(at: Date): void;
  /** Starts claiming messages that wait (worker role): retries due, and messages whose process stopped. */
  start(): void;
  /** Claims due messages now (the recurring claim job). */
  drain(): Promise<void>;
  /**
   * Graceful shutdown: messages not yet begun are left (their leases lapse
   * and another process takes them over) and running network calls are
   * awaited, so that a stop never leaves a claim behind; attempts waiting
   * for one of the DISPATCH_CONCURRENCY slots end without calling.
   */
  stop(): Promise<void>;
}

/**
 * Creates dispatch over the message store's queue (src/jobs/leased-queue.ts).
 * A message is stored pending and held by the process that accepted it,
 * which dispatches it at once:
 *
 * 1. claims it (pending → claimed, attempts + 1, held for the network call:
 *    DISPATCH_CLAIM_TIMEOUT_MS), the claims of many messages in one
 *    bulkWrite; it calls the network only if its lease had
 *    DISPATCH_LEASE_MARGIN_MS left when the claim was written: no other
 *    process can have taken the message over by then, so only it ever calls
 *    the network for the message;
 * 2. calls the network with what was fixed at acceptance (at most
 *    DISPATCH_CONCURRENCY calls in flight per process);
 * 3. accepted: records the network's id and "sent", and completes the lease,
 *    in one update (through the inbound path, which fires message.sent);
 * 4. permanent refusal: "failed" with the network's error (refunded);
 * 5. outage (retryable): released, pending and due after the backoff, and
 *    taken by a worker then; after DISPATCH_MAX_ATTEMPTS it fails (refunded).
 *
 * A lease that lapses is taken by a worker's claim, which decides by the
 * message's dispatch state: pending, it dispatches; claimed (the process
 * stopped during the network call, which may or may not have reached the
 * network), it fails the message as interrupted: never sent again; done
 * with its status not applied, it applies the answer recorded.
 */
export function createDispatcher(deps: {
  messages: MessageStore;
  network: NetworkAdapter;
  inbound: Inbound;
  clock: Clock;
  logger: Logger;
  options: DispatchOptions;
  metrics: Pick<Metrics, "messagesDispatched" | "dispatchLag" | "networkRefusals">;
  /** The senders (read through their cache) for their throughput; the network's refusals counted on them. */
  senders: Pick<SenderStore, "get" | "countRefusal">;
  /** Pair rate settings (PAIR_RATE_*). */
  pacing: Omit<PacingOptions, "holdMs">;
  /** The shared one-second windows of the senders' throughput. */
  throttleWindows: RateLimiter;
  /** The workspaces (read through their cache) for their messaging limit. */
  workspaces: Pick<WorkspaceStore, "getCached">;
  /** The workspaces' counts of unique recipients (their messaging limit). */
  messagingLimit: Pick<MessagingLimitBudget, "turn">;
}): Dispatcher {
  const { messages, network, inbound, clock, logger, options, metrics, senders } = deps;
  const throttle = new Throttle({ limiter: deps.throttleWindows, clock, holdMs: PACING_HOLD_MS, keepSlots: false });
  const pacer = new Pacer({ throttle, clock, options: { ...deps.pacing, holdMs: PACING_HOLD_MS } });
  const owner = `dsp_${randomUUID()}`;
  const limit = pLimit(DISPATCH_CONCURRENCY);
  let stopped = false;
  const queue: LeasedQueue<MessageRecord> = messages.dispatchQueue({
    name: "message dispatch",
    owner,
    clock,
    logger,
    leaseMs: DISPATCH_LEASE_MS,
    maxInFlight: DISPATCH_MAX_IN_FLIGHT,
    intervalMs: options.claimIntervalMs,
    run: (taken) => take(taken),
  });
  /** Claims written together; each is acted on only if its lease was still good when it was written (see attempt). */
  const claims = new GroupCommit<{ message: MessageRecord; lease: string; now: Date }, void>(async (items) => {
    await messages.markCalling(items.map(({ message, lease, now }) => ({ id: message._id, lease, now, until: new Date(now.getTime() + options.claimTimeoutMs) })));
    return items.map(() => undefined);
  }, 200);
  /** Messages whose turn is later, written together. */
  const postponed = new GroupCommit<Postponed, void>(async (items) => {
    await messages.postponeDispatch(items);
    return items.map(() => undefined);
  }, 200);
  /** Longest wait at the hand-over (Pacer.handOver), in ms: the claim holds the message meanwhile, so a quarter of its timeout at most. */
  const handOverMaxWaitMs = Math.min(HAND_OVER_MAX_WAIT_MS, options.claimTimeoutMs / 4);
  const leaseLeft = (lease: Date) => lease.getTime() - DISPATCH_LEASE_MARGIN_MS - clock.now().getTime();

  /** A message handed over by the queue (held here, or claimed), by its dispatch state. */
  async function take({ record: message, lease, lapsedSince }: Taken<MessageRecord>): Promise<void> {
    const state = message.dispatch?.state;
    // Past its validity and not handed to the network: it fails as expired, never sent (refunded).
    if (state === "pending" && message.valid_until && message.valid_until.getTime() <= clock.now().getTime()) return fail(message, lease, EXPIRED);
    if (state === "pending") return paced(message, lease);
    if (!lapsedSince) return;
    if (state === "claimed") {
      logger.warn({ messageId: message._id }, "dispatch interrupted during the network call; failing the message");
      return fail(message, lease, INTERRUPTED);
    }
    // Done, its answer recorded but not applied (its process stopped in between).
    if (message.status === "accepted" && message.wa_message_id) await inbound.dispatched(message, message.wa_message_id, clock.now());
    else if (message.status === "accepted" || message.status === "scheduled") await fail(message, lease, message.dispatch?.last_error ?? INTERRUPTED);
    else await messages.completeDispatch(message._id, lease);
  }

  /**
   * Waits for the message's turn under its workspace's messaging limit, its sender's rate and its recipient's pair
   * rate (README "Pacing"), then attempts it; a turn further off than PACING_HOLD_MS sends it back to the database
   * until then, with its reason.
   */
  async function paced(message: MessageRecord, lease: string): Promise<void> {
    const workspace = await deps.workspaces.getCached(message.workspace_id);
    const budget = await deps.messagingLimit.turn(message.workspace_id, MESSAGING_LIMITS[workspace?.messaging_limit ?? "unlimited"], message.to);
    if (!budget.go) {
      // Woken at its validity's end if that comes first: it then fails as expired (take).
      const at = message.valid_until && message.valid_until < budget.at ? message.valid_until : budget.at;
      await postponed.add({ id: message._id, lease, at, reason: "daily_limit", estimatedAt: budget.at });
      queue.wakeAt(at);
      return;
    }
    // Again after a refusal for a rate limit (the attempt hands the message back).
    for (let next: MessageRecord | void = message; next; ) {
      const current: MessageRecord = next;
      const sender = current.sender_id ? await senders.get(current.sender_id) : null;
      if (stopped) return;
      if (sender) {
        const turn = await pacer.turn({ senderId: sender._id, throughputMps: throughputOf(sender), to: current.to });
        if (!turn.go) {
          await postponed.add({ id: current._id, lease, at: turn.at, reason: turn.reason, estimatedAt: turn.slot });
          queue.wakeAt(turn.at);
          return;
        }
      }
      next = await limit(() => attempt(current, lease));
    }
  }

  /** One network call of a pending message; resolves to the message when the network refused it for a rate limit (to pace it again). */
  async function attempt(pending: MessageRecord, lease: string): Promise<MessageRecord | void> {
    if (stopped || !pending.send || !pending.dispatch || !pending.due_at) return;
    const held = pending.due_at;
    if (leaseLeft(held) <= 0) return; // too late to be sure of it: the lease lapses and a claim takes it over
    const now = clock.now();
    const message: MessageRecord = { ...pending, dispatch: { ...pending.dispatch, state: "claimed", claimed_at: now, attempts: pending.dispatch.attempts + 1 } };
    await claims.add({ message, lease, now });
    // Written late (a loaded process): another process may have taken the message over before the claim was written
    // (the claim then matched nothing). Read back: still held with this claim, it is this process's to send (its
    // lease now runs to the claim timeout); otherwise it is left to its new holder.
    if (leaseLeft(held) <= 0 && !(await messages.isClaimedBy(message._id, lease, now))) return;
    // Spaced again at its sender's rate after the claim's write, whose time varies (Pacer.handOver, README "Pacing").
    const handOverWait = message.sender_id ? pacer.handOver(message.sender_id, handOverMaxWaitMs) : 0;
    if (handOverWait > 0) await new Promise((resolve) => setTimeout(resolve, handOverWait));
    const send = pending.send;
    const attempts = message.dispatch!.attempts;
    let networkId: string;
    // "sent" is dated when the message was handed to the network: no report the network makes of it can be
    // dated earlier, however late its answer is read here (README "Dispatch").
    const handedAt = clock.now();
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
        templateCategory: message.template_category ?? "utility",
      });
    } catch (err) {
      const refused = err instanceof NetworkSendError ? err : new NetworkSendError({ code: 0, title: String((err as Error)?.message ?? err) }, true);
      if (refused.info.code !== 0) {
        metrics.networkRefusals.inc({ code: String(refused.info.code) });
        // The sender's count by code, shared by every process (the console's sender page): written only on a refusal.
        if (message.sender_id) await senders.countRefusal(message.sender_id, refused.info.code, clock.now());
      }
      if (refused.retryable && (refused.info.code === THROUGHPUT_REFUSED || refused.info.code === PAIR_RATE_REFUSED) && message.sender_id) {
        return refusedForRate(message, lease, refused.info, handedAt);
      }
      metrics.messagesDispatched.inc({ outcome: refused.retryable ? "retry" : "refused" });
      if (!refused.retryable) {
        logger.info({ messageId: message._id, error: refused.info }, "network refused the message");
        return fail(message, lease, refused.info);
      }
      if (attempts >= options.maxAttempts) {
        logger.warn({ messageId: message._id, error: refused.info, attempts }, "dispatch out of retries");
        return fail(message, lease, OUT_OF_RETRIES(refused.info));
      }
      const next = new Date(clock.now().getTime() + backoffMs(options, attempts));
      await messages.scheduleRetry(message._id, lease, next, refused.info);
      logger.info({ messageId: message._id, error: refused.info, retryAt: next }, "network unavailable; dispatch retried later");
      queue.wakeAt(next);
      return;
    }
    const answeredAt = clock.now();
    if (message.sender_id) pacer.taken(message.sender_id);
    metrics.messagesDispatched.inc({ outcome: "sent" });
    metrics.dispatchLag.observe((answeredAt.getTime() - (message.send_at ?? message.created_at).getTime()) / 1000);
    await inbound.dispatched(message, networkId, handedAt);
  }

  /**
   * The network refused the message for its throughput (130429: the sender's rate is lowered) or the pair rate
   * (131056: the recipient waits its backoff): pending again, still held here, the attempt not counted, and paced
   * again at once.
   */
  async function refusedForRate(message: MessageRecord, lease: string, error: NetworkErrorInfo, handedAt: Date): Promise<MessageRecord> {
    const senderId = message.sender_id as string;
    const pair = error.code === PAIR_RATE_REFUSED;
    const pairRefusals = (message.dispatch?.pair_refusals ?? 0) + (pair ? 1 : 0);
    if (pair) pacer.pairRefused(senderId, message.to, pairRefusals);
    else pacer.throughputRefused(senderId, handedAt);
    const now = clock.now();
    const until = new Date(now.getTime() + DISPATCH_LEASE_MS);
    await messages.refusedForRate(message._id, lease, now, until, error, pair);
    const dispatch = message.dispatch as DispatchState;
    return { ...message, due_at: until, dispatch: { ...dispatch, state: "pending", claimed_at: null, attempts: dispatch.attempts - 1, last_error: error, pair_refusals: pairRefusals } };
  }

  /** Fails a message for good: dispatch done with the error (the lease kept until the status is applied), then the failure applied (refunded), then the lease completed. */
  async function fail(message: MessageRecord, lease: string, error: NetworkErrorInfo): Promise<void> {
    await messages.recordDispatchFailure(message._id, lease, error);
    await inbound.handle({ kind: "status", networkMessageId: "", messageId: message._id, status: "failed", occurredAt: clock.now(), error });
    await messages.completeDispatch(message._id, lease);
  }

  return {
    newDispatch(now) {
      const held = queue.held(now);
      return { fields: { dispatch: { state: "pending", attempts: 0, claimed_at: null, last_error: null }, ...held.fields }, lease: held.lease };
    },
    dispatch(message, lease) {
      queue.begin({ record: message, lease });
    },
    newDispatches(now, count) {
      const room = Math.max(0, DISPATCH_MAX_IN_FLIGHT - queue.inProgress);
      const pending = (): DispatchState => ({ state: "pending", attempts: 0, claimed_at: null, last_error: null });
      return Array.from({ length: count }, (_, i) => {
        if (i >= room) return { fields: { dispatch: pending(), ...waiting(now) }, lease: null };
        const held = queue.held(now);
        return { fields: { dispatch: pending(), ...held.fields }, lease: held.lease };
      });
    },
    dispatchWaiting() {
      queue.poke();
    },
    newScheduledDispatch(sendAt) {
      return { dispatch: { state: "pending", attempts: 0, claimed_at: null, last_error: null }, ...waiting(sendAt) };
    },
    wakeAt(at) {
      queue.wakeAt(at);
    },
    start() {
      queue.start();
      queue.poke();
    },
    drain: () => queue.drain(),
    async stop() {
      // Attempts still waiting for a slot return at once (attempt checks `stopped`), so every begun work settles and
      // stop() returns: clearing the limiter's queue instead would leave their promises pending for ever, and the
      // stop waiting on them (a batch queues a thousand at once).
      stopped = true;
      await queue.stop();
    },
  };
}
