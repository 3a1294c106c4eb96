import type { Collection, Filter, UpdateFilter } from "mongodb";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";

/*
 * The one shape of queued work (README "Design" §11): a message to dispatch,
 * a webhook delivery to attempt, a network report to apply, a report the
 * simulated network will make and a form's files to fetch are each a record of their own collection that carries the same
 * three lease fields (Queued), in the same index, taken by the same claim
 * rounds and wake-ups (LeasedQueue). A record is its own queue entry: no job
 * document, no second collection.
 *
 * - A record that waits has `due_at` (when it may be taken) and no lease.
 * - A record that is leased has `lease_owner` (the claim that holds it),
 *   `leased_at`, and `due_at` pushed to the lease's end: if its process dies,
 *   it is due again then, and whoever takes it next learns that the earlier
 *   lease lapsed (Taken.lapsedSince) and decides what that means for its work
 *   (a webhook attempt recorded as interrupted, a network call never made
 *   twice).
 * - A record that is done has no `due_at`: it leaves the index.
 *
 * Work begun where the record was stored (a new message, a new event's
 * deliveries) is stored already leased to this process (LeasedQueue.held) and
 * begun at once (LeasedQueue.begin): no claim, no polling wait. Everything
 * that waits is claimed in rounds: a process drains while records are due,
 * every `intervalMs` (its recurring claim job) and at the instant the next
 * record falls due (a wake-up), so a retry or a lapsed lease is taken on time.
 *
 * The store of each collection writes the state changes as named operations
 * (markDelivered, scheduleRetry, …) whose updates include the lease's change
 * (leaseUpdate), guarded by the lease (heldBy): a process whose lease was
 * taken over changes nothing.
 */

/** The lease fields of a queued record (every queued collection has them, indexed by due_at). */
export interface Queued {
  /** When the record may next be taken: its due time while it waits, its lease's end while leased; absent once done. */
  due_at?: Date | null;
  /** The claim that holds the record ("<process>:<round>"), or null while it waits. */
  lease_owner?: string | null;
  /** When the current lease was taken; null while the record waits. */
  leased_at?: Date | null;
}

/** A record taken by this process under `lease`. */
export interface Taken<T> {
  /** The record as read, with its new lease fields. */
  record: T;
  /** The lease held (its lease_owner): every write of the work is guarded by it (heldBy). */
  lease: string;
  /** Set when an earlier lease ended without the work being done (its process stopped): when that lease was taken. */
  lapsedSince?: Date;
}

/** The change of a record's lease fields, to merge into a store's own update (leaseUpdate). */
export type LeaseChange =
  /** Back to waiting, due at `dueAt`. */
  | { kind: "release"; dueAt: Date }
  /** Held longer: due (lapsing) at `until`. */
  | { kind: "renew"; now: Date; until: Date }
  /** Done: out of the queue. */
  | { kind: "complete" };

/** The lease fields of a record that waits until `dueAt`. */
export function waiting(dueAt: Date): Required<Queued> {
  return { due_at: dueAt, lease_owner: null, leased_at: null };
}

/** The filter of a record still held by `lease` (every write of leased work is guarded by it). */
export function heldBy(lease: string): { lease_owner: string } {
  return { lease_owner: lease };
}

/**
 * `update` with the lease's `change` merged into it: a store's named
 * operation writes the record's new state and its lease in one command.
 */
export function leaseUpdate<T>(change: LeaseChange, update: UpdateFilter<T> = {}): UpdateFilter<T> {
  const set = { ...(update.$set as object | undefined) } as Record<string, unknown>;
  const unset = { ...(update.$unset as object | undefined) } as Record<string, unknown>;
  switch (change.kind) {
    case "release":
      Object.assign(set, waiting(change.dueAt));
      break;
    case "renew":
      Object.assign(set, { due_at: change.until, leased_at: change.now });
      break;
    case "complete":
      Object.assign(set, { lease_owner: null, leased_at: null });
      unset.due_at = "";
      break;
  }
  return { ...update, $set: set, ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}) } as UpdateFilter<T>;
}

/** Records claimed in one round, at most. */
export const CLAIM_BATCH = 200;

