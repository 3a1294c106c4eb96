import type { Collection } from "mongodb";
import type { StoredEvent } from "../events/event-bus.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { LeasedDelivery } from "./attempt.js";
import type { DeliveryRecord, DeliveryStore } from "./delivery-store.js";

/** Deliveries claimed at once, at most. */
export const CLAIM_BATCH = 200;

/**
 * The claims of due deliveries. Each round costs three commands, whatever
 * its size: the due deliveries in order of next_attempt_at; one updateMany
 * that leases those still due to this round (lease_owner, next_attempt_at
 * pushed to the lease's end); their events' envelopes, read while the lease
 * is written. When the update changed fewer than were read, another worker
 * took some, and a fourth command reads which this round got. The next round
 * looks for due deliveries as soon as the lease is written, while this one's
 * envelopes are still being read: rounds overlap, so a drain is not held to
 * one command at a time. Two workers that find the same ids
 * each get only those their own update changed: no attempt is made twice,
 * except after a crash (the lease ends, the next claim records the lost
 * attempt as interrupted and goes on).
 *
 * A drain claims round after round while deliveries are due, keeping at
 * most `maxInFlight` deliveries in progress in this process (new events'
 * first attempts included: see begin). The worker's recurring Agenda job
 * runs one every claim interval (Dispatcher.start); poke runs one at once;
 * and a wake-up runs one at the instant a delivery falls due before the next
 * claim (wakeAt): a retry, an endpoint's turn or a lease ending is claimed
 * on time, not up to a claim interval late.
 *
 * A delivery whose event is not stored (its publisher stopped between
 * storing the deliveries and the event, see EventOutbox) is looked at again
 * a lease later, and deleted once two leases old: that event was never
 * published.
 */
export class DeliveryClaims {
  private started = false;
  private stopping = false;
  private round = 0;
  private inFlight = 0;
  private draining: Promise<void> | undefined;
  /** A drain was asked for while one ran: it goes on once more. */
  private again = false;
  private slotFreed: (() => void) | undefined;
  /** Leased deliveries waiting for their events' envelopes (counted in inProgress until they begin). */
  private starting = 0;
  /** Rounds whose attempts begin once their envelopes are read. */
  private readonly startingRounds = new Set<Promise<void>>();
  /** The wake-up set (wakeAt): its timer and its instant, in ms since the epoch. */
  private wake: { timer: NodeJS.Timeout; at: number } | undefined;

  constructor(
    private readonly o: {
      store: DeliveryStore;
      events: Collection<StoredEvent>;
      clock: Clock;
      logger: Logger;
      /** Names this process in lease_owner. */
      owner: string;
      leaseMs: number;
      maxInFlight: number;
      /** The claim interval, in ms: a drain looks twice as far ahead for the next delivery to fall due (wakeAt). */
      claimIntervalMs: number;
      /** Takes a claimed delivery as far as it goes. */
      run: (leased: LeasedDelivery) => Promise<void>;
    },
  ) {}

  /**
   * Claims due deliveries until none are left (a round finds fewer than it
   * asked for) or this process stops; waits for room while
   * `maxInFlight` are in progress. One drain at a time: asked for while one
   * runs, that one goes on once more.
   *
   * @throws the database's error when a round fails (the next drain tries again).
   */
  drain(): Promise<void> {
    if (this.draining) {
      this.again = true;
      return this.draining;
    }
    this.draining = this.claimWhileDue().finally(() => (this.draining = undefined));
    return this.draining;
  }

  /** Lets poke drain (in processes that claim: workers). */
  start(): void {
    this.started = true;
  }

  /** Drains now, in the background, if this process claims (for example once an endpoint's deliveries are due again). */
  poke(): void {
    if (!this.started || this.stopping) return;
    this.drain().catch((err: unknown) => this.o.logger.warn({ err }, "claiming due webhook deliveries failed; the next claim tries again"));
  }

  /** Stops claiming and waits for the drain in progress (attempts in flight are the caller's to wait for). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.wake?.timer);
    this.wake = undefined;
    this.slotFreed?.();
    await this.draining?.catch(() => {});
  }

  /** Deliveries in progress in this process (leased ones whose attempts are about to begin included). */
  get inProgress(): number {
    return this.inFlight + this.starting;
  }

  private async claimWhileDue(): Promise<void> {
    do {
      this.again = false;
      while (!this.stopping) {
        const room = Math.min(CLAIM_BATCH, this.o.maxInFlight - this.inProgress);
        if (room < CLAIM_BATCH / 4) await new Promise<void>((resolve) => (this.slotFreed = resolve));
        else if ((await this.claim(room)) < room) break;
      }
      if (!this.again) {
        await Promise.all(this.startingRounds);
        // A drain asked for meanwhile (a wake-up that fired, a poke) goes on in this one: it is not lost.
        await this.wakeAtNextDue();
      }
    } while (this.again && !this.stopping);
    await Promise.all(this.startingRounds);
  }

  /**
   * Drains at `at` (a Date), when that may come before the next claim:
   * keeps one wake-up, the earliest. Does nothing in a process that does
   * not claim, or for an instant two claim intervals or more away (the
   * recurring claim comes first; twice, because a busy process may run it
   * late).
   */
  wakeAt(at: Date): void {
    const when = at.getTime();
    const now = this.o.clock.now().getTime();
    if (!this.started || this.stopping || when >= now + 2 * this.o.claimIntervalMs || (this.wake && this.wake.at <= when)) return;
    clearTimeout(this.wake?.timer);
    const timer = setTimeout(() => {
      this.wake = undefined;
      this.poke();
    }, Math.max(0, when - now));
    timer.unref();
    this.wake = { timer, at: when };
  }

