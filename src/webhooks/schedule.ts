/**
 * The retry schedule of automatic attempts (spec §Delivery rules 2): the
 * first attempt at once, then one retry after each delay
 * (WEBHOOK_RETRY_SCHEDULE; by default 0, 10 s, 1 min, 5 min, 30 min, 2 h, 6 h).
 */
export class RetrySchedule {
  /** @param delays delays before the retries, in ms. */
  constructor(readonly delays: readonly number[]) {}

  /** Automatic attempts in all: the first and one per delay. */
  get maxAttempts(): number {
    return 1 + this.delays.length;
  }

  /**
   * When automatic attempt `number`, which failed, is followed by the next:
   * its delay after the attempt ended; null after the last.
   */
  next(number: number, attempt: { startedAt: Date; durationMs: number | null }): Date | null {
    const delay = this.delays[number - 1];
    return delay === undefined ? null : new Date(attempt.startedAt.getTime() + (attempt.durationMs ?? 0) + delay);
  }

  /** Whether the retry after automatic attempt `number` follows at once (a delay of 0), in the same process. */
  immediate(number: number): boolean {
    return this.delays[number - 1] === 0;
  }
}