/** What a LeasedQueue is built from. */
export interface LeasedQueueOptions<T extends { _id: string } & Queued, P> {
  /** The collection whose records are the queue (its store owns it). */
  collection: Collection<T>;
  /** Name of the queue, for logs. */
  name: string;
  /** Names this process in lease_owner. */
  owner: string;
  clock: Clock;
  logger: Logger;
  /** How long a lease holds, in ms: past it, a record whose process stopped is taken again. */
  leaseMs: number;
  /** Records in progress in this process, at most (a memory bound); claims wait for room. */
  maxInFlight: number;
  /** The claim interval, in ms: a drain wakes itself for a record due within twice this. */
  intervalMs: number;
  /** Records claimed at once, at most (CLAIM_BATCH unless set). */
  batchSize?: number;
  /** Reads what a round's records need (for example their events' envelopes) while their lease is written. */
  prefetch?: (due: T[]) => Promise<P>;
  /**
   * Takes a leased record as far as it goes. It ends the lease through its
   * store's operations (complete, or release with a later due time), or,
   * failing, leaves it to lapse: the record is taken again then. A throw is
   * logged.
   */
  run: (taken: Taken<T>, prefetched: P | undefined) => Promise<void>;
}

/**
 * A queue of records in one collection, taken under leases (see the module
 * comment). One drain at a time per process: it claims round after round
 * (at most `batchSize` records each: a find in due order, one updateMany that
 * leases those still due, and, only when another process took some, a find
 * of which are this round's) while records are due and fewer than
 * `maxInFlight` are in progress; rounds overlap (the next one looks while
 * this one's records are prefetched). Two processes that find the same
 * records each get only those their own update changed.
 */
export class LeasedQueue<T extends { _id: string } & Queued, P = undefined> {
  private started = false;
  private stopping = false;
  private round = 0;
  private inFlight = 0;
  private starting = 0;
  private draining: Promise<void> | undefined;
  /** A drain was asked for while one ran: it goes on once more. */
  private again = false;
  private slotFreed: (() => void) | undefined;
  private readonly startingRounds = new Set<Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  /** The wake-up set (wakeAt): its timer and instant, in ms since the epoch. */
  private wake: { timer: NodeJS.Timeout; at: number } | undefined;

  constructor(private readonly o: LeasedQueueOptions<T, P>) {}

  /** The lease fields of a record stored leased to this process (to begin at once), with its lease. */
  held(now: Date, leaseMs = this.o.leaseMs): { fields: Required<Queued>; lease: string } {
    const lease = `${this.o.owner}:new`;
    return { fields: { due_at: new Date(now.getTime() + leaseMs), lease_owner: lease, leased_at: now }, lease };
  }

  /** The index of the claims: records by due_at (only queued ones have it). */
  async ensureIndex(): Promise<void> {
    await this.o.collection.createIndex({ due_at: 1 } as never, { name: "queue_due_at", sparse: true });
  }

  /** Lets this process claim (the worker role); poke and wake-ups do nothing before. */
  start(): void {
    this.started = true;
  }

  /** Records in progress in this process (leased ones about to begin included). */
  get inProgress(): number {
    return this.inFlight + this.starting;
  }

  /**
   * Takes a leased record as far as it goes, in the background (counted in
   * inProgress); for records stored leased here (held) and for each claimed
   * one. Nothing begins once stop() was called: the lease lapses and the
   * record is taken again.
   */
  begin(taken: Taken<T>, prefetched?: P): void {
    if (this.stopping) return;
    this.inFlight++;
    const work = this.o
      .run(taken, prefetched)
      .catch((err: unknown) => this.o.logger.warn({ err, queue: this.o.name, id: taken.record._id }, "queued work failed; its lease lapses and it is taken again"))
      .finally(() => {
        this.inFlight--;
        this.running.delete(work);
        this.freed();
      });
    this.running.add(work);
  }

  /**
   * Claims due records until none are left (a round finds fewer than it
   * asked for) or this process stops; waits for room while `maxInFlight`
   * are in progress. One drain at a time: asked for while one runs, that one
   * goes on once more.
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

  /** Drains now, in the background, if this process claims. */
  poke(): void {
    if (!this.started || this.stopping) return;
    this.drain().catch((err: unknown) => this.o.logger.warn({ err, queue: this.o.name }, "claiming due records failed; the next claim tries again"));
  }

  /**
   * Drains at `at`, when that may come before the next claim: keeps one
   * wake-up, the earliest. Does nothing in a process that does not claim, or
   * for an instant two claim intervals or more away (the recurring claim
   * comes first; twice, because a busy process may run it late).
   */
  wakeAt(at: Date): void {
    const when = at.getTime();
    const now = this.o.clock.now().getTime();
    if (!this.started || this.stopping || when >= now + 2 * this.o.intervalMs || (this.wake && this.wake.at <= when)) return;
    clearTimeout(this.wake?.timer);
    const timer = setTimeout(() => {
      this.wake = undefined;
      this.poke();
    }, Math.max(0, when - now));
    timer.unref();
    this.wake = { timer, at: when };
  }

