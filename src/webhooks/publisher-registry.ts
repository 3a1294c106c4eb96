import os from "node:os";
import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import { newId } from "../shared/ids.js";

/** A process that fans events out, as registered in `webhook_publishers`. */
export interface PublisherRecord {
  /** UUID of the process's run. */
  _id: string;
  host: string;
  pid: number;
  role: string;
  started_at: Date;
  /** Past this time without a heartbeat, the process is taken for dead. */
  expires_at: Date;
}

/**
 * Who may hold events not yet fanned out. Every process that fans events
 * out registers here (a tiny collection) and renews its registration every
 * quarter lease. A process that stops cleanly, with all its events marked,
 * removes its registration; one that crashes (or stops with work left) lets
 * it expire, and the sweep then recovers the events it left (see
 * Dispatcher). So the sweep reads the events collection only after a
 * crash, never on every run.
 */
export class PublisherRegistry {
  readonly id = newId();
  private readonly collection: Collection<PublisherRecord>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    db: Db,
    private readonly clock: Clock,
    private readonly leaseMs: number,
    private readonly role: string,
    private readonly logger: Logger,
  ) {
    this.collection = db.collection<PublisherRecord>("webhook_publishers");
  }

  private record(): PublisherRecord {
    const now = this.clock.now();
    return { _id: this.id, host: os.hostname(), pid: process.pid, role: this.role, started_at: now, expires_at: new Date(now.getTime() + this.leaseMs) };
  }

  /** Registers this process and starts renewing the registration. */
  async register(): Promise<void> {
    await this.collection.insertOne(this.record());
    this.timer = setInterval(() => void this.renew(), Math.max(10, Math.floor(this.leaseMs / 4)));
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    try {
      const expires = new Date(this.clock.now().getTime() + this.leaseMs);
      const res = await this.collection.updateOne({ _id: this.id }, { $set: { expires_at: expires } });
      // Taken for dead (a long stall) and recovered by a sweep: register again.
      if (res.matchedCount === 0) await this.collection.insertOne(this.record());
    } catch (err) {
      this.logger.warn({ err }, "renewing the webhook publisher registration failed");
    }
  }

  /** Registrations of other processes that expired before `now`. */
  expired(now: Date): Promise<PublisherRecord[]> {
    return this.collection.find({ expires_at: { $lt: now }, _id: { $ne: this.id } }).toArray();
  }

  /** Removes registrations whose events have been recovered. */
  async forget(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.collection.deleteMany({ _id: { $in: ids }, expires_at: { $lt: this.clock.now() } });
  }

  /**
   * Stops renewing. `clean` (every event of this process marked) removes the
   * registration; otherwise it expires now, so that a sweep recovers what is
   * left.
   */
  async unregister(clean: boolean): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (clean) await this.collection.deleteOne({ _id: this.id });
    else await this.collection.updateOne({ _id: this.id }, { $set: { expires_at: this.clock.now() } });
  }

  async ensureIndexes(): Promise<void> {
    await this.collection.createIndex({ expires_at: 1 });
  }
}