  /**
   * After a drain: the first delivery to fall due within two claim
   * intervals (one read by the next_attempt_at index), for a wake-up then.
   * It finds what other processes and other writers made due later: their
   * retries, leases that end (a process that died), a backlog made due at
   * one instant. One that fell due since the drain's last round looked (a
   * timer may fire a millisecond before the clock reads its instant) wakes
   * it at once.
   */
  private async wakeAtNextDue(): Promise<void> {
    if (!this.started || this.stopping || this.wake) return;
    const now = this.o.clock.now();
    const next = await this.o.store.deliveries.findOne(
      { next_attempt_at: { $lt: new Date(now.getTime() + 2 * this.o.claimIntervalMs) } },
      { sort: { next_attempt_at: 1 }, projection: { next_attempt_at: 1 } },
    );
    if (next?.next_attempt_at) this.wakeAt(next.next_attempt_at);
  }

  /** One round: claims up to `limit` due deliveries and starts them; resolves to how many were due. */
  private async claim(limit: number): Promise<number> {
    const { deliveries } = this.o.store;
    const now = this.o.clock.now();
    // Every find of a round asks for all its documents at once (batchSize): MongoDB's first batch is otherwise
    // 101 documents, and the rest a getMore.
    const due = await deliveries.find({ next_attempt_at: { $lte: now } }, { sort: { next_attempt_at: 1 }, limit, batchSize: limit }).toArray();
    if (due.length === 0) return 0;
    const lease = `${this.o.owner}:${++this.round}`;
    const ids = due.map((d) => d._id);
    const eventIds = [...new Set(due.map((d) => d.event_id))];
    const envelopes = this.o.events.find({ _id: { $in: eventIds } }, { projection: { body: 1 }, batchSize: eventIds.length }).toArray();
    envelopes.catch(() => {}); // awaited below, unless no delivery of the round is ours
    const leased = await deliveries.updateMany(
      { _id: { $in: ids }, next_attempt_at: { $lte: now } },
      { $set: { lease_owner: lease, leased_at: now, next_attempt_at: new Date(now.getTime() + this.o.leaseMs), updated_at: now } },
    );
    // All of them ours (the usual case): they are as read. Otherwise another worker took some: read which are ours.
    const mine = leased.modifiedCount === due.length ? due : await deliveries.find({ _id: { $in: ids }, lease_owner: lease }, { batchSize: ids.length }).toArray();
    if (mine.length === 0) return due.length;
    this.starting += mine.length;
    const starting = this.startAll(mine, due, envelopes, lease, now)
      .catch((err: unknown) => this.o.logger.warn({ err, lease }, "reading claimed deliveries' events failed; their leases end and they are claimed again"))
      .finally(() => {
        this.starting -= mine.length;
        this.startingRounds.delete(starting);
        this.freed();
      });
    this.startingRounds.add(starting);
    return due.length;
  }

  /** Begins the attempts of a round's leased deliveries once their events' envelopes are read. */
  private async startAll(mine: DeliveryRecord[], due: DeliveryRecord[], envelopes: Promise<Pick<StoredEvent, "_id" | "body">[]>, lease: string, now: Date): Promise<void> {
    const bodies = new Map((await envelopes).map((e) => [e._id, e.body]));
    const before = new Map(due.map((d) => [d._id, d]));
    for (const delivery of mine) {
      const body = bodies.get(delivery.event_id);
      if (body === undefined) {
        await this.unpublished(delivery, lease, now);
        continue;
      }
      const previous = before.get(delivery._id);
      this.begin({
        delivery,
        body,
        lease,
        number: delivery.automatic_attempts + 1,
        // A lease that ended without an outcome: its attempt was lost with its process.
        ...(previous?.lease_owner && previous.leased_at ? { interruptedSince: previous.leased_at } : {}),
      });
    }
  }

  /**
   * Takes a leased delivery as far as it goes, in the background (counted in
   * inProgress). A failure is logged: the lease ends and the delivery is
   * claimed again.
   */
  begin(leased: LeasedDelivery): void {
    this.inFlight++;
    this.o
      .run(leased)
      .catch((err: unknown) => this.o.logger.warn({ err, deliveryId: leased.delivery._id }, "a webhook attempt failed; its lease ends and it is claimed again"))
      .finally(() => {
        this.inFlight--;
        this.freed();
      });
  }

  /** Wakes a drain waiting for room once a round's worth is free. */
  private freed(): void {
    if (this.inProgress <= this.o.maxInFlight - CLAIM_BATCH && this.slotFreed) {
      this.slotFreed();
      this.slotFreed = undefined;
    }
  }

  /** A delivery whose event is not stored: looked at again a lease later, deleted once two leases old. */
  private async unpublished(delivery: DeliveryRecord, lease: string, now: Date): Promise<void> {
    const { deliveries } = this.o.store;
    if (delivery.created_at.getTime() < now.getTime() - 2 * this.o.leaseMs) {
      this.o.logger.warn({ deliveryId: delivery._id, eventId: delivery.event_id }, "deleting a webhook delivery whose event was never stored");
      await deliveries.deleteOne({ _id: delivery._id, lease_owner: lease });
    } else {
      await deliveries.updateOne({ _id: delivery._id, lease_owner: lease }, { $set: { lease_owner: null }, $unset: { leased_at: "" } });
    }
  }
}
