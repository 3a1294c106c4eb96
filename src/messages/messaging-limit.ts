import { MongoServerError, type Db } from "mongodb";
import { LRUCache } from "lru-cache";
import type { Clock } from "../shared/clock.js";

/** One hour, in ms: the unit in which recipients are counted and leave the window. */
const HOUR_MS = 3_600_000;
/**
 * How long a recipient counted in some hour stays counted: to the end of that hour plus 24 hours (WhatsApp's moving
 * 24 hours, rounded up to whole hours: a recipient counts up to an hour longer than WhatsApp counts it, never
 * shorter, so the service never lets more through than the network allows).
 */
const WINDOW_HOURS = 25;
/** The MongoDB error code of a duplicate key. */
const DUPLICATE_KEY = 11000;

/** A workspace's recipients counted per hour (collection `messaging_limit_windows`, one document per workspace). */
interface WindowRecord {
  /** The workspace id. */
  _id: string;
  /** Recipients counted, by the hour they were counted in (hours since the epoch, as strings). */
  hours: Record<string, number>;
  /** The sum of `hours`, kept with them in every update (so that a full window is one conditional update). */
  total: number;
}

/** One recipient of a workspace in the window (collection `messaging_limit_recipients`). */
interface RecipientRecord {
  /** `<workspace id>|<phone number>`. */
  _id: string;
  workspace_id: string;
  /** The hour (since the epoch) in which the recipient was last counted. */
  hour: number;
  /** When the recipient leaves the window: the end of `hour` plus 24 hours. */
  counted_until: Date;
}

/** The answer of MessagingLimitBudget.turn: go now, or wait until `at` (when the window frees room). */
export type BudgetTurn = { go: true } | { go: false; at: Date };

/**
 * A workspace's messaging limit (README "Pacing", the messaging limit):
 * WhatsApp lets a business portfolio send messages to at most so many
 * unique recipients in a moving 24 hours, all its numbers together (250,
 * 2,000, 10,000, 100,000 or unlimited). The service counts each workspace's
 * recipients in the database, shared by every process, so the limit holds
 * across processes:
 *
 * - A recipient already in the window goes: no count (and no database
 *   command when this process counted it). One whose last count is from an
 *   earlier hour moves to this hour (its window is moving: 24 hours from its
 *   last message).
 * - A new recipient is counted with one conditional update of the
 *   workspace's window document (`total` below the limit), then recorded;
 *   when the window is full, hours that left it are dropped and the count is
 *   tried again; still full, the message waits until the oldest hour
 *   leaves (`at`).
 *
 * Conservative by construction: a recipient counts up to an hour longer than
 * WhatsApp counts it; a process that stops between counting and recording a
 * recipient leaves a count without a recipient (for at most 25 hours); every
 * recipient counts, also one inside a customer service window, which WhatsApp
 * does not count. So a message may wait that WhatsApp would have taken, never
 * the reverse.
 */