  /**
   * Stops claiming and beginning work, and waits for the drain in progress
   * and the work running (`timeoutMs` at most); what is left keeps its
   * lease, which lapses, and is taken again.
   */
  async stop(timeoutMs = Infinity): Promise<void> {
    this.stopping = true;
    clearTimeout(this.wake?.timer);
    this.wake = undefined;
    this.slotFreed?.();
    await this.draining?.catch(() => {});
    const settled = Promise.allSettled([...this.running]);
    if (timeoutMs === Infinity) await settled;
    else await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }

  /** Records of one round, at most. */
  private get batch(): number {
    return Math.max(1, Math.min(this.o.batchSize ?? CLAIM_BATCH, this.o.maxInFlight));
  }

  private async claimWhileDue(): Promise<void> {
    do {
      this.again = false;
      while (!this.stopping) {
        const room = Math.min(this.batch, this.o.maxInFlight - this.inProgress);
        // Too little room for a worthwhile round: wait for room (freed).
        if (room < Math.ceil(this.batch / 4)) await new Promise<void>((resolve) => (this.slotFreed = resolve));
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
   * After a drain: the first record to fall due within two claim intervals
   * (one read by the due_at index), for a wake-up then. It finds what other
   * processes made due later: their retries, leases that lapse, a backlog
   * made due at one instant; and what this process stored due beyond the
   * look-ahead (a send scheduled further ahead) that has come within it.
   * Read even when a wake-up is set: a record found due before it moves it
   * earlier (wakeAt keeps the earliest), where skipping the read left that
   * record for the later wake-up or the next claim, up to a claim interval
   * late.
   */
  private async wakeAtNextDue(): Promise<void> {
    if (!this.started || this.stopping) return;
    const horizon = new Date(this.o.clock.now().getTime() + 2 * this.o.intervalMs);
    const next = await this.o.collection.findOne({ due_at: { $lt: horizon } } as Filter<T>, { sort: { due_at: 1 }, projection: { due_at: 1 } });
    if (next?.due_at) this.wakeAt(next.due_at);
  }

  /** One round: claims up to `limit` due records and begins them; resolves to how many were due. */
  private async claim(limit: number): Promise<number> {
    const { collection } = this.o;
    const now = this.o.clock.now();
    // Every find of a round asks for all its documents at once (batchSize): MongoDB's first batch is otherwise
    // 101 documents, and the rest a getMore.
    const due = (await collection.find({ due_at: { $lte: now } } as Filter<T>, { sort: { due_at: 1 }, limit, batchSize: limit }).toArray()) as T[];
    if (due.length === 0) return 0;
    const lease = `${this.o.owner}:${++this.round}`;
    const ids = due.map((d) => d._id);
    const prefetched = this.o.prefetch?.(due);
    prefetched?.catch(() => {}); // awaited below, unless no record of the round is ours
    const fields = { lease_owner: lease, leased_at: now, due_at: new Date(now.getTime() + this.o.leaseMs) };
    const leased = await collection.updateMany({ _id: { $in: ids }, due_at: { $lte: now } } as Filter<T>, { $set: fields } as UpdateFilter<T>);
    // All of them ours (the usual case): they are as read. Otherwise another process took some: read which are ours.
    const mine =
      leased.modifiedCount === due.length
        ? due.map((d) => ({ ...d, ...fields }))
        : ((await collection.find({ _id: { $in: ids }, lease_owner: lease } as Filter<T>, { batchSize: ids.length }).toArray()) as T[]);
    if (mine.length === 0) return due.length;
    const before = new Map(due.map((d) => [d._id, d]));
    this.starting += mine.length;
    const starting = (async () => {
      const extra = prefetched ? await prefetched : undefined;
      for (const record of mine) {
        const previous = before.get(record._id);
        // A lease that ended without the work done: its process stopped.
        const lapsedSince = previous?.lease_owner && previous.leased_at ? previous.leased_at : undefined;
        this.begin({ record, lease, ...(lapsedSince ? { lapsedSince } : {}) }, extra);
      }
    })()
      .catch((err: unknown) => this.o.logger.warn({ err, queue: this.o.name, lease }, "starting claimed records failed; their leases lapse and they are taken again"))
      .finally(() => {
        this.starting -= mine.length;
        this.startingRounds.delete(starting);
        this.freed();
      });
    this.startingRounds.add(starting);
    return due.length;
  }

  /**
   * Wakes a drain waiting for room once a whole round is free (where the
   * queue holds two rounds or more in flight; a small one as soon as a
   * quarter round is), so that a busy queue claims few large rounds.
   */
  private freed(): void {
    const wanted = this.o.maxInFlight >= 2 * this.batch ? this.batch : Math.ceil(this.batch / 4);
    if (this.o.maxInFlight - this.inProgress >= wanted && this.slotFreed) {
      this.slotFreed();
      this.slotFreed = undefined;
    }
  }
}
