/**
 * The recurring claims of a worker process's queues (README "Design" §11):
 * the capabilities add the drains of their queues (message dispatch, network
 * reports, the simulator's reports, form files), and the composition root runs them all from one
 * recurring Agenda job per worker process (`queues.claim:<process>`, every
 * QUEUE_CLAIM_INTERVAL_MS): one job kind, so Agenda's scan costs one command
 * for all of them. (The webhook deliveries have a claim job of their own,
 * every WEBHOOK_CLAIM_INTERVAL_MS.)
 */
export class QueueClaims {
  /** The job kind (the job is named `queues.claim:<process id>`). */
  static readonly JOB = "queues.claim";
  private readonly drains: (() => Promise<void>)[] = [];

  /** Adds a queue's drain (a claim of what is due, LeasedQueue.drain). */
  add(drain: () => Promise<void>): void {
    this.drains.push(drain);
  }

  /**
   * Runs every drain, at once.
   *
   * @throws the first drain's error (the others still run; the next run tries again).
   */
  async drainAll(): Promise<void> {
    const outcomes = await Promise.allSettled(this.drains.map((drain) => drain()));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (failed) throw failed.reason;
  }
}