export class MessagingLimitBudget {
  private readonly windows;
  private readonly recipients;
  /** Recipients this process counted or read, by key: the hour of their count. */
  private readonly known = new LRUCache<string, number>({ max: 200_000 });
  /**
   * Turns under way in this process, by key: a second message to a recipient waits for the first's turn (two counts
   * of one recipient at once would take two places of a nearly full window, one given back only after another
   * recipient was refused).
   */
  private readonly underWay = new Map<string, Promise<BudgetTurn>>();

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.windows = db.collection<WindowRecord>("messaging_limit_windows");
    this.recipients = db.collection<RecipientRecord>("messaging_limit_recipients");
  }

  /**
   * The turn of a message of `workspaceId` (whose limit is `limit` unique recipients; Infinity counts nothing) to
   * `to`: go (the recipient counted, or in the window already), or wait until a later time.
   *
   * @throws the database's errors (the message's lease then lapses and it is taken again).
   */
  async turn(workspaceId: string, limit: number, to: string): Promise<BudgetTurn> {
    if (!Number.isFinite(limit)) return { go: true };
    const key = `${workspaceId}|${to}`;
    // The earlier turn's failure is its own message's (its lease lapses): this one tries for itself.
    for (let before = this.underWay.get(key); before; before = this.underWay.get(key)) await before.catch(() => undefined);
    const turn = this.turnOf(workspaceId, limit, key);
    this.underWay.set(key, turn);
    try {
      return await turn;
    } finally {
      this.underWay.delete(key);
    }
  }

  /** The turn of a message to the recipient `key` of `workspaceId` (see turn), the only one under way for it here. */
  private async turnOf(workspaceId: string, limit: number, key: string): Promise<BudgetTurn> {
    const now = this.clock.now().getTime();
    const hour = Math.floor(now / HOUR_MS);
    let counted = this.known.get(key);
    if (counted === undefined || counted + WINDOW_HOURS <= hour) {
      counted = (await this.recipients.findOne({ _id: key }))?.hour;
      if (counted !== undefined) this.known.set(key, counted);
    }
    if (counted !== undefined && counted + WINDOW_HOURS > hour) {
      if (counted < hour) await this.move(workspaceId, key, counted, hour);
      return { go: true };
    }
    for (;;) {
      const inc = await this.windows.updateOne(
        { _id: workspaceId, total: { $lt: limit } },
        { $inc: { total: 1, [`hours.${hour}`]: 1 } },
      );
      if (inc.modifiedCount === 1) break;
      const window = await this.windows.findOne({ _id: workspaceId });
      if (!window) {
        await this.windows.insertOne({ _id: workspaceId, hours: {}, total: 0 }).catch(ignoreDuplicate);
        continue;
      }
      // Not full (changed meanwhile): counted again.
      if (window.total < limit) continue;
      const left = Object.entries(window.hours).filter(([h]) => Number(h) + WINDOW_HOURS <= hour);
      if (left.length === 0) {
        const oldest = Math.min(...Object.entries(window.hours).flatMap(([h, n]) => (n > 0 ? [Number(h)] : [])), hour);
        return { go: false, at: new Date((oldest + WINDOW_HOURS) * HOUR_MS) };
      }
      // Hours that left the window: dropped, if no other process changed them meanwhile (then counted again).
      const dropped = left.reduce((sum, [, n]) => sum + n, 0);
      await this.windows.updateOne(
        { _id: workspaceId, ...Object.fromEntries(left.map(([h, n]) => [`hours.${h}`, n])) },
        { $unset: Object.fromEntries(left.map(([h]) => [`hours.${h}`, ""])), $inc: { total: -dropped } },
      );
    }
    // Counted; recorded unless another process recorded the recipient in the window meanwhile (then uncounted).
    const until = new Date((hour + WINDOW_HOURS) * HOUR_MS);
    try {
      await this.recipients.updateOne(
        { _id: key, counted_until: { $lte: new Date(now) } },
        { $set: { workspace_id: workspaceId, hour, counted_until: until } },
        { upsert: true },
      );
    } catch (err) {
      ignoreDuplicate(err);
      await this.windows.updateOne({ _id: workspaceId }, { $inc: { total: -1, [`hours.${hour}`]: -1 } });
    }
    this.known.set(key, hour);
    return { go: true };
  }

  /** Moves a recipient's count from hour `from` to `to` (its window starts again), unless another process did. */
  private async move(workspaceId: string, key: string, from: number, to: number): Promise<void> {
    const moved = await this.recipients.updateOne(
      { _id: key, hour: from },
      { $set: { hour: to, counted_until: new Date((to + WINDOW_HOURS) * HOUR_MS) } },
    );
    if (moved.modifiedCount === 1) await this.windows.updateOne({ _id: workspaceId }, { $inc: { [`hours.${from}`]: -1, [`hours.${to}`]: 1 } });
    this.known.set(key, to);
  }

  /** The recipients counted in a workspace's window now. Both collections are read by _id alone: no further index. */
  async inWindow(workspaceId: string): Promise<number> {
    const hour = Math.floor(this.clock.now().getTime() / HOUR_MS);
    const window = await this.windows.findOne({ _id: workspaceId });
    return Object.entries(window?.hours ?? {}).reduce((sum, [h, n]) => (Number(h) + WINDOW_HOURS > hour ? sum + n : sum), 0);
  }
}

function ignoreDuplicate(err: unknown): void {
  if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY)) throw err;
}
