/**
 * Group commit: callers add items one at a time and await their own result;
 * everything added while a write runs goes into the next write. At low load
 * an item is written at once (after the current tick, so that items added
 * together share a write), or after a linger of a few ms where the items'
 * callers can wait that long; under load, writes grow instead of queueing up.
 * This is how the webhook engine and the credit ledger turn thousands of small records per second
 * into a few database commands (README "Design" §6: a write budget).
 */
export class GroupCommit<T, R> {
  private pending: { item: T; resolve: (result: R) => void; reject: (err: unknown) => void }[] = [];
  private running = false;

  /**
   * @param write writes a batch and returns one result per item, in order;
   *   a throw rejects every item of the batch.
   * @param maxBatch most items per write.
   * @param lingerMs how long the first item of a write waits for others, in ms, when no write is running
   *   (0: the next tick). Under load a write is always running and nothing lingers.
   */
  constructor(
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 500,
    private readonly lingerMs = 0,
  ) {}

  /** Adds an item; resolves with its result once its batch is written. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.running) {
        this.running = true;
        if (this.lingerMs > 0) setTimeout(() => void this.drain(), this.lingerMs);
        else setImmediate(() => void this.drain());
      }
    });
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, this.maxBatch);
      try {
        const results = await this.write(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i] as R));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.running = false;
  }
}
