/**
 * Follow-up changes of documents, held for a while and merged per document:
 * every change of one key added within `delayMs` of its first goes into one
 * update, and the updates of all keys that are due go into one write. For
 * small changes that may wait and that commute (clearing a mark whose work
 * is done, counting a repeat), where writing each at once would update the
 * same document several times within a second (README "Design" §6: a write
 * budget). What is held is lost if the process dies, so only changes that
 * the sweeps repair (or that are counts allowed to miss a crash) belong here.
 */
export class MergedUpdates<C> {
  private held = new Map<string, { change: C; since: number }>();
  private timer: NodeJS.Timeout | null = null;
  private readonly writes = new Set<Promise<void>>();

  /**
   * @param options.delayMs how long a key's first change waits for more, in ms (a change may wait up to a
   *   quarter more: due keys are written on a timer).
   * @param options.merge the change that has the effect of `a` then `b`.
   * @param options.write writes the changes of many keys (at most `maxBatch`) in one command.
   * @param options.onError told of a write that failed (its changes are not retried).
   */
  constructor(
    private readonly options: {
      delayMs: number;
      maxBatch: number;
      merge: (a: C, b: C) => C;
      write: (entries: [key: string, change: C][]) => Promise<void>;
      onError: (err: unknown) => void;
    },
  ) {}

  /** Holds `change` of `key`, merged with what is held for it already. */
  add(key: string, change: C): void {
    const held = this.held.get(key);
    if (held) held.change = this.options.merge(held.change, change);
    else this.held.set(key, { change, since: performance.now() });
    if (!this.timer) {
      this.timer = setInterval(() => this.writeDue(performance.now() - this.options.delayMs), Math.max(10, this.options.delayMs / 4));
      this.timer.unref();
    }
  }

  /** Writes everything held now and waits for every write begun (graceful shutdown). */
  async flush(): Promise<void> {
    this.writeDue(Infinity);
    await Promise.all(this.writes);
  }

  /** Writes the keys held since `cutoff` (a time in ms) or earlier; held keys are in the order they came. */
  private writeDue(cutoff: number): void {
    const due: [string, C][] = [];
    for (const [key, { change, since }] of this.held) {
      if (since > cutoff) break;
      due.push([key, change]);
      this.held.delete(key);
    }
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
    for (let i = 0; i < due.length; i += this.options.maxBatch) {
      const write = this.options.write(due.slice(i, i + this.options.maxBatch)).catch(this.options.onError);
      this.writes.add(write);
      void write.finally(() => this.writes.delete(write));
    }
  }
}
